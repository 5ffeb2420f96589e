"""``Client.create_table_view`` on Apache Pulsar 4.0.7 against the official clients' views.

Each topic gets keys updated many times and some deleted (an empty payload and a null value,
alternately), then a **compaction triggered** through the admin API and waited for, then more
updates and deletions. Our view must equal the expected map, the official Python client's
``TableView`` and the Java client's ``TableView`` (``java/TableViewDump.java``, compiled once
per session against the Apache fixture's classpath, one JVM run per test) of the same topic.
That the compacted data was really read is checked too: a compacted reader of the topic gets
fewer messages than were sent. Also a partitioned topic, a listener receiving changes
made after a compaction, and a partitioned topic that gains partitions while the views are
open (ours and the Java client's, both checking every second, see the new partitions' keys
without being re-created; a view that does not check does not).
"""

from __future__ import annotations

import asyncio
import base64
import subprocess
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import streamwire
from streamwire import aio

from tests.integration._table_view_util import (
    History,
    expected,
    history,
    official_map,
    publish,
    wait_for,
)
from tests.interop._official_read import java_partition
from tests.peers.admin import PulsarAdmin, topic_path
from tests.peers.apache import ApachePulsar
from tests.peers.java_program import JAVA_ENV, compile_program

HERE = Path(__file__).resolve().parent / "java"


def _compiled(tmp_path_factory: pytest.TempPathFactory, main: str) -> list[str]:
    """``java ... <main>`` for ``java/<main>.java``, compiled against the client API."""
    classes = tmp_path_factory.mktemp(f"tableview-java-{main}")
    return compile_program(classes, [HERE / f"{main}.java"], main, heap="256m")


