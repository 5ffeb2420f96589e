//! The TANK classes of `streamwire.tank` and `streamwire.aio.tank` (native halves; the Python
//! packages add the typed wrappers): client, producer with its futures, consumer and messages.
//! Each class serves both faces: blocking methods and their awaitable `_a` forms.

pub mod client;
pub mod consumer;
pub mod message;
mod outgoing;
pub mod producer;
