"""The Data Source's row filter (pure pyarrow, no broker): re-delivered positions are dropped,
the range end is honoured, and the vectorized paths agree with a per-row reference."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest
from streamwire.spark.offsets import position_key
from streamwire.spark.reading import _keep_mask, _repeats_in_one_ledger

Key = tuple[int, int, int]


def reference(rows: list[Key], last: Key, end: Key) -> tuple[list[bool], Key, bool]:
    keep, beyond = [], False
    for pos in rows:
        k = position_key(pos)
        if k > end:
            beyond = True
            keep.append(False)
        elif k > last:
            last = k
            keep.append(True)
        else:
            keep.append(False)
    return keep, last, beyond


def arrays(rows: list[Key]) -> tuple[pa.Array, pa.Array, pa.Array]:
    return (
        pa.array([r[0] for r in rows], pa.int64()),
        pa.array([r[1] for r in rows], pa.int64()),
        pa.array([r[2] for r in rows], pa.int32()),
    )


def stream(rng: random.Random, ledgers: list[int]) -> list[Key]:
    """Entries in order (batched or not), with some entries sent again (pulsar-lite does)."""
    out: list[Key] = []
    for led in ledgers:
        for e in range(rng.randint(1, 6)):
            size = rng.choice([0, 1, 3, 5])
            entry = [(led, e, -1)] if size == 0 else [(led, e, i) for i in range(size)]
            out.extend(entry)
            if rng.random() < 0.3:
                out.extend(entry)  # a re-dispatched entry
            if rng.random() < 0.1 and out:
                out.extend(out[-rng.randint(1, len(out)) :])  # a longer rewind
    return out


@pytest.mark.parametrize("seed", range(300))
def test_keep_mask_matches_reference(seed: int) -> None:
    rng = random.Random(seed)
    rows = stream(rng, [7] if seed % 3 else [7, 9])
    # Range bounds are positions of the stream (an entry is either batched or not).
    pick = [position_key(r) for r in rows]
    last = rng.choice([(-1, -1, -1), *pick])
    end = max(last, rng.choice([*pick, (1 << 40, 0, 0)]))
    want = reference(rows, last, end)
    mask, new_last, beyond = _keep_mask(*arrays(rows), last, end)
    assert (mask.to_pylist(), new_last, beyond) == want
    fast = _repeats_in_one_ledger(*arrays(rows), last, end)
    if len({r[0] for r in rows}) == 1:
        assert fast is not None
        assert (fast[0].to_pylist(), fast[1], fast[2]) == want
    else:
        assert fast is None
