//! A background round that repeats while its owner lives: the partition-growth checks of
//! producers and consumers and the pattern consumer's topic discovery are all "every period,
//! for as long as the handle exists and is open", written here once.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::{interval_at, Instant, MissedTickBehavior};

/// Run `round` on the engine every `period`, the first time one period from now, for as
/// long as `owner` lives: each tick upgrades the weak handle (gone: the task ends, so the
/// round never keeps its owner alive) and hands it to `round`, whose `false` ends the task
/// (the owner was closed). Ticks missed while a slow round runs are not made up: a broker
/// that answered late does not get a burst of rounds. Must be called inside the runtime.
pub fn every<T, F, Fut>(owner: Weak<T>, period: Duration, mut round: F)
where
    T: Send + Sync + 'static,
    F: FnMut(Arc<T>) -> Fut + Send + 'static,
    Fut: Future<Output = bool> + Send,
{
    tokio::spawn(async move {
        let mut tick = interval_at(Instant::now() + period, period);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(owner) = owner.upgrade() else {
                return;
            };
            if !round(owner).await {
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(start_paused = true)]
    async fn rounds_repeat_until_the_owner_is_dropped() {
        let owner = Arc::new(AtomicUsize::new(0));
        every(
            Arc::downgrade(&owner),
            Duration::from_secs(1),
            |o| async move {
                o.fetch_add(1, Ordering::SeqCst);
                true
            },
        );
        tokio::time::sleep(Duration::from_millis(3500)).await;
        assert_eq!(
            owner.load(Ordering::SeqCst),
            3,
            "first after one period, then each"
        );
        let weak = Arc::downgrade(&owner);
        drop(owner);
        tokio::time::sleep(Duration::from_secs(3)).await;
        // The task held no strong handle between rounds, so the owner is gone.
        assert!(weak.upgrade().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_false_round_ends_the_task() {
        let owner = Arc::new(AtomicUsize::new(0));
        every(
            Arc::downgrade(&owner),
            Duration::from_secs(1),
            |o| async move { o.fetch_add(1, Ordering::SeqCst) < 1 },
        );
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(
            owner.load(Ordering::SeqCst),
            2,
            "the round that said false was the last"
        );
    }
}
