"""``Client.create_table_view`` on pulsar-lite: the view is the latest value per key (an empty
payload or a null value removes the key, a message without a key is skipped), the same map
as the official Python client's ``TableView`` of the same topic; listeners see the existing
entries and then every change in order; the view follows the tail; a closed view raises.
The Apache tests (after a triggered compaction, partitioned, against the Java client's
TableView too) are in ``tests/interop/test_table_view.py``."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from types import ModuleType
from typing import Any

import pytest
import streamwire
import streamwire.aio
from streamwire.exceptions import AlreadyClosedError
from streamwire.schema import StringSchema

from tests.integration._table_view_util import (
    expected,
    history,
    official_map,
    publish,
    wait_for,
)
from tests.peers.lite import PulsarLite


@pytest.mark.parametrize("batching", [False, True])
def test_view_is_the_latest_value_per_key_as_the_official_client_sees_it(
    lite_broker: PulsarLite, official_pulsar: ModuleType, unique_topic: str, batching: bool
) -> None:
    hist = history(30, 6, "a")
    publish(lite_broker.service_url, unique_topic, hist, batching=batching)
    # A message without a key changes nothing.
    with streamwire.Client(lite_broker.service_url) as client:
        with client.create_producer(unique_topic) as p:
            p.send(b"no key")
    want = expected(hist)
    assert 0 < len(want) < 30  # some keys really are deleted
    with streamwire.Client(lite_broker.service_url) as client:
        # Creation returns once caught up: no waiting here.
        with client.create_table_view(unique_topic) as view:
            assert dict(view.items()) == want
            assert sorted(view.keys()) == sorted(want)
            assert sorted(view) == sorted(want)
            assert sorted(view.values()) == sorted(want.values())
            assert len(view) == len(want)
            for k, v in want.items():
                assert view.get(k) == v
                assert k in view
            gone = sorted({k for k, _ in hist} - set(want))
            assert gone and all(view.get(k) is None and k not in view for k in gone)
            assert view.get("never-sent") is None
            assert 42 not in view
            seen: dict[str, Any] = {}
            view.for_each(lambda k, v: seen.__setitem__(k, v))
            assert seen == want
            assert view.topic == unique_topic
            assert "open" in repr(view)
    assert official_map(official_pulsar, lite_broker.service_url, unique_topic) == want


def test_catch_up_is_logged(
    lite_broker: PulsarLite, unique_topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    hist = history(20, 3, "log")
    publish(lite_broker.service_url, unique_topic, hist)

    def done() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.getMessage() == "table view caught up"]

    with caplog.at_level(logging.INFO, logger="streamwire"):
        with streamwire.Client(lite_broker.service_url) as client:
            with client.create_table_view(unique_topic) as view:
                assert dict(view.items()) == expected(hist)
        # Engine records reach Python on the logging dispatcher's thread, a moment later.
        wait_for(lambda: len(done()) == 1, "the catch-up record")
    record = done()[0]
    assert record.topic == unique_topic  # type: ignore[attr-defined]
    assert record.keys == str(len(expected(hist)))  # type: ignore[attr-defined]
    assert int(record.messages) >= len(hist)  # type: ignore[attr-defined]


def test_view_follows_the_tail(lite_broker: PulsarLite, unique_topic: str) -> None:
    publish(lite_broker.service_url, unique_topic, [("a", b"1"), ("b", b"2")])
    with streamwire.Client(lite_broker.service_url) as client:
        with client.create_table_view(unique_topic) as view:
            assert dict(view.items()) == {"a": b"1", "b": b"2"}
            publish(lite_broker.service_url, unique_topic, [("a", b"3"), ("b", None), ("c", b"4")])
            wait_for(lambda: dict(view.items()) == {"a": b"3", "c": b"4"}, "the tail")


def test_for_each_and_listen_gets_the_entries_then_every_change_in_order(
    lite_broker: PulsarLite, unique_topic: str
) -> None:
    first = history(10, 2, "old")
    publish(lite_broker.service_url, unique_topic, first)
    later = history(10, 5, "new")
    got: list[tuple[str, Any]] = []
    only_later: list[tuple[str, Any]] = []
    threads: set[str] = set()
    lock = threading.Lock()

    def listener(k: str, v: Any) -> None:
        with lock:
            got.append((k, v))
            threads.add(threading.current_thread().name)

    with streamwire.Client(lite_broker.service_url) as client:
        with client.create_table_view(unique_topic) as view:
            view.for_each_and_listen(listener)
            # The existing entries were given in this thread before the call returned.
            assert dict(got) == expected(first)
            n_existing = len(got)
            view.listen(lambda k, v: only_later.append((k, v)))
            publish(lite_broker.service_url, unique_topic, later)
            wait_for(lambda: len(got) == n_existing + len(later), "every change")
            wait_for(lambda: len(only_later) == len(later), "every change (listen)")
            # Each change once, in the order sent; a removal comes as None.
            want = [(k, v or None) for k, v in later]
            assert got[n_existing:] == want
            assert only_later == want
            assert dict(view.items()) == expected(first + later)
        # close() joined the listener thread: nothing is called after it.
        n = len(got)
        publish(lite_broker.service_url, unique_topic, [("k000", b"after-close")])
        time.sleep(0.3)
        assert len(got) == n
    assert any(t.startswith("streamwire-tableview") for t in threads)
    assert not [t for t in threading.enumerate() if t.name.startswith("streamwire-tableview")]


def test_a_listener_that_raises_is_logged_and_the_next_change_comes(
    lite_broker: PulsarLite, unique_topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    got: list[str] = []

    def listener(k: str, v: Any) -> None:
        if k == "bad":
            raise RuntimeError("listener failed on purpose")
        got.append(k)

    publish(lite_broker.service_url, unique_topic, [("seed", b"0")])
    with streamwire.Client(lite_broker.service_url) as client:
        with client.create_table_view(unique_topic) as view:
            with caplog.at_level(logging.ERROR, logger="streamwire"):
                view.listen(listener)
                publish(lite_broker.service_url, unique_topic, [("bad", b"x"), ("good", b"y")])
                wait_for(lambda: got == ["good"], "the change after the failing one")
    assert any(
        "listener failed on purpose" in (r.exc_text or "") or r.exc_info for r in caplog.records
    )


def test_schema_values_are_decoded(lite_broker: PulsarLite, unique_topic: str) -> None:
    with streamwire.Client(lite_broker.service_url) as client:
        with client.create_producer(unique_topic, schema=StringSchema()) as p:
            p.send_many(["one", "two", "three"], keys=["a", "b", "a"])
            p.flush()
        with client.create_table_view(unique_topic, schema=StringSchema()) as view:
            assert dict(view.items()) == {"a": "three", "b": "two"}
            assert view.get("a") == "three"


def test_closed_view_raises_already_closed(lite_broker: PulsarLite, unique_topic: str) -> None:
    publish(lite_broker.service_url, unique_topic, [("a", b"1")])
    with streamwire.Client(lite_broker.service_url) as client:
        view = client.create_table_view(unique_topic)
        assert view.get("a") == b"1"
        view.close()
        view.close()  # idempotent
        assert "closed" in repr(view)
        for call in (
            lambda: view.get("a"),
            view.keys,
            view.items,
            view.values,
            lambda: len(view),
            lambda: "a" in view,
            lambda: list(view),
            lambda: view.for_each(print),
            lambda: view.for_each_and_listen(print),
        ):
            with pytest.raises(AlreadyClosedError):
                call()


def test_asyncio_face(lite_broker: PulsarLite, unique_topic: str) -> None:
    hist = history(12, 3, "aio")
    publish(lite_broker.service_url, unique_topic, hist)

    async def main() -> None:
        async with streamwire.aio.Client(lite_broker.service_url) as client:
            async with await client.create_table_view(unique_topic) as view:
                assert isinstance(view, streamwire.aio.TableView)
                assert dict(view.items()) == expected(hist)
                assert len(view) == len(expected(hist))
                assert view.get("k000") == expected(hist).get("k000")
            with pytest.raises(AlreadyClosedError):
                view.get("k000")

    asyncio.run(main())
