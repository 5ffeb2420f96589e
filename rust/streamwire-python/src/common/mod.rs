//! What every protocol's Python classes share: the blocking helper (interpreter released,
//! Ctrl-C checked), the one mapping of engine errors to exceptions, column-shaped inputs
//! (sequences and pyarrow arrays), the pickling refusal of live handles, and what the TANK
//! producer and the Pravega writer share: the in-order lane of awaitable writes (`lane`) and
//! the blocking face's write future (`write_future`).

pub mod aio;
pub mod aio_future;
pub mod arrow;
pub mod blocking;
pub mod bytes_like;
pub mod columns;
pub mod errors;
pub mod faces;
pub mod lane;
pub mod logging;
pub mod metrics;
pub mod pickle;
pub mod repr;
pub mod reserve;
pub mod untracked;
pub mod write_future;
