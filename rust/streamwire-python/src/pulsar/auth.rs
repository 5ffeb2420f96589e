//! Python-supplied authentication: a token callable and the `auth=` plug-in object.
//!
//! The engine asks these providers for credentials on Tokio's blocking pool (for every new
//! connection and every AUTH_CHALLENGE); each call attaches to the interpreter only for the
//! duration of the Python call, never while waiting on I/O.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_pulsar::connection::{Auth, AuthProvider};

use crate::common::errors::{to_py, IntoPyResult};

fn auth_err(msg: String) -> Error {
    Error::new(ErrorKind::Authentication, msg)
}

/// The Python exception's type and message (its traceback stays in Python).
fn describe(py: Python<'_>, what: &str, e: PyErr) -> Error {
    let ty = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".to_owned());
    auth_err(format!("{what} raised {ty}: {}", e.value(py)))
}

fn attach<T>(f: impl for<'py> FnOnce(Python<'py>) -> Result<T>) -> Result<T> {
    Python::try_attach(f).unwrap_or_else(|| {
        Err(Error::new(
            ErrorKind::Closed,
            "the Python interpreter is shutting down",
        ))
    })
}

fn to_bytes(what: &str, v: &Bound<'_, PyAny>) -> Result<Bytes> {
    if let Ok(b) = v.cast::<PyBytes>() {
        return Ok(Bytes::copy_from_slice(b.as_bytes()));
    }
    if let Ok(s) = v.cast::<PyString>() {
        let s = s
            .to_cow()
            .map_err(|_| auth_err(format!("{what} returned a str that is not valid UTF-8")))?;
        return Ok(Bytes::copy_from_slice(s.as_bytes()));
    }
    let ty = v
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    Err(auth_err(format!(
        "{what} must return bytes or str, not {ty}"
    )))
}

/// `auth_token=<callable>`: called for a fresh token on connect and on each challenge.
pub(crate) struct CallableToken(pub(crate) Py<PyAny>);

impl AuthProvider for CallableToken {
    fn method_name(&self) -> &str {
        "token"
    }

    fn auth_data(&self) -> Result<Bytes> {
        attach(|py| {
            let v = self
                .0
                .bind(py)
                .call0()
                .map_err(|e| describe(py, "the auth_token callable", e))?;
            let s = v
                .cast::<PyString>()
                .map_err(|_| auth_err("the auth_token callable must return a str".to_owned()))?;
            let s = s.to_cow().map_err(|_| {
                auth_err("the auth_token callable returned invalid UTF-8".to_owned())
            })?;
            if s.trim().is_empty() {
                return Err(auth_err(
                    "the auth_token callable returned an empty token".to_owned(),
                ));
            }
            Ok(Bytes::copy_from_slice(s.trim().as_bytes()))
        })
    }
}

/// `auth=<object>` with `method_name` and `get_data()`.
pub(crate) struct Plugin {
    method: String,
    obj: Py<PyAny>,
}

impl Plugin {
    pub(crate) fn new(obj: &Bound<'_, PyAny>) -> PyResult<Plugin> {
        let bad = || {
            pyo3::exceptions::PyTypeError::new_err(
                "auth must have a str attribute 'method_name' and a callable get_data() \
                 returning bytes or str (see streamwire.auth)",
            )
        };
        let method: String = obj
            .getattr("method_name")
            .and_then(|m| m.extract())
            .map_err(|_| bad())?;
        if method.is_empty() || !obj.getattr("get_data").is_ok_and(|g| g.is_callable()) {
            return Err(bad());
        }
        Ok(Plugin {
            method,
            obj: obj.clone().unbind(),
        })
    }
}

impl AuthProvider for Plugin {
    fn method_name(&self) -> &str {
        &self.method
    }

    fn auth_data(&self) -> Result<Bytes> {
        attach(|py| {
            let what = format!("auth plug-in {:?} get_data()", self.method);
            let v = self
                .obj
                .bind(py)
                .call_method0("get_data")
                .map_err(|e| describe(py, &what, e))?;
            to_bytes(&what, &v)
        })
    }
}

/// One `Auth` out of the three mutually exclusive auth options.
pub(crate) fn build_auth(
    auth_token: Option<&Bound<'_, PyAny>>,
    auth_token_file: Option<PathBuf>,
    auth: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Auth>> {
    let given = [
        auth_token.is_some(),
        auth_token_file.is_some(),
        auth.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err(to_py(Error::new(
            ErrorKind::Config,
            "pass at most one of auth_token, auth_token_file and auth",
        )));
    }
    if let Some(t) = auth_token {
        if let Ok(s) = t.extract::<String>() {
            return Auth::token(s).map(Some).py_err();
        }
        if t.is_callable() {
            return Ok(Some(Auth::custom(Arc::new(CallableToken(
                t.clone().unbind(),
            )))));
        }
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "auth_token must be a str or a callable returning a str",
        ));
    }
    if let Some(path) = auth_token_file {
        return Ok(Some(Auth::token_file(path)));
    }
    if let Some(obj) = auth {
        return Ok(Some(Auth::custom(Arc::new(Plugin::new(obj)?))));
    }
    Ok(None)
}
