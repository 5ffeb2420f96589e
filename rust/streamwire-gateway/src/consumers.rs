//! Consumer instances: PIP-64's stateful consumers, each one streamwire Pulsar consumer held
//! by this gateway node between HTTP requests.
//!
//! Why the id looks the way it does: an instance lives in one process, but a load balancer
//! may send the next request anywhere. So the id says which node holds the instance *and*
//! where that node is reached (`{name}~{node}~{base64url(advertised URL)}`): any node can
//! answer a foreign id with a redirect, with no shared state between nodes.
//!
//! Why a gateway-side buffer: `max_bytes` may stop an answer in the middle of what the
//! consumer handed over; the rest waits in the instance (served first next time) rather than
//! being dropped — a message taken from the consumer is either answered or kept.
//!
//! The id codec, the name rules, the acknowledgement log and the idle rule are pure and
//! unit-tested; the registry only adds a lock and the consumers around them.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::{STANDARD as B64, URL_SAFE_NO_PAD as B64URL};
use base64::Engine as _;

use streamwire_pulsar::client::PulsarClient;
use streamwire_pulsar::consumer::entry::ReceivedMessage;
use streamwire_pulsar::consumer::{Consumer, SubType};
use streamwire_pulsar::message_id::MessageId;

use crate::error::ApiError;
use crate::produce::ValueFormat;

/// Separates the parts of an instance id (never in a name, a node id or base64url).
const SEP: char = '~';

/// How many acknowledged ids the cursor remembers per instance (the most recent).
pub const RECENT_ACKS: usize = 100;

/// A node id: 1 to 64 of `A-Z a-z 0-9 - _`.
pub fn valid_node_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// An instance name: 1 to 128 of `A-Z a-z 0-9 . - _` (it appears in paths and ids as is).
pub fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The node id used when none is configured: derived from the advertised URL (FNV-1a), so
/// two gateways on one host get different ids and a restarted node keeps its id.
pub fn default_node_id(advertised_url: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in advertised_url.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("gw{:08x}", (h ^ (h >> 32)) as u32)
}

/// What an instance id says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceId {
    pub name: String,
    pub node: String,
    /// The holding node's advertised URL.
    pub url: String,
}

impl InstanceId {
    pub fn encode(&self) -> String {
        format!(
            "{}{SEP}{}{SEP}{}",
            self.name,
            self.node,
            B64URL.encode(self.url.as_bytes())
        )
    }

    /// `None` when `s` is not an id this gateway could have made.
    pub fn decode(s: &str) -> Option<InstanceId> {
        let mut parts = s.rsplitn(3, SEP);
        let url = parts.next()?;
        let node = parts.next()?;
        let name = parts.next()?;
        if !valid_name(name) || !valid_node_id(node) {
            return None;
        }
        let url = String::from_utf8(B64URL.decode(url).ok()?).ok()?;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return None;
        }
        Some(InstanceId {
            name: name.to_string(),
            node: node.to_string(),
            url,
        })
    }
}

/// Percent-encode one path segment (everything but RFC 3986's unreserved characters).
pub fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A base64 message id (as `MessageId.serialize()` gives) from a request.
pub fn decode_message_id(s: &str) -> Result<MessageId, ApiError> {
    let raw = B64
        .decode(s.as_bytes())
        .map_err(|e| ApiError::bad_request(format!("message id {s:?} is not base64: {e}")))?;
    // A serialized MessageIdData starts with its ledger id (field 1, varint).
    if raw.first() != Some(&0x08) {
        return Err(ApiError::bad_request(format!(
            "{s:?} is not a serialized message id"
        )));
    }
    MessageId::deserialize(&raw)
        .map_err(|e| ApiError::bad_request(format!("{s:?} is not a message id: {e}")))
}

