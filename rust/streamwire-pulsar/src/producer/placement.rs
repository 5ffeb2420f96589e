//! Where a queued message goes relative to the batch being built: joins it, closes it and
//! opens the next one, or travels alone. Pure: the actor asks this for every message (single
//! sends and `send_many` alike), so the batching rules live in one place.
//!
//! The rules, as the Java client's `BatchMessageContainerImpl`:
//! - entry-level options (delivery time, replication) go only in an entry's own metadata, so
//!   such a message is sent alone (after the open batch, keeping the order);
//! - a batch carries one `schema_version` in its metadata, so a message of another schema
//!   than the open batch's closes it first (`hasSameSchema`); messages of one schema other
//!   than the producer's own still batch together;
//! - a batch belongs to one transaction (its id is in the batch's metadata), so a message of
//!   another transaction (or of none) than the open batch's closes it first (`hasSameTxn`);
//! - a possible duplicate (a caller-given sequence id at or below one used), and the message
//!   after one, open a batch of their own (the broker judges a batch by its first id).

use super::EntryOptions;

/// The decision for one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Add it to the open batch (or open one, if none is open).
    Join,
    /// Send the open batch, then add the message to a new one.
    CloseThenJoin,
    /// Send the open batch, then the message as an entry of its own.
    Alone,
}

/// What the actor knows of the batch being built.
#[derive(Debug, Clone, Copy)]
pub struct OpenBatch<'a> {
    /// Messages in it (0: none open).
    pub len: usize,
    /// Its schema version: None for the producer's own schema.
    pub schema_version: Option<&'a [u8]>,
    /// Its transaction, if any.
    pub txn: Option<crate::transaction::TxnId>,
}

