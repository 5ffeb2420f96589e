"""The foundation under faults injected by the fault proxy (on both brokers).

cut → the next call reconnects; stall → OperationTimeoutError, not a hang; truncated frame →
a typed error and a fresh connection for the next call; refused connections → ConnectError.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import streamwire
from streamwire import exceptions as exc

from tests.peers.faultproxy import TO_CLIENT


def test_cut_connection_reconnects_on_next_use(broker: Any, fault_proxy: Any) -> None:
    proxy = fault_proxy(broker)
    with streamwire.Client(proxy.url, operation_timeout=5) as client:
        lk = client.lookup()
        assert lk.partitions("faults-cut") == 0
        assert proxy.cut_all() >= 1
        time.sleep(0.3)  # let the engine see the EOF
        assert lk.partitions("faults-cut") == 0
        assert client._open_connections() == 1
        assert proxy.active_connections >= 1


def test_stalled_broker_times_out(broker: Any, fault_proxy: Any) -> None:
    proxy = fault_proxy(broker)
    with streamwire.Client(proxy.url, operation_timeout=1.0) as client:
        lk = client.lookup()
        lk.partitions("faults-stall")
        proxy.stall(True)
        t0 = time.monotonic()
        with pytest.raises(exc.OperationTimeoutError) as ei:
            lk.partitions("faults-stall")
        elapsed = time.monotonic() - t0
        assert 0.9 < elapsed < 4.0, elapsed
        assert isinstance(ei.value, TimeoutError) and ei.value.retriable
        proxy.stall(False)


def test_truncated_frame_gives_typed_error_then_fresh_connection(
    broker: Any, fault_proxy: Any
) -> None:
    proxy = fault_proxy(broker)
    with streamwire.Client(proxy.url, operation_timeout=5) as client:
        lk = client.lookup()
        lk.partitions("faults-truncate")
        proxy.truncate_next_frame(TO_CLIENT)
        with pytest.raises((exc.DisconnectedError, exc.ProtocolError)):
            lk.partitions("faults-truncate")
        # The broken connection is dropped; the next call dials a fresh one and succeeds.
        assert lk.partitions("faults-truncate") == 0


def test_refused_connections_give_connect_error(broker: Any, fault_proxy: Any) -> None:
    proxy = fault_proxy(broker)
    proxy.refuse(30)
    with streamwire.Client(proxy.url, connection_timeout=1.0) as client:
        t0 = time.monotonic()
        with pytest.raises(exc.ConnectError):
            client.lookup().partitions("faults-refuse")
        assert time.monotonic() - t0 < 5


def test_consumer_reports_failing_resubscribe_then_recovers(
    broker: Any, fault_proxy: Any, unique_topic: str
) -> None:
    """A consumer whose connection is lost retries forever (as the Java client does), and says
    so in ``stats()``: the number of failed attempts and the current error; once the broker is
    reachable again it is subscribed and receives, and the error is cleared."""
    proxy = fault_proxy(broker)
    with streamwire.Client(proxy.url, operation_timeout=5, connection_timeout=2) as client:
        c = client.subscribe(unique_topic, "refused", initial_position="earliest")
        assert c.stats()["reconnect_error"] is None
        proxy.refuse(3.0)
        assert proxy.cut_all() >= 1
        deadline = time.monotonic() + 10
        while c.stats()["reconnect_failures"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        st = c.stats()
        assert st["reconnect_failures"] >= 1, st
        assert isinstance(st["reconnect_error"], str) and st["reconnect_error"], st
        assert not c.is_connected()
        with streamwire.Client(broker.service_url) as direct:
            with direct.create_producer(unique_topic) as p:
                p.send(b"after the outage")
        assert c.receive(timeout=30).data() == b"after the outage"
        st = c.stats()
        assert st["reconnect_error"] is None and st["reconnects"] >= 1, st
        assert c.is_connected()
        c.close()
