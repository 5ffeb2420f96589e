//! Pattern (regex) subscriptions, as Java's `PatternMultiTopicsConsumerImpl`: the topics of one
//! namespace whose names match (persistent ones, non-persistent ones or both, as
//! `ConsumerConfig::regex_mode` says), listed again every `period`. New matching topics (all their
//! partitions) get partition consumers; topics no longer listed lose theirs; partitions a
//! partitioned topic gained are added.
//!
//! The engine does not interpret the pattern itself: a [`TopicFilter`] says which names match
//! (the Python binding asks the caller's own compiled `re.Pattern`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use streamwire_core::error::{Error, Result};
use streamwire_core::periodic;

use super::{Consumer, ConsumerConfig};
use crate::client::PulsarClient;
use crate::topic::TopicName;

/// Given full topic names (no partition suffix), which match; `None` when it cannot tell now
/// (that round of discovery is skipped, nothing is removed).
pub type TopicFilter = Arc<dyn Fn(&[String]) -> Option<Vec<bool>> + Send + Sync>;

/// The namespace (`tenant/ns`) a topic pattern lists, from its literal prefix: the pattern
/// `persistent://tenant/ns/orders-.*` lists `tenant/ns`. Escapes (`re.escape`) are ignored; a
/// pattern without tenant and namespace lists `public/default`.
pub fn namespace_of(pattern: &str) -> Result<String> {
    let p = pattern.trim_start_matches('^').replace('\\', "");
    let rest = p
        .strip_prefix("persistent://")
        .or_else(|| p.strip_prefix("non-persistent://"))
        .unwrap_or(&p);
    let parts: Vec<&str> = rest.split('/').collect();
    let ns = match parts.len() {
        1 => "public/default".to_owned(),
        n if n >= 3 => format!("{}/{}", parts[0], parts[1]),
        _ => {
            return Err(Error::invalid(format!(
                "topic pattern {pattern:?} must look like persistent://tenant/namespace/<regex>"
            )))
        }
    };
    if ns.is_empty()
        || ns
            .chars()
            .any(|c| ".*+?()[]{}|^$".contains(c) || c.is_whitespace())
    {
        return Err(Error::invalid(format!(
            "the tenant and namespace of topic pattern {pattern:?} must be literal"
        )));
    }
    Ok(ns)
}

/// What one round of discovery changes.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Diff {
    /// Matching topics not consumed yet.
    pub new: Vec<TopicName>,
    /// Partitioned topics consumed, listed with a partition not consumed.
    pub grown: Vec<TopicName>,
    /// Topics consumed and no longer listed.
    pub gone: Vec<String>,
}

/// Compare a namespace listing with the partitions consumed (`base -> partition indices`,
/// -1 for a non-partitioned topic). `None` when the filter cannot tell.
pub(crate) fn diff(
    listed: &[String],
    filter: &TopicFilter,
    current: &BTreeMap<String, BTreeSet<i32>>,
) -> Option<Diff> {
    let mut by_base: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
    for n in listed {
        let Ok(t) = TopicName::parse(n) else {
            continue;
        };
        let p = t.partition_index().map_or(-1, |p| p as i32);
        by_base.entry(t.base().to_string()).or_default().insert(p);
    }
    let names: Vec<String> = by_base.keys().cloned().collect();
    let ok = filter(&names)?;
    if ok.len() != names.len() {
        return None;
    }
    let mut d = Diff::default();
    let mut matched = BTreeSet::new();
    for (name, keep) in names.iter().zip(ok) {
        if !keep {
            continue;
        }
        matched.insert(name.clone());
        let Ok(t) = TopicName::parse(name) else {
            continue;
        };
        match current.get(name) {
            None => d.new.push(t),
            Some(have) => {
                let partitioned = !have.contains(&-1);
                if partitioned && by_base[name].iter().any(|p| *p >= 0 && !have.contains(p)) {
                    d.grown.push(t);
                }
            }
        }
    }
    d.gone = current
        .keys()
        .filter(|k| !matched.contains(*k))
        .cloned()
        .collect();
    Some(d)
}

