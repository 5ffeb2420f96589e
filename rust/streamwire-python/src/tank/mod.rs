//! The TANK classes of `streamwire.tank` (native halves; `python/streamwire/tank/` adds the
//! typed wrappers): client, producer with its futures, consumer and messages.

pub mod aio_consumer;
pub mod aio_producer;
pub mod client;
pub mod consumer;
pub mod message;
pub mod producer;

use pyo3::prelude::*;

/// Add the awaitable TANK classes to the extension module.
pub fn register_aio(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<aio_producer::TankAioProducer>()?;
    m.add_class::<aio_consumer::TankAioConsumer>()?;
    Ok(())
}
