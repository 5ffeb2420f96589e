//! Reader groups, shared with the official clients: readers (ours and theirs) split a
//! stream's segments, take over those of readers that leave, and follow successors after a
//! scale once every predecessor is read.
//!
//! The state lives where pravega-client-rust (and the PyPI `pravega` package) keeps it: in
//! the table segment `<scope>/<group>_kvtable/0.#epoch.0`, as a two-level map (`cbor` gives
//! the encoding, `state` the rules and changes). Each change is a read of the whole table
//! (it holds one entry per reader and per segment) and a conditional write; a conflict with
//! another reader's write reads and tries again. Tombstones are left in place, as the
//! official readers leave them: removing a key an official reader still knows by version
//! would make its next conditional write of that key fail forever.
//!
//! `member` runs one reader's part: a `StreamReader` holding the segments its group gave it.

pub mod cbor;
pub mod member;
pub mod state;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;

use streamwire_core::error::{Error, ErrorKind, Result};

use crate::client::PravegaClient;
use crate::controller::{segment_name, NodeUri, ScopedStream};
use crate::reader::{head_cut, tail_cut, ReaderConfig, Start, StreamReader};
use crate::wire::table::{self, TablePut, TableReply};
use crate::wire::{Reply, WireError};
pub use cbor::{GroupConfig, SegKey, StartCut};
pub use state::{Change, Snapshot};

/// Conditional writes tried before giving up (each after a fresh read).
const MAX_ATTEMPTS: u32 = 50;
/// Entries asked per READ_TABLE_ENTRIES_DELTA.
const PAGE: i32 = 1000;

/// One group's table segment.
#[derive(Debug, Clone)]
pub struct GroupTable {
    client: PravegaClient,
    /// `<group>_kvtable` in the group's scope: the "stream" the segment store and the
    /// controller know the table segment by.
    kv: ScopedStream,
    segment: String,
    group: String,
    /// The segment store holding the table, asked once (shared by a reader's clones) and
    /// again after a failed call: a controller `getURI` before every table call was ten
    /// round trips of a reader's join-read-leave, more than its reading of 500,000 events.
    node: Arc<Mutex<Option<NodeUri>>>,
}

fn no_group(group: &str) -> Error {
    Error::new(
        ErrorKind::TopicNotFound,
        format!("reader group {group} does not exist"),
    )
}

impl GroupTable {
    pub fn new(client: &PravegaClient, scope: &str, group: &str) -> GroupTable {
        let kv = ScopedStream::new(scope, format!("{group}_kvtable"));
        GroupTable {
            client: client.clone(),
            segment: segment_name(&kv, 0),
            kv,
            group: format!("{scope}/{group}"),
            node: Arc::default(),
        }
    }

