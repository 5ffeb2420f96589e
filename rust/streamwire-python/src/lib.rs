//! `streamwire._native`: the PyO3 extension module. Deliberately thin: argument conversion,
//! the blocking helper, error mapping and fork handling live here; behaviour lives in the
//! engine crates.
//!
//! Importing this module starts nothing: no runtime, thread or connection exists until the
//! first client is used (Spark imports packages in processes that later fork).

//!
//! Layout: `common/` holds what every protocol shares (blocking helper, error mapping,
//! column inputs); one folder per protocol holds its classes (`pulsar/` today's top-level
//! classes, `tank/` for `streamwire.tank`, `pravega/` for `streamwire.pravega`, `gateway/` for `streamwire.gateway`).

mod common;
mod gateway;
mod pravega;
mod pulsar;
mod tank;

use common::{blocking, errors};
use pulsar::{client, consumer, dispatch, message, message_id, producer, send_future};

use pyo3::prelude::*;

/// mimalloc keeps freed buffers for reuse: with glibc's malloc every bulk call's buffers
/// (payload copies, frames) were returned to the OS and page-faulted back in, which cost
/// ~40% of the Python thread's time in `send_many` (measured with perf).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Set the engine's I/O thread count; must run before the first client is used.
///
/// Args:
///     io_threads: number of Tokio worker threads for the process's engine runtime
///         (at least 1). Raises `ConfigError` if the runtime has already started with a
///         different count.
#[pyfunction]
fn configure(io_threads: i64) -> PyResult<()> {
    let n: usize = blocking::count_arg("io_threads", io_threads).map_err(errors::to_py)?;
    streamwire_core::runtime::configure_worker_threads(n).map_err(errors::to_py)
}

/// Whether this process has built its engine runtime yet (for tests of laziness).
#[pyfunction]
fn _runtime_started() -> bool {
    streamwire_core::runtime::started_in_this_process()
}

/// Stop running send callbacks (registered with `atexit`: attaching to a finalizing
/// interpreter from the callback thread is not safe).
#[pyfunction]
fn _shutdown_callbacks(py: Python<'_>) {
    dispatch::stop();
    common::aio::stop_and_drain(py);
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<client::Client>()?;
    m.add_class::<client::Lookup>()?;
    m.add_class::<pulsar::failover::AutoClusterFailover>()?;
    m.add_class::<pulsar::failover::ServiceInfo>()?;
    m.add_class::<message_id::PyMessageId>()?;
    m.add_class::<pulsar::id_ranges::MessageIdRanges>()?;
    m.add_class::<consumer::Consumer>()?;
    m.add_class::<consumer::Reader>()?;
    m.add_class::<pulsar::table_view::TableView>()?;
    m.add_class::<pulsar::listener::ListenerLane>()?;
    m.add_class::<message::Message>()?;
    m.add_class::<pulsar::crypto::PyCryptoKeyReader>()?;
    m.add_class::<pulsar::crypto::EncryptionContextObj>()?;
    m.add_class::<producer::Producer>()?;
    m.add_class::<send_future::SendFuture>()?;
    m.add_class::<pulsar::transaction::PyTransaction>()?;
    m.add_class::<pulsar::schema::PySchemaCodec>()?;
    m.add_class::<common::aio::AbortOnCancel>()?;
    m.add_class::<common::aio_future::AioSendFuture>()?;
    m.add_class::<pulsar::aio_consumer::Held>()?;
    m.add_class::<pulsar::aio_consumer::Received>()?;
    m.add_class::<pravega::client::PravegaNativeClient>()?;
    m.add_class::<pravega::writer::PravegaWriter>()?;
    m.add_class::<pravega::byte_stream::PravegaByteStream>()?;
    m.add_class::<pravega::writer::PravegaWriteFuture>()?;
    m.add_class::<pravega::reader::PravegaReader>()?;
    m.add_class::<pravega::group::PravegaReaderGroup>()?;
    m.add_class::<pravega::reader::PravegaEventObj>()?;
    m.add_class::<pravega::txn::PravegaTransactionalWriter>()?;
    m.add_class::<pravega::txn::PravegaTransaction>()?;
    m.add_class::<pravega::txn::PravegaTransactionHandle>()?;
    m.add_class::<tank::client::TankNativeClient>()?;
    m.add_class::<tank::producer::TankProducer>()?;
    m.add_class::<tank::producer::TankSendFuture>()?;
    m.add_class::<tank::consumer::TankConsumer>()?;
    m.add_class::<tank::message::TankMessageObj>()?;
    m.add_function(wrap_pyfunction!(gateway::_gateway_run, m)?)?;
    m.add_function(wrap_pyfunction!(gateway::_gateway_usage, m)?)?;
    m.add_function(wrap_pyfunction!(_shutdown_callbacks, m)?)?;
    m.add_function(wrap_pyfunction!(configure, m)?)?;
    m.add_function(wrap_pyfunction!(common::logging::_set_log_level, m)?)?;
    m.add_function(wrap_pyfunction!(_runtime_started, m)?)?;
    m.add_function(wrap_pyfunction!(common::metrics::_metrics_snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(
        common::metrics::_metrics_prometheus_text,
        m
    )?)?;
    Ok(())
}
