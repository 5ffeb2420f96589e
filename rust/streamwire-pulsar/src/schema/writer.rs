//! The writer's schemas of a received message (pure): a consumer decodes
//! each message with the schema version it was written with, resolved to its own schema
//! (`project`). This module turns the registry's description of a version into the writer's
//! record codecs (for a KEY_VALUE version, of each half) and keeps them per topic and
//! version, so that only the first message of a version costs a GET_SCHEMA round trip (which
//! the front end makes: it knows how to wait).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::arrow_kv::HalfCodec;
use super::keyvalue::split_kv_schema;
use super::value::ValueError;
use super::{RecordCodec, RecordEncoding, SchemaInfo, SchemaType};

/// The record schemas of a writer's version that differ from the reader's: `value` for a
/// record schema, `key` and `value` halves for a KEY_VALUE one (None: the reader's own).
#[derive(Debug, Default)]
pub struct Writer {
    pub key: Option<Arc<RecordCodec>>,
    pub value: Option<Arc<RecordCodec>>,
}

/// A reader's schema as writer resolution needs it: each half's codec and registry
/// description.
#[derive(Debug, Clone, Copy)]
pub enum Reader<'c> {
    Plain(HalfCodec<'c>, &'c SchemaInfo),
    KeyValue {
        key: (HalfCodec<'c>, &'c SchemaInfo),
        value: (HalfCodec<'c>, &'c SchemaInfo),
    },
}

/// The writer's codec of one record half: None when it is the reader's definition or not a
/// record schema of the same encoding family (then the reader's codec reads it).
fn writer_half(
    (reader, reader_info): (HalfCodec<'_>, &SchemaInfo),
    info: &SchemaInfo,
) -> Result<Option<Arc<RecordCodec>>, ValueError> {
    let HalfCodec::Record(own) = reader else {
        return Ok(None);
    };
    if info.data == reader_info.data {
        return Ok(None);
    }
    let enc = match info.kind {
        SchemaType::Json => RecordEncoding::Json,
        SchemaType::Avro => RecordEncoding::Avro,
        other => {
            return Err(ValueError(format!(
                "message written with a {} schema, read with {}",
                SchemaInfo::type_name(other),
                SchemaInfo::type_name(reader_info.kind)
            )))
        }
    };
    let c = RecordCodec::new(enc, &info.data)
        .map_err(|e| ValueError(format!("writer schema: {e}")))?
        .with_enum_values(Arc::clone(&own.enum_values));
    Ok(Some(Arc::new(c)))
}

/// The writer's schemas of version `got` (what the registry gave for a message's version;
/// None: a version it no longer has) for `reader`, whose whole description is `own`. None:
/// read with the reader's own schemas.
pub fn writer_of(
    reader: Reader<'_>,
    own: &SchemaInfo,
    got: Option<&SchemaInfo>,
) -> Result<Option<Arc<Writer>>, ValueError> {
    let Some(info) = got.filter(|i| i.data != own.data) else {
        return Ok(None);
    };
    let w = match reader {
        Reader::KeyValue { key, value } => {
            let (k, v, _) =
                split_kv_schema(info).map_err(|e| ValueError(format!("writer schema: {}", e.0)))?;
            Writer {
                key: writer_half(key, &k)?,
                value: writer_half(value, &v)?,
            }
        }
        Reader::Plain(half, reader_info) => Writer {
            key: None,
            value: writer_half((half, reader_info), info)?,
        },
    };
    Ok((w.key.is_some() || w.value.is_some()).then(|| Arc::new(w)))
}

/// topic → version → the writer's schemas; None: that version is the reader's own. Nested
/// so that the per-message look-up borrows the topic and version (no allocation).
type Versions = HashMap<Arc<str>, HashMap<Vec<u8>, Option<Arc<Writer>>>>;

/// The writer versions a consumer has resolved so far.
#[derive(Debug, Default)]
pub struct WriterCache {
    versions: Mutex<Versions>,
}

impl WriterCache {
    /// The writer of `version` on `topic` when it is known (`Some(None)`: the reader's own).
    pub fn get(&self, topic: &str, version: &[u8]) -> Option<Option<Arc<Writer>>> {
        self.lock()
            .get(topic)
            .and_then(|by_version| by_version.get(version))
            .cloned()
    }

    /// Remember the writer of `version` on `topic`.
    pub fn insert(&self, topic: &Arc<str>, version: &[u8], writer: Option<Arc<Writer>>) {
        self.lock()
            .entry(Arc::clone(topic))
            .or_default()
            .insert(version.to_vec(), writer);
    }

    fn lock(&self) -> MutexGuard<'_, Versions> {
        self.versions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(kind: SchemaType, data: &str) -> SchemaInfo {
        SchemaInfo {
            name: "t".into(),
            kind,
            data: data.as_bytes().to_vec(),
            properties: Vec::new(),
        }
    }

    const V1: &str = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}"#;
    const V2: &str = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"},
        {"name":"b","type":["null","string"],"default":null}]}"#;

    #[test]
    fn the_readers_own_version_needs_no_writer_and_another_gets_one() {
        let own = info(SchemaType::Avro, V2);
        let codec = RecordCodec::new(RecordEncoding::Avro, V2.as_bytes()).unwrap();
        let reader = Reader::Plain(HalfCodec::Record(&codec), &own);
        assert!(writer_of(reader, &own, Some(&own)).unwrap().is_none());
        assert!(writer_of(reader, &own, None).unwrap().is_none());
        let w = writer_of(reader, &own, Some(&info(SchemaType::Avro, V1)))
            .unwrap()
            .unwrap();
        assert_eq!(w.value.as_ref().unwrap().schema.nodes.len(), 2);
        let e = writer_of(reader, &own, Some(&info(SchemaType::String, ""))).unwrap_err();
        assert_eq!(e.0, "message written with a STRING schema, read with AVRO");
        let cache = WriterCache::default();
        let topic: Arc<str> = Arc::from("persistent://a/b/c");
        assert!(cache.get(&topic, b"v1").is_none());
        cache.insert(&topic, b"v1", Some(w));
        assert!(cache.get(&topic, b"v1").unwrap().is_some());
    }
}
