//! The Pravega classes of `streamwire.pravega` and `streamwire.aio.pravega` (one native class
//! each, serving both faces; `python/streamwire/pravega/` and `aio/pravega.py`
//! add the typed wrappers): client with the controller calls (stream administration in
//! `admin`), writer with its futures, reader and events, reader groups (`group`), transactional writer and
//! transactions (`txn`), byte streams.

mod admin;
mod arrow_sink;
pub mod byte_stream;
pub mod client;
mod framing;
pub mod group;
mod inline;
pub mod reader;
mod take;
pub mod txn;
pub mod writer;
