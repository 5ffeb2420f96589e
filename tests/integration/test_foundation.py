"""Foundation: connect, lookup, partition metadata, errors, timeouts, fork, pickling, Ctrl-C.

Run against a real pulsar-lite broker (and Apache Pulsar where marked); the only "fake" peers
are plain loopback sockets that deliberately never answer, to provoke timeouts.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import pytest
import streamwire
from streamwire import exceptions as exc

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A loopback socket that accepts TCP connections but never says a word."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    try:
        yield srv.getsockname()[1]
    finally:
        srv.close()


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def test_import_starts_nothing() -> None:
    code = textwrap.dedent(
        """
        import threading, streamwire
        from streamwire import _native
        assert not _native._runtime_started(), "runtime built at import"
        assert threading.active_count() == 1
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_lookup_and_partitions(broker: object) -> None:
    url = broker.service_url  # type: ignore[attr-defined]
    with streamwire.Client(url) as client:
        lookup = client.lookup()
        owner = lookup.broker_url("foundation-lookup")
        assert owner.startswith("pulsar://127.0.0.1:") or owner.startswith("pulsar://localhost:")
        assert lookup.partitions("persistent://public/default/foundation-lookup") == 0
        assert lookup.topic_partitions("foundation-lookup") == [
            "persistent://public/default/foundation-lookup"
        ]
        # Both lookups went over one pooled connection per broker address.
        assert client._open_connections() >= 1


def test_connection_is_reused(lite_broker: object) -> None:
    with streamwire.Client(lite_broker.service_url) as client:  # type: ignore[attr-defined]
        lk = client.lookup()
        for i in range(20):
            lk.partitions(f"reuse-{i}")
        assert client._open_connections() == 1


def test_partitioned_topic_created_by_official_client(
    apache_broker: object, official_pulsar: object, unique_topic: str
) -> None:
    from tests.peers.admin import PulsarAdmin

    admin = PulsarAdmin(apache_broker.admin_url)  # type: ignore[attr-defined]
    admin.create_partitioned_topic(unique_topic, 4)
    pulsar = official_pulsar
    oc = pulsar.Client(apache_broker.service_url)  # type: ignore[attr-defined]
    try:
        prod = oc.create_producer(unique_topic)
        for i in range(10):
            prod.send(f"m{i}".encode())
        prod.close()
        expected = oc.get_topic_partitions(unique_topic)
    finally:
        oc.close()
    with streamwire.Client(apache_broker.service_url) as client:  # type: ignore[attr-defined]
        lk = client.lookup()
        assert lk.partitions(unique_topic) == 4
        assert lk.topic_partitions(unique_topic) == expected
        for p in expected:
            assert lk.broker_url(p).startswith("pulsar://")


def test_invalid_topic_names(lite_broker: object) -> None:
    with streamwire.Client(lite_broker.service_url) as client:  # type: ignore[attr-defined]
        lk = client.lookup()
        for bad in ["", "a/b", "http://x/y/z", "persistent://a/b", "persistent://t n/ns/x"]:
            with pytest.raises(exc.InvalidArgumentError) as ei:
                lk.partitions(bad)
            assert isinstance(ei.value, ValueError)
            assert "invalid topic name" in str(ei.value)


@pytest.mark.parametrize(
    "url",
    [
        "",
        "ftp://localhost:6650",
        "http://localhost:8080/admin",
        "pulsar://",
        "pulsar://h:99999",
        "pulsar://h:x",
    ],
)
def test_invalid_service_urls(url: str) -> None:
    with pytest.raises(exc.ConfigError):
        streamwire.Client(url)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"operation_timeout": 0},
        {"operation_timeout": -1.0},
        {"connection_timeout": float("nan")},
        {"io_threads": 0},
        {"auth_token": ""},
    ],
)
def test_invalid_client_options(kwargs: dict[str, object]) -> None:
    with pytest.raises(exc.ConfigError):
        streamwire.Client("pulsar://127.0.0.1:6650", **kwargs)  # type: ignore[arg-type]


def test_wrong_python_types() -> None:
    with pytest.raises(TypeError):
        streamwire.Client(123)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        streamwire.Client("pulsar://127.0.0.1:1", operation_timeout="soon")  # type: ignore[arg-type]


def test_refused_connection_is_connect_error() -> None:
    port = closed_port()
    with streamwire.Client(f"pulsar://127.0.0.1:{port}", connection_timeout=2.0) as client:
        t0 = time.monotonic()
        with pytest.raises(exc.ConnectError) as ei:
            client.lookup().partitions("x")
        assert time.monotonic() - t0 < 5
        assert isinstance(ei.value, ConnectionError)
        assert ei.value.retriable


def test_silent_broker_is_connect_timeout(silent_server: int) -> None:
    url = f"pulsar://127.0.0.1:{silent_server}"
    with streamwire.Client(url, connection_timeout=0.5, operation_timeout=5) as client:
        t0 = time.monotonic()
        with pytest.raises(exc.ConnectError) as ei:
            client.lookup().broker_url("x")
        elapsed = time.monotonic() - t0
        assert 0.4 < elapsed < 3, elapsed
        assert "timed out" in str(ei.value)


