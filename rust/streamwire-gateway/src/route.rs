//! Which endpoint a request is for (pure, tested).
//!
//! PIP-64's paths and the broker's own produce paths share the `/topics/` prefix; the number
//! of segments tells them apart: `/topics/{tenant}/{ns}/{topic}` (3) is PIP-64, and
//! `/topics/{persistent|non-persistent}/{tenant}/{ns}/{topic}` (4) is the broker's dialect,
//! each optionally followed by `/partitions/{n}`.

/// A topic as the path names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPath {
    pub persistent: bool,
    pub tenant: String,
    pub namespace: String,
    pub topic: String,
    pub partition: Option<u32>,
}

impl TopicPath {
    /// The full topic name (`persistent://tenant/ns/topic`), without any partition suffix.
    pub fn name(&self) -> String {
        let domain = if self.persistent {
            "persistent"
        } else {
            "non-persistent"
        };
        format!(
            "{domain}://{}/{}/{}",
            self.tenant, self.namespace, self.topic
        )
    }
}

/// A subscription of a topic, as the consumer paths name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubPath {
    pub topic: TopicPath,
    pub subscription: String,
}

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `POST /topics/{tenant}/{ns}/{topic}[/partitions/{n}]`.
    Produce(TopicPath),
    /// `POST /topics/{persistent|non-persistent}/{tenant}/{ns}/{topic}[/partitions/{n}]`.
    BrokerProduce(TopicPath),
    /// `GET /topics/{tenant}/{ns}/{topic}[/partitions/{n}]/messages`.
    Read(TopicPath),
    /// `POST /topics/{tenant}/{ns}/{topic}/subscription/{sub}`: a consumer instance.
    CreateConsumer(SubPath),
    /// `GET …/subscription/{sub}/consumer/{id}/messages` (`consumers` accepted too).
    Fetch(SubPath, String),
    /// `DELETE …/subscription/{sub}/consumers/{id}` (`consumer` accepted too).
    DeleteConsumer(SubPath, String),
    /// `POST …/subscription/{sub}/consumer/{id}/nack`.
    Nack(SubPath, String),
    /// `GET …/subscription/{sub}/cursor`.
    GetCursor(SubPath),
    /// `POST …/subscription/{sub}/cursor`.
    Ack(SubPath),
    Healthz,
    Readyz,
    /// `GET /metrics`: Prometheus text.
    Metrics,
    /// `GET /openapi.json`: the OpenAPI document.
    OpenApi,
    /// A known path with the wrong method (405).
    WrongMethod,
    NotFound,
}

/// The routes' labels in `/metrics`, in the order of [`Route::label_index`].
pub const ROUTE_LABELS: [&str; 15] = [
    "produce",
    "broker_produce",
    "read",
    "create_consumer",
    "fetch",
    "delete_consumer",
    "nack",
    "get_cursor",
    "ack",
    "healthz",
    "readyz",
    "metrics",
    "openapi",
    "wrong_method",
    "not_found",
];