/// The subscription type named in a creation request (Pulsar's spellings, any case).
pub fn parse_sub_type(s: &str) -> Option<SubType> {
    match s.to_ascii_lowercase().replace('-', "_").as_str() {
        "exclusive" => Some(SubType::Exclusive),
        "shared" => Some(SubType::Shared),
        "failover" => Some(SubType::Failover),
        "key_shared" | "keyshared" => Some(SubType::KeyShared),
        _ => None,
    }
}

pub fn sub_type_name(t: SubType) -> &'static str {
    match t {
        SubType::Exclusive => "Exclusive",
        SubType::Shared => "Shared",
        SubType::Failover => "Failover",
        SubType::KeyShared => "Key_Shared",
    }
}

/// What was acknowledged through the gateway by one instance (what the cursor reports).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct AckLog {
    /// Individual acknowledgements made.
    pub individual: u64,
    /// The most recent individually acknowledged ids, oldest first (at most `RECENT_ACKS`).
    pub recent: VecDeque<MessageId>,
    /// Per partition (-1: not partitioned), the highest id acknowledged cumulatively.
    pub cumulative: BTreeMap<i32, MessageId>,
    pub negative: u64,
}

impl AckLog {
    pub fn individual(&mut self, ids: &[MessageId]) {
        self.individual += ids.len() as u64;
        for id in ids {
            if self.recent.len() == RECENT_ACKS {
                self.recent.pop_front();
            }
            self.recent.push_back(*id);
        }
    }

    pub fn cumulative(&mut self, id: MessageId) {
        let e = self.cumulative.entry(id.partition).or_insert(id);
        if id > *e {
            *e = id;
        }
    }
}

/// Registry key: an instance is unique by topic, subscription and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub topic: String,
    pub subscription: String,
    pub name: String,
}

/// One consumer instance.
pub struct Instance {
    pub key: Key,
    pub id: String,
    pub base_uri: String,
    pub sub_type: SubType,
    /// How values are written in fetch answers (the instance's schema).
    pub format: ValueFormat,
    pub consumer: Consumer,
    /// Taken from the consumer, not yet answered (see the module comment). Its lock also
    /// serializes fetches of one instance.
    pub held: tokio::sync::Mutex<VecDeque<ReceivedMessage>>,
    pub acks: Mutex<AckLog>,
    pub delivered: AtomicU64,
    /// The `Authorization: Bearer` token it was created with: only requests with the same
    /// one (or, for `None`, with none) may use it.
    pub owner: Option<String>,
    /// The client made for `owner` alone, closed with the instance.
    pub client: Option<PulsarClient>,
    last_used: Mutex<Instant>,
    busy: AtomicUsize,
}

/// Marks an instance in use; it is not idle before this is dropped (and for `idle` after).
pub struct InUse(Arc<Instance>);

