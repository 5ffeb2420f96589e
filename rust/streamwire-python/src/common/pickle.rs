//! Live handles (clients, producers, consumers) refuse to pickle with a message that says
//! what to do instead; every protocol's classes share this one wording.

use pyo3::PyErr;

pub fn refuse_pickle(what: &str, instead: &str) -> PyErr {
    pyo3::exceptions::PyTypeError::new_err(format!(
        "a live streamwire {what} cannot be pickled or sent to another process; {instead}"
    ))
}
