//! More `Lookup` methods: namespace listings (kept apart from the client module).

use pyo3::prelude::*;

use crate::common::blocking::wait;
use crate::pulsar::client::Lookup;

#[pymethods]
impl Lookup {
    /// The persistent topics of `namespace` (`tenant/ns`); partitions appear as
    /// `...-partition-N`. Raises `InvalidArgumentError` for a malformed namespace.
    ///
    /// Args:
    ///     namespace: `tenant/namespace`.
    fn topics_of_namespace(&self, py: Python<'_>, namespace: &str) -> PyResult<Vec<String>> {
        let client = self.client.get();
        let inner = client.live()?.clone();
        let timeout = client.operation_timeout * 2;
        let ns = namespace.to_owned();
        wait(py, "topics of namespace", Some(timeout), async move {
            inner.topics_of_namespace(&ns).await
        })
    }
}
