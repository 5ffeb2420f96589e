//! `streamwire._native`: the PyO3 extension module. Deliberately thin: argument conversion,
//! the blocking helper, error mapping and fork handling live here; behaviour lives in the
//! engine crates.
//!
//! Importing this module starts nothing: no runtime, thread or connection exists until the
//! first client is used (Spark imports packages in processes that later fork).

mod blocking;
mod client;
mod errors;
mod message_id;

use pyo3::prelude::*;

/// Set the engine's I/O thread count; must run before the first client is used.
#[pyfunction]
fn configure(io_threads: usize) -> PyResult<()> {
    streamwire_core::runtime::configure_worker_threads(io_threads).map_err(errors::to_py)
}

/// Whether this process has built its engine runtime yet (for tests of laziness).
#[pyfunction]
fn _runtime_started() -> bool {
    streamwire_core::runtime::started_in_this_process()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<client::Client>()?;
    m.add_class::<client::Lookup>()?;
    m.add_class::<message_id::PyMessageId>()?;
    m.add_function(wrap_pyfunction!(configure, m)?)?;
    m.add_function(wrap_pyfunction!(_runtime_started, m)?)?;
    Ok(())
}
