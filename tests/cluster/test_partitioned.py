"""A partitioned topic whose partitions sit on both brokers: a key-routed producer of ours
through the proxy, two Key_Shared consumers of ours through the proxy, and the official client
reading every partition directly.

Each key's messages reach one consumer, in order, and the keys land on partitions of both
brokers. The producer batches by key (``batching_type="key_based"``): Key_Shared dispatches an
entry by a single key, so a default batch, which mixes keys, would scatter a key's messages over
both consumers.
"""

from __future__ import annotations

import time
from collections import defaultdict
from types import ModuleType

import streamwire
from streamwire import OperationTimeoutError

from tests.cluster.helpers import dialled, spread_topic
from tests.peers.apache_cluster import ApacheCluster

PARTITIONS = 6
KEYS = 40
PER_KEY = 100


def test_key_routed_partitions_on_both_brokers(
    cluster: ApacheCluster, official_pulsar: ModuleType
) -> None:
    topic, owners = spread_topic(cluster, PARTITIONS)
    messages = [
        (f"k{k:02d}", f"k{k:02d}-{i:04d}".encode()) for i in range(PER_KEY) for k in range(KEYS)
    ]
    with streamwire.Client(cluster.proxy_url, operation_timeout=30) as client:
        assert client.lookup().partitions(topic) == PARTITIONS
        # The lookups through the proxy see both owners.
        urls = {client.lookup().broker_url(p) for p in client.lookup().topic_partitions(topic)}
        assert urls == {b.service_url for b in cluster.brokers}
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
        # Key-based batching: the broker's Key_Shared dispatch routes a whole entry by one key,
        # so each batch holds one key (default batches mix keys, which scatters a key's
        # messages over both consumers).
        with client.create_producer(
            topic, routing="key_hash", batching_type="key_based"
        ) as producer:
            futures = [producer.send_async(v, key=k) for k, v in messages]
            producer.flush()
            for f in futures:
                f.result(timeout=60)
        per_key: dict[str, list[bytes]] = defaultdict(list)
        key_owner: dict[str, int] = {}
        partition_of_key: dict[str, str] = {}
        total = 0
        max_batch_index = -1
        deadline = time.monotonic() + 60
        while total < len(messages) and time.monotonic() < deadline:
            for ci, c in enumerate(consumers):
                try:
                    batch = c.receive_many(500, timeout=0.5)
                except OperationTimeoutError:
                    continue
                for m in batch:
                    k = m.key
                    assert k is not None
                    per_key[k].append(m.data())
                    # Key_Shared: one consumer per key; key_hash: one partition per key.
                    assert key_owner.setdefault(k, ci) == ci, f"key {k} went to two consumers"
                    assert partition_of_key.setdefault(k, m.topic) == m.topic
                    max_batch_index = max(max_batch_index, m.message_id.batch_index)
                total += len(batch)
                c.acknowledge(batch)
        assert set(dialled(cluster)) == {"proxy"}, dialled(cluster)
        for c in consumers:
            c.close()
    assert total == len(messages)
    assert max_batch_index > 0, "the producer batched"
    for k in range(KEYS):
        key = f"k{k:02d}"
        assert per_key[key] == [f"{key}-{i:04d}".encode() for i in range(PER_KEY)], key
    used = {int(t.rsplit("-", 1)[1]) for t in partition_of_key.values()}
    assert {owners[p] for p in used} == {0, 1}, "the keys did not reach both brokers"
    assert set(key_owner.values()) == {0, 1}, "Key_Shared gave every key to one consumer"

    # The official client reads each partition directly from broker 0 (redirects included).
    official = official_pulsar.Client(cluster.service_url, operation_timeout_seconds=30)
    try:
        consumer = official.subscribe(
            topic,
            "official",
            consumer_type=official_pulsar.ConsumerType.Shared,
            initial_position=official_pulsar.InitialPosition.Earliest,
        )
        got: list[bytes] = []
        while True:
            try:
                msg = consumer.receive(timeout_millis=3000)
            except official_pulsar.Timeout:
                break
            got.append(bytes(msg.data()))
            consumer.acknowledge(msg)
        consumer.close()
    finally:
        official.close()
    assert sorted(got) == sorted(v for _, v in messages)
