"""Message and reader listeners (``subscribe(message_listener=)``, ``create_reader(
reader_listener=)``, ``Client(message_listener_threads=)``) against pulsar-lite and Apache
Pulsar; the official client writes the messages."""

from __future__ import annotations

import logging
import os
import resource
import threading
import time
import uuid
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import streamwire
from streamwire import exceptions as exc

from tests.integration._consumer_util import produce


def payloads(n: int, prefix: str = "m") -> list[bytes]:
    return [f"{prefix}-{i:06d}".encode() for i in range(n)]


def fresh_topic() -> str:
    return f"persistent://public/default/l-{uuid.uuid4().hex}"


def firsts(got: list[bytes]) -> list[bytes]:
    """Each payload once, in the order it first came. pulsar-lite may dispatch an entry a
    second time (docs/reliability.md, "pulsar-lite and flow permits"); a copy always comes
    after the original, so this is the order the broker first delivered in."""
    return list(dict.fromkeys(got))


class Collector:
    """A listener recording (thread, payload) per call; ``acks`` acknowledges each message.
    Done when ``expected`` distinct payloads came."""

    def __init__(self, expected: int, *, acks: bool = True) -> None:
        self.expected = expected
        self.acks = acks
        self.got: list[bytes] = []
        self.distinct: set[bytes] = set()
        self.threads: set[int] = set()
        self.done = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, consumer: Any, msg: streamwire.Message) -> None:
        with self.lock:
            self.got.append(msg.data())
            self.distinct.add(msg.data())
            self.threads.add(threading.get_ident())
            if len(self.distinct) >= self.expected:
                self.done.set()
        if self.acks:
            consumer.acknowledge(msg)

    @property
    def duplicates(self) -> int:
        return len(self.got) - len(self.distinct)

    def wait(self, timeout: float = 30.0) -> list[bytes]:
        """The payloads in the order they first came (see :func:`firsts`)."""
        assert self.done.wait(timeout), f"got {len(self.distinct)} of {self.expected} messages"
        return firsts(self.got)


def listener_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("streamwire-listener")]


def eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_order_and_acks_leave_no_backlog(
    broker: Any, broker_kind: str, official_pulsar: ModuleType, unique_topic: str
) -> None:
    """Every message reaches the listener once, in order, on a listener thread (not the
    caller's); the listener's acks stick: subscribing again finds nothing."""
    data = payloads(300)
    produce(official_pulsar, broker.service_url, unique_topic, data, batching=True)
    with streamwire.Client(broker.service_url) as client:
        seen = Collector(len(data))
        consumer = client.subscribe(
            unique_topic, "s", initial_position="earliest", message_listener=seen
        )
        assert seen.wait() == data
        if broker_kind == "apache":
            assert seen.got == data, "every message exactly once"
        assert len(seen.threads) == 1
        assert threading.get_ident() not in seen.threads
        assert consumer.metrics()["listener_errors"] == 0
        consumer.close()
        with client.subscribe(unique_topic, "s") as again:
            with pytest.raises(exc.OperationTimeoutError):
                again.receive(timeout=1.0)
    assert listener_threads() == [], "client.close() stops and joins the listener threads"


