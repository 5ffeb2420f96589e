//! Python spellings in `__repr__`: a value shows as Python would show it (`'k0'`, `None`,
//! `b'\x00'`), never as Rust's Debug (`Some("k0")`).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// `repr()` of an optional str, as Python writes it.
pub fn str_repr(py: Python<'_>, s: Option<&str>) -> String {
    match s {
        None => "None".into(),
        Some(s) => PyString::new(py, s)
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| format!("{s:?}")),
    }
}

/// `repr()` of optional bytes, as Python writes it.
pub fn bytes_repr(py: Python<'_>, b: Option<&[u8]>) -> String {
    match b {
        None => "None".into(),
        Some(b) => PyBytes::new(py, b)
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| format!("{b:?}")),
    }
}
