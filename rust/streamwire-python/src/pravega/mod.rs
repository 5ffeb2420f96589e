//! The Pravega classes of `streamwire.pravega` (native halves; `python/streamwire/pravega/`
//! adds the typed wrappers): client with the controller calls (stream administration in
//! `admin`), writer with its futures, reader and events.

mod admin;
pub mod aio_reader;
pub mod aio_writer;
pub mod client;
mod framing;
mod inline;
pub mod reader;
pub mod writer;

use pyo3::prelude::*;

/// Add the awaitable Pravega classes to the extension module.
pub fn register_aio(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<aio_writer::PravegaAioWriter>()?;
    m.add_class::<aio_reader::PravegaAioReader>()?;
    Ok(())
}
