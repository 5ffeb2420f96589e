//! Client-wide memory budget for messages waiting to be sent.
//!
//! Why: a producer that accepts messages faster than the broker acknowledges them must stop
//! somewhere, and a per-producer message count does not bound memory (one message may be
//! 5 MB). Like the Java client's `memoryLimit` (default 64 MiB), every pending message holds a
//! [`Reservation`] of its size against one budget shared by all producers of a client; the
//! reservation is released when it is dropped (after the broker's receipt or a failure).
//!
//! Rules:
//! * `limit == 0` means unlimited (usage is still counted, for metrics).
//! * Waiting is fair: [`MemoryBudget::reserve`] queues in FIFO order, and neither a later
//!   `reserve` nor [`MemoryBudget::try_reserve`] may jump ahead of a queued waiter. So a
//!   large message is not starved by a stream of small ones.
//! * A single reservation larger than the limit is granted when nothing else is reserved.
//!   Why: otherwise a message bigger than the budget could never be sent and its `reserve`
//!   would wait forever. The overshoot is bounded by one message, and the broker's maximum
//!   message size bounds that.
//!
//! The state is a plain mutex-protected counter plus a queue of waiters, each with its own
//! `tokio::sync::Notify`; no lock is held across an `.await`.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// Default client memory limit: 64 MiB, as in the Java client.
pub const DEFAULT_MEMORY_LIMIT: u64 = 64 * 1024 * 1024;

/// The budget has no room now (returned by [`MemoryBudget::try_reserve`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("memory budget exhausted: {requested} bytes requested, {used} of {limit} in use")]
pub struct QueueFull {
    /// Bytes asked for.
    pub requested: u64,
    /// Bytes reserved at the time.
    pub used: u64,
    /// The limit.
    pub limit: u64,
}

struct Waiter {
    amount: u64,
    granted: AtomicBool,
    notify: Notify,
}

#[derive(Default)]
struct State {
    used: u64,
    queue: VecDeque<Arc<Waiter>>,
}

struct Inner {
    limit: u64,
    state: Mutex<State>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the counters half-updated (every
        // critical section is a few arithmetic steps), so poisoning is safe to ignore.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn fits(&self, state: &State, amount: u64) -> bool {
        self.limit == 0
            || state.used == 0
            || state
                .used
                .checked_add(amount)
                .is_some_and(|total| total <= self.limit)
    }

    /// Grants queued waiters in order while they fit. Called with the lock held.
    fn grant_waiters(&self, state: &mut State) {
        while let Some(front) = state.queue.front() {
            if !self.fits(state, front.amount) {
                break;
            }
            state.used = state.used.saturating_add(front.amount);
            front.granted.store(true, Ordering::Release);
            // notify_one stores a permit if the waiter is not polling yet: no lost wake-up.
            front.notify.notify_one();
            state.queue.pop_front();
        }
    }

    fn release(&self, amount: u64) {
        if amount == 0 {
            return;
        }
        let mut state = self.lock();
        state.used = state.used.saturating_sub(amount);
        self.grant_waiters(&mut state);
    }
}

/// A byte budget shared by the producers of one client. Cheap to clone (shared state).
#[derive(Clone)]
pub struct MemoryBudget {
    inner: Arc<Inner>,
}

impl fmt::Debug for MemoryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.lock();
        f.debug_struct("MemoryBudget")
            .field("limit", &self.inner.limit)
            .field("used", &state.used)
            .field("waiters", &state.queue.len())
            .finish()
    }
}

impl Default for MemoryBudget {
    /// A budget of [`DEFAULT_MEMORY_LIMIT`].
    fn default() -> Self {
        Self::new(DEFAULT_MEMORY_LIMIT)
    }
}