/// [`diff`] on a blocking thread: the filter may wait for the Python interpreter, which must
/// not hold up an I/O thread.
async fn diff_off_runtime(
    listed: Vec<String>,
    filter: TopicFilter,
    current: BTreeMap<String, BTreeSet<i32>>,
) -> Option<Diff> {
    tokio::task::spawn_blocking(move || diff(&listed, &filter, &current))
        .await
        .ok()
        .flatten()
}

impl Consumer {
    /// Subscribe to every topic of `namespace` the filter accepts, now and (every `period`;
    /// zero: never) later. No topic matching yet is not an error.
    pub async fn subscribe_pattern(
        client: &PulsarClient,
        namespace: &str,
        label: String,
        filter: TopicFilter,
        period: Duration,
        cfg: ConsumerConfig,
    ) -> Result<Consumer> {
        cfg.validate()?;
        let listed = client
            .topics_of_namespace_in(namespace, cfg.regex_mode)
            .await?;
        let d = diff_off_runtime(listed, filter.clone(), BTreeMap::new())
            .await
            .ok_or_else(|| Error::invalid("the topic pattern could not be evaluated"))?;
        let mut targets = Vec::new();
        for t in &d.new {
            targets.extend(expand(client, t, &BTreeSet::new()).await?);
        }
        let consumer = Self::start(client, targets, cfg, label).await?;
        if !period.is_zero() {
            consumer.spawn_discovery(namespace.to_owned(), filter, period);
        }
        Ok(consumer)
    }

    fn spawn_discovery(&self, namespace: String, filter: TopicFilter, period: Duration) {
        let what = Arc::new((namespace, filter));
        periodic::every(Arc::downgrade(&self.inner), period, move |inner| {
            let what = Arc::clone(&what);
            async move {
                let c = Consumer { inner };
                if c.is_closed() {
                    return false;
                }
                // A failed round (broker away, a subscribe refused) is tried again next tick.
                let _ = c.rediscover(&what.0, &what.1).await;
                true
            }
        });
    }