/// Every method and path template the router serves (the OpenAPI document lists exactly
/// these; `{domain}` is `persistent` or `non-persistent`, `{partition}` a number).
pub const PATHS: [(&str, &str); 19] = [
    ("POST", "/topics/{tenant}/{namespace}/{topic}"),
    (
        "POST",
        "/topics/{tenant}/{namespace}/{topic}/partitions/{partition}",
    ),
    ("POST", "/topics/{domain}/{tenant}/{namespace}/{topic}"),
    (
        "POST",
        "/topics/{domain}/{tenant}/{namespace}/{topic}/partitions/{partition}",
    ),
    ("GET", "/topics/{tenant}/{namespace}/{topic}/messages"),
    (
        "GET",
        "/topics/{tenant}/{namespace}/{topic}/partitions/{partition}/messages",
    ),
    (
        "POST",
        "/topics/{tenant}/{namespace}/{topic}/subscription/{subscription}",
    ),
    (
        "GET",
        "/topics/{tenant}/{namespace}/{topic}/subscription/{subscription}/consumer/{id}/messages",
    ),
    (
        "GET",
        "/topics/{tenant}/{namespace}/{topic}/subscription/{subscription}/consumers/{id}/messages",
    ),
    (
        "DELETE",
        "/topics/{tenant}/{namespace}/{topic}/subscription/{subscription}/consumer/{id}",
    ),
    (
        "DELETE",
        "/topics/{tenant}/{namespace}/{topic}/subscription/{subscription}/consumers/{id}",
    ),
    (
        "POST",
        "/topics/{tenant}/{namespace}/{topic}/subscription/{subscription}/consumer/{id}/nack",
    ),
    (
        "POST",
        "/topics/{tenant}/{namespace}/{topic}/subscription/{subscription}/consumers/{id}/nack",
    ),
    (
        "GET",
        "/topics/{tenant}/{namespace}/{topic}/subscription/{subscription}/cursor",
    ),
    (
        "POST",
        "/topics/{tenant}/{namespace}/{topic}/subscription/{subscription}/cursor",
    ),
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/openapi.json"),
];

impl Route {
    /// This route's index in [`ROUTE_LABELS`].
    pub fn label_index(&self) -> usize {
        match self {
            Route::Produce(_) => 0,
            Route::BrokerProduce(_) => 1,
            Route::Read(_) => 2,
            Route::CreateConsumer(_) => 3,
            Route::Fetch(..) => 4,
            Route::DeleteConsumer(..) => 5,
            Route::Nack(..) => 6,
            Route::GetCursor(_) => 7,
            Route::Ack(_) => 8,
            Route::Healthz => 9,
            Route::Readyz => 10,
            Route::Metrics => 11,
            Route::OpenApi => 12,
            Route::WrongMethod => 13,
            Route::NotFound => 14,
        }
    }
}

/// `%XX` decoding of one path segment; `None` for malformed escapes or invalid UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn topic(persistent: bool, segs: &[String], partition: Option<&str>) -> Option<TopicPath> {
    if segs.iter().any(String::is_empty) {
        return None;
    }
    let partition = match partition {
        Some(p) => Some(p.parse::<u32>().ok()?),
        None => None,
    };
    Some(TopicPath {
        persistent,
        tenant: segs[0].clone(),
        namespace: segs[1].clone(),
        topic: segs[2].clone(),
        partition,
    })
}

/// Route a request by method and path (the query string already removed).
pub fn route(method: &str, path: &str) -> Route {
    match path {
        "/healthz" => {
            return if method == "GET" {
                Route::Healthz
            } else {
                Route::WrongMethod
            }
        }
        "/readyz" => {
            return if method == "GET" {
                Route::Readyz
            } else {
                Route::WrongMethod
            }
        }
        "/metrics" | "/openapi.json" => {
            return match (method, path) {
                ("GET", "/metrics") => Route::Metrics,
                ("GET", _) => Route::OpenApi,
                _ => Route::WrongMethod,
            }
        }
        _ => {}
    }
    let Some(rest) = path.strip_prefix("/topics/") else {
        return Route::NotFound;
    };
    let Some(segs) = rest
        .trim_end_matches('/')
        .split('/')
        .map(percent_decode)
        .collect::<Option<Vec<String>>>()
    else {
        return Route::NotFound;
    };
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    if let Some(r) = subscription_route(method, &segs, &s) {
        return r;
    }
    let is_domain = |d: &str| d == "persistent" || d == "non-persistent";
    let (read, s) = match s.split_last() {
        Some((&"messages", head)) => (true, head.to_vec()),
        _ => (false, s),
    };
    let parsed = match s.as_slice() {
        [_, _, _] => topic(true, &segs[..3], None).map(|t| (false, t)),
        [_, _, _, "partitions", p] => topic(true, &segs[..3], Some(p)).map(|t| (false, t)),
        [d, _, _, _] if is_domain(d) && !read => {
            topic(*d == "persistent", &segs[1..4], None).map(|t| (true, t))
        }
        [d, _, _, _, "partitions", p] if is_domain(d) && !read => {
            topic(*d == "persistent", &segs[1..4], Some(p)).map(|t| (true, t))
        }
        _ => None,
    };
    match (parsed, read, method) {
        (Some((_, t)), true, "GET") => Route::Read(t),
        (Some((false, t)), false, "POST") => Route::Produce(t),
        (Some((true, t)), false, "POST") => Route::BrokerProduce(t),
        (Some(_), _, _) => Route::WrongMethod,
        (None, _, _) => Route::NotFound,
    }
}

