//! What every protocol's Python classes share: the blocking helper (interpreter released,
//! Ctrl-C checked), the one mapping of engine errors to exceptions, column-shaped inputs
//! (sequences and pyarrow arrays) and the pickling refusal of live handles.

pub mod aio;
pub mod aio_future;
pub mod arrow;
pub mod blocking;
pub mod bytes_like;
pub mod columns;
pub mod errors;
pub mod faces;
pub mod logging;
pub mod metrics;
pub mod pickle;
pub mod repr;
pub mod reserve;
pub mod untracked;
