//! `streamwire.pravega.ByteStream`'s native half, both faces (`two_faces!`): a one-segment
//! stream read and written as bytes (`streamwire_pravega::byte_stream`). The engine object
//! takes `&mut self` (one read position, one write buffer), so calls queue on a mutex in
//! call order; the Python wrappers add `readinto`, `readable()` and the other `io` names.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tokio::sync::Mutex;

use streamwire_core::error::Error;
use streamwire_core::runtime;
use streamwire_pravega::byte_stream::{ByteStream, Whence};

use crate::common::blocking::timeout_arg;
use crate::common::bytes_like::buffer_bytes;
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
use crate::common::pickle::refuse_pickle;

/// One `read`'s bytes (built into `bytes` where the interpreter is attached, on either face).
pub struct Chunk(Bytes);

impl<'py> IntoPyObject<'py> for Chunk {
    type Target = PyBytes;
    type Output = Bound<'py, PyBytes>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.0))
    }
}

/// A Pravega stream of one segment, read and written as bytes. Made by
/// `Client.create_byte_stream`.
#[pyclass(frozen, name = "PravegaByteStream", module = "streamwire._native")]
pub struct PravegaByteStream {
    inner: Arc<Mutex<ByteStream>>,
    name: String,
    pid: u32,
    closed: AtomicBool,
    /// The client's request timeout: the bound of calls that are not reads.
    timeout: Duration,
}

impl PravegaByteStream {
    pub(crate) fn new(inner: ByteStream, pid: u32, timeout: Duration) -> Self {
        PravegaByteStream {
            name: inner.stream().to_string(),
            inner: Arc::new(Mutex::new(inner)),
            pid,
            closed: AtomicBool::new(false),
            timeout,
        }
    }

    fn live(&self) -> PyResult<Arc<Mutex<ByteStream>>> {
        runtime::check_same_process(self.pid, "Pravega byte stream").py_err()?;
        if self.closed.load(Ordering::Acquire) {
            return Err(to_py(Error::closed("byte stream")));
        }
        Ok(self.inner.clone())
    }
}

fn data_arg(data: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    buffer_bytes(data).map_err(|_| {
        let name = data
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        pyo3::exceptions::PyTypeError::new_err(format!(
            "byte stream data must be bytes-like (bytes, bytearray, memoryview), not {name}"
        ))
    })
}

#[pymethods]
impl PravegaByteStream {
    /// The stream, as `scope/stream`.
    #[getter]
    fn stream(&self) -> &str {
        &self.name
    }

    /// Whether the byte stream is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle(
            "Pravega ByteStream",
            "open the byte stream inside the worker process",
        ))
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { " closed" } else { "" };
        format!(
            "<streamwire.pravega.ByteStream stream={}{state}>",
            self.name
        )
    }
}

crate::two_faces! {
    impl PravegaByteStream {
        /// Buffer `data` for the stream and return its length; whole 1 MiB blocks are sent
        /// at once. The bytes are durable once `flush()` returns. A write that fails (another
        /// writer appended meanwhile, the stream was sealed) raises, and the bytes buffered
        /// with it are dropped: the error says how many.
        ///
        /// Args:
        ///     data: the bytes (bytes, bytearray or memoryview).
        fn write / _awrite (&self, py, data: &Bound<'_, PyAny>) -> usize {
            let bs = self.live()?;
            let data = data_arg(data)?;
            Op::new("write", Some(self.timeout), async move {
                bs.lock().await.write(&data).await
            })
        }

        /// Send what is buffered and wait until the segment store has it.
        ///
        /// Args:
        ///     timeout: seconds to wait at most (None: the client's timeout per block).
        ///         Default None.
        #[pyo3(signature = (timeout=None))]
        fn flush / _aflush (&self, py, timeout: Option<f64>) -> () as none {
            let bs = self.live()?;
            let timeout = timeout_arg("timeout", timeout).py_err()?;
            Op::new("flush", timeout, async move { bs.lock().await.flush().await })
        }

        /// Up to `size` bytes from the read position (at least one: at the tail it waits
        /// for data); `b""` only at the end of a sealed stream.
        ///
        /// Args:
        ///     size: bytes at most. Default 1 MiB.
        ///     timeout: seconds to wait for data at most (None: no limit); then
        ///         `OperationTimeoutError`. Default None.
        #[pyo3(signature = (size=1_048_576, timeout=None))]
        fn read / _aread (&self, py, size: i64, timeout: Option<f64>) -> Chunk {
            let bs = self.live()?;
            let size = usize::try_from(size).map_err(|_| {
                to_py(Error::invalid(format!("size must be 0 or more, not {size}")))
            })?;
            let timeout = timeout_arg("timeout", timeout).py_err()?;
            Op::new("read", None, async move {
                bs.lock().await.read(size, timeout).await.map(Chunk)
            })
        }

        /// Move the read position to `offset` counted from `whence` (0: the start, 1: the
        /// read position, 2: the tail); returns the new position.
        ///
        /// Args:
        ///     offset: bytes (negative with whence 1 or 2).
        ///     whence: 0, 1 or 2, as `io.IOBase.seek`. Default 0.
        #[pyo3(signature = (offset, whence=0))]
        fn seek / _aseek (&self, py, offset: i64, whence: i32) -> i64 {
            let bs = self.live()?;
            let whence = Whence::from_io(whence).py_err()?;
            Op::new("seek", Some(self.timeout), async move {
                bs.lock().await.seek(offset, whence).await
            })
        }

        /// The read position.
        fn tell / _atell (&self, py) -> i64 {
            let bs = self.live()?;
            Op::new("tell", Some(self.timeout), async move { Ok(bs.lock().await.tell()) })
        }

        /// Drop the stream's data before `offset` (the head moves there; as the official
        /// client's `truncate`, not `io`'s resize).
        ///
        /// Args:
        ///     offset: the new head (at most the tail).
        fn truncate / _atruncate (&self, py, offset: i64) -> () as none {
            let bs = self.live()?;
            Op::new("truncate", Some(self.timeout), async move {
                bs.lock().await.truncate(offset).await
            })
        }

        /// The first readable offset (0 until `truncate`).
        fn current_head_offset / _acurrent_head_offset (&self, py) -> i64 {
            let bs = self.live()?;
            Op::new("current_head_offset", Some(self.timeout), async move {
                bs.lock().await.head_offset().await
            })
        }

        /// The offset the next flushed byte lands at (bytes still buffered not counted).
        fn current_tail_offset / _acurrent_tail_offset (&self, py) -> i64 {
            let bs = self.live()?;
            Op::new("current_tail_offset", Some(self.timeout), async move {
                bs.lock().await.tail_offset().await
            })
        }

        /// Flush, then seal the stream: nothing more can be written to it (by anyone), and
        /// reads return `b""` at its end.
        fn seal / _aseal (&self, py) -> () as none {
            let bs = self.live()?;
            Op::new("seal", Some(self.timeout), async move { bs.lock().await.seal().await })
        }

        /// Flush, then close. Idempotent; a failed flush raises (after closing).
        fn close / _aclose (&self, py) -> () as none {
            let open = self.pid == runtime::current_pid()
                && !self.closed.swap(true, Ordering::AcqRel);
            let bs = self.inner.clone();
            Op::new("close", None, async move {
                if open {
                    bs.lock().await.close().await
                } else {
                    Ok(())
                }
            })
        }
    }
}
