//! TANK's answer codes as engine errors (pure): one place decides which kind (and so which
//! Python exception) each broker code becomes, and whether retrying may help.

use streamwire_core::error::{Error, ErrorKind, Result};

use crate::client::PartitionInfo;
use crate::codec::{
    self, CreateTopicStatus, DiscoverPartitionsResponse, ProduceStatus, RawFrame, ReloadConfStatus,
};
use crate::producer::batch::Sealed;

/// The error for one partition's produce status (`None` = acknowledged).
pub fn produce_status(topic: &str, partition: u16, status: &ProduceStatus) -> Option<Error> {
    let at = || format!("TANK topic {topic:?} partition {partition}");
    Some(match status {
        ProduceStatus::Ok => return None,
        ProduceStatus::UnknownTopic => Error::new(
            ErrorKind::TopicNotFound,
            format!("TANK topic {topic:?} does not exist (create it first)"),
        ),
        ProduceStatus::UnknownPartition => Error::new(
            ErrorKind::PartitionNotFound,
            format!("{} does not exist", at()),
        ),
        ProduceStatus::ReadOnly => Error::new(
            ErrorKind::ReadOnly,
            format!(
                "the TANK broker is read-only: nothing was written to {}",
                at()
            ),
        ),
        ProduceStatus::InvalidSeqNum => Error::new(
            ErrorKind::InvalidArgument,
            format!("{}: invalid sequence number", at()),
        ),
        ProduceStatus::SystemError => Error::new(
            ErrorKind::Server,
            format!("the TANK broker failed to store to {} (system error)", at()),
        )
        .with_retriable(true),
        other => Error::new(
            ErrorKind::Server,
            format!("the TANK broker did not store to {}: {other:?}", at()),
        )
        .with_retriable(true),
    })
}

/// One outcome per part of a sealed Produce request, from its response.
pub fn produce_outcome(topic: &str, sealed: &Sealed, frame: &RawFrame) -> Vec<Result<()>> {
    let partitions: Vec<u16> = sealed.parts.iter().map(|p| p.partition).collect();
    match codec::decode_produce_response(&frame.payload, &[partitions.len()]) {
        Ok(resp) => partitions
            .iter()
            .enumerate()
            .map(|(i, &p)| match resp.status(0, i) {
                Some(s) => produce_status(topic, p, &s).map_or(Ok(()), Err),
                None => Err(Error::new(
                    ErrorKind::Protocol,
                    "the TANK produce response has no status for a partition",
                )),
            })
            .collect(),
        Err(e) => {
            let e = Error::from(e);
            partitions.iter().map(|_| Err(e.clone())).collect()
        }
    }
}

pub fn create_topic_result(topic: &str, status: CreateTopicStatus) -> Result<()> {
    Err(match status {
        CreateTopicStatus::Ok => return Ok(()),
        CreateTopicStatus::AlreadyExists => Error::new(
            ErrorKind::InvalidArgument,
            format!("TANK topic {topic:?} already exists"),
        )
        .with_detail("already_exists", 1),
        CreateTopicStatus::InvalidConfig => Error::new(
            ErrorKind::InvalidArgument,
            format!("the TANK broker refused the configuration of topic {topic:?}"),
        ),
        CreateTopicStatus::InvalidRequest => Error::new(
            ErrorKind::InvalidArgument,
            format!("the TANK broker refused to create {topic:?} (bad name or 0 partitions)"),
        ),
        CreateTopicStatus::ReadOnly => Error::new(
            ErrorKind::ReadOnly,
            format!("the TANK broker is read-only: {topic:?} was not created"),
        ),
        CreateTopicStatus::NotSupported => Error::new(
            ErrorKind::NotSupported,
            "the TANK broker does not support creating topics",
        ),
        CreateTopicStatus::SystemError => Error::new(
            ErrorKind::Server,
            format!("the TANK broker failed to create {topic:?} (system error)"),
        )
        .with_retriable(true),
        other => Error::new(
            ErrorKind::Server,
            format!("the TANK broker did not create {topic:?}: {other:?}"),
        ),
    })
}

pub fn partitions_result(
    topic: &str,
    resp: DiscoverPartitionsResponse,
) -> Result<Vec<PartitionInfo>> {
    let Some(parts) = resp.partitions else {
        return Err(Error::new(
            ErrorKind::TopicNotFound,
            format!("TANK topic {topic:?} does not exist"),
        ));
    };
    if parts.is_empty() {
        return Err(Error::new(
            ErrorKind::TopicNotFound,
            format!("TANK topic {topic:?} does not exist"),
        ));
    }
    parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            if p.first_available == u64::MAX && p.high_water == u64::MAX {
                return Err(Error::new(
                    ErrorKind::Server,
                    format!("the TANK broker cannot serve {topic:?} partition {i}"),
                )
                .with_retriable(true));
            }
            Ok(PartitionInfo {
                partition: i as u16,
                first_available: p.first_available,
                high_water: p.high_water,
            })
        })
        .collect()
}

pub fn reload_conf_result(topic: &str, partition: u16, status: ReloadConfStatus) -> Result<()> {
    Err(match status {
        ReloadConfStatus::Ok => return Ok(()),
        ReloadConfStatus::UnknownTopic => Error::new(
            ErrorKind::TopicNotFound,
            format!("TANK topic {topic:?} does not exist"),
        ),
        ReloadConfStatus::UnknownPartition => Error::new(
            ErrorKind::PartitionNotFound,
            format!("TANK topic {topic:?} has no partition {partition}"),
        ),
        other => Error::new(
            ErrorKind::Server,
            format!("the TANK broker could not reload {topic:?}/{partition}: {other:?}"),
        ),
    })
}