def test_closed_client_raises(lite_broker: object) -> None:
    client = streamwire.Client(lite_broker.service_url)  # type: ignore[attr-defined]
    lk = client.lookup()
    client.close()
    client.close()  # idempotent
    with pytest.raises(exc.AlreadyClosedError):
        lk.partitions("x")
    with pytest.raises(exc.AlreadyClosedError):
        client.lookup()


def test_live_handles_refuse_to_pickle(lite_broker: object) -> None:
    with streamwire.Client(lite_broker.service_url) as client:  # type: ignore[attr-defined]
        with pytest.raises(TypeError, match="create the client inside the worker"):
            pickle.dumps(client)
        with pytest.raises(TypeError, match="cannot be pickled"):
            pickle.dumps(client.lookup())


def test_exceptions_pickle_with_attributes() -> None:
    e = exc.TopicNotFoundError("no such topic", retriable=False, server_code=11)
    e2 = pickle.loads(pickle.dumps(e))
    assert type(e2) is exc.TopicNotFoundError
    assert (str(e2), e2.retriable, e2.server_code) == ("no such topic", False, 11)
    assert isinstance(e2, exc.ServerError) and isinstance(e2, exc.StreamwireError)
    t = pickle.loads(pickle.dumps(exc.OperationTimeoutError("slow", retriable=True)))
    assert isinstance(t, TimeoutError) and t.retriable


def test_engine_errors_carry_retriable_flag(silent_server: int) -> None:
    url = f"pulsar://127.0.0.1:{silent_server}"
    with streamwire.Client(url, connection_timeout=0.3) as client:
        with pytest.raises(exc.StreamwireError) as ei:
            client.lookup().partitions("x")
        assert ei.value.retriable is True
        assert ei.value.server_code is None


def test_fork_child_gets_fresh_runtime(lite_broker: object) -> None:
    url = lite_broker.service_url  # type: ignore[attr-defined]
    parent = streamwire.Client(url)
    assert parent.lookup().partitions("fork-topic") == 0
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        status = 1
        try:
            os.close(r)
            try:
                parent.lookup().partitions("fork-topic")
                msg = "parent handle worked in child"
            except exc.ForkedProcessError as e:
                assert "inside the worker" in str(e)
                with streamwire.Client(url) as fresh:
                    n = fresh.lookup().partitions("fork-topic")
                msg = f"ok {n}"
                status = 0
            os.write(w, msg.encode())
        finally:
            os._exit(status)
    os.close(w)
    _, st = os.waitpid(pid, 0)
    out = os.read(r, 1000).decode()
    os.close(r)
    assert os.waitstatus_to_exitcode(st) == 0, out
    assert out == "ok 0"
    # The parent's client still works after the fork.
    assert parent.lookup().partitions("fork-topic") == 0
    parent.close()


def test_ctrl_c_interrupts_a_blocking_call(silent_server: int) -> None:
    code = textwrap.dedent(
        f"""
        import signal, sys, time, streamwire
        # A suite started from a background shell passes SIGINT down ignored: restore Python's
        # handler, so the test is about our wait, not about how the suite was launched.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        c = streamwire.Client("pulsar://127.0.0.1:{silent_server}",
                              connection_timeout=60, operation_timeout=60)
        print("ready", flush=True)
        t0 = time.monotonic()
        try:
            c.lookup().partitions("x")
        except KeyboardInterrupt:
            print("interrupted %.2f" % (time.monotonic() - t0), flush=True)
            sys.exit(0)
        sys.exit(3)
        """
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    assert out.startswith("interrupted")
    assert float(out.split()[1]) < 5


def test_topics_of_namespace(
    apache_broker: object, official_pulsar: object, unique_topic: str
) -> None:
    pulsar = official_pulsar
    oc = pulsar.Client(apache_broker.service_url)  # type: ignore[attr-defined]
    try:
        oc.create_producer(unique_topic).close()
    finally:
        oc.close()
    with streamwire.Client(apache_broker.service_url) as client:  # type: ignore[attr-defined]
        lk = client.lookup()
        assert unique_topic in lk.topics_of_namespace("public/default")
        with pytest.raises(exc.InvalidArgumentError):
            lk.topics_of_namespace("just-a-tenant")


def test_io_threads_after_start_warns_and_keeps_working(lite_broker: object) -> None:
    url = lite_broker.service_url  # type: ignore[attr-defined]
    with streamwire.Client(url) as first:
        first.lookup().partitions("io-threads")  # the runtime now exists in this process
    with pytest.warns(RuntimeWarning, match="I/O threads"):
        late = streamwire.Client(url, io_threads=7)
    with late:
        assert late.lookup().partitions("io-threads") == 0
