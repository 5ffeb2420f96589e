//! Topic names: parsing, normalisation and partition suffixes (pure).
//!
//! Accepted forms, as the Java client accepts them:
//! - `name` → `persistent://public/default/name`
//! - `tenant/namespace/name` → `persistent://tenant/namespace/name`
//! - `persistent://tenant/namespace/name` and `non-persistent://tenant/namespace/name`
//!
//! A `-partition-N` suffix marks one partition of a partitioned topic.

use std::fmt;

use streamwire_core::error::{Error, Result};

pub const PARTITION_SUFFIX: &str = "-partition-";

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopicName {
    persistent: bool,
    tenant: String,
    namespace: String,
    local: String,
    /// `Some(n)` when the local name ends in `-partition-n`.
    partition: Option<u32>,
}

fn bad(topic: &str, why: &str) -> Error {
    Error::invalid(format!("invalid topic name {topic:?}: {why}"))
}

fn check_part(topic: &str, part: &str, what: &str) -> Result<()> {
    if part.is_empty() {
        return Err(bad(topic, &format!("empty {what}")));
    }
    // Tenants and namespaces follow Pulsar's NamedEntity rule: [-=:.\w]+
    if what != "topic" {
        let ok = part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '=' | ':' | '.'));
        if !ok {
            return Err(bad(
                topic,
                &format!("{what} {part:?} has characters outside [-=:.\\w]"),
            ));
        }
    }
    Ok(())
}

impl TopicName {
    pub fn parse(topic: &str) -> Result<TopicName> {
        if topic.is_empty() {
            return Err(bad(topic, "empty"));
        }
        if topic.chars().any(|c| c.is_control()) {
            return Err(bad(topic, "contains control characters"));
        }
        let (persistent, rest) = if let Some(r) = topic.strip_prefix("persistent://") {
            (true, r)
        } else if let Some(r) = topic.strip_prefix("non-persistent://") {
            (false, r)
        } else if topic.contains("://") {
            return Err(bad(
                topic,
                "domain must be persistent:// or non-persistent://",
            ));
        } else {
            (true, topic)
        };
        let has_domain = rest.len() != topic.len();
        let parts: Vec<&str> = rest.splitn(3, '/').collect();
        let (tenant, namespace, local) = match parts.as_slice() {
            [name] if !has_domain => ("public", "default", *name),
            [t, n, l] => (*t, *n, *l),
            _ => return Err(bad(
                topic,
                "expected a short name, tenant/namespace/topic, or domain://tenant/namespace/topic",
            )),
        };
        check_part(topic, tenant, "tenant")?;
        check_part(topic, namespace, "namespace")?;
        check_part(topic, local, "topic")?;
        if local.contains('/') {
            return Err(bad(topic, "topic part must not contain '/'"));
        }
        let partition = local
            .rfind(PARTITION_SUFFIX)
            .and_then(|i| local[i + PARTITION_SUFFIX.len()..].parse::<u32>().ok());
        Ok(TopicName {
            persistent,
            tenant: tenant.to_owned(),
            namespace: namespace.to_owned(),
            local: local.to_owned(),
            partition,
        })
    }

    pub fn is_persistent(&self) -> bool {
        self.persistent
    }

    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The local name, including any `-partition-N` suffix.
    pub fn local_name(&self) -> &str {
        &self.local
    }

    /// `tenant/namespace`.
    pub fn namespace_path(&self) -> String {
        format!("{}/{}", self.tenant, self.namespace)
    }

    pub fn partition_index(&self) -> Option<u32> {
        self.partition
    }

    /// The partitioned topic this partition belongs to (itself if it is not a partition).
    pub fn base(&self) -> TopicName {
        match self.partition {
            None => self.clone(),
            Some(_) => {
                let i = self
                    .local
                    .rfind(PARTITION_SUFFIX)
                    .unwrap_or(self.local.len());
                TopicName {
                    local: self.local[..i].to_owned(),
                    partition: None,
                    ..self.clone()
                }
            }
        }
    }

    /// Partition `n` of this topic.
    pub fn partition(&self, n: u32) -> TopicName {
        let base = self.base();
        TopicName {
            local: format!("{}{PARTITION_SUFFIX}{n}", base.local),
            partition: Some(n),
            ..base
        }
    }
}

impl fmt::Display for TopicName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let domain = if self.persistent {
            "persistent"
        } else {
            "non-persistent"
        };
        write!(
            f,
            "{domain}://{}/{}/{}",
            self.tenant, self.namespace, self.local
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_normalised() {
        let t = TopicName::parse("orders").unwrap();
        assert_eq!(t.to_string(), "persistent://public/default/orders");
        let t = TopicName::parse("acme/ns1/orders").unwrap();
        assert_eq!(t.to_string(), "persistent://acme/ns1/orders");
        let t = TopicName::parse("non-persistent://acme/ns1/x").unwrap();
        assert!(!t.is_persistent());
        assert_eq!(t.to_string(), "non-persistent://acme/ns1/x");
    }

    #[test]
    fn partitions() {
        let t = TopicName::parse("persistent://a/b/c-partition-7").unwrap();
        assert_eq!(t.partition_index(), Some(7));
        assert_eq!(t.base().to_string(), "persistent://a/b/c");
        assert_eq!(
            t.base().partition(2).to_string(),
            "persistent://a/b/c-partition-2"
        );
        let t = TopicName::parse("c-partition-x").unwrap();
        assert_eq!(t.partition_index(), None);
    }

    #[test]
    fn invalid_names_are_rejected() {
        for bad in [
            "",
            "a/b",
            "a/b/c/d/",
            "http://a/b/c",
            "persistent://a/b",
            "persistent:///b/c",
            "persistent://a//c",
            "persistent://a/b/",
            "persistent://te nant/b/c",
            "x\ny",
        ] {
            let e = TopicName::parse(bad).unwrap_err();
            assert_eq!(
                e.kind(),
                streamwire_core::error::ErrorKind::InvalidArgument,
                "{bad}"
            );
            assert!(e.to_string().contains("invalid topic name"), "{e}");
        }
    }
}
