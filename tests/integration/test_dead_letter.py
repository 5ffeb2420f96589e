"""Dead-letter policy: messages negatively acknowledged too often go to a dead-letter topic.

Java semantics: a message is delivered with redelivery counts 0..max_redeliver_count; when the
one delivered at the maximum is to be redelivered again it is published to the dead-letter
topic (default ``<topic>-<subscription>-DLQ``) and acknowledged. Apache only: pulsar-lite does
not count redeliveries."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import pytest
import streamwire
from streamwire import ConfigError

from tests.peers.admin import PulsarAdmin


def _backlog(admin: PulsarAdmin, topic: str, sub: str) -> int:
    n: int = admin.topic_stats(topic)["subscriptions"][sub]["msgBacklog"]
    return n


@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
@pytest.mark.parametrize("custom_topic", [False, True], ids=["default-dlq", "custom-dlq"])
def test_nacked_messages_go_to_the_dead_letter_topic(
    apache_broker: Any,
    apache_admin: PulsarAdmin,
    unique_topic: str,
    batching: bool,
    custom_topic: bool,
) -> None:
    dlq = f"{unique_topic}-custom-dead" if custom_topic else f"{unique_topic}-work-DLQ"
    policy: dict[str, Any] = {"max_redeliver_count": 2}
    if custom_topic:
        policy["dead_letter_topic"] = dlq
    n = 4
    with streamwire.Client(apache_broker.service_url) as client:
        dead = client.subscribe(dlq, "check", initial_position="earliest")
        c = client.subscribe(
            unique_topic,
            "work",
            subscription_type="shared",
            negative_ack_redelivery_delay=0.05,
            ack_grouping_time=0,
            dead_letter_policy=policy,
        )
        p = client.create_producer(unique_topic, batching=batching, batching_max_delay=0.05)
        futures = [
            p.send_async(f"m{i}".encode(), key=f"k{i}", properties={"i": str(i)}) for i in range(n)
        ]
        ids = {f"m{i}".encode(): f.result(30) for i, f in enumerate(futures)}
        counts: dict[bytes, list[int]] = defaultdict(list)
        deadline = time.monotonic() + 60
        while c.stats()["dead_lettered"] < n and time.monotonic() < deadline:
            for m in c.receive_many(100, timeout=0.5):
                counts[m.data()].append(m.redelivery_count)
                c.negative_acknowledge(m)
        # Delivered with counts 0, 1, 2 -- then dead-lettered instead of a fourth delivery.
        assert {k: sorted(v) for k, v in counts.items()} == {k: [0, 1, 2] for k in ids}
        assert c.stats()["dead_lettered"] == n
        got = [dead.receive(timeout=30) for _ in range(n)]
        by_data = {m.data(): m for m in got}
        assert set(by_data) == set(ids)
        for data, mid in ids.items():
            m = by_data[data]
            i = data.decode()[1:]
            origin = f"{mid.ledger_id}:{mid.entry_id}:{mid.partition}"
            if mid.batch_index >= 0:
                origin += f":{mid.batch_index}"
            assert m.key == f"k{i}"
            assert m.properties == {
                "i": i,
                "REAL_TOPIC": unique_topic,
                "ORIGIN_MESSAGE_ID": origin,
                "ORIGIN_MESSAGE_IDY_TIME": origin,
            }
        # Dead-lettered messages were acknowledged on the original subscription.
        until = time.monotonic() + 10
        while _backlog(apache_admin, unique_topic, "work") and time.monotonic() < until:
            time.sleep(0.2)
        assert _backlog(apache_admin, unique_topic, "work") == 0
        assert c.receive_many(10, timeout=0.5) == []
        c.close()
        dead.close()
        p.close()


def test_acked_messages_never_reach_the_dead_letter_topic(
    apache_broker: Any, unique_topic: str
) -> None:
    with streamwire.Client(apache_broker.service_url) as client:
        c = client.subscribe(
            unique_topic,
            "work",
            subscription_type="shared",
            negative_ack_redelivery_delay=0.05,
            dead_letter_policy={"max_redeliver_count": 1},
        )
        p = client.create_producer(unique_topic, batching=False)
        p.send(b"a")
        m = c.receive(timeout=10)
        c.negative_acknowledge(m)
        m = c.receive(timeout=10)
        assert m.redelivery_count == 1
        c.acknowledge(m)  # at the maximum, but acknowledged: stays out of the DLQ
        time.sleep(0.5)
        assert c.stats()["dead_lettered"] == 0
        r = client.create_reader(f"{unique_topic}-work-DLQ", "earliest")
        assert r.read_many(10, timeout=1) == []
        c.close()


@pytest.mark.parametrize(
    "policy",
    [{}, {"max_redeliver_count": 0}, {"max_redeliver_count": 3, "retry_topic": "x"}],
)
def test_bad_dead_letter_policy(lite_broker: Any, unique_topic: str, policy: Any) -> None:
    with streamwire.Client(lite_broker.service_url) as client:
        with pytest.raises(ConfigError):
            client.subscribe(unique_topic, "s", dead_letter_policy=policy)
        with pytest.raises(TypeError):
            client.subscribe(unique_topic, "s", dead_letter_policy=3)  # type: ignore[arg-type]
