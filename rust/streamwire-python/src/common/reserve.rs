//! The rule every writer and producer applies to the client's memory budget before it takes
//! an outgoing payload, whichever face calls: too many bytes for the whole budget is
//! `MessageTooBigError`; a full budget is `ProducerQueueFullError` when the caller chose not
//! to wait (`block_if_queue_full=False`), else "wait for room" (the blocking face waits with
//! the interpreter released, the awaitable face queues the write behind the earlier ones).

use streamwire_core::budget::{MemoryBudget, Reservation};
use streamwire_core::error::{Error, ErrorKind, Result};

/// Reserve `bytes` now if there is room; `None` when the caller must wait for it.
pub fn try_reserve(
    budget: &MemoryBudget,
    bytes: u64,
    block_if_queue_full: bool,
) -> Result<Option<Reservation>> {
    if bytes > budget.limit() && budget.limit() > 0 {
        return Err(Error::new(
            ErrorKind::MessageTooBig,
            format!(
                "{bytes} bytes are more than the client's memory_limit ({})",
                budget.limit()
            ),
        ));
    }
    match budget.try_reserve(bytes) {
        Ok(r) => Ok(Some(r)),
        Err(full) if !block_if_queue_full => Err(Error::new(
            ErrorKind::QueueFull,
            format!(
                "the client's memory budget is full ({} of {} bytes used)",
                full.used, full.limit
            ),
        )),
        Err(_) => Ok(None),
    }
}
