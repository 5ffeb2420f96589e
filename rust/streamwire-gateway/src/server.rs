//! The HTTP side: hyper on the engine's Tokio runtime, one task per connection, keep-alive,
//! bodies bounded before they are read, every request bounded by the request timeout, one
//! access record per request through the project's logging (`logging`), and a graceful
//! shutdown that stops accepting, ends long polls and streams, lets produces in flight finish
//! (up to the request timeout), then closes the consumer instances and the producers.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::Body as _;
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, ACCEPT, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, LOCATION, RETRY_AFTER,
};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_pulsar::topic::TopicName;

use crate::config::GatewayConfig;
use crate::consume::{self, Reply};
use crate::error::ApiError;
use crate::fetch_stream;
use crate::metrics::Metrics;
use crate::produce;
use crate::read::{self, ReadParams};
use crate::route::{route, Route, TopicPath};
use crate::state::Gateway;
use crate::stream;

/// How long a client has to finish the TLS handshake.
const HANDSHAKE: std::time::Duration = std::time::Duration::from_secs(10);

type Answer = Response<Either<Full<Bytes>, stream::Lines>>;

fn json(status: u16, body: String) -> Answer {
    let mut r = Response::new(Either::Left(Full::new(Bytes::from(body))));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn error(e: ApiError) -> Answer {
    let retry = e.retry_after();
    let mut r = json(e.status, e.body());
    if let Some(s) = retry {
        r.headers_mut().insert(RETRY_AFTER, HeaderValue::from(s));
    }
    r
}

fn topic_name(t: &TopicPath) -> std::result::Result<TopicName, ApiError> {
    TopicName::parse(&t.name()).map_err(|e| ApiError::bad_request(e.to_string()))
}

async fn body(
    req: Request<Incoming>,
    max: usize,
    metrics: &Metrics,
) -> std::result::Result<Bytes, ApiError> {
    match Limited::new(req.into_body(), max).collect().await {
        Ok(c) => {
            let b = c.to_bytes();
            Metrics::add(&metrics.bytes_in, b.len());
            Ok(b)
        }
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(ApiError::too_large(format!(
                "the body is over the limit of {max} bytes"
            )))
        }
        Err(e) => Err(ApiError::bad_request(format!(
            "could not read the body: {e}"
        ))),
    }
}

fn reply(r: std::result::Result<Reply, ApiError>) -> Answer {
    match r {
        Ok(Reply::Json(status, body)) => json(status, body),
        Ok(Reply::Redirect(to, e)) => {
            let mut r = error(e);
            if let Ok(v) = HeaderValue::from_str(&to) {
                r.headers_mut().insert(LOCATION, v);
            }
            r
        }
        Err(e) => error(e),
    }
}

