"""The retry-letter topic (``retry_enable`` / ``reconsume_later``) on Apache Pulsar 4.0.7,
against the Java client's ``enableRetry`` / ``reconsumeLater`` on the same subscription
(``JavaRetry.java``, run with the Apache fixture's classpath): the copies each side writes carry
the same properties, each side receives the other's copies, and after ``max_redeliver_count``
rounds the copy goes to the dead-letter topic. (The official Python client has no retry
topic.)"""

from __future__ import annotations

import datetime
import os
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import streamwire
from streamwire import ConfigError

from tests.peers.apache import JAVA, ApachePulsar, resolve_classpath

HERE = Path(__file__).resolve().parent


def _java(url: str, topic: str, sub: str, delay_ms: int, idle_ms: int) -> list[tuple[str, str]]:
    """Run JavaRetry; the (data, properties text) of every message it received."""
    _, cp = resolve_classpath()
    out = subprocess.run(
        [
            JAVA,
            "-cp",
            cp,
            str(HERE / "JavaRetry.java"),
            url,
            topic,
            sub,
            str(delay_ms),
            str(idle_ms),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={k: v for k, v in os.environ.items() if not k.startswith("PULSAR_")},
    )
    assert out.returncode == 0 and "DONE" in out.stdout, out.stderr[-3000:]
    return [
        (line[4:].split("|", 1)[0], line.split("|", 1)[1])
        for line in out.stdout.splitlines()
        if line.startswith("MSG ")
    ]


def _props(text: str) -> dict[str, str]:
    """Java's ``TreeMap.toString()`` (``{a=1, b=2}``) as a dict."""
    body = text.strip()[1:-1]
    return dict(item.split("=", 1) for item in body.split(", ")) if body else {}


def _topic() -> str:
    return f"persistent://public/default/retry-{uuid.uuid4().hex[:10]}"


def test_copies_match_the_java_clients_and_each_side_reads_the_others(
    apache_broker: ApachePulsar,
) -> None:
    url = apache_broker.service_url
    topic, sub = _topic(), "s"
    with streamwire.Client(url) as client:
        with client.create_producer(topic) as p:
            java_first = p.send(b"java-first", properties={"app": "1"})
        # Java hands the message back (1 s), receives its own copy and acknowledges it.
        seen = _java(url, topic, sub, 1000, 4000)
        assert [d for d, _ in seen] == ["java-first", "java-first"]
        java_copy = _props(seen[1][1])

        consumer = client.subscribe(
            topic, sub, subscription_type="shared", retry_enable=True, initial_position="earliest"
        )
        with client.create_producer(topic) as p:
            ours_first = p.send(b"ours-first", properties={"app": "1"})
        m = consumer.receive(timeout=10)
        assert m.data() == b"ours-first"
        consumer.reconsume_later(m, datetime.timedelta(seconds=1))
        back = consumer.receive(timeout=10)
        ours_copy = back.properties
        assert back.data() == b"ours-first"
        assert back.topic.startswith(topic + "-s-RETRY")

        # The same properties as Java's copy, for the same kind of message.
        assert set(ours_copy) == set(java_copy)
        for name, java_id, ours_id in (
            ("ORIGIN_MESSAGE_ID", java_first, ours_first),
            ("ORIGIN_MESSAGE_IDY_TIME", java_first, ours_first),
        ):
            want = f"{java_id.ledger_id}:{java_id.entry_id}:{java_id.partition}"
            assert java_copy[name] == want
            assert ours_copy[name] == f"{ours_id.ledger_id}:{ours_id.entry_id}:{ours_id.partition}"
        for name in ("REAL_TOPIC", "RECONSUMETIMES", "DELAY_TIME", "app"):
            assert ours_copy[name] == java_copy[name], name
        consumer.acknowledge(back)

        # Ours hands a message back; Java (same subscription, its default retry topic) gets
        # the copy, acknowledges it.
        with client.create_producer(topic) as p:
            p.send(b"ours-to-java")
        m = consumer.receive(timeout=10)
        consumer.reconsume_later(m, 2.0)
        consumer.close()
        got = _java(url, topic, sub, 1000, 6000)
        assert [d for d, _ in got] == ["ours-to-java"]
        assert _props(got[0][1])["RECONSUMETIMES"] == "1"

        # Java hands one back (3 s) and exits before it returns: ours gets Java's copy.
        with client.create_producer(topic) as p:
            p.send(b"java-to-ours")
        assert [d for d, _ in _java(url, topic, sub, 3000, 1500)] == ["java-to-ours"]
        consumer = client.subscribe(topic, sub, subscription_type="shared", retry_enable=True)
        m = consumer.receive(timeout=15)
        assert (m.data(), m.properties["RECONSUMETIMES"]) == (b"java-to-ours", "1")
        consumer.acknowledge(m)
        consumer.close()


def test_the_copy_waits_for_its_delay(apache_broker: ApachePulsar) -> None:
    topic = _topic()
    with streamwire.Client(apache_broker.service_url) as client:
        consumer = client.subscribe(topic, "s", subscription_type="shared", retry_enable=True)
        with client.create_producer(topic) as p:
            p.send(b"later")
        m = consumer.receive(timeout=10)
        t0 = time.monotonic()
        consumer.reconsume_later(m, 4.0)
        # The broker may release a delayed message up to its tick (1 s) early: none within 2 s.
        assert consumer.receive_many(10, timeout=2.0) == []
        back = consumer.receive(timeout=10)
        assert back.data() == b"later" and time.monotonic() - t0 >= 2.5
        assert back.properties["DELAY_TIME"] == "4000"
        consumer.close()


def test_after_max_rounds_the_copy_goes_to_the_dead_letter_topic(
    apache_broker: ApachePulsar,
) -> None:
    topic = _topic()
    with streamwire.Client(apache_broker.service_url) as client:
        consumer = client.subscribe(
            topic,
            "s",
            subscription_type="shared",
            retry_enable=True,
            dead_letter_policy={"max_redeliver_count": 2},
        )
        with client.create_producer(topic) as p:
            p.send(b"poison", key="k")
        rounds = []
        for _ in range(3):
            m = consumer.receive(timeout=10)
            rounds.append(m.properties.get("RECONSUMETIMES"))
            consumer.reconsume_later(m, properties={"why": "busy"})
        assert rounds == [None, "1", "2"]
        assert consumer.receive_many(10, timeout=1.5) == []  # nothing came back
        with client.create_reader(topic + "-s-DLQ", "earliest") as r:
            dead = r.read_next(timeout=10)
        assert (dead.data(), dead.key) == (b"poison", "k")
        assert dead.properties["RECONSUMETIMES"] == "3"
        assert dead.properties["REAL_TOPIC"] == topic
        assert dead.properties["why"] == "busy"
        consumer.close()


def test_asyncio_face(apache_broker: ApachePulsar) -> None:
    import asyncio

    from streamwire import aio

    topic = _topic()

    async def run() -> bytes:
        async with aio.Client(apache_broker.service_url) as client:
            consumer = await client.subscribe(
                topic, "s", subscription_type="shared", retry_enable=True
            )
            producer = await client.create_producer(topic)
            await producer.send(b"again")
            m = await consumer.receive(timeout=10)
            await consumer.reconsume_later(m, 0.5)
            back = await consumer.receive(timeout=10)
            await consumer.close()
            await producer.close()
            return back.data()

    assert asyncio.run(run()) == b"again"


def test_bad_use_is_refused(apache_broker: ApachePulsar) -> None:
    topic = _topic()
    with streamwire.Client(apache_broker.service_url) as client:
        plain = client.subscribe(topic, "plain", subscription_type="shared")
        with client.create_producer(topic) as p:
            p.send(b"x")
        m = plain.receive(timeout=10)
        with pytest.raises(ConfigError, match="retry_enable"):
            plain.reconsume_later(m)
        plain.close()
        with pytest.raises(ConfigError, match="pattern"):
            client.subscribe(re.compile(r"public/default/retry-.*"), "p", retry_enable=True)
        c = client.subscribe(topic, "r", subscription_type="shared", retry_enable=True)
        with pytest.raises(streamwire.InvalidArgumentError):
            c.reconsume_later(m, -1.0)
        with pytest.raises(TypeError):
            c.reconsume_later(b"not a message")  # type: ignore[arg-type]
        c.close()
