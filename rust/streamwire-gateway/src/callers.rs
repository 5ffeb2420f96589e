//! `Authorization: Bearer <token>` pass-through: a request carrying a token talks to the
//! broker as that caller, through a Pulsar client made with that token. Clients are kept per
//! distinct token in a bounded LRU (so a burst of callers cannot grow the gateway without
//! bound) and closed when idle; requests without the header use the gateway's own client.
//!
//! The header parsing and the LRU are pure and unit-tested; the state owns the clients.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::ApiError;

/// Distinct callers' clients kept at once; the least recently used is closed beyond this.
pub const MAX_CALLERS: usize = 64;

/// The token of an `Authorization` header value: `None` without the header; 401 (40102) for
/// anything but `Bearer <token>` (scheme case-insensitive, one visible-ASCII token).
pub fn bearer(header: Option<&[u8]>) -> Result<Option<String>, ApiError> {
    let Some(raw) = header else { return Ok(None) };
    let bad = || {
        ApiError::new(
            401,
            2,
            "the Authorization header must be \"Bearer <token>\"",
        )
    };
    let s = std::str::from_utf8(raw).map_err(|_| bad())?.trim();
    let (scheme, token) = s.split_once(' ').ok_or_else(bad)?;
    let token = token.trim();
    let visible = |c: char| c.is_ascii_graphic();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || !token.chars().all(visible) {
        return Err(bad());
    }
    Ok(Some(token.to_string()))
}

struct Entry<V> {
    value: V,
    last_used: Instant,
}

/// A bounded map from token to value, least recently used first out.
pub struct Lru<V> {
    max: usize,
    map: Mutex<HashMap<String, Entry<V>>>,
}

impl<V: Clone> Lru<V> {
    pub fn new(max: usize) -> Self {
        Lru {
            max: max.max(1),
            map: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry<V>>> {
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The value of `key` (made by `make` if absent) and what was evicted to make room
    /// (the caller closes it).
    pub fn get_or_make<E>(
        &self,
        key: &str,
        now: Instant,
        make: impl FnOnce() -> Result<V, E>,
    ) -> Result<(V, Option<(String, V)>), E> {
        let mut map = self.lock();
        if let Some(e) = map.get_mut(key) {
            e.last_used = now;
            return Ok((e.value.clone(), None));
        }
        let value = make()?;
        let mut evicted = None;
        if map.len() >= self.max {
            let oldest = map
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                evicted = map.remove(&k).map(|e| (k, e.value));
            }
        }
        map.insert(
            key.to_string(),
            Entry {
                value: value.clone(),
                last_used: now,
            },
        );
        Ok((value, evicted))
    }

    /// Remove and return the entries unused for longer than `idle`.
    pub fn take_idle(&self, now: Instant, idle: Duration) -> Vec<(String, V)> {
        let mut map = self.lock();
        let keys: Vec<String> = map
            .iter()
            .filter(|(_, e)| now.saturating_duration_since(e.last_used) > idle)
            .map(|(k, _)| k.clone())
            .collect();
        keys.into_iter()
            .filter_map(|k| map.remove(&k).map(|e| (k, e.value)))
            .collect()
    }

    /// Remove and return every entry.
    pub fn take_all(&self) -> Vec<(String, V)> {
        self.lock().drain().map(|(k, e)| (k, e.value)).collect()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_headers() {
        assert_eq!(bearer(None).unwrap(), None);
        assert_eq!(
            bearer(Some(b"Bearer abc.def-ghi")).unwrap().as_deref(),
            Some("abc.def-ghi")
        );
        assert_eq!(
            bearer(Some(b"bearer   t0k ")).unwrap().as_deref(),
            Some("t0k")
        );
        for bad in [
            &b"Basic dXNlcjpwdw=="[..],
            b"Bearer",
            b"Bearer ",
            b"Bearer a b",
            b"token",
            b"Bearer \xff",
        ] {
            let e = bearer(Some(bad)).unwrap_err();
            assert_eq!((e.status, e.code), (401, 40102), "{bad:?}");
        }
    }

    #[test]
    fn the_lru_keeps_at_most_max_and_evicts_the_least_recently_used() {
        let lru: Lru<u32> = Lru::new(2);
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let ok = |v: u32| move || Ok::<u32, ()>(v);
        assert_eq!(lru.get_or_make("a", at(0), ok(1)).unwrap(), (1, None));
        assert_eq!(lru.get_or_make("b", at(1), ok(2)).unwrap(), (2, None));
        // "a" is used again: "b" becomes the oldest.
        assert_eq!(lru.get_or_make("a", at(2), ok(9)).unwrap(), (1, None));
        assert_eq!(
            lru.get_or_make("c", at(3), ok(3)).unwrap(),
            (3, Some(("b".to_string(), 2)))
        );
        assert_eq!(lru.len(), 2);
        // A failed make changes nothing.
        assert_eq!(
            lru.get_or_make("d", at(4), || Err::<u32, _>("no")),
            Err("no")
        );
        assert_eq!(lru.len(), 2);
        let mut idle = lru.take_idle(at(3), Duration::from_micros(500));
        idle.sort();
        assert_eq!(idle, vec![("a".to_string(), 1)]);
        assert_eq!(lru.take_all(), vec![("c".to_string(), 3)]);
        assert!(lru.is_empty());
    }
}