@pytest.fixture(scope="session")
def table_view_java(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """``java ... TableViewDump`` (append the service URL and the topics)."""
    return _compiled(tmp_path_factory, "TableViewDump")


@pytest.fixture(scope="session")
def table_view_grow_java(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """``java ... TableViewGrow`` (append the service URL and the topic)."""
    return _compiled(tmp_path_factory, "TableViewGrow")


def java_maps(cmd: list[str], url: str, topics: list[str]) -> dict[str, dict[str, bytes]]:
    """The Java client's TableView of each topic."""
    out = subprocess.run(
        [*cmd, url, *topics], capture_output=True, text=True, timeout=300, env=JAVA_ENV
    )
    if out.returncode != 0:
        pytest.fail(f"Java TableViewDump failed:\n{out.stderr[-4000:]}", pytrace=False)
    return _parse_dump(out.stdout, topics)


def ours_map(url: str, topic: str) -> dict[str, Any]:
    """Our TableView of ``topic`` (once it has caught up), as a dict."""
    with streamwire.Client(url) as client:
        with client.create_table_view(topic) as view:
            return dict(view.items())


def others_agree(
    official_pulsar: ModuleType, java_cmd: list[str], url: str, topic: str, want: dict[str, Any]
) -> None:
    """The official Python client's and the Java client's TableViews of ``topic`` are ``want``."""
    assert official_map(official_pulsar, url, topic) == want
    assert java_maps(java_cmd, url, [topic])[topic] == want


def _parse_dump(stdout: str, topics: list[str]) -> dict[str, dict[str, bytes]]:
    """The maps a Java program printed as TableViewDump prints them."""
    maps: dict[str, dict[str, bytes]] = {t: {} for t in topics}
    sizes: dict[str, int] = {}
    for line in stdout.splitlines():
        if line.startswith("END "):
            _, topic, size = line.split(" ")
            sizes[topic] = int(size)
            continue
        fields = line.split("\t")
        if len(fields) == 3 and fields[0] in maps:  # else a log line of the Java client
            maps[fields[0]][fields[1]] = base64.b64decode(fields[2])
    assert sizes == {t: len(m) for t, m in maps.items()}, stdout[-2000:]
    return maps


def compact(admin: PulsarAdmin, topic: str, timeout: float = 120.0) -> None:
    """Trigger a compaction of ``topic`` and wait until it succeeded."""
    path = f"{topic_path(topic)}/compaction"
    admin.request("PUT", path)
    deadline = time.monotonic() + timeout
    while True:
        status: dict[str, Any] = admin.request("GET", path)
        if status.get("status") == "SUCCESS":
            return
        if status.get("status") == "ERROR":
            raise AssertionError(f"compaction of {topic} failed: {status}")
        if time.monotonic() > deadline:
            raise AssertionError(f"compaction of {topic} did not finish: {status}")
        time.sleep(0.2)


def compacted_count(url: str, topic: str) -> int:
    """How many messages a compacted reader gets from the earliest position."""
    with streamwire.Client(url) as client:
        with client.subscribe(
            topic,
            "count-compacted",
            initial_position="earliest",
            read_compacted=True,
            subscription_type="exclusive",
        ) as c:
            n = 0
            while True:
                try:
                    got = c.receive_many(1000, timeout=2.0)
                except streamwire.OperationTimeoutError:
                    return n
                if not got:
                    return n
                n += len(got)


def compacted_then_more(url: str, admin: PulsarAdmin, topic: str) -> History:
    """Write, compact, write more; the whole history."""
    before = history(40, 8, "pre")
    publish(url, topic, before)
    compact(admin, topic)
    after = history(40, 3, "post")
    publish(url, topic, after)
    return before + after


def test_view_after_compaction_matches_java_and_official(
    apache_broker: ApachePulsar,
    apache_admin: PulsarAdmin,
    official_pulsar: ModuleType,
    table_view_java: list[str],
    unique_topic: str,
) -> None:
    url = apache_broker.service_url
    hist = compacted_then_more(url, apache_admin, unique_topic)
    want = expected(hist)
    # The compacted ledger was used: far fewer messages than were sent are read.
    assert compacted_count(url, unique_topic) < len(hist) * 0.6
    assert ours_map(url, unique_topic) == want
    others_agree(official_pulsar, table_view_java, url, unique_topic, want)


def test_partitioned_view_matches_java_and_official(
    apache_broker: ApachePulsar,
    apache_admin: PulsarAdmin,
    official_pulsar: ModuleType,
    table_view_java: list[str],
    unique_topic: str,
) -> None:
    url = apache_broker.service_url
    apache_admin.create_partitioned_topic(unique_topic, 3)
    hist = history(60, 4, "part")
    publish(url, unique_topic, hist)
    for i in range(3):
        compact(apache_admin, f"{unique_topic}-partition-{i}")
    more = history(60, 2, "part2")
    publish(url, unique_topic, more)
    want = expected(hist + more)
    assert ours_map(url, unique_topic) == want
    others_agree(official_pulsar, table_view_java, url, unique_topic, want)


def test_listener_after_compaction_gets_entries_then_changes(
    apache_broker: ApachePulsar, apache_admin: PulsarAdmin, unique_topic: str
) -> None:
    url = apache_broker.service_url
    hist = compacted_then_more(url, apache_admin, unique_topic)
    got: list[tuple[str, Any]] = []
    lock = threading.Lock()

    def listener(k: str, v: Any) -> None:
        with lock:
            got.append((k, v))

    with streamwire.Client(url) as client:
        with client.create_table_view(unique_topic) as view:
            view.for_each_and_listen(listener)
            assert dict(got) == expected(hist)
            n = len(got)
            later = history(40, 2, "live")
            publish(url, unique_topic, later)
            wait_for(lambda: len(got) == n + len(later), "the live changes")
            assert got[n:] == [(k, v or None) for k, v in later]
            assert dict(view.items()) == expected(hist + later)


def test_empty_topic_gives_an_empty_view(apache_broker: ApachePulsar, unique_topic: str) -> None:
    # On Apache (pulsar-lite answers GetLastMessageId on an empty topic with an error, to the
    # official client as well).
    with streamwire.Client(apache_broker.service_url) as client:
        with client.create_table_view(unique_topic, subscription_name="tv-empty") as view:
            assert len(view) == 0
            assert view.items() == []
            publish(apache_broker.service_url, unique_topic, [("a", b"1")])
            wait_for(lambda: view.get("a") == b"1", "the first message")


def test_view_of_a_topic_compacted_up_to_a_deletion(
    apache_broker: ApachePulsar,
    apache_admin: PulsarAdmin,
    official_pulsar: ModuleType,
    table_view_java: list[str],
    unique_topic: str,
) -> None:
    # The topic's last message is a deletion that the compaction removed: the view must not
    # wait for it.
    url = apache_broker.service_url
    hist = [*history(20, 4, "d"), ("k001", b"last-set"), ("k002", None)]
    publish(url, unique_topic, hist)
    compact(apache_admin, unique_topic)
    want = expected(hist)
    t = time.monotonic()
    assert ours_map(url, unique_topic) == want
    assert time.monotonic() - t < 10
    others_agree(official_pulsar, table_view_java, url, unique_topic, want)


def test_view_follows_partitions_the_topic_gains_as_java(
    apache_broker: ApachePulsar,
    apache_admin: PulsarAdmin,
    table_view_grow_java: list[str],
    unique_topic: str,
) -> None:
    url = apache_broker.service_url
    apache_admin.create_partitioned_topic(unique_topic, 2)
    first = history(20, 2, "two")
    publish(url, unique_topic, first)
    java = subprocess.Popen(
        [*table_view_grow_java, url, unique_topic],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=JAVA_ENV,
    )
    try:
        assert java.stdout is not None and java.stdin is not None
        ready = next(line for line in java.stdout if line.startswith("READY "))
        assert int(ready.split()[1]) == len(expected(first))
        with streamwire.Client(url) as client:
            with (
                client.create_table_view(unique_topic, auto_update_partitions_interval=1.0) as view,
                client.create_table_view(unique_topic, auto_update_partitions_interval=0) as fixed,
            ):
                assert dict(view.items()) == expected(first)
                apache_admin.request("POST", f"{topic_path(unique_topic)}/partitions", 4)
                # Keys written straight to the new partitions (and one more to an old one).
                grown = {
                    2: [(f"n{i}", b"p2-%d" % i) for i in range(5)],
                    3: [(f"m{i}", b"p3-%d" % i) for i in range(5)],
                }
                for part, hist in grown.items():
                    publish(url, f"{unique_topic}-partition-{part}", list(hist))
                home = f"{unique_topic}-partition-{java_partition('k000', 2)}"
                publish(url, home, [("k000", b"updated")])
                want = expected(first + grown[2] + grown[3] + [("k000", b"updated")])
                wait_for(lambda: dict(view.items()) == want, "the new partitions' keys")
                # The view that does not check sees the old partitions' change only.
                wait_for(lambda: fixed.get("k000") == b"updated", "the old partition's change")
                time.sleep(2.0)  # two periods of the checking view: nothing may come
                assert dict(fixed.items()) == expected([*first, ("k000", b"updated")])
        out, _ = java.communicate(f"{len(want)}\n", timeout=120)
    finally:
        if java.poll() is None:
            java.kill()
            java.wait()
    assert java.returncode == 0, out[-2000:]
    assert _parse_dump(out, [unique_topic])[unique_topic] == want


def test_asyncio_view_follows_partitions_the_topic_gains(
    apache_broker: ApachePulsar, apache_admin: PulsarAdmin, unique_topic: str
) -> None:
    url = apache_broker.service_url
    apache_admin.create_partitioned_topic(unique_topic, 1)
    publish(url, unique_topic, [("old", b"1")])

    async def main() -> dict[str, Any]:
        async with aio.Client(url) as client:
            view = await client.create_table_view(unique_topic, auto_update_partitions_interval=0.5)
            assert dict(view.items()) == {"old": b"1"}
            apache_admin.request("POST", f"{topic_path(unique_topic)}/partitions", 2)
            publish(url, f"{unique_topic}-partition-1", [("new", b"2")])
            deadline = time.monotonic() + 20
            while view.get("new") is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            items = dict(view.items())
            await view.close()
            return items

    assert asyncio.run(main()) == {"old": b"1", "new": b"2"}
