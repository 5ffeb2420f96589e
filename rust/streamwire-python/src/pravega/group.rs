//! `streamwire.pravega.ReaderGroup`'s native half (both faces): a reader group shared with
//! the official clients' readers — its readers, taking one offline, its position, and the
//! readers that join it (plain `PravegaReader`s whose segments the group gives).

use std::collections::BTreeMap;
use std::time::Duration;

use pyo3::prelude::*;

use streamwire_core::error::Error;
use streamwire_pravega::group::{ReaderGroup, SegKey};
use streamwire_pravega::reader::StreamCut;

use crate::common::blocking::positive_secs;
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
use crate::common::pickle::refuse_pickle;
use crate::common::repr::str_repr;
use crate::pravega::client::reader_plan;
use crate::pravega::reader::PravegaReader;

/// A reader group. Thread-safe; made by `PravegaClient.create_reader_group` /
/// `open_reader_group`.
#[pyclass(frozen, module = "streamwire._native")]
pub struct PravegaReaderGroup {
    group: ReaderGroup,
    pid: u32,
    timeout: Duration,
}

impl PravegaReaderGroup {
    pub fn new(group: ReaderGroup, pid: u32, timeout: Duration) -> Self {
        PravegaReaderGroup {
            group,
            pid,
            timeout,
        }
    }

    fn live(&self, py: Python<'_>) -> PyResult<()> {
        crate::common::aio::check_same_process(py, self.pid, "Pravega reader group")
    }
}

/// The positions of a stream cut's text, checked to be of one of the group's streams.
fn cut_positions(group: &ReaderGroup, text: &str) -> PyResult<BTreeMap<SegKey, i64>> {
    let cut = StreamCut::parse(text).py_err()?;
    if !group.config().streams.iter().any(|(s, _)| *s == cut.stream) {
        return Err(to_py(Error::invalid(format!(
            "the stream cut is of {}, which reader group {} does not read",
            cut.stream,
            group.name()
        ))));
    }
    Ok(cut
        .positions
        .iter()
        .map(|(s, o)| (SegKey::new(&cut.stream, *s), *o))
        .collect())
}

#[pymethods]
impl PravegaReaderGroup {
    #[getter]
    fn scope(&self) -> &str {
        self.group.scope()
    }

    #[getter]
    fn name(&self) -> &str {
        self.group.name()
    }

    /// The streams the group reads, `scope/stream` each.
    #[getter]
    fn streams(&self) -> Vec<String> {
        self.group
            .config()
            .streams
            .iter()
            .map(|(s, _)| s.to_string())
            .collect()
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle(
            "Pravega ReaderGroup",
            "pass its scope and name and open it inside the worker",
        ))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<streamwire.pravega.ReaderGroup {}/{}>",
            str_repr(py, Some(self.group.scope())),
            str_repr(py, Some(self.group.name()))
        )
    }
}

crate::two_faces! {
    impl PravegaReaderGroup {
        /// A reader joining the group as `reader_id` (its share of the segments is taken at
        /// its first read; positions are recorded and shares rebalanced every `refresh`
        /// seconds, default the group's refresh time, 3 s).
        #[pyo3(signature = (reader_id, *, refresh=None, read_ahead=16, read_length=1_048_576))]
        fn create_reader / _acreate_reader (
            &self,
            py,
            reader_id: &str,
            refresh: Option<f64>,
            read_ahead: i64,
            read_length: i64,
        ) -> PravegaReader {
            self.live(py)?;
            if reader_id.is_empty() {
                return Err(to_py(Error::invalid("reader_id must not be empty")));
            }
            let refresh = match refresh {
                Some(r) => Some(positive_secs("refresh", r).py_err()?),
                None => None,
            };
            let (_, config) = reader_plan("head", read_ahead, read_length)?;
            let (g, id, pid) = (self.group.clone(), reader_id.to_owned(), self.pid);
            Op::new("create_reader", Some(self.timeout), async move {
                let r = g.create_reader(&id, config, refresh).await?;
                Ok(PravegaReader::new(r, pid))
            })
        }

        /// The ids of the readers online, sorted.
        fn readers / _areaders (&self, py) -> Vec<String> {
            self.live(py)?;
            let g = self.group.clone();
            Op::new("readers", Some(self.timeout), async move { g.readers().await })
        }

        /// Take reader `reader_id` offline: its segments go back to the group at `position`
        /// (a stream cut's text; segments missing there at the reader's last recorded
        /// offsets). False when it was not online.
        #[pyo3(signature = (reader_id, position=None))]
        fn reader_offline / _areader_offline (
            &self,
            py,
            reader_id: &str,
            position: Option<&str>,
        ) -> bool {
            self.live(py)?;
            let positions = position.map(|p| cut_positions(&self.group, p)).transpose()?;
            let (g, id) = (self.group.clone(), reader_id.to_owned());
            Op::new("reader_offline", Some(self.timeout), async move {
                g.reader_offline(&id, positions.as_ref()).await
            })
        }

        /// The group's position: one stream cut's text per stream it reads (every segment
        /// being read or waiting to be, at its recorded offset).
        fn stream_cuts / _astream_cuts (&self, py) -> Vec<String> {
            self.live(py)?;
            let g = self.group.clone();
            Op::new("stream_cuts", Some(self.timeout), async move {
                let positions = g.positions().await?;
                Ok(g.config()
                    .streams
                    .iter()
                    .map(|(s, _)| {
                        StreamCut {
                            stream: s.clone(),
                            positions: positions
                                .iter()
                                .filter(|(k, _)| k.stream == *s)
                                .map(|(k, o)| (k.id, *o))
                                .collect(),
                        }
                        .to_text()
                    })
                    .collect::<Vec<String>>())
            })
        }
    }
}
