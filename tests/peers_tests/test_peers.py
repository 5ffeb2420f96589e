"""Tests of the broker launchers and the admin helper."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from types import ModuleType

import pytest

from tests.peers.admin import AdminError, PulsarAdmin
from tests.peers.apache import ApachePulsar, ApachePulsarError
from tests.peers.broker import Broker
from tests.peers.lite import PulsarLite, render_config
from tests.peers.protocol import (
    RawConnection,
    decode_uint_fields,
    encode_uint_fields,
    handshake,
)
from tests.peers.util import listening_sockets


def roundtrip(pulsar: ModuleType, url: str, topic: str, n: int = 5) -> list[bytes]:
    client = pulsar.Client(url, operation_timeout_seconds=20)
    try:
        consumer = client.subscribe(topic, "rt", initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer(topic)
        for i in range(n):
            producer.send(f"m{i}".encode())
        got = [consumer.receive(timeout_millis=15000).data() for _ in range(n)]
        return sorted(got)
    finally:
        client.close()


def test_render_config_always_disables_metrics() -> None:
    text = render_config({"default_partitions": 2, "max_message_size_bytes": 1024})
    assert "default_partitions = 2" in text
    assert "[metrics]\nenabled = false" in text
    with pytest.raises(ValueError):
        render_config({"metrics": 1})


def test_lite_listens_on_loopback_only(lite_broker: PulsarLite) -> None:
    assert lite_broker.pid is not None
    assert listening_sockets(lite_broker.pid) == [("127.0.0.1", lite_broker.port)]
    # In particular, no metrics server on (0.0.0.0):8080.
    assert all(port != 8080 for _, port in listening_sockets(lite_broker.pid))
    assert handshake("127.0.0.1", lite_broker.port).command_name == "CONNECTED"


@pytest.mark.parametrize("hard", [False, True], ids=["sigterm", "sigkill"])
def test_lite_restart_keeps_data_and_port(
    official_pulsar: ModuleType, unique_topic: str, hard: bool
) -> None:
    pulsar = official_pulsar
    with PulsarLite() as broker:
        client = pulsar.Client(broker.service_url)
        try:
            producer = client.create_producer(unique_topic, batching_enabled=False)
            for i in range(10):
                producer.send(f"keep-{i}".encode())
        finally:
            client.close()
        port, old_pid = broker.port, broker.pid
        broker.restart(hard=hard)
        assert broker.port == port and broker.pid != old_pid
        client = pulsar.Client(broker.service_url)
        try:
            consumer = client.subscribe(
                unique_topic, "after", initial_position=pulsar.InitialPosition.Earliest
            )
            got = [consumer.receive(timeout_millis=10000).data() for _ in range(10)]
        finally:
            client.close()
        assert got == [f"keep-{i}".encode() for i in range(10)]
    assert broker.pid is not None and not broker.running


def test_lite_extra_config_is_applied(official_pulsar: ModuleType, unique_topic: str) -> None:
    with PulsarLite({"default_partitions": 3}) as broker:
        client = official_pulsar.Client(broker.service_url)
        try:
            assert len(client.get_topic_partitions(unique_topic)) == 3
        finally:
            client.close()
        assert "Default partitions: 3" in broker.log_tail(200)


def test_any_broker_roundtrip(
    broker: Broker, official_pulsar: ModuleType, unique_topic: str
) -> None:
    assert roundtrip(official_pulsar, broker.service_url, unique_topic) == [
        f"m{i}".encode() for i in range(5)
    ]


def test_apache_listens_on_loopback_only(apache_broker: ApachePulsar) -> None:
    assert apache_broker.pid is not None
    socks = listening_sockets(apache_broker.pid)
    assert socks, "no listening sockets found"
    assert {addr for addr, _ in socks} == {"127.0.0.1"}, socks
    ports = {port for _, port in socks}
    assert {apache_broker.broker_port, apache_broker.web_port, apache_broker.bookie_port} <= ports
    assert apache_broker.version is not None and apache_broker.version.startswith("4.0.")


def test_apache_partitioned_topic_via_admin(
    apache_broker: ApachePulsar,
    apache_admin: PulsarAdmin,
    official_pulsar: ModuleType,
    unique_topic: str,
) -> None:
    apache_admin.create_partitioned_topic(unique_topic, 3)
    assert apache_admin.get_partitions(unique_topic) == 3
    client = official_pulsar.Client(apache_broker.service_url)
    try:
        partitions = client.get_topic_partitions(unique_topic)
    finally:
        client.close()
    assert partitions == [f"{unique_topic}-partition-{i}" for i in range(3)]
    stats = apache_admin.topic_stats(unique_topic, partitioned=True)
    assert stats["metadata"]["partitions"] == 3
    apache_admin.delete_topic(unique_topic, partitioned=True)
    with pytest.raises(AdminError) as err:  # Pulsar 4.0 answers 404 for a deleted topic
        apache_admin.get_partitions(unique_topic)
    assert err.value.status == 404


def test_apache_admin_stats_unload_terminate(
    apache_broker: ApachePulsar,
    apache_admin: PulsarAdmin,
    official_pulsar: ModuleType,
    unique_topic: str,
) -> None:
    pulsar = official_pulsar
    client = pulsar.Client(apache_broker.service_url, operation_timeout_seconds=20)
    try:
        producer = client.create_producer(unique_topic, batching_enabled=False)
        producer.send(b"one")
        assert apache_admin.topic_stats(unique_topic)["msgInCounter"] == 1
        apache_admin.unload(unique_topic)
        producer.send(b"two")  # the producer reconnects after the unload
        apache_admin.terminate(unique_topic)
        with pytest.raises(pulsar.TopicTerminated):
            producer.send(b"three")
    finally:
        # After the termination the broker closed the producer; the official client's close()
        # then sometimes reports AlreadyClosed for it. Not what this test is about.
        with contextlib.suppress(pulsar.AlreadyClosed):
            client.close()
    with pytest.raises(AdminError) as err:
        apache_admin.get_partitions("persistent://no-such-tenant/ns/x")
    assert err.value.status in (403, 404, 412)


@pytest.mark.apache
def test_apache_restart_keeps_data(official_pulsar: ModuleType, unique_topic: str) -> None:
    pulsar = official_pulsar
    with ApachePulsar(transactions=False) as broker:
        client = pulsar.Client(broker.service_url, operation_timeout_seconds=20)
        try:
            producer = client.create_producer(unique_topic, batching_enabled=False)
            for i in range(3):
                producer.send(f"d{i}".encode())
        finally:
            client.close()
        ports = (broker.broker_port, broker.web_port, broker.bookie_port)
        broker.restart()
        assert (broker.broker_port, broker.web_port, broker.bookie_port) == ports
        got = roundtrip_existing(pulsar, broker.service_url, unique_topic, 3)
        assert got == [b"d0", b"d1", b"d2"]


def roundtrip_existing(pulsar: ModuleType, url: str, topic: str, n: int) -> list[bytes]:
    client = pulsar.Client(url, operation_timeout_seconds=20)
    try:
        consumer = client.subscribe(topic, "late", initial_position=pulsar.InitialPosition.Earliest)
        return [consumer.receive(timeout_millis=15000).data() for _ in range(n)]
    finally:
        client.close()


def test_apache_start_failure_reports_log_tail(tmp_path: Path) -> None:
    broker = ApachePulsar(extra_conf={"brokerServicePort": "not-a-port"}, workdir=tmp_path)
    try:
        with pytest.raises(ApachePulsarError) as err:
            broker.start()
        assert "not-a-port" in str(err.value) or "NumberFormatException" in str(err.value)
        assert broker.pid is not None and not broker.running
    finally:
        broker.close()


def test_apache_transaction_coordinator_answers(
    apache_broker: ApachePulsar, apache_admin: PulsarAdmin
) -> None:
    """transactionCoordinatorEnabled=true is effective: TC connect + NEW_TXN succeed.

    (pulsar-client 3.13 for Python has no transaction API, so this speaks the protocol. Like a
    real client, it first looks up the coordinator's topic so that the broker loads it.)
    """
    tc_topic = "persistent://pulsar/system/transaction_coordinator_assign-partition-0"
    assert apache_admin.lookup(tc_topic)["brokerUrl"] == apache_broker.service_url
    deadline = time.monotonic() + 60
    last: object = None
    while time.monotonic() < deadline:
        conn = RawConnection("127.0.0.1", apache_broker.broker_port)
        try:
            frame, inner = conn.request(
                "TC_CLIENT_CONNECT_REQUEST", 62, encode_uint_fields((1, 1), (2, 0))
            )
            assert frame.command_name == "TC_CLIENT_CONNECT_RESPONSE"
            fields = decode_uint_fields(inner)
            if 2 in fields:  # error: the coordinator may still be loading
                last = fields
                time.sleep(1)
                continue
            frame, inner = conn.request("NEW_TXN", 50, encode_uint_fields((1, 2), (2, 60000)))
            assert frame.command_name == "NEW_TXN_RESPONSE"
            fields = decode_uint_fields(inner)
            assert 4 not in fields, fields  # no error
            assert fields.get(1) == 2  # request id echoed
            return
        finally:
            conn.close()
    pytest.fail(f"transaction coordinator never became ready: {last}")