impl MemoryBudget {
    /// A budget of `limit` bytes; `0` means unlimited.
    pub fn new(limit: u64) -> Self {
        Self {
            inner: Arc::new(Inner {
                limit,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// An unlimited budget (still counts usage).
    pub fn unlimited() -> Self {
        Self::new(0)
    }

    /// The limit in bytes (`0` = unlimited).
    pub fn limit(&self) -> u64 {
        self.inner.limit
    }

    /// Bytes currently reserved.
    pub fn used(&self) -> u64 {
        self.inner.lock().used
    }

    /// Number of `reserve` calls currently waiting.
    pub fn waiters(&self) -> usize {
        self.inner.lock().queue.len()
    }

    /// Reserve `amount` bytes now, or fail with [`QueueFull`] (the "don't block" mode).
    ///
    /// Fails as well when others are already waiting, so it cannot overtake them.
    pub fn try_reserve(&self, amount: u64) -> Result<Reservation, QueueFull> {
        let mut state = self.inner.lock();
        if state.queue.is_empty() && self.inner.fits(&state, amount) {
            state.used = state.used.saturating_add(amount);
            drop(state);
            Ok(self.reservation(amount))
        } else {
            Err(QueueFull {
                requested: amount,
                used: state.used,
                limit: self.inner.limit,
            })
        }
    }

    /// Reserve `amount` bytes, waiting (in FIFO order) until enough is released.
    ///
    /// Cancel safety: dropping the returned future gives up the place in the queue; if the
    /// memory was granted in the meantime it is released again, so nothing leaks and the
    /// next waiters are considered. The registration happens when the future is first
    /// polled, not when `reserve` is called.
    pub fn reserve(&self, amount: u64) -> impl Future<Output = Reservation> + Send + 'static {
        let budget = self.clone();
        async move {
            let waiter = {
                let mut state = budget.inner.lock();
                if state.queue.is_empty() && budget.inner.fits(&state, amount) {
                    state.used = state.used.saturating_add(amount);
                    drop(state);
                    return budget.reservation(amount);
                }
                let waiter = Arc::new(Waiter {
                    amount,
                    granted: AtomicBool::new(false),
                    notify: Notify::new(),
                });
                state.queue.push_back(Arc::clone(&waiter));
                waiter
            };
            let mut guard = WaitGuard {
                budget: &budget,
                waiter: Some(waiter),
            };
            loop {
                let waiter = guard.waiter.as_ref().expect("set until granted");
                if waiter.granted.load(Ordering::Acquire) {
                    guard.waiter = None;
                    return budget.reservation(amount);
                }
                waiter.notify.notified().await;
            }
        }
    }

    fn reservation(&self, amount: u64) -> Reservation {
        Reservation {
            budget: Arc::clone(&self.inner),
            amount,
        }
    }
}

/// Removes a cancelled waiter from the queue, or returns memory granted to it too late.
struct WaitGuard<'a> {
    budget: &'a MemoryBudget,
    waiter: Option<Arc<Waiter>>,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        let Some(waiter) = self.waiter.take() else {
            return;
        };
        let inner = &self.budget.inner;
        let mut state = inner.lock();
        if waiter.granted.load(Ordering::Acquire) {
            state.used = state.used.saturating_sub(waiter.amount);
        } else {
            state.queue.retain(|w| !Arc::ptr_eq(w, &waiter));
        }
        // Either way the head of the queue may have changed or memory was freed.
        inner.grant_waiters(&mut state);
    }
}

/// Bytes held against a [`MemoryBudget`]; released when dropped.
///
/// Can be split (one part per message of a batch that is later split) and merged (the
/// messages of one batch), without touching the shared counter.
pub struct Reservation {
    budget: Arc<Inner>,
    amount: u64,
}

impl fmt::Debug for Reservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("amount", &self.amount)
            .finish()
    }
}

impl Reservation {
    /// Bytes held.
    pub fn amount(&self) -> u64 {
        self.amount
    }

    /// Move `amount` bytes of this reservation into a new one; `None` if it holds fewer.
    pub fn split(&mut self, amount: u64) -> Option<Reservation> {
        let rest = self.amount.checked_sub(amount)?;
        self.amount = rest;
        Some(Reservation {
            budget: Arc::clone(&self.budget),
            amount,
        })
    }