    fn cached_node(&self) -> Option<NodeUri> {
        self.node.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_node(&self, node: Option<NodeUri>) {
        *self.node.lock().unwrap_or_else(|p| p.into_inner()) = node;
    }

    async fn call(
        &self,
        what: &'static str,
        build: impl FnOnce(&mut BytesMut, i64, &str, &str) -> std::result::Result<(), WireError>,
    ) -> Result<Reply> {
        let token = self.client.delegation_token(&self.kv).await?;
        let node = match self.cached_node() {
            Some(n) => n,
            None => {
                let n = self.client.controller().get_uri(&self.kv, 0).await?;
                self.set_node(Some(n.clone()));
                n
            }
        };
        let mut buf = BytesMut::with_capacity(256);
        let reply = async {
            let conn = self.client.connection(&node).await?;
            let rid = conn.next_request_id();
            build(&mut buf, rid as i64, &self.segment, &token).map_err(Error::from)?;
            let timeout = self.client.config().request_timeout;
            conn.request(rid, buf.freeze(), timeout, what).await
        }
        .await;
        // A failed call, or a store that no longer holds the table: ask where it is anew.
        if matches!(&reply, Err(_) | Ok(Reply::WrongHost { .. })) {
            self.set_node(None);
        }
        reply
    }

    fn answer(&self, reply: Reply, what: &str) -> Result<TableReply> {
        match reply {
            Reply::Other { type_id, payload } => table::decode_table_reply(type_id, &payload)
                .map_err(Error::from)?
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::Protocol,
                        format!("unexpected answer {type_id} to {what}"),
                    )
                }),
            Reply::NoSuchSegment { .. } => Err(no_group(&self.group)),
            other => Err(other.error().unwrap_or_else(|| {
                Error::new(
                    ErrorKind::Protocol,
                    format!("unexpected answer to {what}: {other:?}"),
                )
            })),
        }
    }

    /// Create the table segment (nothing when it exists): true when it is new (empty).
    pub async fn create(&self) -> Result<bool> {
        let reply = self
            .call("CREATE_TABLE_SEGMENT", |b, rid, seg, token| {
                table::encode_create_table_segment(b, rid, seg, token)
            })
            .await?;
        match reply {
            Reply::SegmentCreated { .. } => Ok(true),
            Reply::SegmentAlreadyExists { .. } => Ok(false),
            other => self.answer(other, "CREATE_TABLE_SEGMENT").map(|_| false),
        }
    }

    /// Delete the table segment: false when there was none.
    pub async fn delete(&self) -> Result<bool> {
        let reply = self
            .call("DELETE_TABLE_SEGMENT", |b, rid, seg, token| {
                table::encode_delete_table_segment(b, rid, seg, token)
            })
            .await?;
        match self.answer(reply, "DELETE_TABLE_SEGMENT") {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::TopicNotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The whole state.
    pub async fn read(&self) -> Result<Snapshot> {
        let mut from = 0;
        let mut all = Vec::new();
        loop {
            let reply = self
                .call("READ_TABLE_ENTRIES_DELTA", |b, rid, seg, token| {
                    table::encode_read_table_entries_delta(b, rid, seg, token, from, PAGE)
                })
                .await?;
            match self.answer(reply, "READ_TABLE_ENTRIES_DELTA")? {
                TableReply::DeltaRead {
                    entries,
                    reached_end,
                    last_position,
                } => {
                    let empty = entries.is_empty();
                    all.extend(entries);
                    if reached_end || empty || last_position <= from {
                        return Snapshot::from_entries(all);
                    }
                    from = last_position;
                }
                other => {
                    return Err(Error::new(
                        ErrorKind::Protocol,
                        format!("unexpected answer to READ_TABLE_ENTRIES_DELTA: {other:?}"),
                    ))
                }
            }
        }
    }

    /// Write `puts` if every version still matches: `None` when one does not.
    pub async fn write(&self, puts: &[TablePut]) -> Result<Option<Vec<i64>>> {
        let reply = self
            .call("UPDATE_TABLE_ENTRIES", |b, rid, seg, token| {
                table::encode_update_table_entries(b, rid, seg, token, puts)
            })
            .await?;
        match self.answer(reply, "UPDATE_TABLE_ENTRIES")? {
            TableReply::Updated { versions } => Ok(Some(versions)),
            TableReply::BadVersion | TableReply::KeyDoesNotExist => Ok(None),
            other => Err(Error::new(
                ErrorKind::Protocol,
                format!("unexpected answer to UPDATE_TABLE_ENTRIES: {other:?}"),
            )),
        }
    }

    /// Read, let `f` decide a change on that state, write it conditionally; on a conflict,
    /// again from a fresh read. `f` returning `None` changes nothing.
    pub async fn update<R>(
        &self,
        mut f: impl FnMut(&Snapshot) -> Result<Option<(Change, R)>>,
    ) -> Result<Option<R>> {
        for attempt in 0..MAX_ATTEMPTS {
            let snap = self.read().await?;
            let Some((change, r)) = f(&snap)? else {
                return Ok(None);
            };
            if change.is_empty() || self.write(&change.to_puts(&snap)).await?.is_some() {
                return Ok(Some(r));
            }
            // Another reader wrote in between: back off a little (spread by attempt and a
            // random share, so that two readers retrying do not collide again in step).
            let ms = 5 * u64::from(attempt.min(20)) + rand::random::<u64>() % 10;
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        Err(Error::new(
            ErrorKind::Server,
            format!(
                "reader group {} changed under every one of {MAX_ATTEMPTS} attempts",
                self.group
            ),
        ))
    }
}

/// A reader group (its name; its state is read anew by every call).
#[derive(Debug, Clone)]
pub struct ReaderGroup {
    client: PravegaClient,
    scope: String,
    name: String,
    table: GroupTable,
    config: GroupConfig,
}

impl ReaderGroup {
    /// Create the group reading `streams` (each from its start), or open it when it exists
    /// (as the official clients do, its state is then left as it is).
    pub async fn create(
        client: &PravegaClient,
        scope: &str,
        name: &str,
        streams: Vec<(ScopedStream, Start)>,
    ) -> Result<ReaderGroup> {
        if streams.is_empty() {
            return Err(Error::invalid("a reader group reads at least one stream"));
        }
        let mut config = GroupConfig {
            refresh_ms: cbor::DEFAULT_REFRESH_MS,
            streams: Vec::new(),
        };
        for (stream, start) in &streams {
            if config.streams.iter().any(|(s, _)| s == stream) {
                return Err(Error::invalid(format!("stream {stream} is named twice")));
            }
            if let Start::Cut(c) = start {
                if c.stream != *stream {
                    return Err(Error::invalid(format!(
                        "the stream cut is of {}, not of {stream}",
                        c.stream
                    )));
                }
            }
            let cut = match start {
                Start::Head => StartCut::Head,
                Start::Tail => StartCut::Tail,
                Start::Cut(c) => StartCut::At(c.positions.clone()),
            };
            config.streams.push((stream.clone(), cut));
        }
        let table = GroupTable::new(client, scope, name);
        // Each stream's check and start concurrently, and a new table written without
        // reading it first: the round trips of creating a group were half of a fresh
        // group's create-join-read-leave of 500,000 events.
        let starts = async {
            let mut segments = BTreeMap::new();
            for (stream, start) in &streams {
                let (exists, positions) =
                    tokio::join!(client.controller().check_stream_exists(stream), async {
                        Ok::<_, Error>(match start {
                            Start::Head => head_cut(client, stream).await?.positions,
                            Start::Tail => tail_cut(client, stream).await?.positions,
                            Start::Cut(c) => c.positions.clone(),
                        })
                    });
                // A missing stream says so, whatever asking for its cut answered.
                if !exists? {
                    return Err(Error::new(
                        ErrorKind::TopicNotFound,
                        format!("stream {stream} does not exist"),
                    ));
                }
                let positions = positions?;
                segments.extend(
                    positions
                        .into_iter()
                        .map(|(id, o)| (SegKey::new(stream, id), o)),
                );
            }
            Ok(segments)
        };
        // The table only once every stream checked out: a refused group leaves none (a
        // table deleted again raced with a new create of the same name on the store).
        let segments = starts.await?;
        let created = table.create().await?;
        let init = |snap: &Snapshot| state::init(snap, &config, &segments);
        if created {
            // A new table is empty: written at once, without reading it first (a
            // conditional write, so another creator's state in between wins and is read).
            let empty = Snapshot::default();
            if let Some(c) = init(&empty) {
                if table.write(&c.to_puts(&empty)).await?.is_some() {
                    return Ok(ReaderGroup {
                        client: client.clone(),
                        scope: scope.to_owned(),
                        name: name.to_owned(),
                        table,
                        config,
                    });
                }
            }
        }
        let made = table.update(|snap| Ok(init(snap).map(|c| (c, ())))).await?;
        if made.is_none() {
            // It existed: its own state, as it is.
            return ReaderGroup::open(client, scope, name).await;
        }
        Ok(ReaderGroup {
            client: client.clone(),
            scope: scope.to_owned(),
            name: name.to_owned(),
            table,
            config,
        })
    }

    /// An existing group (`TopicNotFoundError` when there is none).
    pub async fn open(client: &PravegaClient, scope: &str, name: &str) -> Result<ReaderGroup> {
        let table = GroupTable::new(client, scope, name);
        let config = table
            .read()
            .await?
            .config()?
            .ok_or_else(|| no_group(&format!("{scope}/{name}")))?;
        Ok(ReaderGroup {
            client: client.clone(),
            scope: scope.to_owned(),
            name: name.to_owned(),
            table,
            config,
        })
    }

    /// Delete a group's state: false when there was none.
    pub async fn delete(client: &PravegaClient, scope: &str, name: &str) -> Result<bool> {
        GroupTable::new(client, scope, name).delete().await
    }

    pub fn scope(&self) -> &str {
        &self.scope
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// The readers online.
    pub async fn readers(&self) -> Result<Vec<String>> {
        Ok(self.table.read().await?.readers())
    }

    /// Take `reader` offline (a reader that died, or one leaving): its segments go back to
    /// the group at `positions` where given, else at the offsets it last recorded. False when
    /// it was not online.
    pub async fn reader_offline(
        &self,
        reader: &str,
        positions: Option<&BTreeMap<SegKey, i64>>,
    ) -> Result<bool> {
        let done = self
            .table
            .update(|snap| Ok(state::remove_reader(snap, reader, positions)?.map(|c| (c, ()))))
            .await?;
        Ok(done.is_some())
    }

    /// Every segment read or waiting to be, at its recorded offset.
    pub async fn positions(&self) -> Result<BTreeMap<SegKey, i64>> {
        self.table.read().await?.positions()
    }

    /// A reader joining the group as `reader`: it takes its share of the segments (of every
    /// stream the group reads) at its first read, records its positions and rebalances
    /// every `refresh` (default: the group's refresh time).
    pub async fn create_reader(
        &self,
        reader: &str,
        config: ReaderConfig,
        refresh: Option<Duration>,
    ) -> Result<StreamReader> {
        if reader.is_empty() {
            return Err(Error::invalid("a reader id must not be empty"));
        }
        let streams: Vec<ScopedStream> =
            self.config.streams.iter().map(|(s, _)| s.clone()).collect();
        self.table
            .update(|snap| state::add_reader(snap, reader).map(|c| Some((c, ()))))
            .await?;
        let refresh =
            refresh.unwrap_or_else(|| Duration::from_millis(self.config.refresh_ms.max(1)));
        let member = member::Member::new(self.table.clone(), reader.to_owned(), refresh);
        StreamReader::create_member(&self.client, streams, member, config).await
    }
}
