"""The official client reads exactly what streamwire writes: payloads, keys, properties, event
times, sequence ids and producer names, batched or not, with every codec.

(The official Python client has no accessor for a message's sequence id; those are read back with
streamwire's consumer, and the message ids are cross-checked between the two.)
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Optional

import pytest
import streamwire

from tests.interop._official_read import read_all, sequence_ids

CODECS = [None, "lz4", "zlib", "zstd", "snappy"]


@pytest.mark.parametrize("compression", CODECS, ids=[str(c).lower() for c in CODECS])
@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
def test_official_reads_what_we_wrote(
    broker: Any,
    official_pulsar: ModuleType,
    unique_topic: str,
    batching: bool,
    compression: Optional[str],
) -> None:
    n = 120
    data = [(f"payload-{i}-" * (1 + i % 7)).encode() for i in range(n)]
    data[3] = b""  # an empty payload
    data[4] = b"\x00\xff" * 3000  # binary, compressible
    keys = [f"key-{i % 9}-ü" if i % 4 else None for i in range(n)]
    props = [{"idx": str(i), "ü": "ω"} if i % 2 else {} for i in range(n)]
    events = [1_600_000_000_000 + i if i % 3 else None for i in range(n)]
    name = f"sw-{compression}-{batching}"
    with streamwire.Client(broker.service_url) as client:
        p = client.create_producer(
            unique_topic,
            producer_name=name,
            batching=batching,
            batching_max_messages=25,
            batching_max_delay=0.005,
            compression=compression,
        )
        half = n // 2
        # Half through send_async, half through send_many: both paths must write the same.
        futs = [
            p.send_async(data[i], key=keys[i], properties=props[i] or None, event_time=events[i])
            for i in range(half)
        ]
        ids = [f.result(20) for f in futs]
        ids += p.send_many(
            data[half:], keys=keys[half:], properties=props[half:], event_times=events[half:]
        )
        p.close()
    got = read_all(official_pulsar, broker.service_url, unique_topic, n)
    assert len(got) == n, f"official consumer got {len(got)} of {n}"
    for i, g in enumerate(got):
        assert g.data == data[i], i
        assert g.key == keys[i], i
        assert g.properties == props[i], i
        assert g.event_time == (events[i] or 0), i
        assert g.producer_name == name, i
        assert not g.null_value
        assert (g.ledger_id, g.entry_id, g.batch_index) == (
            ids[i].ledger_id,
            ids[i].entry_id,
            ids[i].batch_index,
        ), i
    if batching:
        assert max(g.batch_index for g in got) > 0, "some messages were batched"
        assert len({(g.ledger_id, g.entry_id) for g in got}) < n
    else:
        assert all(g.batch_index == -1 for g in got)
        assert len({(g.ledger_id, g.entry_id) for g in got}) == n
    seqs = sequence_ids(broker.service_url, unique_topic, n)
    assert [d for d, _ in seqs] == data
    assert [s for _, s in seqs] == list(range(n))
