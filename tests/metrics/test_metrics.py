"""streamwire.metrics against real peers: pulsar-lite (producer, consumer, client totals, the
Prometheus text, the HTTP endpoint, the OpenTelemetry bridge) and the TANK broker (double
unless STREAMWIRE_TANK_BIN names the real one). Pravega writers are covered by the Rust unit
test of the writer queue's acknowledgement accounting (see the report / docs/observability.md)."""

from __future__ import annotations

import gc
import sys
import time
import uuid
from typing import Any

import httpx
import pytest
import streamwire
from prometheus_client.parser import text_string_to_metric_families
from streamwire import (
    AlreadyClosedError,
    ConfigError,
    InvalidArgumentError,
    NotSupportedError,
    metrics,
    tank,
)

from tests.gather import gather

N = 500


def payloads(n: int = N) -> list[bytes]:
    # Varied sizes, so a bytes counter that counted messages (or frames) would be caught.
    return [b"x" * (i % 97 + 1) for i in range(n)]


def produce(client: streamwire.Client, topic: str, values: list[bytes]) -> streamwire.Producer:
    producer = client.create_producer(topic, batching_max_messages=50)
    futures = [producer.send_async(v) for v in values]
    for f in futures:
        f.result(timeout=30)
    return producer


def samples(text: str, family: str) -> list[Any]:
    for fam in text_string_to_metric_families(text):
        if fam.name == family:
            return list(fam.samples)
    return []


def test_producer_counters_equal_what_was_sent(lite_broker: Any, unique_topic: str) -> None:
    values = payloads()
    with streamwire.Client(lite_broker.service_url) as client:
        producer = produce(client, unique_topic, values)
        m = producer.metrics()
        assert m["kind"] == "producer" and m["protocol"] == "pulsar"
        assert m["topic"] == unique_topic
        assert m["name"] == producer.name != ""
        assert m["messages"] == N
        assert m["bytes"] == sum(len(v) for v in values)
        assert m["errors"] == 0
        assert m["pending_messages"] == 0
        # Batches of at most 50: at least N/50 entries, and one latency sample per receipt.
        assert N // 50 <= m["batches"] <= N
        assert m["send_latency_count"] == m["batches"] == producer.stats()["entries"]
        assert 0 < m["send_latency_p50_ms"] <= m["send_latency_max_ms"]
        assert m["send_latency_sum_seconds"] > 0
        producer.close()


def test_consumer_counters_acks_nacks_and_redeliveries(lite_broker: Any, unique_topic: str) -> None:
    values = payloads(200)
    with streamwire.Client(lite_broker.service_url) as client:
        consumer = client.subscribe(
            unique_topic,
            "metrics-sub",
            subscription_type="shared",
            initial_position="earliest",
            negative_ack_redelivery_delay=0.1,
        )
        produce(client, unique_topic, values).close()
        got = gather(lambda left: consumer.receive_many(1000, timeout=1.0), len(values), 20)
        assert len(got) == len(values)
        m = consumer.metrics()
        assert m["kind"] == "consumer" and m["topic"] == unique_topic
        assert m["messages"] == len(values)
        assert m["bytes"] == sum(len(v) for v in values)
        assert 1 <= m["batches"] <= len(values)
        for msg in got[1:]:
            consumer.acknowledge(msg)
        consumer.negative_acknowledge(got[0])
        again = consumer.receive(timeout=10)
        assert again.value == got[0].value
        consumer.acknowledge(again)
        m = consumer.metrics()
        assert m["acks"] == len(values)
        assert m["nacks"] == 1
        assert m["redeliveries"] >= 1
        # Counted as they arrive from the broker: the nacked message's whole batch came again
        # (the engine drops its acknowledged messages before the application sees them).
        assert len(values) + 1 <= m["messages"] <= len(values) + 50
        # The rest of that batch waits in the queue until the next receive drops it.
        assert m["receive_queue"] == consumer.stats()["queued"] <= 49
        consumer.close()
        with pytest.raises(AlreadyClosedError):
            consumer.metrics()


