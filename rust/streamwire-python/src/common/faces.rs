//! Both faces of a waiting call from one definition: `two_faces!`.
//!
//! Every protocol's native class serves the blocking API and the asyncio API at once (one
//! `#[pyclass]`, not a blocking and an "aio" twin). A call that waits on the network is
//! written once, as a body that checks the arguments and returns an [`Op`]: what the call is
//! named in a timeout error, its time limit, and the engine future. `two_faces!` makes the two
//! Python methods from it:
//!
//! - the blocking one (`name`) runs the future through `blocking::wait` (interpreter released,
//!   Ctrl-C checked, the time limit raising `OperationTimeoutError`);
//! - the awaitable one (`_aname`) hands the same future to the asyncio bridge
//!   (`aio::spawn`) and returns an `asyncio.Future`; cancelling it aborts the engine task, as
//!   Ctrl-C aborts the blocking wait.
//!
//! Both check their arguments at the call, before anything is started, so bad input raises
//! the same typed error from either face. The Python wrappers in `streamwire.aio` only await
//! the `_a` methods. Why a macro and not a native future that is both awaitable and
//! waitable: a blocking call must not create an object per call it does not need, and the
//! bridge's futures belong to one loop; the macro keeps both paths as they were measured and
//! removes only the repetition (signature, argument checks, engine call written twice).
//!
//! Hot paths (sends, receives) keep hand-written shells: their awaitable side resolves
//! lighter futures and hands messages back on cancel (see `aio`, `aio_future`).

use std::future::Future;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::BoundObject;

use streamwire_core::error::Result;

use crate::common::aio::Value;

/// One waiting call, ready to run: its name in errors, its time limit and its engine future.
pub struct Op<F> {
    pub what: &'static str,
    pub timeout: Option<Duration>,
    pub fut: F,
}

impl<F, T> Op<F>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    pub fn new(what: &'static str, timeout: Option<Duration>, fut: F) -> Self {
        Op { what, timeout, fut }
    }
}

/// The awaitable face's value for a result that converts like the blocking face's return
/// value (built on the loop's thread, where the interpreter is attached).
pub fn built<T>(v: T) -> Value
where
    T: for<'py> IntoPyObject<'py> + Send + 'static,
{
    Value::Build(Box::new(move |py| {
        v.into_pyobject(py)
            .map(|b| b.into_any().unbind())
            .map_err(Into::into)
    }))
}

/// The awaitable face's value for a call that returns nothing (None, as the blocking face).
pub fn none(_: ()) -> Value {
    Value::None
}

/// The two Python methods of each waiting call listed: `fn name / _aname (&self, py, args) ->
/// T { body }`, the body evaluating to an `Op` (`?` raises from it). `-> () as none` for calls that
/// return None. Attributes (`#[pyo3(signature = …)]`, doc comments) apply to both methods.
#[macro_export]
macro_rules! two_faces {
    (
        impl $ty:ty {
            $(
                $(#[$attr:meta])*
                fn $name:ident / $aname:ident (
                    &$self:ident, $py:ident $(, $arg:ident : $argty:ty)* $(,)?
                ) -> $out:ty $(as $value:ident)? $body:block
            )*
        }
    ) => {
        #[pyo3::pymethods]
        impl $ty {
            $(
                $(#[$attr])*
                #[allow(clippy::too_many_arguments)]
                fn $name<'py>(
                    &$self, $py: pyo3::Python<'py> $(, $arg: $argty)*
                ) -> pyo3::PyResult<$out> {
                    let op: $crate::common::faces::Op<_> = $body;
                    $crate::common::blocking::wait($py, op.what, op.timeout, op.fut)
                }

                $(#[$attr])*
                #[allow(clippy::too_many_arguments)]
                fn $aname<'py>(
                    &$self, $py: pyo3::Python<'py> $(, $arg: $argty)*
                ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
                    let op: $crate::common::faces::Op<_> = $body;
                    let (fut, task) = $crate::common::aio::spawn(
                        $py,
                        op.what,
                        op.timeout,
                        op.fut,
                        $crate::two_faces!(@value $out $(, $value)?),
                    )?;
                    $crate::common::aio::abort_on_cancel(&fut, task)?;
                    Ok(fut)
                }
            )*
        }
    };
    (@value $out:ty) => { $crate::common::faces::built::<$out> };
    (@value $out:ty, none) => { $crate::common::faces::none };
}
