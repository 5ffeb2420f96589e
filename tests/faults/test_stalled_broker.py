"""A stalled broker (the proxy accepts but forwards nothing): nothing hangs.

Every blocking call returns within its timeout with ``OperationTimeoutError``; ``flush`` returns
once every pending send has failed (it is documented to wait until each message is acknowledged
or failed); callbacks of expired sends fire with the error; ``close`` returns within the
operation timeout; a process that stalls mid-send exits cleanly at interpreter exit.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import streamwire
from streamwire import MessageId, OperationTimeoutError

from tests.peers.faultproxy import FaultProxy

TIMEOUT = 1.0
SLACK = 3.0  # generous: 2 cores, two brokers, a JVM
ROOT = Path(__file__).resolve().parents[2]


def within(limit: float, fn: Callable[[], Any]) -> tuple[Any, BaseException | None, float]:
    """Run ``fn``; return (result, exception, seconds). The caller asserts on them."""
    t0 = time.monotonic()
    try:
        return fn(), None, time.monotonic() - t0
    except Exception as e:
        return None, e, time.monotonic() - t0


@pytest.fixture
def stalled(
    broker: Any, fault_proxy: Callable[..., FaultProxy], unique_topic: str
) -> Iterator[tuple[streamwire.Client, Any, Any, FaultProxy, str]]:
    """A client with a producer and consumer on ``unique_topic``, then the proxy stalls."""
    proxy = fault_proxy(broker)
    client = streamwire.Client(proxy.url, operation_timeout=TIMEOUT, connection_timeout=TIMEOUT)
    producer = client.create_producer(unique_topic, send_timeout=TIMEOUT)
    consumer = client.subscribe(unique_topic, "stall", initial_position="earliest")
    proxy.stall(True)
    try:
        yield client, producer, consumer, proxy, unique_topic
    finally:
        proxy.stall(False)
        client.close()


BLOCKING_CALLS: list[tuple[str, Callable[[streamwire.Client, Any, Any, str], Any]]] = [
    ("Lookup.partitions", lambda c, p, s, t: c.lookup().partitions(t + "-other")),
    ("Lookup.broker_url", lambda c, p, s, t: c.lookup().broker_url(t + "-other")),
    ("Client.create_producer", lambda c, p, s, t: c.create_producer(t + "-p")),
    ("Client.subscribe", lambda c, p, s, t: c.subscribe(t + "-s", "x")),
    ("Client.create_reader", lambda c, p, s, t: c.create_reader(t + "-r", MessageId.earliest)),
    ("Producer.send", lambda c, p, s, t: p.send(b"stalled")),
    ("SendFuture.result", lambda c, p, s, t: p.send_async(b"stalled").result(timeout=10)),
    ("Consumer.receive", lambda c, p, s, t: s.receive(timeout=TIMEOUT)),
    ("Consumer.get_last_message_id", lambda c, p, s, t: s.get_last_message_id()),
]


@pytest.mark.parametrize("name", [name for name, _ in BLOCKING_CALLS])
def test_blocking_call_times_out(
    stalled: tuple[streamwire.Client, Any, Any, FaultProxy, str], name: str
) -> None:
    client, producer, consumer, _proxy, topic = stalled
    call = dict(BLOCKING_CALLS)[name]
    result, err, took = within(TIMEOUT + SLACK, lambda: call(client, producer, consumer, topic))
    assert isinstance(err, OperationTimeoutError), (name, result, err)
    assert err.retriable
    assert took < TIMEOUT + SLACK, (name, took)
    # The same client still works once the broker answers again.
    _proxy.stall(False)
    assert client.lookup().partitions(topic) == 0


def test_expired_sends_fire_callbacks_and_flush_returns(
    stalled: tuple[streamwire.Client, Any, Any, FaultProxy, str],
) -> None:
    _client, producer, _consumer, _proxy, _topic = stalled
    errors: list[BaseException | None] = []
    fired = threading.Semaphore(0)

    def cb(err: BaseException | None, _mid: Any) -> None:
        errors.append(err)
        fired.release()

    futures = [producer.send_async(f"x{i}".encode(), cb) for i in range(100)]
    _, err, took = within(TIMEOUT + SLACK, producer.flush)
    assert err is None and took < TIMEOUT + SLACK, (err, took)
    for _ in futures:
        assert fired.acquire(timeout=SLACK)
    assert len(errors) == 100
    assert all(isinstance(e, OperationTimeoutError) for e in errors), errors[:3]
    for f in futures:
        assert f.done()
        assert isinstance(f.exception(timeout=0), OperationTimeoutError)
        with pytest.raises(OperationTimeoutError):
            f.result(timeout=0)


def test_close_returns_while_stalled(
    stalled: tuple[streamwire.Client, Any, Any, FaultProxy, str],
) -> None:
    client, producer, consumer, _proxy, _topic = stalled
    producer.send_async(b"pending")
    for handle in (producer, consumer, client):
        _, err, took = within(TIMEOUT + SLACK, handle.close)
        assert took < TIMEOUT + SLACK, (handle, took)
        assert err is None or isinstance(err, OperationTimeoutError), err


CHILD = textwrap.dedent(
    """
    import sys, threading, time
    sys.path.insert(0, {root!r})
    import streamwire
    client = streamwire.Client({url!r}, operation_timeout=30, connection_timeout=30)
    producer = client.create_producer({topic!r}, send_timeout=30)
    producer.send(b"before")
    print("ready", flush=True)
    sys.stdin.readline()  # the parent stalls the proxy, then says go
    futures = [producer.send_async(b"stalled-%d" % i) for i in range(1000)]
    blocked = threading.Thread(target=lambda: producer.send(b"blocked"), daemon=True)
    blocked.start()
    time.sleep(0.5)
    print("exiting", flush=True)
    {exit_how}
    """
)


@pytest.mark.parametrize("exit_how", ["pass", "client.close()", "import os; os._exit(0)"])
def test_process_stalled_mid_send_exits(
    broker: Any, fault_proxy: Callable[..., FaultProxy], unique_topic: str, exit_how: str
) -> None:
    proxy = fault_proxy(broker)
    code = CHILD.format(root=str(ROOT), url=proxy.url, topic=unique_topic, exit_how=exit_how)
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready"
        proxy.stall(True)
        child.stdin.write("go\n")
        child.stdin.flush()
        t0 = time.monotonic()
        out, err = child.communicate(timeout=20)
        took = time.monotonic() - t0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "exiting" in out, err
    assert child.returncode == 0, err
    # Exit does not wait for the 30 s send/operation timeouts.
    assert took < 10, took