/// The consumer and cursor paths (`None`: not one of them).
fn subscription_route(method: &str, segs: &[String], s: &[&str]) -> Option<Route> {
    let (head, tail) = match s {
        [_, _, _, "subscription", sub, tail @ ..] if !sub.is_empty() => (&segs[..3], tail),
        _ => return None,
    };
    let sub = SubPath {
        topic: topic(true, head, None)?,
        subscription: segs[4].clone(),
    };
    let is_consumer = |c: &str| c == "consumer" || c == "consumers";
    Some(match (tail, method) {
        ([], "POST") => Route::CreateConsumer(sub),
        (["cursor"], "GET") => Route::GetCursor(sub),
        (["cursor"], "POST") => Route::Ack(sub),
        ([c, id], "DELETE") if is_consumer(c) && !id.is_empty() => {
            Route::DeleteConsumer(sub, id.to_string())
        }
        ([c, id, "messages"], "GET") if is_consumer(c) && !id.is_empty() => {
            Route::Fetch(sub, id.to_string())
        }
        ([c, id, "nack"], "POST") if is_consumer(c) && !id.is_empty() => {
            Route::Nack(sub, id.to_string())
        }
        ([] | ["cursor"], _) => Route::WrongMethod,
        ([c, id], _) | ([c, id, "messages" | "nack"], _) if is_consumer(c) && !id.is_empty() => {
            Route::WrongMethod
        }
        _ => Route::NotFound,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(persistent: bool, t: &str, p: Option<u32>) -> TopicPath {
        TopicPath {
            persistent,
            tenant: "public".into(),
            namespace: "default".into(),
            topic: t.into(),
            partition: p,
        }
    }

    #[test]
    fn pip64_and_broker_paths() {
        assert_eq!(
            route("POST", "/topics/public/default/t"),
            Route::Produce(tp(true, "t", None))
        );
        assert_eq!(
            route("POST", "/topics/public/default/t/partitions/3"),
            Route::Produce(tp(true, "t", Some(3)))
        );
        assert_eq!(
            route("POST", "/topics/persistent/public/default/t"),
            Route::BrokerProduce(tp(true, "t", None))
        );
        assert_eq!(
            route(
                "POST",
                "/topics/non-persistent/public/default/t/partitions/1"
            ),
            Route::BrokerProduce(tp(false, "t", Some(1)))
        );
        assert_eq!(
            route("GET", "/topics/public/default/t/partitions/2/messages"),
            Route::Read(tp(true, "t", Some(2)))
        );
        assert_eq!(
            route("GET", "/topics/public/default/a%20b/messages"),
            Route::Read(tp(true, "a b", None))
        );
        assert_eq!(route("GET", "/healthz"), Route::Healthz);
    }

    #[test]
    fn the_rest_is_404_or_405() {
        assert_eq!(route("GET", "/topics/public/default/t"), Route::WrongMethod);
        assert_eq!(route("DELETE", "/healthz"), Route::WrongMethod);
        assert_eq!(
            route("POST", "/topics/public/default/t/partitions/x"),
            Route::NotFound
        );
        assert_eq!(route("POST", "/topics/public//t"), Route::NotFound);
        assert_eq!(route("POST", "/nope"), Route::NotFound);
        assert_eq!(route("POST", "/topics/a/b/c/d/e/f/g"), Route::NotFound);
        assert_eq!(route("GET", "/topics/a/b/%zz/messages"), Route::NotFound);
    }

    #[test]
    fn consumer_and_cursor_paths() {
        let sub = SubPath {
            topic: tp(true, "t", None),
            subscription: "s 1".into(),
        };
        let base = "/topics/public/default/t/subscription/s%201";
        assert_eq!(route("POST", base), Route::CreateConsumer(sub.clone()));
        assert_eq!(
            route("POST", &format!("{base}/")),
            Route::CreateConsumer(sub.clone())
        );
        assert_eq!(
            route("GET", &format!("{base}/cursor")),
            Route::GetCursor(sub.clone())
        );
        assert_eq!(
            route("POST", &format!("{base}/cursor")),
            Route::Ack(sub.clone())
        );
        for c in ["consumer", "consumers"] {
            assert_eq!(
                route("GET", &format!("{base}/{c}/a~b~c/messages")),
                Route::Fetch(sub.clone(), "a~b~c".into())
            );
            assert_eq!(
                route("DELETE", &format!("{base}/{c}/x")),
                Route::DeleteConsumer(sub.clone(), "x".into())
            );
            assert_eq!(
                route("POST", &format!("{base}/{c}/x/nack")),
                Route::Nack(sub.clone(), "x".into())
            );
        }
        assert_eq!(route("GET", base), Route::WrongMethod);
        assert_eq!(
            route("DELETE", &format!("{base}/cursor")),
            Route::WrongMethod
        );
        assert_eq!(
            route("POST", &format!("{base}/consumer/x/messages")),
            Route::WrongMethod
        );
        assert_eq!(
            route("GET", &format!("{base}/consumer/x")),
            Route::WrongMethod
        );
        assert_eq!(route("GET", &format!("{base}/other")), Route::NotFound);
        assert_eq!(
            route("DELETE", &format!("{base}/consumer//")),
            Route::NotFound
        );
        assert_eq!(
            route("POST", "/topics/public/default/t/subscription"),
            Route::NotFound
        );
        // A topic named "subscription" still produces.
        assert_eq!(
            route("POST", "/topics/public/default/subscription"),
            Route::Produce(tp(true, "subscription", None))
        );
    }

    #[test]
    fn labels_name_their_routes() {
        let label = |m: &str, p: &str| ROUTE_LABELS[route(m, p).label_index()];
        let sub = "/topics/a/b/c/subscription/s";
        for (m, p, want) in [
            ("POST", "/topics/a/b/c", "produce"),
            ("POST", "/topics/persistent/a/b/c", "broker_produce"),
            ("GET", "/topics/a/b/c/messages", "read"),
            ("POST", sub, "create_consumer"),
            ("GET", &format!("{sub}/consumer/x/messages"), "fetch"),
            ("DELETE", &format!("{sub}/consumers/x"), "delete_consumer"),
            ("POST", &format!("{sub}/consumer/x/nack"), "nack"),
            ("GET", &format!("{sub}/cursor"), "get_cursor"),
            ("POST", &format!("{sub}/cursor"), "ack"),
            ("GET", "/healthz", "healthz"),
            ("GET", "/readyz", "readyz"),
            ("GET", "/metrics", "metrics"),
            ("GET", "/openapi.json", "openapi"),
            ("POST", "/metrics", "wrong_method"),
            ("GET", "/nope", "not_found"),
        ] {
            assert_eq!(label(m, p), want, "{m} {p}");
        }
    }

    #[test]
    fn names() {
        assert_eq!(
            tp(true, "t", Some(1)).name(),
            "persistent://public/default/t"
        );
        assert_eq!(
            tp(false, "t", None).name(),
            "non-persistent://public/default/t"
        );
    }
}
