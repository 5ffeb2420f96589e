"""We read exactly what the official client writes: payloads, keys, ordering keys, properties,
event times, sequence ids, producer names and message ids, batched or not, any codec."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import streamwire

from tests.integration._consumer_util import produce

CODECS = ["NONE", "LZ4", "ZLib", "ZSTD", "SNAPPY"]


@pytest.mark.parametrize("compression", CODECS)
@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
def test_read_what_official_wrote(
    broker: Any,
    official_pulsar: ModuleType,
    unique_topic: str,
    batching: bool,
    compression: str,
) -> None:
    n = 120
    data = [(f"payload-{i}-" * (1 + i % 7)).encode() for i in range(n)]
    data[3] = b""  # an empty payload
    keys = [f"key-{i % 9}" if i % 4 else None for i in range(n)]
    okeys = [f"ok-{i % 3}" if i % 5 == 1 else None for i in range(n)]
    props = [{"idx": str(i), "ü": "ω"} if i % 2 else {} for i in range(n)]
    events = [1_600_000_000_000 + i if i % 3 else None for i in range(n)]
    official_ids = produce(
        official_pulsar,
        broker.service_url,
        unique_topic,
        data,
        batching=batching,
        compression=compression,
        keys=keys,
        ordering_keys=okeys,
        properties=props,
        event_times=events,
        producer_name=f"official-{compression}-{batching}",
    )
    with streamwire.Client(broker.service_url) as client:
        c = client.subscribe(unique_topic, "interop", initial_position="earliest")
        got: list[Any] = []
        while len(got) < n:
            batch = c.receive_many(n - len(got), timeout=15)
            assert batch, f"received {len(got)} of {n}"
            got.extend(batch)
        assert c.receive_many(10, timeout=0.3) == [], "nothing extra"
        assert c.stats()["invalid"] == 0
        for i, m in enumerate(got):
            assert m.data() == data[i], i
            assert m.key == keys[i], i
            assert m.ordering_key == (okeys[i].encode() if okeys[i] else None), i
            assert m.properties == props[i], i
            assert m.event_time == events[i], i
            assert m.sequence_id == i, i
            assert m.producer_name == f"official-{compression}-{batching}"
            oid = official_ids[i]
            ours = m.message_id
            assert (ours.ledger_id, ours.entry_id, ours.partition, ours.batch_index) == (
                oid.ledger_id(),
                oid.entry_id(),
                oid.partition(),
                oid.batch_index(),
            ), i
            # Our serialized id is the official client's (same protobuf).
            back = streamwire.MessageId.deserialize(oid.serialize())
            assert back == ours
            assert m.publish_time > 1_600_000_000_000
        if batching:
            assert any(m.message_id.batch_index > 0 for m in got)
        c.acknowledge(got)
        c.close()