def test_messages_sent_after_subscribe_reach_the_listener(
    broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    """An idle listener thread wakes for new messages (it waits on the consumer, no polling)."""
    with streamwire.Client(broker.service_url) as client:
        seen = Collector(30)
        client.subscribe(unique_topic, "s", message_listener=seen)
        for round_ in range(3):
            data = payloads(10, f"r{round_}")
            produce(official_pulsar, broker.service_url, unique_topic, data)
            want = 10 * (round_ + 1)
            eventually(lambda want=want: len(seen.distinct) == want)  # type: ignore[misc]
            time.sleep(0.2)  # idle between rounds
        assert seen.wait() == payloads(10, "r0") + payloads(10, "r1") + payloads(10, "r2")


def test_idle_listener_threads_do_not_poll(lite_broker: Any) -> None:
    """Two listener threads serving three idle consumers use (next to) no CPU: they sleep in
    the native wait, with the interpreter released (a wait holding it would stall this
    thread, which runs Python meanwhile)."""
    with streamwire.Client(lite_broker.service_url, message_listener_threads=2) as client:
        for _ in range(3):
            client.subscribe(fresh_topic(), "s", message_listener=lambda c, m: None)
        assert len(listener_threads()) == 2
        time.sleep(0.2)
        before = resource.getrusage(resource.RUSAGE_SELF)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            time.sleep(0.01)
        after = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        # Measured: ~0.003 s; a thread polling every millisecond took ~0.05 s.
        assert cpu < 0.02, f"{cpu:.3f} CPU-seconds in one idle second"


def test_several_consumers_share_a_bounded_pool(
    lite_broker: Any, official_pulsar: ModuleType
) -> None:
    """Four consumers on two threads: each consumer is served by one thread, in order, and
    no more than two threads exist."""
    topics = [fresh_topic() for _ in range(4)]
    data = {t: payloads(200, t[-6:]) for t in topics}
    for t in topics:
        produce(official_pulsar, lite_broker.service_url, t, data[t], batching=True)
    with streamwire.Client(lite_broker.service_url, message_listener_threads=2) as client:
        seen = {t: Collector(200) for t in topics}
        for t in topics:
            client.subscribe(t, "s", initial_position="earliest", message_listener=seen[t])
        for t in topics:
            assert seen[t].wait() == data[t]
            assert len(seen[t].threads) == 1
        used = set().union(*(s.threads for s in seen.values()))
        assert len(used) == 2
        assert len(listener_threads()) == 2
    assert listener_threads() == []


def test_one_thread_serves_many_consumers(lite_broker: Any, official_pulsar: ModuleType) -> None:
    """The default pool is one thread; a listener that is slow on one consumer does not
    reorder the others' messages."""
    topics = [fresh_topic() for _ in range(3)]
    with streamwire.Client(lite_broker.service_url) as client:
        seen = {t: Collector(50) for t in topics}
        for t in topics:
            client.subscribe(t, "s", message_listener=seen[t])
        for t in topics:
            produce(official_pulsar, lite_broker.service_url, t, payloads(50, t[-4:]))
        for t in topics:
            assert seen[t].wait() == payloads(50, t[-4:])
        assert len(set().union(*(s.threads for s in seen.values()))) == 1


def test_exception_is_logged_counted_and_not_acked(
    broker: Any,
    broker_kind: str,
    official_pulsar: ModuleType,
    unique_topic: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A listener that raises: logged on ``streamwire`` with the traceback, counted, the
    thread goes on with the next message, and the failed message is not acknowledged."""
    data = payloads(6)
    produce(official_pulsar, broker.service_url, unique_topic, data)  # unbatched: acks per message
    done = threading.Event()
    got: list[bytes] = []

    def listener(consumer: streamwire.Consumer, msg: streamwire.Message) -> None:
        got.append(msg.data())
        if len(set(got)) == len(data):
            done.set()
        if msg.data() == data[2]:
            raise ValueError("boom on the third")
        consumer.acknowledge(msg)

    caplog.set_level(logging.ERROR, logger="streamwire")
    with streamwire.Client(broker.service_url) as client:
        consumer = client.subscribe(
            unique_topic, "s", initial_position="earliest", message_listener=listener
        )
        assert done.wait(30)
        assert firsts(got) == data
        if broker_kind == "apache":
            assert got == data
        raised = got.count(data[2])  # more than 1 only for a pulsar-lite re-dispatch
        assert consumer.metrics()["listener_errors"] == raised
        assert consumer.stats()["listener_errors"] == raised
        consumer.close()
        records = [r for r in caplog.records if r.name == "streamwire" and r.exc_info]
        assert len(records) == raised
        assert "boom on the third" in caplog.text
        assert "Traceback" in caplog.text
        exc_info = records[0].exc_info
        assert exc_info is not None and exc_info[0] is ValueError
        # Only the failed message comes back.
        with client.subscribe(unique_topic, "s") as again:
            assert again.receive(timeout=10).data() == data[2]
            with pytest.raises(exc.OperationTimeoutError):
                again.receive(timeout=1.0)


def test_pause_and_resume(
    broker: Any, broker_kind: str, official_pulsar: ModuleType, unique_topic: str
) -> None:
    """Paused (here by the listener itself, mid-turn): no call; the messages stay queued and
    the receiver queue bounds them; resume continues in order."""
    data = payloads(120)
    # Unbatched, so that the receiver queue (20) bounds what the broker sends while paused.
    produce(official_pulsar, broker.service_url, unique_topic, data)
    got: list[bytes] = []
    paused = threading.Event()

    def listener(consumer: streamwire.Consumer, msg: streamwire.Message) -> None:
        got.append(msg.data())
        consumer.acknowledge(msg)
        if len(got) == 5:
            consumer.pause_message_listener()
            paused.set()

    with streamwire.Client(broker.service_url) as client:
        consumer = client.subscribe(
            unique_topic,
            "s",
            initial_position="earliest",
            receiver_queue_size=20,
            message_listener=listener,
        )
        assert paused.wait(30)
        time.sleep(1.0)
        assert len(got) == 5, "no listener call while paused"
        queued = consumer.stats()["queued"]
        # Flow control: the broker sent no more than the receiver queue holds (pulsar-lite's
        # re-dispatch of an entry may add a copy beyond it, never the whole backlog).
        assert 0 < queued <= (20 if broker_kind == "apache" else 60), queued
        consumer.resume_message_listener()
        eventually(lambda: len(set(got)) == len(data), timeout=30)
        assert firsts(got) == data
        # Pause and resume from another thread while messages flow.
        more = payloads(200, "more")
        consumer.pause_message_listener()
        produce(official_pulsar, broker.service_url, unique_topic, more, batching=True)
        time.sleep(0.5)
        before = len(got)
        time.sleep(0.5)
        assert len(got) == before, "no listener call while paused"
        consumer.resume_message_listener()
        eventually(lambda: len(set(got)) == len(data) + len(more), timeout=30)
        assert firsts(got) == data + more


def test_close_during_a_callback(lite_broker: Any, official_pulsar: ModuleType) -> None:
    """Closing the consumer while its listener runs: that call finishes, no call follows;
    the client's close joins the thread."""
    topic = fresh_topic()
    produce(official_pulsar, lite_broker.service_url, topic, payloads(50))
    entered, release, finished = threading.Event(), threading.Event(), threading.Event()
    calls: list[bytes] = []

    def listener(consumer: streamwire.Consumer, msg: streamwire.Message) -> None:
        calls.append(msg.data())
        entered.set()
        assert release.wait(30)
        finished.set()

    client = streamwire.Client(lite_broker.service_url)
    consumer = client.subscribe(topic, "s", initial_position="earliest", message_listener=listener)
    assert entered.wait(30)
    consumer.close()  # while the listener runs
    assert not finished.is_set()
    release.set()
    assert finished.wait(10)
    time.sleep(0.5)
    assert len(calls) == 1
    threads = listener_threads()
    assert len(threads) == 1
    client.close()
    assert not threads[0].is_alive()


def test_listener_closing_its_own_client(lite_broker: Any, official_pulsar: ModuleType) -> None:
    """``client.close()`` from inside a listener does not wait for its own thread."""
    topic = fresh_topic()
    produce(official_pulsar, lite_broker.service_url, topic, payloads(3))
    client = streamwire.Client(lite_broker.service_url)
    closed = threading.Event()

    def listener(consumer: streamwire.Consumer, msg: streamwire.Message) -> None:
        client.close()
        closed.set()

    client.subscribe(topic, "s", initial_position="earliest", message_listener=listener)
    assert closed.wait(30)
    eventually(lambda: listener_threads() == [])
    with pytest.raises(exc.AlreadyClosedError):
        client.lookup()


def test_reader_listener(broker: Any, official_pulsar: ModuleType, unique_topic: str) -> None:
    data = payloads(300)
    produce(official_pulsar, broker.service_url, unique_topic, data, batching=True)
    with streamwire.Client(broker.service_url) as client:
        seen = Collector(len(data), acks=False)
        reader = client.create_reader(
            unique_topic, streamwire.MessageId.earliest, reader_listener=seen
        )
        assert seen.wait() == data
        with pytest.raises(exc.ConfigError, match="listener"):
            reader.read_next(timeout=0.1)
        assert reader.metrics()["listener_errors"] == 0


def test_receive_calls_are_refused(lite_broker: Any) -> None:
    """As the official client (InvalidConfiguration): a listener consumer has no receives."""
    with streamwire.Client(lite_broker.service_url) as client:
        consumer = client.subscribe(fresh_topic(), "s", message_listener=lambda c, m: None)
        for call in (
            lambda: consumer.receive(timeout=0.1),
            lambda: consumer.receive_many(5, timeout=0.1),
            lambda: consumer.receive_arrow(5, timeout=0.1),
            lambda: next(iter(consumer)),
        ):
            with pytest.raises(exc.ConfigError, match="listener"):
                call()
        plain = client.subscribe(fresh_topic(), "s")
        with pytest.raises(exc.ConfigError, match="message listener"):
            plain.resume_message_listener()
        assert "listener_errors" not in plain.metrics()


def test_fork_child_gets_its_own_pool(lite_broker: Any, official_pulsar: ModuleType) -> None:
    """After fork() the child's new client starts its own listener thread; the parent's
    listener keeps working."""
    url = lite_broker.service_url
    parent_topic, child_topic = fresh_topic(), fresh_topic()
    with streamwire.Client(url) as client:
        seen = Collector(20)
        client.subscribe(parent_topic, "s", message_listener=seen)
        produce(official_pulsar, url, parent_topic, payloads(10, "before"))
        eventually(lambda: len(seen.distinct) == 10)
        pid = os.fork()
        if pid == 0:  # the child: report through the exit status only
            status = 1
            try:
                with streamwire.Client(url) as child:
                    got = Collector(10)
                    child.subscribe(child_topic, "s", message_listener=got)
                    with child.create_producer(child_topic) as producer:
                        for p in payloads(10, "child"):
                            producer.send(p)
                    status = 0 if got.wait(20) == payloads(10, "child") else 2
            finally:
                os._exit(status)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        produce(official_pulsar, url, parent_topic, payloads(10, "after"))
        assert seen.wait() == payloads(10, "before") + payloads(10, "after")


def test_official_consumer_reads_what_our_listener_left(
    lite_broker: Any, official_pulsar: ModuleType
) -> None:
    """Interplay with the official client: its producer writes, our listener acknowledges
    every other message, its consumer gets exactly the others on the same subscription."""
    topic = fresh_topic()
    data = payloads(20)
    produce(official_pulsar, lite_broker.service_url, topic, data)  # unbatched
    seen = Collector(len(data), acks=False)

    def listener(consumer: streamwire.Consumer, msg: streamwire.Message) -> None:
        if int(msg.data().split(b"-")[1]) % 2 == 0:
            consumer.acknowledge(msg)
        seen(consumer, msg)

    with streamwire.Client(lite_broker.service_url) as client:
        consumer = client.subscribe(
            topic, "s", initial_position="earliest", message_listener=listener
        )
        assert seen.wait() == data
        consumer.close()
    theirs = official_pulsar.Client(lite_broker.service_url)
    try:
        c = theirs.subscribe(topic, "s")
        left: set[bytes] = set()
        while len(left) < 10:
            m = c.receive(timeout_millis=10_000)
            left.add(m.data())
            c.acknowledge(m)
        assert sorted(left) == data[1::2]
    finally:
        theirs.close()
