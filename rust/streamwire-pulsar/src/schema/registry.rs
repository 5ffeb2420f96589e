//! The broker's schema registry over the binary protocol: GET_SCHEMA (a topic's schema,
//! latest or by version), which consumers use to decode each message with the version it
//! was written with, and GET_OR_CREATE_SCHEMA (register a schema with a topic, or find the
//! version it already has), which a producer sends before a message whose schema is not its
//! own (as the Java client's multi-schema producers do) — the producer's own schema travels
//! in PRODUCER.
//!
//! Command building is pure (`get_schema_command`, `get_or_create_schema_command`); the
//! request goes to the topic owner's connection.

use streamwire_core::error::Result;

use super::SchemaInfo;
use crate::client::PulsarClient;
use crate::protocol::pb;
use crate::protocol::pb::base_command::Type;
use crate::server_error::server_error;
use crate::topic::TopicName;

/// GET_SCHEMA for `topic`, of `version` (None: the latest).
pub fn get_schema_command(topic: &str, request_id: u64, version: Option<&[u8]>) -> pb::BaseCommand {
    let mut cmd = pb::BaseCommand::default();
    cmd.set_type(Type::GetSchema);
    cmd.get_schema = Some(Box::new(pb::CommandGetSchema {
        request_id,
        topic: topic.to_owned(),
        schema_version: version.map(bytes::Bytes::copy_from_slice),
    }));
    cmd
}

/// GET_OR_CREATE_SCHEMA of `schema` for `topic`.
pub fn get_or_create_schema_command(
    topic: &str,
    request_id: u64,
    schema: &SchemaInfo,
) -> pb::BaseCommand {
    let mut cmd = pb::BaseCommand::default();
    cmd.set_type(Type::GetOrCreateSchema);
    cmd.get_or_create_schema = Some(Box::new(pb::CommandGetOrCreateSchema {
        request_id,
        topic: topic.to_owned(),
        schema: schema.to_proto(),
        producer_name: None,
    }));
    cmd
}

impl PulsarClient {
    /// Register `schema` with `topic` (or find it there) and give its version bytes. The
    /// broker checks it against the topic's compatibility policy: a refusal is the
    /// IncompatibleSchema server error. The topic must exist (a producer or consumer
    /// creates it); a BYTES schema (`SchemaType::None`) gets an empty version.
    pub async fn get_or_create_schema(
        &self,
        topic: &TopicName,
        schema: &SchemaInfo,
    ) -> Result<Vec<u8>> {
        let name = topic.to_string();
        let (conn, _) = self.connection_for(topic).await?;
        let rid = conn.new_request_id();
        let frame = conn
            .request(
                rid,
                "get or create schema",
                get_or_create_schema_command(&name, rid, schema),
            )
            .await
            .map_err(|e| e.context(format!("register a schema with {name}")))?;
        let resp = frame
            .command
            .get_or_create_schema_response
            .unwrap_or_default();
        if let Some(code) = resp.error_code {
            return Err(
                server_error(code, resp.error_message.as_deref().unwrap_or(""))
                    .context(format!("register a schema with {name}")),
            );
        }
        Ok(resp.schema_version.as_deref().unwrap_or_default().to_vec())
    }

    /// The schema of `topic` at `version` (None: the latest) and its version bytes, or None
    /// when the topic has no schema (or not that version).
    pub async fn get_schema(
        &self,
        topic: &TopicName,
        version: Option<&[u8]>,
    ) -> Result<Option<(SchemaInfo, Vec<u8>)>> {
        let name = topic.to_string();
        let (conn, _) = self.connection_for(topic).await?;
        let rid = conn.new_request_id();
        let frame = conn
            .request(rid, "get schema", get_schema_command(&name, rid, version))
            .await
            .map_err(|e| e.context(format!("get schema of {name}")))?;
        let resp = frame.command.get_schema_response.unwrap_or_default();
        if let Some(code) = resp.error_code {
            // TopicNotFound here means "no such schema" (Java's SchemaNotFound mapping).
            if code == crate::server_error::code::TOPIC_NOT_FOUND {
                return Ok(None);
            }
            return Err(
                server_error(code, resp.error_message.as_deref().unwrap_or(""))
                    .context(format!("get schema of {name}")),
            );
        }
        Ok(resp.schema.as_ref().map(|s| {
            (
                SchemaInfo::from_proto(s),
                resp.schema_version.as_deref().unwrap_or_default().to_vec(),
            )
        }))
    }
}