    /// Take over `other`'s bytes. Fails (handing `other` back) if it is from another budget.
    pub fn merge(&mut self, mut other: Reservation) -> Result<(), Reservation> {
        if !Arc::ptr_eq(&self.budget, &other.budget) {
            return Err(other);
        }
        self.amount = self.amount.saturating_add(other.amount);
        other.amount = 0;
        Ok(())
    }

    /// Give back `amount` bytes early (e.g. a payload that compressed smaller than reserved);
    /// `false` if it holds fewer.
    pub fn release_part(&mut self, amount: u64) -> bool {
        match self.amount.checked_sub(amount) {
            Some(rest) => {
                self.amount = rest;
                self.budget.release(amount);
                true
            }
            None => false,
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(self.amount);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::pin::pin;
    use std::time::Duration;

    async fn pending_for_a_while<F: Future>(f: std::pin::Pin<&mut F>) -> bool {
        tokio::time::timeout(Duration::from_millis(20), f)
            .await
            .is_err()
    }

    #[test]
    fn default_limit_is_64_mib() {
        assert_eq!(MemoryBudget::default().limit(), 64 * 1024 * 1024);
    }

    #[test]
    fn try_reserve_and_release_on_drop() {
        let b = MemoryBudget::new(100);
        let r1 = b.try_reserve(60).unwrap();
        assert_eq!(b.used(), 60);
        let err = b.try_reserve(50).unwrap_err();
        assert_eq!(
            err,
            QueueFull {
                requested: 50,
                used: 60,
                limit: 100
            }
        );
        let r2 = b.try_reserve(40).unwrap();
        assert_eq!(b.used(), 100);
        drop(r1);
        assert_eq!(b.used(), 40);
        drop(r2);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn oversized_allowed_only_when_empty() {
        let b = MemoryBudget::new(100);
        let big = b.try_reserve(1_000).unwrap();
        assert!(b.try_reserve(1).is_err());
        drop(big);
        let small = b.try_reserve(1).unwrap();
        assert!(b.try_reserve(1_000).is_err());
        drop(small);
    }

    #[test]
    fn unlimited_counts_but_never_refuses() {
        let b = MemoryBudget::unlimited();
        let r = b.try_reserve(u64::MAX).unwrap();
        let r2 = b.try_reserve(u64::MAX).unwrap();
        assert_eq!(b.used(), u64::MAX);
        drop((r, r2));
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn split_merge_release_part() {
        let b = MemoryBudget::new(100);
        let mut r = b.try_reserve(90).unwrap();
        let part = r.split(30).unwrap();
        assert!(r.split(61).is_none());
        assert_eq!((r.amount(), part.amount(), b.used()), (60, 30, 90));
        drop(part);
        assert_eq!(b.used(), 60);
        let other = b.try_reserve(10).unwrap();
        r.merge(other).unwrap();
        assert_eq!((r.amount(), b.used()), (70, 70));
        let foreign = MemoryBudget::new(5).try_reserve(5).unwrap();
        let back = r.merge(foreign).unwrap_err();
        assert_eq!(back.amount(), 5);
        assert!(r.release_part(20));
        assert!(!r.release_part(51));
        assert_eq!(b.used(), 50);
        drop(r);
        assert_eq!(b.used(), 0);
    }

    #[tokio::test]
    async fn reserve_waits_until_released() {
        let b = MemoryBudget::new(100);
        let r = b.reserve(80).await;
        let mut fut = pin!(b.reserve(50));
        assert!(pending_for_a_while(fut.as_mut()).await);
        assert_eq!(b.waiters(), 1);
        drop(r);
        let r2 = fut.await;
        assert_eq!((r2.amount(), b.used(), b.waiters()), (50, 50, 0));
    }

    #[tokio::test]
    async fn fifo_big_waiter_is_not_overtaken() {
        let b = MemoryBudget::new(100);
        let r = b.try_reserve(60).unwrap();
        let mut big = pin!(b.reserve(90));
        assert!(pending_for_a_while(big.as_mut()).await);
        // 10 bytes would fit, but a waiter is queued ahead.
        assert!(b.try_reserve(10).is_err());
        let mut small = pin!(b.reserve(10));
        assert!(pending_for_a_while(small.as_mut()).await);
        drop(r);
        let big_r = big.await;
        assert_eq!(b.used(), 100);
        drop(big_r);
        let small_r = small.await;
        assert_eq!(b.used(), 10);
        drop(small_r);
    }

    #[tokio::test]
    async fn cancelled_waiter_leaves_queue_and_unblocks_followers() {
        let b = MemoryBudget::new(100);
        let r = b.try_reserve(50).unwrap();
        {
            let mut big = pin!(b.reserve(80));
            assert!(pending_for_a_while(big.as_mut()).await);
            assert_eq!(b.waiters(), 1);
        } // dropped
        assert_eq!(b.waiters(), 0);
        let small = b.try_reserve(40).unwrap();
        assert_eq!(b.used(), 90);
        drop((r, small));
    }

    #[tokio::test]
    async fn granted_then_cancelled_returns_memory() {
        let b = MemoryBudget::new(100);
        let r = b.try_reserve(100).unwrap();
        let mut w = Box::pin(b.reserve(70));
        assert!(pending_for_a_while(w.as_mut()).await);
        drop(r); // grants 70 to the waiter, which has not observed it yet
        assert_eq!(b.used(), 70);
        drop(w);
        assert_eq!((b.used(), b.waiters()), (0, 0));
    }

    #[tokio::test]
    async fn oversized_reserve_waits_for_empty_budget() {
        let b = MemoryBudget::new(100);
        let r = b.try_reserve(1).unwrap();
        let mut big = pin!(b.reserve(500));
        assert!(pending_for_a_while(big.as_mut()).await);
        drop(r);
        assert_eq!(big.await.amount(), 500);
        assert_eq!(b.used(), 0);
    }

    #[tokio::test]
    async fn many_tasks_never_exceed_limit() {
        let b = MemoryBudget::new(1_000);
        let mut handles = Vec::new();
        for i in 0..32u64 {
            let b = b.clone();
            handles.push(tokio::spawn(async move {
                for j in 0..50u64 {
                    let r = b.reserve(1 + (i * 7 + j) % 300).await;
                    assert!(b.used() <= 1_000);
                    tokio::task::yield_now().await;
                    drop(r);
                }
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        assert_eq!((b.used(), b.waiters()), (0, 0));
    }

    proptest! {
        #[test]
        fn used_is_sum_of_live_reservations(
            limit in 1u64..1_000,
            ops in proptest::collection::vec((any::<bool>(), 0u64..1_500, any::<prop::sample::Index>()), 1..200),
        ) {
            let b = MemoryBudget::new(limit);
            let mut live: Vec<Reservation> = Vec::new();
            for (reserve, n, idx) in ops {
                if reserve || live.is_empty() {
                    let before = b.used();
                    match b.try_reserve(n) {
                        Ok(r) => {
                            prop_assert!(before == 0 || before + n <= limit);
                            live.push(r);
                        }
                        Err(e) => prop_assert!(before != 0 && before + n > limit, "{e}"),
                    }
                } else {
                    let i = idx.index(live.len());
                    let mut r = live.swap_remove(i);
                    if n % 3 == 0 {
                        if let Some(part) = r.split(n % (r.amount() + 1)) {
                            live.push(part);
                        }
                        live.push(r);
                    }
                }
                let sum: u64 = live.iter().map(Reservation::amount).sum();
                prop_assert_eq!(b.used(), sum);
            }
            drop(live);
            prop_assert_eq!(b.used(), 0);
        }
    }
}