impl std::ops::Deref for InUse {
    type Target = Instance;
    fn deref(&self) -> &Instance {
        &self.0
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Instance {
    pub fn new(
        key: Key,
        id: String,
        base_uri: String,
        sub_type: SubType,
        format: ValueFormat,
        consumer: Consumer,
    ) -> Instance {
        Instance {
            key,
            id,
            base_uri,
            sub_type,
            format,
            consumer,
            held: tokio::sync::Mutex::new(VecDeque::new()),
            acks: Mutex::new(AckLog::default()),
            delivered: AtomicU64::new(0),
            owner: None,
            client: None,
            last_used: Mutex::new(Instant::now()),
            busy: AtomicUsize::new(0),
        }
    }

    /// Owned by the caller with `token`, talking to the broker through `client`.
    pub fn owned_by(mut self, token: Option<String>, client: Option<PulsarClient>) -> Instance {
        self.owner = token;
        self.client = client;
        self
    }

    /// Whether a request with `token` may use it.
    pub fn allows(&self, token: Option<&str>) -> bool {
        self.owner.as_deref() == token
    }

    /// Close the consumer (acknowledgements are flushed first), then its own client.
    pub async fn close(&self) {
        let _ = self.consumer.close().await;
        if let Some(c) = &self.client {
            c.close();
        }
    }

    fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    /// Idle: no request uses it and the last one ended more than `idle` before `now`.
    pub fn is_idle(&self, now: Instant, idle: Duration) -> bool {
        let last = *self.last_used.lock().unwrap_or_else(|p| p.into_inner());
        self.busy.load(Ordering::Acquire) == 0 && now.saturating_duration_since(last) > idle
    }

    pub fn ack_log(&self) -> std::sync::MutexGuard<'_, AckLog> {
        self.acks.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The instances by key, and the keys being created.
type Maps = (HashMap<Key, Arc<Instance>>, HashSet<Key>);

/// The instances of this node, and the names being created (so two creations of one name
/// cannot both subscribe).
#[derive(Default)]
pub struct Registry {
    inner: Mutex<Maps>,
}

/// A reserved name: dropped without `Registry::insert`, the name is free again.
pub struct Reservation<'a> {
    registry: &'a Registry,
    key: Option<Key>,
}

impl Reservation<'_> {
    pub fn key(&self) -> &Key {
        self.key
            .as_ref()
            .expect("reservation holds its key until inserted")
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if let Some(k) = self.key.take() {
            self.registry.lock().1.remove(&k);
        }
    }
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, Maps> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserve `key`; `None` when an instance of that name exists or is being created.
    pub fn reserve(&self, key: Key) -> Option<Reservation<'_>> {
        let mut m = self.lock();
        if m.0.contains_key(&key) || !m.1.insert(key.clone()) {
            return None;
        }
        Some(Reservation {
            registry: self,
            key: Some(key),
        })
    }

    /// Register the instance created under `r`.
    pub fn insert(&self, mut r: Reservation<'_>, inst: Arc<Instance>) {
        let key = r
            .key
            .take()
            .expect("reservation holds its key until inserted");
        let mut m = self.lock();
        m.1.remove(&key);
        m.0.insert(key, inst);
    }

    /// The instance, marked in use.
    pub fn get(&self, key: &Key) -> Option<InUse> {
        let m = self.lock();
        let inst = m.0.get(key)?.clone();
        inst.busy.fetch_add(1, Ordering::AcqRel);
        inst.touch();
        Some(InUse(inst))
    }

    /// Every instance on `topic` / `subscription`, marked in use, by name.
    pub fn on_subscription(&self, topic: &str, subscription: &str) -> Vec<InUse> {
        let m = self.lock();
        let mut v: Vec<&Arc<Instance>> =
            m.0.values()
                .filter(|i| i.key.topic == topic && i.key.subscription == subscription)
                .collect();
        v.sort_by(|a, b| a.key.name.cmp(&b.key.name));
        v.into_iter()
            .map(|i| {
                i.busy.fetch_add(1, Ordering::AcqRel);
                i.touch();
                InUse(i.clone())
            })
            .collect()
    }

    /// Take the instance out (the caller closes it).
    pub fn remove(&self, key: &Key) -> Option<Arc<Instance>> {
        self.lock().0.remove(key)
    }

    /// Take out every instance idle for longer than `idle` at `now`.
    pub fn take_idle(&self, now: Instant, idle: Duration) -> Vec<Arc<Instance>> {
        let mut m = self.lock();
        let keys: Vec<Key> =
            m.0.iter()
                .filter(|(_, i)| i.is_idle(now, idle))
                .map(|(k, _)| k.clone())
                .collect();
        keys.iter().filter_map(|k| m.0.remove(k)).collect()
    }

    /// Take out every instance (shutdown).
    pub fn take_all(&self) -> Vec<Arc<Instance>> {
        self.lock().0.drain().map(|(_, i)| i).collect()
    }

