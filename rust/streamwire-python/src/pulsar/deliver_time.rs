//! `deliver_after` / `deliver_at` of a send: numbers as before (seconds; milliseconds since the
//! epoch), or the `datetime` values a caller usually has at hand (`timedelta`; an aware
//! `datetime`). Read through Python's own methods (`total_seconds`, `timestamp`), which also
//! work under the limited API the abi3 wheel is built for.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use streamwire_core::error::Error;

use crate::common::errors::to_py;

/// `deliver_after`: seconds (a number) or a `datetime.timedelta`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeliverAfter(pub f64);

/// `deliver_at`: milliseconds since the epoch (an int) or a timezone-aware `datetime.datetime`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeliverAt(pub i64);

fn type_name(obj: &Borrowed<'_, '_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}

impl<'a, 'py> FromPyObject<'a, 'py> for DeliverAfter {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        // The number first: the common case costs what it cost before.
        if let Ok(secs) = obj.extract::<f64>() {
            return Ok(DeliverAfter(secs));
        }
        let timedelta = obj.py().import("datetime")?.getattr("timedelta")?;
        if obj.is_instance(&timedelta)? {
            return Ok(DeliverAfter(obj.call_method0("total_seconds")?.extract()?));
        }
        Err(PyTypeError::new_err(format!(
            "deliver_after must be a number of seconds or a datetime.timedelta, got {}",
            type_name(&obj)
        )))
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for DeliverAt {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(ms) = obj.extract::<i64>() {
            return Ok(DeliverAt(ms));
        }
        let datetime = obj.py().import("datetime")?.getattr("datetime")?;
        if obj.is_instance(&datetime)? {
            // A naive datetime would be read as the machine's local time by `timestamp()`:
            // refused rather than guessed, as a wrong zone delays a message by hours.
            if obj.call_method0("utcoffset")?.is_none() {
                return Err(to_py(Error::invalid(
                    "deliver_at must be a timezone-aware datetime (e.g. with tzinfo=timezone.utc)",
                )));
            }
            let secs: f64 = obj.call_method0("timestamp")?.extract()?;
            return Ok(DeliverAt((secs * 1000.0).round() as i64));
        }
        Err(PyTypeError::new_err(format!(
            "deliver_at must be milliseconds since the epoch (an int) or a datetime, got {}",
            type_name(&obj)
        )))
    }
}
