//! The Pravega classes of `streamwire.pravega` (native halves; `python/streamwire/pravega/`
//! adds the typed wrappers): client with the controller calls, writer with its futures,
//! reader and events.

pub mod client;
pub mod reader;
pub mod writer;