    pub fn len(&self) -> usize {
        self.lock().0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ids_round_trip_and_reject_what_they_are_not() {
        let id = InstanceId {
            name: "c.1_x-y".into(),
            node: "gw-2".into(),
            url: "http://127.0.0.1:8081".into(),
        };
        let s = id.encode();
        assert!(s.starts_with("c.1_x-y~gw-2~"), "{s}");
        assert_eq!(InstanceId::decode(&s), Some(id));
        for bad in [
            "",
            "plain",
            "a~b",
            "~gw~aHR0cDovL3g",    // no name
            "a~g w~aHR0cDovL3g",  // bad node
            "a~gw~%%%",           // not base64url
            "a~gw~ZnRwOi8veA",    // ftp://x
            "a/b~gw~aHR0cDovL3g", // name with a slash
            "a~gw~aHR0cDovL3g=",  // padded
        ] {
            assert_eq!(InstanceId::decode(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn any_valid_parts_round_trip(
            name in "[A-Za-z0-9._-]{1,40}",
            node in "[A-Za-z0-9_-]{1,20}",
            host in "[a-z0-9.-]{1,30}",
            port in 1u16..,
        ) {
            let id = InstanceId { name, node, url: format!("https://{host}:{port}/gw") };
            prop_assert_eq!(InstanceId::decode(&id.encode()), Some(id));
        }
    }

    #[test]
    fn node_ids_and_names() {
        assert!(valid_node_id("gw-1_A"));
        assert!(!valid_node_id("a.b") && !valid_node_id("") && !valid_node_id(&"x".repeat(65)));
        assert!(valid_name("my.consumer-1"));
        assert!(!valid_name("a~b") && !valid_name("a b") && !valid_name(""));
        let a = default_node_id("http://127.0.0.1:8080");
        assert_eq!(a, default_node_id("http://127.0.0.1:8080"));
        assert_ne!(a, default_node_id("http://127.0.0.1:8081"));
        assert!(valid_node_id(&a));
    }

    #[test]
    fn segments_and_message_ids() {
        assert_eq!(encode_segment("a b/c~d"), "a%20b%2Fc~d");
        let id = MessageId::new(7, 8, 2, -1, 0);
        let s = B64.encode(id.serialize());
        assert_eq!(decode_message_id(&s).unwrap(), id);
        for bad in ["%%%", "AAAA", ""] {
            assert_eq!(decode_message_id(bad).unwrap_err().code, 40001, "{bad}");
        }
        assert_eq!(parse_sub_type("Key_Shared"), Some(SubType::KeyShared));
        assert_eq!(parse_sub_type("SHARED"), Some(SubType::Shared));
        assert_eq!(parse_sub_type("nope"), None);
        assert_eq!(sub_type_name(SubType::Failover), "Failover");
    }

    #[test]
    fn the_ack_log_keeps_the_recent_ids_and_the_highest_cumulative() {
        let mut log = AckLog::default();
        let ids: Vec<MessageId> = (0..150).map(|e| MessageId::new(1, e, -1, -1, 0)).collect();
        log.individual(&ids);
        assert_eq!(log.individual, 150);
        assert_eq!(log.recent.len(), RECENT_ACKS);
        assert_eq!(log.recent.front(), Some(&ids[50]));
        log.cumulative(MessageId::new(1, 9, 0, -1, 0));
        log.cumulative(MessageId::new(1, 3, 0, -1, 0));
        log.cumulative(MessageId::new(1, 4, 1, -1, 0));
        assert_eq!(log.cumulative[&0], MessageId::new(1, 9, 0, -1, 0));
        assert_eq!(log.cumulative[&1], MessageId::new(1, 4, 1, -1, 0));
    }

    #[test]
    fn reservations_make_names_unique() {
        let r = Registry::default();
        let k = Key {
            topic: "t".into(),
            subscription: "s".into(),
            name: "n".into(),
        };
        let res = r.reserve(k.clone()).unwrap();
        assert!(r.reserve(k.clone()).is_none(), "being created");
        drop(res);
        assert!(
            r.reserve(k.clone()).is_some(),
            "free again after a failed creation"
        );
        assert!(r.is_empty());
    }
}