async fn handle(gw: Arc<Gateway>, req: Request<Incoming>, r: Route) -> Answer {
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let pq = req
        .uri()
        .path_and_query()
        .map_or(path.clone(), |p| p.as_str().to_string());
    let method = req.method().as_str().to_string();
    let max = gw.config.max_body_bytes;
    let token = match crate::callers::bearer(req.headers().get(AUTHORIZATION).map(|v| v.as_bytes()))
    {
        Ok(t) => t,
        Err(e) => return error(e),
    };
    match r {
        Route::CreateConsumer(sub) => match body(req, max, &gw.metrics).await {
            Ok(b) => reply(consume::create(&gw, &sub, &b, &pq, token.as_deref()).await),
            Err(e) => error(e),
        },
        Route::Fetch(sub, id) => {
            let accept = req.headers().get(ACCEPT).and_then(|v| v.to_str().ok());
            if !fetch_stream::wanted(&query, accept) {
                return reply(consume::fetch(&gw, &sub, &id, &query, &pq, token.as_deref()).await);
            }
            let metrics = gw.metrics.clone();
            let accept = accept.map(str::to_string);
            match fetch_stream::start(
                gw,
                &sub,
                &id,
                &query,
                accept.as_deref(),
                &pq,
                token.as_deref(),
            )
            .await
            {
                Ok(Ok((framing, rx))) => {
                    let mut r = Response::new(Either::Right(stream::Lines(rx, metrics)));
                    let h = r.headers_mut();
                    h.insert(
                        CONTENT_TYPE,
                        HeaderValue::from_static(framing.content_type()),
                    );
                    // Events are live: no cache, and no buffering by proxies that honour it.
                    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
                    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
                    r
                }
                Ok(Err(answer)) => reply(Ok(answer)),
                Err(e) => error(e),
            }
        }
        Route::DeleteConsumer(sub, id) => {
            reply(consume::delete(&gw, &sub, &id, &pq, token.as_deref()).await)
        }
        Route::Nack(sub, id) => match body(req, max, &gw.metrics).await {
            Ok(b) => reply(consume::nack(&gw, &sub, &id, &b, &pq, token.as_deref()).await),
            Err(e) => error(e),
        },
        Route::GetCursor(sub) => {
            reply(consume::cursor(&gw, &sub, &query, &pq, token.as_deref()).await)
        }
        Route::Ack(sub) => match body(req, max, &gw.metrics).await {
            Ok(b) => reply(consume::ack(&gw, &sub, &b, &query, &pq, token.as_deref()).await),
            Err(e) => error(e),
        },
        Route::Healthz => json(200, r#"{"status":"ok"}"#.into()),
        Route::Metrics => {
            let mut r = json(200, gw.render_metrics().await);
            r.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            r
        }
        Route::OpenApi => json(200, crate::openapi::DOCUMENT.to_string()),
        Route::Readyz => match gw.client.service_connection().await {
            Ok(_) => json(200, r#"{"status":"ready"}"#.into()),
            Err(e) => error(ApiError::new(
                503,
                1,
                format!("the broker is not reachable: {e}"),
            )),
        },
        Route::WrongMethod => error(ApiError::new(
            405,
            1,
            format!("{method} is not allowed on {path}"),
        )),
        Route::NotFound => error(ApiError::new(404, 0, format!("no endpoint at {path}"))),
        Route::Read(t) => {
            let params = match ReadParams::parse(&query, gw.config.request_timeout) {
                Ok(p) => p,
                Err(e) => return error(e),
            };
            let topic = match topic_name(&t) {
                Ok(n) => match t.partition {
                    Some(p) => n.partition(p),
                    None => n,
                },
                Err(e) => return error(e),
            };
            let client = match gw.client_for(token.as_deref()).await {
                Ok(c) => c,
                Err(e) => return error(e.into()),
            };
            match read::read(&client, topic, &params, &gw.writer_schemas, gw.stopping()).await {
                Ok(r) => json(200, serde_json::to_string(&r).unwrap_or_default()),
                Err(e) => error(e.into()),
            }
        }
        Route::Produce(t) => match produce_request(&gw, req, &t, false, token.as_deref()).await {
            Ok(a) => a,
            Err(e) => error(e),
        },
        Route::BrokerProduce(t) => {
            match produce_request(&gw, req, &t, true, token.as_deref()).await {
                Ok(a) => a,
                Err(e) => error(e),
            }
        }
    }
}

async fn produce_request(
    gw: &Gateway,
    req: Request<Incoming>,
    t: &TopicPath,
    broker: bool,
    token: Option<&str>,
) -> std::result::Result<Answer, ApiError> {
    let ctype = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_ascii_lowercase();
    let headers = req.headers().clone();
    if ctype.starts_with("application/x-ndjson") {
        if broker {
            return Err(ApiError::new(
                415,
                1,
                "streaming produce is a PIP-64 endpoint: POST to /topics/{tenant}/{namespace}/{topic}",
            ));
        }
        let query = req.uri().query().unwrap_or("");
        let format = match query {
            q if q.contains("value_format=text") => produce::ValueFormat::Text,
            q if q.contains("value_format=json") => produce::ValueFormat::Json,
            _ => produce::ValueFormat::Base64,
        };
        // `schema_version=N`: every line is encoded by that registry version of the topic's
        // schema (a typed one: JSON, AVRO, PROTOBUF_NATIVE, KEY_VALUE, a primitive), which
        // the stream's producer registers.
        let version = crate::consume::query_pairs(query)?
            .into_iter()
            .find(|(k, _)| k == "schema_version")
            .map(|(_, v)| {
                v.parse::<i64>().map_err(|_| {
                    ApiError::bad_request(format!("schema_version must be an integer, got {v:?}"))
                })
            })
            .transpose()?;
        let topic = topic_name(t)?;
        let schema = match version {
            None => None,
            Some(v) => {
                let client = gw.client_for(token).await?;
                let writer = gw
                    .writer_schemas
                    .get(&client, &topic, &v.to_be_bytes())
                    .await?;
                Some(
                    writer
                        .as_deref()
                        .and_then(crate::schemas::from_writer)
                        .ok_or_else(|| {
                            ApiError::new(
                                422,
                                4,
                                format!(
                                    "{} has no schema version {v} the gateway encodes with",
                                    t.name()
                                ),
                            )
                        })?,
                )
            }
        };
        let producer = gw
            .producer_as(token, &topic, schema.as_ref().map(|s| &s.info))
            .await?;
        let format = produce::LineFormat { format, schema };
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        let max_line = gw.config.max_body_bytes;
        tokio::spawn(stream::run(
            producer,
            format,
            t.partition,
            req.into_body(),
            max_line,
            tx,
            gw.metrics.clone(),
        ));
        let mut r = Response::new(Either::Right(stream::Lines(rx, gw.metrics.clone())));
        r.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-ndjson"),
        );
        return Ok(r);
    }
    let raw = body(req, gw.config.max_body_bytes, &gw.metrics).await?;
    let mut schema = None;
    let msgs = if ctype.starts_with("application/octet-stream") {
        let props: Vec<(String, String)> = headers
            .iter()
            .filter_map(|(k, v)| {
                let name = k.as_str().strip_prefix("x-pulsar-property-")?;
                Some((name.to_string(), v.to_str().ok()?.to_string()))
            })
            .collect();
        let header = |n: &str| {
            headers
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        vec![produce::parse_binary(raw, header, props)?]
    } else if ctype.starts_with("application/json") {
        if broker {
            let body = produce::parse_broker(&raw, gw.config.max_messages)?;
            schema = body.schema;
            body.messages
        } else {
            let mut body = produce::parse_pip(&raw, gw.config.max_messages)?;
            if let Some(v) = body.wanted_version {
                // The schema named by its registry version alone (PIP-64: "returned by a
                // previous request using the same schema").
                let client = gw.client_for(token).await?;
                let writer = gw
                    .writer_schemas
                    .get(&client, &topic_name(t)?, &v.to_be_bytes())
                    .await?;
                let known = writer
                    .as_deref()
                    .and_then(crate::schemas::from_writer)
                    .ok_or_else(|| {
                        ApiError::new(
                            422,
                            4,
                            format!(
                                "{} has no schema version {v} the gateway encodes with (JSON, \
                                 AVRO, PROTOBUF_NATIVE, KEY_VALUE)",
                                t.name()
                            ),
                        )
                    })?;
                body = produce::parse_pip_with(&raw, gw.config.max_messages, Some(known))?;
            }
            schema = body.schema;
            body.messages
        }
    } else {
        return Err(ApiError::new(
            415,
            1,
            format!(
                "Content-Type {ctype} is not accepted (application/json, application/octet-stream)"
            ),
        ));
    };
    let topic = topic_name(t)?;
    let producer = gw
        .producer_as(token, &topic, schema.as_ref().map(|s| &s.info))
        .await?;
    let outcomes = produce::send_all(&producer, t.partition, msgs).await?;
    let ok = outcomes.iter().filter(|o| o.is_ok()).count();
    Metrics::add(&gw.metrics.produced, ok);
    Metrics::add(&gw.metrics.produce_failed, outcomes.len() - ok);
    let pressure = produce::pressure(&outcomes);
    if pressure == produce::Pressure::Full {
        return Err(ApiError::new(
            429,
            1,
            format!(
                "the producer of {} has --max-pending-messages unacknowledged: none of the {} \
                 message(s) was written; retry the request",
                t.name(),
                outcomes.len()
            ),
        ));
    }
    let body = if broker {
        serde_json::to_string(&produce::broker_response(&outcomes))
    } else {
        // The registry's version of the producer's schema; none without a schema.
        let version = schema.as_ref().and_then(|_| {
            crate::schemas::version_number(&producer.schema_version().unwrap_or_default())
        });
        serde_json::to_string(&produce::pip_response(&outcomes, version))
    };
    let mut answer = json(200, body.unwrap_or_default());
    if pressure == produce::Pressure::Some {
        // Some messages were refused for a full queue (`error_code` 2): when to retry them.
        answer
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    }
    Ok(answer)
}

/// Serve until `shutdown` resolves; then stop accepting, finish the requests in flight (up
/// to the request timeout) and close the producers.
pub async fn serve(config: GatewayConfig, shutdown: impl Future<Output = ()>) -> Result<()> {
    let listener = TcpListener::bind(config.listen).await.map_err(|e| {
        Error::new(
            ErrorKind::Config,
            format!("cannot listen on {}: {e}", config.listen),
        )
    })?;
    serve_on(listener, config, shutdown).await
}

/// [`serve`] on a listener the caller bound (tests bind port 0).
pub async fn serve_on(
    listener: TcpListener,
    mut config: GatewayConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    let grace = config.request_timeout;
    let tls = match (&config.tls_cert, &config.tls_key) {
        (Some(cert), Some(key)) => Some(crate::tls::acceptor(cert, key)?),
        _ => None,
    };
    if config.advertised_url.is_none() {
        if let Ok(a) = listener.local_addr() {
            let scheme = if tls.is_some() { "https" } else { "http" };
            config.advertised_url = Some(format!("{scheme}://{a}"));
        }
    }
    let gw = Gateway::new(config)?;
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let sweeper = {
        let gw = gw.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(gw.config.producer_idle / 4).await;
                gw.expire_idle().await;
                gw.expire_idle_callers().await;
            }
        })
    };
    let consumer_sweeper = {
        let gw = gw.clone();
        tokio::spawn(async move {
            let every = (gw.config.consumer_idle / 4).max(std::time::Duration::from_millis(50));
            loop {
                tokio::time::sleep(every).await;
                gw.expire_idle_consumers().await;
            }
        })
    };
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let gw = gw.clone();
                let svc = service_fn(move |req: Request<Incoming>| {
                    let gw = gw.clone();
                    async move {
                        let t0 = Instant::now();
                        let (m, p) = (req.method().clone(), req.uri().path().to_string());
                        let r = route(m.as_str(), &p);
                        let label = r.label_index();
                        let timeout = gw.config.request_timeout;
                        let metrics = gw.metrics.clone();
                        let answer = match tokio::time::timeout(timeout, handle(gw, req, r)).await {
                            Ok(a) => a,
                            Err(_) => error(ApiError::new(504, 1, "the request timed out")),
                        };
                        let status = answer.status().as_u16();
                        metrics.request(label, status, t0.elapsed());
                        if let Some(n) = answer.body().size_hint().exact() {
                            Metrics::add(&metrics.bytes_out, n as usize);
                        }
                        crate::logging::access(&crate::logging::Access {
                            peer,
                            method: m.as_str(),
                            path: &p,
                            route: crate::route::ROUTE_LABELS[label],
                            status,
                            elapsed: t0.elapsed(),
                        });
                        Ok::<_, Infallible>(answer)
                    }
                });
                let watcher = graceful.watcher();
                let tls = tls.clone();
                tokio::spawn(async move {
                    let mut http = hyper::server::conn::http1::Builder::new();
                    http.keep_alive(true);
                    match tls {
                        None => {
                            let conn = http.serve_connection(TokioIo::new(stream), svc);
                            let _ = watcher.watch(conn).await;
                        }
                        Some(acceptor) => {
                            // A client that never finishes the handshake holds only this task.
                            let hs = tokio::time::timeout(HANDSHAKE, acceptor.accept(stream)).await;
                            let Ok(Ok(stream)) = hs else { return };
                            let conn = http.serve_connection(TokioIo::new(stream), svc);
                            let _ = watcher.watch(conn).await;
                        }
                    }
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    // Long polls and streams end now; produces in flight finish (up to the grace).
    gw.begin_stop();
    let _ = tokio::time::timeout(grace, graceful.shutdown()).await;
    sweeper.abort();
    consumer_sweeper.abort();
    gw.close().await;
    Ok(())
}
