"""Key-based batching (``batching_type="key_based"``) against real brokers.

- every batch entry holds the messages of one key (ordering key, else partition key), each
  key's messages keep their order, sequence ids rise along the topic, and nothing is lost (on
  Apache Pulsar with deduplication on);
- two Key_Shared consumers: each key reaches exactly one of them. The same traffic with
  default batching scatters keys over both (a mixed batch is dispatched by one key), which
  shows the test can fail;
- the official client reads what we wrote with key-based batching, and we read what it wrote
  with ``BatchingType.KeyBased``.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from types import ModuleType
from typing import Any, Optional

import pytest
import streamwire

from tests.interop._official_read import read_all

KEYS = 24


def _traffic(n: int) -> list[tuple[bytes, Optional[str], Optional[bytes]]]:
    """``n`` messages with interleaved keys: mostly partition keys, some ordering keys (which
    win over the partition key), some unkeyed."""
    out: list[tuple[bytes, Optional[str], Optional[bytes]]] = []
    for i in range(n):
        key: Optional[str] = f"k{i % KEYS:02d}"
        ordering: Optional[bytes] = None
        if i % 11 == 3:
            ordering = f"o{i % 3}".encode()
        elif i % 13 == 5:
            key = None
        out.append((f"{i:06d}".encode(), key, ordering))
    return out


def _group(key: Optional[str], ordering: Optional[bytes]) -> str:
    if ordering is not None:
        return "o:" + ordering.decode()
    return "p:" + key if key is not None else "-"


def _unique(got: list[Any], broker_kind: str) -> list[Any]:
    """``got`` in topic order. pulsar-lite re-dispatches some entries when flow permits are
    topped up mid-delivery (PEERS.md; the official client sees the same): the same message,
    same id, again; those repeats go. Apache Pulsar must deliver each message once."""
    if broker_kind != "lite":
        return got
    by_id = {
        (m.message_id.ledger_id, m.message_id.entry_id, m.message_id.batch_index): m for m in got
    }
    assert len({m.data() for m in got}) == len(by_id), "a repeat is the same message"
    return sorted(by_id.values(), key=lambda m: m.message_id)


def _receive_all(consumer: Any, n: int, timeout: float = 60.0) -> list[Any]:
    got: list[Any] = []
    values: set[bytes] = set()  # distinct: pulsar-lite may deliver an entry twice (_unique)
    end = time.monotonic() + timeout
    while len(values) < n and time.monotonic() < end:
        batch = consumer.receive_many(1000, timeout=0.5)
        got.extend(batch)
        values.update(m.data() for m in batch)
        if batch:
            consumer.acknowledge(batch)
    return got


@pytest.mark.parametrize("how", ["send_async", "send_many"])
def test_each_entry_holds_one_key(
    broker: Any, broker_kind: str, unique_topic: str, how: str
) -> None:
    traffic = _traffic(3_000)
    with streamwire.Client(broker.service_url) as client:
        consumer = client.subscribe(unique_topic, "s", initial_position="earliest")
        with client.create_producer(
            unique_topic,
            producer_name=f"kb-{how}",
            batching_type="key_based",
            batching_max_delay=0.05,
        ) as producer:
            if how == "send_async":
                futures = [producer.send_async(v, key=k, ordering_key=o) for v, k, o in traffic]
                producer.flush()
                for f in futures:
                    f.result(timeout=60)
            else:
                # send_many has no ordering keys: keys only, in chunks of 500.
                for start in range(0, len(traffic), 500):
                    chunk = traffic[start : start + 500]
                    producer.send_many([v for v, _, _ in chunk], keys=[k for _, k, _ in chunk])
                traffic = [(v, k, None) for v, k, _ in traffic]
        got = _receive_all(consumer, len(traffic))
        consumer.close()
    want_group = {v: _group(k, o) for v, k, o in traffic}
    got = _unique(got, broker_kind)
    counts = Counter(m.data() for m in got)
    assert [v for v, n in counts.items() if n > 1] == [], "nothing twice"
    assert sorted(counts) == sorted(want_group), "everything"
    entries: dict[tuple[int, int], list[Any]] = defaultdict(list)
    per_group: dict[str, list[bytes]] = defaultdict(list)
    for m in got:
        mid = m.message_id
        entries[(mid.ledger_id, mid.entry_id)].append(m)
        assert _group(m.key, m.ordering_key) == want_group[m.data()]
        per_group[want_group[m.data()]].append(m.data())
    for entry in entries.values():
        assert len({_group(m.key, m.ordering_key) for m in entry}) == 1, "one key per entry"
    assert max(len(e) for e in entries.values()) > 20, "messages were batched"
    assert len(entries) < len(traffic) // 5
    for g, values in per_group.items():
        assert values == sorted(values), f"order of {g}"
    # The producer numbered messages as it sent the entries: ids rise along the topic.
    seqs = [m.sequence_id for m in got]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_caller_sequence_ids_batch_same_key_neighbours(
    apache_broker: Any, unique_topic: str
) -> None:
    # Caller-given ids cannot be renumbered: runs of one key batch, a key change closes the
    # batch, and with deduplication on (the fixture's broker) nothing is dropped.
    keys = [f"r{i // 50}" for i in range(500)] + [f"x{i % 7}" for i in range(200)]
    values = [f"{i:05d}".encode() for i in range(len(keys))]
    with streamwire.Client(apache_broker.service_url) as client:
        consumer = client.subscribe(unique_topic, "s", initial_position="earliest")
        with client.create_producer(
            unique_topic, producer_name="kb-seq", batching_type="key_based"
        ) as producer:
            producer.send_many(values, keys=keys, sequence_ids=list(range(1000, 1000 + len(keys))))
            producer.flush()
        got = _receive_all(consumer, len(values))
        consumer.close()
    assert [m.data() for m in got] == values
    entries: dict[tuple[int, int], set[Optional[str]]] = defaultdict(set)
    for m in got:
        entries[(m.message_id.ledger_id, m.message_id.entry_id)].add(m.key)
    assert all(len(ks) == 1 for ks in entries.values())
    # The key-sorted first part batches (10 runs of 50), the interleaved rest cannot.
    assert len(entries) < 300


def _key_shared_run(client: streamwire.Client, topic: str, batching_type: str) -> dict[str, Any]:
    """Two Key_Shared consumers; a bulk of batched sends with many keys, then one blocking
    send per key (a lone message, dispatched by its own key). Returns what each got."""
    consumers = [
        client.subscribe(
            topic,
            "ks",
            subscription_type="key_shared",
            initial_position="earliest",
            consumer_name=f"c{i}",
        )
        for i in range(2)
    ]
    traffic = [(f"{i:06d}".encode(), f"k{i % KEYS:02d}") for i in range(4_000)]
    with client.create_producer(
        topic,
        batching_type=batching_type,
        batching_max_messages=500,
        batching_max_delay=0.05,
    ) as producer:
        futures = [producer.send_async(v, key=k) for v, k in traffic]
        producer.flush()
        for f in futures:
            f.result(timeout=60)
        for k in range(KEYS):
            value = f"last-{k:02d}".encode()
            key = f"k{k:02d}"
            producer.send(value, key=key)
            traffic.append((value, key))
    owners: dict[str, set[int]] = defaultdict(set)
    per_key: dict[str, list[bytes]] = defaultdict(list)
    total = 0
    end = time.monotonic() + 60
    while total < len(traffic) and time.monotonic() < end:
        for ci, c in enumerate(consumers):
            batch = c.receive_many(1000, timeout=0.3)
            for m in batch:
                owners[m.key].add(ci)
                per_key[m.key].append(m.data())
            total += len(batch)
            if batch:
                c.acknowledge(batch)
    for c in consumers:
        c.close()
    return {"owners": owners, "per_key": per_key, "total": total, "traffic": traffic}


def test_key_shared_gets_each_key_on_one_consumer(apache_broker: Any, unique_topic: str) -> None:
    with streamwire.Client(apache_broker.service_url) as client:
        run = _key_shared_run(client, unique_topic, "key_based")
        assert run["total"] == len(run["traffic"]), "everything received"
        owners = run["owners"]
        assert all(len(v) == 1 for v in owners.values()), dict(owners)
        assert {i for v in owners.values() for i in v} == {0, 1}, "both consumers get keys"
        want: dict[str, list[bytes]] = defaultdict(list)
        for v, k in run["traffic"]:
            want[k].append(v)
        assert run["per_key"] == want, "per-key order"

        # The same traffic with default batching: a batch of many keys is dispatched by one
        # (it has none of its own), so its keys land on one consumer while their lone
        # messages go by their own key — keys end up on both consumers.
        run = _key_shared_run(client, unique_topic + "-default", "default")
        assert run["total"] == len(run["traffic"])
        split = [k for k, v in run["owners"].items() if len(v) > 1]
        assert split, "default batching kept every key on one consumer"


def test_official_reads_key_based(
    broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    traffic = [(f"{i:05d}".encode(), f"k{i % 10}") for i in range(1_000)]
    with streamwire.Client(broker.service_url) as client:
        with client.create_producer(
            unique_topic,
            producer_name="kb-interop",
            batching_type="key_based",
            batching_max_delay=0.05,
            compression="lz4",
        ) as producer:
            futures = [producer.send_async(v, key=k) for v, k in traffic]
            producer.flush()
            ids = [f.result(timeout=60) for f in futures]
    got = read_all(official_pulsar, broker.service_url, unique_topic, len(traffic))
    assert sorted((g.data, g.key) for g in got) == sorted(traffic)
    by_id = {(i.ledger_id, i.entry_id, i.batch_index): v for i, (v, _) in zip(ids, traffic)}
    entries: dict[tuple[int, int], set[Optional[str]]] = defaultdict(set)
    per_key: dict[Optional[str], list[bytes]] = defaultdict(list)
    for g in got:
        assert by_id[(g.ledger_id, g.entry_id, g.batch_index)] == g.data, "ids agree"
        entries[(g.ledger_id, g.entry_id)].add(g.key)
        per_key[g.key].append(g.data)
    assert all(len(k) == 1 for k in entries.values()), "one key per entry"
    assert max(g.batch_index for g in got) > 0, "batched"
    for values in per_key.values():
        assert values == sorted(values)


def test_read_official_key_based(
    broker: Any, broker_kind: str, official_pulsar: ModuleType, unique_topic: str
) -> None:
    # Interleaved keys: the official key-based batcher makes one batch per key of them.
    traffic = [(f"{i:05d}".encode(), f"k{i % 10}") for i in range(1_000)]
    official = official_pulsar.Client(broker.service_url, operation_timeout_seconds=30)
    try:
        producer = official.create_producer(
            unique_topic,
            batching_enabled=True,
            batching_type=official_pulsar.BatchingType.KeyBased,
            batching_max_messages=50,
            batching_max_publish_delay_ms=10,
        )
        for v, k in traffic:
            producer.send_async(v, lambda res, mid: None, partition_key=k)
        producer.flush()
        producer.close()
    finally:
        official.close()
    with streamwire.Client(broker.service_url) as client:
        consumer = client.subscribe(unique_topic, "s", initial_position="earliest")
        got = _receive_all(consumer, len(traffic))
        got += consumer.receive_many(100, timeout=0.3)
        consumer.close()
    got = _unique(got, broker_kind)
    assert sorted((m.data(), m.key) for m in got) == sorted(traffic), "all, once"
    entries: dict[tuple[int, int], set[Optional[str]]] = defaultdict(set)
    for m in got:
        entries[(m.message_id.ledger_id, m.message_id.entry_id)].add(m.key)
    assert all(len(k) == 1 for k in entries.values())
    assert max(m.message_id.batch_index for m in got) > 0
    for k in range(10):
        mine = [m.data() for m in got if m.key == f"k{k}"]
        assert mine == sorted(mine), f"order of k{k}"