def test_client_totals_outlive_closed_producers(lite_broker: Any) -> None:
    topic = f"persistent://public/default/m-{uuid.uuid4().hex}"
    with streamwire.Client(lite_broker.service_url) as client:
        before = client.metrics()
        assert before["kind"] == "client" and before["messages_sent"] == 0
        values = payloads(120)
        producer = produce(client, topic, values)
        producer.close()
        with pytest.raises(AlreadyClosedError):
            producer.metrics()
        del producer
        gc.collect()
        # Its own series go once the engine lets go of it; the client's totals keep it.
        deadline = time.monotonic() + 10
        while topic in metrics.prometheus_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert topic not in metrics.prometheus_text()
        after = client.metrics()
        assert after["messages_sent"] == 120
        assert after["bytes_sent"] == sum(len(v) for v in values)
        assert after["lookups"] >= 1 and after["connections"] >= 1
        assert after["pending_bytes"] == 0
        cid = after["client_id"]
        text = metrics.prometheus_text()
        sent = samples(text, "streamwire_client_messages_sent")
        assert [s.value for s in sent if s.labels["client"] == str(cid)] == [120.0]
    with pytest.raises(AlreadyClosedError):
        client.metrics()


def test_prometheus_text_parses_with_cumulative_buckets(
    lite_broker: Any, unique_topic: str
) -> None:
    values = payloads()
    with streamwire.Client(lite_broker.service_url) as client:
        producer = produce(client, unique_topic, values)
        text = metrics.prometheus_text()
        mine = [
            s
            for s in samples(text, "streamwire_producer_messages")
            if s.labels.get("topic") == unique_topic
        ]
        assert [(s.name, s.value) for s in mine] == [("streamwire_producer_messages_total", N)]
        assert mine[0].labels["protocol"] == "pulsar"
        hist = [
            s
            for s in samples(text, "streamwire_producer_send_latency_seconds")
            if s.labels.get("topic") == unique_topic
        ]
        buckets = [s for s in hist if s.name.endswith("_bucket")]
        values_by_le = [s.value for s in buckets]
        assert values_by_le == sorted(values_by_le), "buckets must be cumulative"
        assert buckets[-1].labels["le"] == "+Inf"
        count = [s.value for s in hist if s.name.endswith("_count")]
        assert count == [buckets[-1].value] == [float(producer.metrics()["batches"])]
        gauge = samples(text, "streamwire_producer_pending_messages")
        assert any(s.labels.get("topic") == unique_topic and s.value == 0 for s in gauge)
        producer.close()


def test_http_endpoint_serves_metrics_until_closed(lite_broker: Any, unique_topic: str) -> None:
    with streamwire.Client(lite_broker.service_url) as client:
        producer = produce(client, unique_topic, payloads(10))
        server = metrics.serve()
        try:
            assert server.host == "127.0.0.1" and server.port > 0
            r = httpx.get(server.url, timeout=5)
            assert r.status_code == 200
            assert r.headers["content-type"] == metrics.CONTENT_TYPE
            assert f'topic="{unique_topic}"' in r.text
            assert httpx.get(server.url.replace("/metrics", "/other"), timeout=5).status_code == 404
        finally:
            server.close()
        assert server.closed
        server.close()  # idempotent
        with pytest.raises(httpx.ConnectError):
            httpx.get(server.url, timeout=2)
        producer.close()


def test_opentelemetry_in_memory_reader_sees_the_values(
    lite_broker: Any, unique_topic: str
) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    metrics.enable_opentelemetry(provider)
    values = payloads()
    with streamwire.Client(lite_broker.service_url) as client:
        producer = produce(client, unique_topic, values)
        data = reader.get_metrics_data()
        assert data is not None
        points: dict[str, list[Any]] = {}
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    points.setdefault(metric.name, []).extend(metric.data.data_points)

        def value(name: str) -> Any:
            mine = [p.value for p in points[name] if p.attributes.get("topic") == unique_topic]
            assert len(mine) == 1, (name, points.get(name))
            return mine[0]

        assert value("streamwire.producer.messages") == N
        assert value("streamwire.producer.bytes") == sum(len(v) for v in values)
        assert value("streamwire.producer.send_latency.count") == producer.metrics()["batches"]
        assert value("streamwire.producer.pending_messages") == 0
        producer.close()
    provider.shutdown()