/// Where a message with `entry` goes. `batching`: the producer batches at all; `isolate`: the
/// message must start a batch of its own (a possible duplicate, or the one after it).
pub fn place(
    batching: bool,
    open: OpenBatch<'_>,
    entry: &EntryOptions,
    isolate: bool,
) -> Placement {
    if !batching || !entry.batchable() {
        return Placement::Alone;
    }
    if open.len == 0 {
        return Placement::Join;
    }
    if isolate || open.schema_version != entry.schema_version.as_deref() || open.txn != entry.txn {
        return Placement::CloseThenJoin;
    }
    Placement::Join
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use proptest::prelude::*;

    /// One message of the model: its schema version (index into a small set, None = own),
    /// whether it has an entry-level option, whether it must be isolated.
    #[derive(Debug, Clone)]
    struct M {
        version: Option<u8>,
        entry_option: bool,
        isolate: bool,
    }

    fn msg() -> impl Strategy<Value = M> {
        (
            proptest::option::of(0u8..3),
            proptest::bool::weighted(0.15),
            proptest::bool::weighted(0.1),
        )
            .prop_map(|(version, entry_option, isolate)| M {
                version,
                entry_option,
                isolate,
            })
    }

    fn entry_of(m: &M) -> EntryOptions {
        EntryOptions {
            schema_version: m.version.map(|v| Bytes::from(vec![0, 0, 0, v])),
            deliver_at: m.entry_option.then_some(1),
            ..EntryOptions::default()
        }
    }

    /// An entry on the wire of the model: the input positions it holds and its version.
    #[derive(Debug)]
    struct Sent {
        positions: Vec<usize>,
        version: Option<Bytes>,
        batched: bool,
    }

    /// Run `msgs` through `place` as the actor does (with a batch size limit).
    fn simulate(msgs: &[M], batching: bool, max: usize) -> Vec<Sent> {
        let mut out = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        let mut open_version: Option<Bytes> = None;
        let close = |open: &mut Vec<usize>, v: &mut Option<Bytes>, out: &mut Vec<Sent>| {
            if !open.is_empty() {
                out.push(Sent {
                    positions: std::mem::take(open),
                    version: v.take(),
                    batched: true,
                });
            }
        };
        for (i, m) in msgs.iter().enumerate() {
            let entry = entry_of(m);
            let state = OpenBatch {
                len: open.len(),
                schema_version: open_version.as_deref(),
                txn: None,
            };
            match place(batching, state, &entry, m.isolate) {
                Placement::Alone => {
                    close(&mut open, &mut open_version, &mut out);
                    out.push(Sent {
                        positions: vec![i],
                        version: entry.schema_version,
                        batched: false,
                    });
                    continue;
                }
                Placement::CloseThenJoin => close(&mut open, &mut open_version, &mut out),
                Placement::Join => {}
            }
            if open.is_empty() {
                open_version = entry.schema_version;
            }
            open.push(i);
            if open.len() >= max {
                close(&mut open, &mut open_version, &mut out);
            }
        }
        close(&mut open, &mut open_version, &mut out);
        out
    }

    proptest! {
        #[test]
        fn batches_keep_order_and_one_version(
            msgs in proptest::collection::vec(msg(), 0..200),
            batching in proptest::bool::weighted(0.9),
            max in 1usize..50,
        ) {
            let sent = simulate(&msgs, batching, max);
            // Every message is sent exactly once, in input order.
            let order: Vec<usize> = sent.iter().flat_map(|s| s.positions.clone()).collect();
            prop_assert_eq!(order, (0..msgs.len()).collect::<Vec<_>>());
            for s in &sent {
                // Every message of an entry carries the entry's schema version.
                for &i in &s.positions {
                    let want = entry_of(&msgs[i]).schema_version;
                    prop_assert_eq!(&want, &s.version);
                }
                // Entry-level options never share an entry; nothing batches when off.
                if s.batched {
                    prop_assert!(batching);
                    prop_assert!(s.positions.iter().all(|&i| !msgs[i].entry_option));
                    // An isolated message only ever opens a batch.
                    prop_assert!(s.positions[1..].iter().all(|&i| !msgs[i].isolate));
                } else {
                    prop_assert_eq!(s.positions.len(), 1);
                    prop_assert!(!batching || msgs[s.positions[0]].entry_option);
                }
            }
        }

        #[test]
        fn a_run_of_one_schema_fills_batches(
            version in proptest::option::of(0u8..3),
            n in 1usize..300,
            max in 1usize..50,
        ) {
            // A send_many of one schema (the producer's or another): batches only split at
            // the size limit, never per message.
            let msgs = vec![M { version, entry_option: false, isolate: false }; n];
            let sent = simulate(&msgs, true, max);
            prop_assert_eq!(sent.len(), n.div_ceil(max));
            prop_assert!(sent.iter().all(|s| s.batched));
        }
    }

    #[test]
    fn another_version_closes_the_open_batch() {
        let v1 = EntryOptions {
            schema_version: Some(Bytes::from_static(&[1])),
            ..EntryOptions::default()
        };
        let own = OpenBatch {
            len: 3,
            schema_version: None,
            txn: None,
        };
        assert_eq!(place(true, own, &v1, false), Placement::CloseThenJoin);
        let same = OpenBatch {
            len: 3,
            schema_version: Some(&[1]),
            txn: None,
        };
        assert_eq!(place(true, same, &v1, false), Placement::Join);
        assert_eq!(
            place(true, same, &EntryOptions::default(), false),
            Placement::CloseThenJoin
        );
        let txn = EntryOptions {
            txn: Some(crate::transaction::TxnId { most: 1, least: 2 }),
            ..v1.clone()
        };
        // A transaction's messages batch together, apart from other transactions' and from
        // messages outside any.
        assert_eq!(place(true, same, &txn, false), Placement::CloseThenJoin);
        let in_txn = OpenBatch {
            txn: txn.txn,
            ..same
        };
        assert_eq!(place(true, in_txn, &txn, false), Placement::Join);
        assert_eq!(place(true, in_txn, &v1, false), Placement::CloseThenJoin);
        assert_eq!(place(false, same, &v1, false), Placement::Alone);
    }
}
