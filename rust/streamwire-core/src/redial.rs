//! One logical connection to one server that re-dials after it is lost, with backoff.
//!
//! Callers ask for "the connection" with a deadline; the first caller after a loss dials (the
//! others wait for that attempt instead of dialling too), failed attempts are spaced by the
//! shared [`Backoff`], and a caller whose deadline passes gets the last dial error rather than
//! waiting on. What to resend after a reconnect is the caller's business: this only hands out
//! live connections.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Mutex;

use crate::backoff::{Backoff, BackoffConfig};
use crate::error::{Error, ErrorKind, Result};
use crate::framed::FramedConnection;
use crate::log::{event, Level};

/// A boxed dial future.
pub type DialFuture<F> = Pin<Box<dyn Future<Output = Result<FramedConnection<F>>> + Send>>;

/// Opens a new connection (TCP connect, greeting, handshake) when called.
pub type Dialer<F> = Arc<dyn Fn() -> DialFuture<F> + Send + Sync>;

struct State<F> {
    current: Option<FramedConnection<F>>,
    backoff: Backoff,
    retry_at: Option<Instant>,
    last_error: Option<Error>,
    dials: u64,
}

/// See the module documentation.
pub struct Redial<F> {
    dial: Dialer<F>,
    state: Mutex<State<F>>,
    /// Where connects, losses and failed dials are logged (`tank.connection`), and the peer
    /// named in those events; `None` logs nothing.
    log: Option<(&'static str, Arc<str>)>,
}

impl<F: Send + 'static> Redial<F> {
    /// A redialler that has not dialled yet.
    pub fn new(dial: Dialer<F>, backoff: BackoffConfig) -> Self {
        Redial {
            dial,
            state: Mutex::new(State {
                current: None,
                backoff: Backoff::new(backoff),
                retry_at: None,
                last_error: None,
                dials: 0,
            }),
            log: None,
        }
    }

    /// Log connects, losses and failed dials under `target`, naming `peer` (its address).
    pub fn with_log(mut self, target: &'static str, peer: &str) -> Self {
        self.log = Some((target, peer.into()));
        self
    }

    fn log(&self, level: Level, what: impl FnOnce(&str) -> String) {
        if let Some((target, peer)) = &self.log {
            event(level, target, || {
                (what(peer), vec![("broker", peer.to_string())])
            });
        }
    }

    /// The live connection, dialling (after the backoff delay) when there is none. Fails with
    /// the last dial error, or `Timeout`, once `deadline` passes.
    pub async fn get(&self, deadline: Instant) -> Result<FramedConnection<F>> {
        let mut state = self.state.lock().await;
        loop {
            if let Some(c) = &state.current {
                if !c.is_closed() {
                    return Ok(c.clone());
                }
                let why = c.end_reason().map(|e| e.to_string());
                self.log(Level::Warning, |peer| match &why {
                    Some(e) => format!("connection to {peer} lost ({e}); reconnecting"),
                    None => format!("connection to {peer} closed; reconnecting"),
                });
                state.current = None;
            }
            if let Some(at) = state.retry_at {
                if at > deadline {
                    return Err(give_up(&state));
                }
                tokio::time::sleep_until(at.into()).await;
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(give_up(&state));
            }
            state.dials += 1;
            match tokio::time::timeout_at(deadline.into(), (self.dial)()).await {
                Ok(Ok(conn)) => {
                    self.log(Level::Info, |peer| format!("connected to {peer}"));
                    state.backoff.reset();
                    state.retry_at = None;
                    state.last_error = None;
                    state.current = Some(conn);
                }
                Ok(Err(e)) => {
                    let delay = state.backoff.next_delay();
                    self.log(Level::Warning, |peer| {
                        format!("connecting to {peer} failed ({e}); next try in {delay:?}")
                    });
                    state.retry_at = Some(Instant::now() + delay);
                    state.last_error = Some(e);
                }
                Err(_) => {
                    let delay = state.backoff.next_delay();
                    self.log(Level::Warning, |peer| {
                        format!("connecting to {peer} timed out; next try in {delay:?}")
                    });
                    state.retry_at = Some(Instant::now() + delay);
                    state.last_error = Some(Error::new(ErrorKind::Connect, "connecting timed out"));
                }
            }
        }
    }

    /// The live connection if there is one, without dialling.
    pub async fn current(&self) -> Option<FramedConnection<F>> {
        let state = self.state.lock().await;
        state.current.clone().filter(|c| !c.is_closed())
    }

    /// Close the current connection (a suspect one: a reply that never came), so the next
    /// [`get`](Self::get) dials afresh.
    pub async fn reset(&self) {
        let mut state = self.state.lock().await;
        if let Some(c) = state.current.take() {
            c.close();
        }
    }

    /// How many dial attempts were made (for stats and tests).
    pub async fn dials(&self) -> u64 {
        self.state.lock().await.dials
    }
}

fn give_up<F>(state: &State<F>) -> Error {
    match &state.last_error {
        Some(e) => e.clone(),
        None => Error::new(ErrorKind::Timeout, "connecting timed out"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framed::{FrameCodec, FramedConfig};
    use bytes::BytesMut;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    struct Nothing;
    impl FrameCodec for Nothing {
        type Frame = ();
        fn decode(&mut self, _buf: &mut BytesMut) -> Result<Option<()>> {
            Ok(None)
        }
        fn request_id(_: &()) -> Option<u64> {
            None
        }
    }

    fn fast() -> BackoffConfig {
        BackoffConfig {
            initial: Duration::from_millis(5),
            max: Duration::from_millis(20),
            ..BackoffConfig::default()
        }
    }

    #[tokio::test]
    async fn redials_after_failures_and_after_a_loss() {
        let attempts = Arc::new(AtomicU32::new(0));
        let a = attempts.clone();
        let dial: Dialer<()> = Arc::new(move || {
            let n = a.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                if n < 2 {
                    return Err(Error::new(ErrorKind::Connect, "refused"));
                }
                let (c, s) = tokio::io::duplex(64);
                std::mem::forget(s);
                let (conn, _) = FramedConnection::start(
                    "t",
                    c,
                    Nothing,
                    FramedConfig::default(),
                    BytesMut::new(),
                );
                Ok(conn)
            })
        });
        let r = Redial::new(dial, fast());
        let deadline = Instant::now() + Duration::from_secs(5);
        let conn = r.get(deadline).await.unwrap();
        assert_eq!(attempts.load(Ordering::SeqCst), 3);
        // Same connection while it lives.
        let again = r.get(deadline).await.unwrap();
        assert_eq!(attempts.load(Ordering::SeqCst), 3);
        drop(again);
        conn.close();
        tokio::time::sleep(Duration::from_millis(20)).await;
        r.get(deadline).await.unwrap();
        assert_eq!(attempts.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn gives_the_last_error_at_the_deadline() {
        let dial: Dialer<()> =
            Arc::new(|| Box::pin(async { Err(Error::new(ErrorKind::Connect, "refused")) }));
        let r = Redial::new(dial, fast());
        let err = r
            .get(Instant::now() + Duration::from_millis(60))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Connect);
        assert!(r.dials().await >= 2);
    }
}