    /// One round of discovery: list, compare, add and remove partition consumers.
    pub async fn rediscover(&self, namespace: &str, filter: &TopicFilter) -> Result<()> {
        let client = self.inner.client.clone();
        // The same kinds of topics as the first listing, every round.
        let listed = client
            .topics_of_namespace_in(namespace, self.inner.cfg.regex_mode)
            .await?;
        let current = self.consumed();
        let Some(d) = diff_off_runtime(listed, filter.clone(), current.clone()).await else {
            return Ok(());
        };
        let gone: BTreeSet<&str> = d.gone.iter().map(String::as_str).collect();
        if !gone.is_empty() {
            let _m = self.inner.membership.lock().await;
            for s in self.live_slots() {
                if gone.contains(s.topic.base().to_string().as_str()) {
                    Self::retire(&s).await;
                }
            }
        }
        let mut targets = Vec::new();
        let mut first_err = None;
        // New topics start where the consumer's options say (as Java's pattern consumer);
        // partitions a consumed topic gained start at their earliest message.
        let own = Arc::clone(&self.inner.cfg);
        let grown = Arc::new(own.for_grown_partitions());
        let kinds = d
            .new
            .iter()
            .map(|t| (t, &own))
            .chain(d.grown.iter().map(|t| (t, &grown)));
        for (t, cfg) in kinds {
            let have = current.get(&t.to_string()).cloned().unwrap_or_default();
            match expand(&client, t, &have).await {
                Ok(more) => targets.extend(more.into_iter().map(|p| (p, cfg))),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        // One topic refusing (deleted meanwhile) must not keep the others out.
        for (t, cfg) in targets {
            if let Err(e) = self.add_partitions(vec![t], cfg).await {
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Subscribe to the partitions `topic` (a partitioned topic this consumer reads) gained
    /// since it was subscribed, as Java's multi-topic consumer's partition auto-update does;
    /// the number added. New partitions start at their earliest message
    /// (`ConsumerConfig::for_grown_partitions`). A topic that is not partitioned, or not read
    /// by this consumer, adds nothing.
    pub(crate) async fn add_grown_partitions(&self, topic: &TopicName) -> Result<usize> {
        self.check_open()?;
        let Some(have) = self.consumed().remove(&topic.base().to_string()) else {
            return Ok(0);
        };
        if have.contains(&-1) {
            return Ok(0);
        }
        // Partitions are never taken away (Pulsar only lets their number grow); a count of
        // 0 (the metadata of a topic deleted meanwhile) adds nothing.
        let count = self.inner.client.partitions(topic).await?;
        let targets: Vec<TopicName> = (0..count)
            .filter(|i| !have.contains(&(*i as i32)))
            .map(|i| topic.partition(i))
            .collect();
        let n = targets.len();
        if n > 0 {
            let cfg = Arc::new(self.inner.cfg.for_grown_partitions());
            self.add_partitions(targets, &cfg).await?;
        }
        Ok(n)
    }

    /// Base topic -> partition indices consumed now (-1: not partitioned).
    fn consumed(&self) -> BTreeMap<String, BTreeSet<i32>> {
        let mut m: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
        for s in self.slots().iter() {
            if !s.removed.load(Ordering::Acquire) {
                m.entry(s.topic.base().to_string())
                    .or_default()
                    .insert(s.partition);
            }
        }
        m
    }
}

/// The partitions of `t` not in `have` (the topic itself when it is not partitioned).
async fn expand(
    client: &PulsarClient,
    t: &TopicName,
    have: &BTreeSet<i32>,
) -> Result<Vec<TopicName>> {
    let n = client.partitions(t).await?;
    if n == 0 {
        return Ok(if have.contains(&-1) {
            Vec::new()
        } else {
            vec![t.clone()]
        });
    }
    Ok((0..n)
        .filter(|i| !have.contains(&(*i as i32)))
        .map(|i| t.partition(i))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_but(skip: &'static str) -> TopicFilter {
        Arc::new(move |names: &[String]| Some(names.iter().map(|n| !n.ends_with(skip)).collect()))
    }

    fn set(v: &[i32]) -> BTreeSet<i32> {
        v.iter().copied().collect()
    }

    #[test]
    fn namespace_from_pattern() {
        assert_eq!(
            namespace_of("persistent://t1/ns1/orders-.*").unwrap(),
            "t1/ns1"
        );
        assert_eq!(
            namespace_of(r"persistent://my\-t/ns/a\-b.*").unwrap(),
            "my-t/ns"
        );
        assert_eq!(namespace_of("orders-.*").unwrap(), "public/default");
        assert!(namespace_of("persistent://t.*/ns/x").is_err());
        assert!(namespace_of("a/b").is_err());
    }

    #[test]
    fn new_grown_and_gone() {
        let p = "persistent://t/n/";
        let listed: Vec<String> = [
            "a",
            "b-partition-0",
            "b-partition-1",
            "b-partition-2",
            "skip",
            "c-partition-0",
        ]
        .iter()
        .map(|s| format!("{p}{s}"))
        .collect();
        let mut cur = BTreeMap::new();
        cur.insert(format!("{p}b"), set(&[0, 1]));
        cur.insert(format!("{p}c"), set(&[0, 1]));
        cur.insert(format!("{p}old"), set(&[-1]));
        let d = diff(&listed, &all_but("skip"), &cur).unwrap();
        assert_eq!(d.new, vec![TopicName::parse(&format!("{p}a")).unwrap()]);
        assert_eq!(d.grown, vec![TopicName::parse(&format!("{p}b")).unwrap()]);
        assert_eq!(d.gone, vec![format!("{p}old")]);
    }

    #[test]
    fn undecided_filter_changes_nothing() {
        let f: TopicFilter = Arc::new(|_: &[String]| None);
        let mut cur = BTreeMap::new();
        cur.insert("persistent://t/n/x".to_owned(), set(&[-1]));
        assert_eq!(diff(&[], &f, &cur), None);
    }
}
