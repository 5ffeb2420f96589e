//! One Tokio runtime per process, built on first use and rebuilt after `fork()`.
//!
//! Spark imports Python packages in a daemon that then forks one worker per task slot, and a
//! Tokio runtime's threads do not survive `fork()`. So the runtime is never built at import; it
//! is tagged with the pid that built it, and a child that finds a parent's runtime leaks it
//! (dropping it would try to join threads that do not exist in the child) and builds its own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use tokio::runtime::{Builder, Handle, Runtime};

use crate::error::{Error, ErrorKind, Result};

struct Tagged {
    pid: u32,
    runtime: &'static Runtime,
}

static RUNTIME: Mutex<Option<Tagged>> = Mutex::new(None);
/// Worker threads for the next runtime built; 0 means the default.
static WORKER_THREADS: AtomicUsize = AtomicUsize::new(0);

/// Default worker count: I/O bound work needs few threads, and Spark runs one Python process
/// per task slot, so one thread per core per process would oversubscribe the machine.
pub fn default_worker_threads() -> usize {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    cores.clamp(1, 2)
}

/// Set the worker count used when the runtime is (re)built. Returns an error if this process
/// already has a runtime with a different count, since it cannot be changed afterwards.
pub fn configure_worker_threads(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::new(
            ErrorKind::Config,
            "io_threads must be at least 1",
        ));
    }
    let guard = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(t) = guard.as_ref() {
        let current = WORKER_THREADS.load(Ordering::Relaxed);
        if t.pid == std::process::id() && current != n {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "the engine already runs with {current} I/O threads in this process; \
                     io_threads must be set before the first client is created"
                ),
            ));
        }
    }
    WORKER_THREADS.store(n, Ordering::Relaxed);
    Ok(())
}

/// The process's runtime handle, building the runtime if this process has none yet.
pub fn handle() -> Result<Handle> {
    let pid = std::process::id();
    let mut guard = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(t) = guard.as_ref() {
        if t.pid == pid {
            return Ok(t.runtime.handle().clone());
        }
        // Inherited from the parent across fork(): its threads are gone. Leak it on purpose
        // (the &'static is simply forgotten) and build a fresh one below.
    }
    let mut threads = WORKER_THREADS.load(Ordering::Relaxed);
    if threads == 0 {
        threads = default_worker_threads();
        WORKER_THREADS.store(threads, Ordering::Relaxed);
    }
    let runtime = Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("streamwire-io")
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("cannot start the I/O runtime: {e}"),
            )
        })?;
    let runtime: &'static Runtime = Box::leak(Box::new(runtime));
    *guard = Some(Tagged { pid, runtime });
    Ok(runtime.handle().clone())
}

/// Whether this process has built its runtime (a parent's inherited one does not count).
pub fn started_in_this_process() -> bool {
    let guard = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    guard.as_ref().is_some_and(|t| t.pid == std::process::id())
}

/// The pid of the current process, for handles to remember where they were created.
pub fn current_pid() -> u32 {
    std::process::id()
}

/// Fail with `ForkedProcess` if a handle created in process `owner_pid` is used in another.
pub fn check_same_process(owner_pid: u32, what: &str) -> Result<()> {
    if owner_pid == std::process::id() {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::ForkedProcess,
            format!(
                "this {what} was created in process {owner_pid} and cannot be used after fork(); \
                 create clients inside the worker process (for Spark: inside the partition \
                 function, or through streamwire.spark's process-local cache)"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_is_reused_within_a_process() {
        let a = handle().unwrap();
        let b = handle().unwrap();
        assert_eq!(a.id(), b.id());
        assert_eq!(a.block_on(async { 1 + 1 }), 2);
    }

    #[test]
    fn same_process_check() {
        assert!(check_same_process(current_pid(), "client").is_ok());
        let err = check_same_process(current_pid().wrapping_add(1), "client").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ForkedProcess);
        assert!(err.to_string().contains("inside the worker"));
    }
}