def test_opentelemetry_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(NotSupportedError, match="opentelemetry"):
        metrics.enable_opentelemetry()


def test_enable_opentelemetry_rejects_a_non_provider() -> None:
    with pytest.raises(TypeError, match="MeterProvider"):
        metrics.enable_opentelemetry(meter_provider="provider")


def test_serve_rejects_bad_arguments() -> None:
    with pytest.raises(TypeError):
        metrics.serve(port="9100")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        metrics.serve(port=True)
    with pytest.raises(TypeError):
        metrics.serve(host=127)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        metrics.serve(port=70000)
    with pytest.raises(InvalidArgumentError):
        metrics.serve(host="")
    with metrics.serve() as taken, pytest.raises(ConfigError):
        metrics.serve(port=taken.port)


def test_documented_keys_match_the_dicts(lite_broker: Any, unique_topic: str) -> None:
    with streamwire.Client(lite_broker.service_url) as client:
        producer = produce(client, unique_topic, payloads(5))
        consumer = client.subscribe(unique_topic, "keys", initial_position="earliest")
        seen = set()
        for d in [client.metrics(), producer.metrics(), consumer.metrics(), *metrics.snapshot()]:
            kind = d["kind"]
            seen.add(kind)
            keys = set(metrics.COUNTERS[kind]) | set(metrics.GAUGES[kind])
            assert keys <= set(d), (kind, keys - set(d))
        assert {"client", "producer", "consumer"} <= seen
        consumer.close()
        producer.close()


def test_tank_producer_and_consumer_counters(tank_client: tank.Client) -> None:
    topic = "m" + uuid.uuid4().hex[:20]
    tank_client.create_topic(topic, partitions=2)
    values = payloads(300)
    with tank_client.create_producer(topic, batch_max_messages=40) as producer:
        for i, v in enumerate(values):
            producer.send_async(v, b"k%d" % (i % 7))
        producer.flush(timeout=30)
        m = producer.metrics()
        assert (m["kind"], m["protocol"], m["topic"]) == ("producer", "tank", topic)
        assert m["messages"] == len(values)
        keys = sum(len(b"k%d" % (i % 7)) for i in range(len(values)))
        assert m["bytes"] == sum(len(v) for v in values) + keys  # key + value bytes
        assert m["errors"] == 0 and m["pending_messages"] == 0
        assert len(values) // 40 <= m["batches"] <= len(values)
        assert 1 <= m["send_latency_count"] <= m["batches"]
    with tank_client.create_consumer(topic) as consumer:
        got = gather(lambda left: consumer.receive_many(10_000, timeout=0.5), len(values), 20)
        assert len(got) == len(values)
        c = consumer.metrics()
        assert (c["kind"], c["protocol"]) == ("consumer", "tank")
        assert c["messages"] == len(values)
        assert c["bytes"] == m["bytes"]
        assert c["batches"] >= 2  # two partitions: a chunk each at least
        assert c["receive_queue"] == 0
    with pytest.raises(AlreadyClosedError):
        consumer.metrics()
    totals = tank_client.metrics()
    assert totals["protocol"] == "tank" and totals["connections"] >= 1
    assert totals["messages_sent"] >= len(values)
    assert totals["messages_received"] >= len(values)


def test_same_labels_are_one_series(tank_client: tank.Client) -> None:
    # Two TANK producers of one topic have the same labels (no names): one summed series.
    topic = "m" + uuid.uuid4().hex[:20]
    tank_client.create_topic(topic, partitions=1)
    with tank_client.create_producer(topic) as a, tank_client.create_producer(topic) as b:
        a.send_many([b"a"] * 30)
        b.send_many([b"b"] * 12)
        a.flush()
        b.flush()
        mine = [
            s
            for s in samples(metrics.prometheus_text(), "streamwire_producer_messages")
            if s.labels.get("topic") == topic
        ]
        assert [s.value for s in mine] == [42.0]
