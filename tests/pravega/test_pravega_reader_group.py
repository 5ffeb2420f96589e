"""Reader groups against the Pravega standalone, shared with the official client (PyPI
``pravega``, imported as ``pravega_client``): a group either side creates is read by the
other, our readers split a stream's segments and hand them over when one leaves, and an
official reader and ours in one group read every event exactly once between them."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import pytest
from streamwire import pravega
from streamwire.aio import pravega as apv
from streamwire.exceptions import (
    AlreadyClosedError,
    ConfigError,
    InvalidArgumentError,
    TopicNotFoundError,
)

from tests.peers.pravega import PravegaStandalone


def write_keyed(
    client: pravega.Client, scope: str, stream: str, keys: int, per_key: int
) -> list[bytes]:
    """``keys * per_key`` events ``k<key>:<n>``, each key's in order under its routing key."""
    events = [f"k{k}:{n}".encode() for n in range(per_key) for k in range(keys)]
    with client.create_writer(scope, stream) as w:
        for i in range(0, len(events), 500):
            chunk = events[i : i + 500]
            w.write_many(chunk, routing_keys=[e.decode().split(":")[0] for e in chunk])
    return events


def in_key_order(events: list[bytes]) -> bool:
    seen: dict[str, int] = {}
    for e in events:
        k, n = e.decode().split(":")
        if seen.get(k, -1) >= int(n):
            return False
        seen[k] = int(n)
    return True


def official_manager(url: str) -> Any:
    import pravega_client

    return pravega_client.StreamManager(url)


def test_a_group_the_official_client_made_is_ours_to_read(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "s", segments=2)
    manager = official_manager(pravega.controller_url)
    manager.create_reader_group("og", scope, "s")
    group = pv_client.open_reader_group(scope, "og")
    assert group.streams == [f"{scope}/s"]
    assert group.readers() == []
    official = manager.create_reader_group("og", scope, "s").create_reader("off-1")
    assert group.readers() == ["off-1"], "we see the official reader join"
    # Its position in the official format: both segments at 0 (the head).
    [cut] = group.stream_cuts()
    assert cut.positions == {0: 0, 1: 0}
    official.reader_offline()
    assert group.readers() == []
    assert pv_client.delete_reader_group(scope, "og")
    with pytest.raises(TopicNotFoundError):
        pv_client.open_reader_group(scope, "og")
    assert not pv_client.delete_reader_group(scope, "og")


def test_a_group_we_made_is_the_official_readers_to_read(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "s", segments=3)
    events = write_keyed(pv_client, scope, "s", keys=12, per_key=10)
    group = pv_client.create_reader_group(scope, "rg", "s")
    ours = group.create_reader("sw-1")
    assert group.readers() == ["sw-1"]
    manager = official_manager(pravega.controller_url)
    # The official create opens the group we made (its state is left as it is).
    official_group = manager.create_reader_group("rg", scope, "s")
    assert ours.offline()
    assert group.readers() == []
    # Alone in the group, it takes all three segments at once from our state.
    official = official_group.create_reader("off-1")
    assert group.readers() == ["off-1"]

    async def read_all() -> list[bytes]:
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < len(events) and time.monotonic() < deadline:
            s = await official.get_segment_slice_async()
            got += [bytes(e.data()) for e in s]
            official.release_segment(s)
        return got

    got = asyncio.run(read_all())
    official.reader_offline()
    assert sorted(got) == sorted(events), "the official reader read our group's segments"


def test_one_reader_reads_the_whole_stream(pv_client: pravega.Client, scope: str) -> None:
    pv_client.create_stream(scope, "s", segments=4)
    events = write_keyed(pv_client, scope, "s", keys=20, per_key=25)
    group = pv_client.create_reader_group(scope, "rg", ["s"])
    with group.create_reader("only", refresh=0.2) as r:
        assert r.group_reader
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < len(events) and time.monotonic() < deadline:
            got += [e.value for e in r.read_many(1000, timeout=0.5)]
        assert sorted(got) == sorted(events), "complete, no duplicate"
        assert in_key_order(got)
        assert r.read_many(100, timeout=0.5) == []
    # Closing took it offline at its end: the group's position is the stream's tail.
    assert group.readers() == []
    [cut] = group.stream_cuts()
    assert cut.positions == pv_client.tail(scope, "s").positions


def test_two_readers_split_the_segments_and_one_hands_over(
    pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "s", segments=4)
    events = write_keyed(pv_client, scope, "s", keys=40, per_key=50)
    group = pv_client.create_reader_group(scope, "rg", "s")
    a = group.create_reader("a", refresh=0.2, read_length=4096)
    b = group.create_reader("b", refresh=0.2, read_length=4096)
    got_a: list[bytes] = []
    got_b: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got_a) + len(got_b) < len(events) // 2 and time.monotonic() < deadline:
        got_a += [e.value for e in a.read_many(50, timeout=0.1)]
        got_b += [e.value for e in b.read_many(50, timeout=0.1)]
    assert got_a and got_b, "both readers were given segments"
    assert a.offline()
    assert not a.offline(), "a second offline says it was offline"
    with pytest.raises(AlreadyClosedError):
        a.read_many(10, timeout=0.1)
    assert group.readers() == ["b"]
    while len(got_a) + len(got_b) < len(events) and time.monotonic() < deadline:
        got_b += [e.value for e in b.read_many(1000, timeout=0.2)]
    b.close()
    counts = Counter(got_a + got_b)
    assert set(counts) == set(events), "nothing lost in the hand-over"
    assert max(counts.values()) == 1, "each event read once"
    assert in_key_order(got_a) and in_key_order(got_b)


def test_an_official_reader_and_ours_share_one_group(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    """Two of our readers (asyncio face) and an official reader in one group of a
    6-segment stream: each holds two segments, and every event is read exactly once."""
    pv_client.create_stream(scope, "s", segments=6)
    events = write_keyed(pv_client, scope, "s", keys=60, per_key=40)
    manager = official_manager(pravega.controller_url)
    official_group = manager.create_reader_group("mixed", scope, "s")

    async def run() -> dict[str, list[bytes]]:
        async with apv.Client(pravega.controller_url) as client:
            group = await client.open_reader_group(scope, "mixed")
            ours = [await group.create_reader(f"sw-{i}", refresh=0.2) for i in (1, 2)]
            # Ours joined before the official reader, which then takes its share (2 of 6)
            # at creation; ours take theirs at their first read.
            official = official_group.create_reader("off")
            assert await group.readers() == ["off", "sw-1", "sw-2"]
            got: dict[str, list[bytes]] = {"sw-1": [], "sw-2": [], "off": []}
            done = asyncio.Event()

            def check() -> None:
                if sum(len(v) for v in got.values()) >= len(events):
                    done.set()

            async def read_ours(name: str, reader: apv.Reader) -> None:
                while not done.is_set():
                    got[name].extend(e.value for e in await reader.read_many(500, timeout=0.2))
                    check()

            async def read_official() -> None:
                while not done.is_set():
                    s = await official.get_segment_slice_async()
                    got["off"].extend(bytes(e.data()) for e in s)
                    official.release_segment(s)
                    check()

            reading = asyncio.gather(
                read_ours("sw-1", ours[0]), read_ours("sw-2", ours[1]), read_official()
            )
            await asyncio.wait_for(done.wait(), 90)
            # The official read pending waits for data in its segments: one event per
            # routing key (so in every segment) ends it. They are left out of the count.
            with pv_client.create_writer(scope, "s") as w:
                for k in range(64):
                    w.write(b"end:%d" % k, routing_key=f"k{k}")
            await asyncio.wait_for(reading, 60)
            # Nothing more arrives for ours (no event read twice).
            for name, r in zip(("sw-1", "sw-2"), ours):
                got[name].extend(e.value for e in await r.read_many(1000, timeout=1.0))
                await r.offline()
            official.reader_offline()
            assert await group.readers() == []
            return got

    got = {k: [e for e in v if not e.startswith(b"end:")] for k, v in asyncio.run(run()).items()}
    assert all(got.values()), f"every reader read part of the stream: {got.keys()}"
    counts = Counter(e for v in got.values() for e in v)
    assert set(counts) == set(events), "the union is what was written"
    assert max(counts.values()) == 1, "every event read exactly once"
    assert all(in_key_order(v) for v in got.values())


def test_reader_group_bad_input(pv_client: pravega.Client, scope: str) -> None:
    pv_client.create_stream(scope, "s", segments=1)
    with pytest.raises(TopicNotFoundError):
        pv_client.create_reader_group(scope, "rg", "nope")
    with pytest.raises(InvalidArgumentError):
        pv_client.create_reader_group(scope, "rg", [])
    with pytest.raises(InvalidArgumentError):
        pv_client.create_reader_group(scope, "bad name", "s")
    group = pv_client.create_reader_group(scope, "rg", "s")
    with group.create_reader("r"):
        with pytest.raises(InvalidArgumentError):
            group.create_reader("r")
    with pytest.raises(InvalidArgumentError):
        group.create_reader("")
    with pytest.raises(ConfigError):
        group.create_reader("x", refresh=0)
    assert not group.reader_offline("never")
    pv_client.create_stream(scope, "t", segments=1)
    two = pv_client.create_reader_group(scope, "two", ["s", "t"])
    assert two.streams == [f"{scope}/s", f"{scope}/t"]
    with two.create_reader("r") as r:
        assert r.streams == two.streams
        with pytest.raises(InvalidArgumentError, match="stream_cuts"):
            r.position()
    with pv_client.create_reader(scope, "s") as plain:
        assert not plain.group_reader
        assert plain.streams == [f"{scope}/s"]
        assert plain.stream_cuts() == [plain.position()]
        with pytest.raises(InvalidArgumentError):
            plain.offline()


def test_successors_after_a_scale_follow_their_predecessors(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    """A scale-up while two of our readers read a group: the sealed segments'
    successors are handed out once their predecessors are read to the end, so each key's
    events stay in order across the scale, and every event is read once."""
    pv_client.create_stream(scope, "s", segments=2)
    before = write_keyed(pv_client, scope, "s", keys=30, per_key=20)
    group = pv_client.create_reader_group(scope, "rg", "s")
    a = group.create_reader("a", refresh=0.2)
    b = group.create_reader("b", refresh=0.2)
    got_a: list[bytes] = []
    got_b: list[bytes] = []
    while len(got_a) + len(got_b) < len(before) // 3:
        got_a += [e.value for e in a.read_many(20, timeout=0.1)]
        got_b += [e.value for e in b.read_many(20, timeout=0.1)]
    # Segments 0 and 1 become four; the same keys then write on into the successors.
    pv_client.scale_stream(scope, "s", [0, 1], [(0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0)])
    events = [f"k{k}:{n}".encode() for n in range(20, 40) for k in range(30)]
    with pv_client.create_writer(scope, "s") as w:
        w.write_many(events, routing_keys=[e.decode().split(":")[0] for e in events])
    everything = before + events
    deadline = time.monotonic() + 60
    while len(got_a) + len(got_b) < len(everything) and time.monotonic() < deadline:
        got_a += [e.value for e in a.read_many(200, timeout=0.1)]
        got_b += [e.value for e in b.read_many(200, timeout=0.1)]
    a.close()
    b.close()
    counts = Counter(got_a + got_b)
    assert set(counts) == set(everything), "nothing lost across the scale"
    assert max(counts.values()) == 1, "each event read once"
    # Per key: a key's events are read by one reader at a time, and a successor is only
    # handed out after its predecessor ended, so merging both readers' reads by key keeps
    # each reader's own sequence in order.
    assert in_key_order(got_a) and in_key_order(got_b)
    [cut] = group.stream_cuts()
    assert set(cut.positions) == {s.segment_id for s in pv_client.segments(scope, "s")}


def test_a_dead_official_readers_segments_are_taken_offline_to_ours(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    """``group.reader_offline(id, position)`` for a reader whose process is gone: its
    segments resume at the position given (here a checkpoint taken after the first 100
    events), or at its last recorded offsets."""
    pv_client.create_stream(scope, "s", segments=2)
    first = write_keyed(pv_client, scope, "s", keys=10, per_key=10)
    checkpoint = pv_client.tail(scope, "s")
    rest = [f"k{k}:{n}".encode() for n in range(10, 20) for k in range(10)]
    with pv_client.create_writer(scope, "s") as w:
        w.write_many(rest, routing_keys=[e.decode().split(":")[0] for e in rest])
    manager = official_manager(pravega.controller_url)
    manager.create_reader_group("rg", scope, "s").create_reader("dead")  # takes both
    group = pv_client.open_reader_group(scope, "rg")
    with group.create_reader("heir", refresh=0.2) as heir:
        assert heir.read_many(10, timeout=0.5) == [], "nothing free while 'dead' holds all"
        assert group.reader_offline("dead", position=checkpoint)
        assert not group.reader_offline("dead")
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < len(rest) and time.monotonic() < deadline:
            got += [e.value for e in heir.read_many(1000, timeout=0.3)]
        assert sorted(got) == sorted(rest), "resumed at the checkpoint, nothing before it"
        assert not set(got) & set(first)


def test_closing_an_awaited_group_reader_mid_read_takes_it_offline(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "s", segments=2)
    pv_client.create_reader_group(scope, "rg", "s")

    async def run() -> list[str]:
        async with apv.Client(pravega.controller_url) as client:
            group = await client.open_reader_group(scope, "rg")
            reader = await group.create_reader("r", refresh=0.05)
            pending = asyncio.ensure_future(reader.read_many(10))  # no data: waits
            await asyncio.sleep(0.3)  # several membership rounds while it waits
            await reader.close()
            with pytest.raises(AlreadyClosedError):
                await pending
            return await group.readers()

    assert asyncio.run(run()) == []
    [cut] = pv_client.open_reader_group(scope, "rg").stream_cuts()
    assert cut.positions == {0: 0, 1: 0}, "its segments went back at 0"


def test_a_group_starts_at_a_stream_cut_or_the_tail(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "s", segments=2)
    write_keyed(pv_client, scope, "s", keys=4, per_key=5)
    cut = pv_client.tail(scope, "s")
    at_cut = pv_client.create_reader_group(scope, "at-cut", "s", start=cut)
    at_tail = pv_client.create_reader_group(scope, "at-tail", "s", start="tail")
    later = [f"k{k}:{n}".encode() for n in range(5, 8) for k in range(4)]
    with pv_client.create_writer(scope, "s") as w:
        w.write_many(later, routing_keys=[e.decode().split(":")[0] for e in later])
    for group in (at_cut, at_tail):
        assert group.stream_cuts() == [cut]
        with group.create_reader("r", refresh=0.2) as r:
            got: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(got) < len(later) and time.monotonic() < deadline:
                got += [e.value for e in r.read_many(100, timeout=0.3)]
            assert sorted(got) == sorted(later)
    # The official reader reads the group we started at the cut from there too.
    manager = official_manager(pravega.controller_url)
    official = manager.create_reader_group("at-cut", scope, "s").create_reader("off")

    async def read() -> list[bytes]:
        got: list[bytes] = []
        while len(got) < len(later):
            s = await official.get_segment_slice_async()
            got += [bytes(e.data()) for e in s]
            official.release_segment(s)
        return got

    # Our reader left at the end: the official one starts there and finds nothing new;
    # one more event per key shows where it reads from.
    with pv_client.create_writer(scope, "s") as w:
        w.write_many(later, routing_keys=[e.decode().split(":")[0] for e in later])
    assert sorted(asyncio.run(asyncio.wait_for(read(), 30))) == sorted(later)
    official.reader_offline()


# Groups over several streams: the events are ``<stream>|k<key>:<n>``, so a count by payload
# is a count by (stream, routing key, payload), and each of our events must say the stream
# its payload names.


def write_tagged(
    client: pravega.Client, scope: str, stream: str, keys: int, first: int, last: int
) -> list[bytes]:
    events = [f"{stream}|k{k}:{n}".encode() for n in range(first, last) for k in range(keys)]
    with client.create_writer(scope, stream) as w:
        w.write_many(events, routing_keys=[e.decode().split(":")[0] for e in events])
    return events


def tagged(scope: str, events: list[pravega.Event]) -> list[bytes]:
    """The payloads, each checked against the stream its event says it came from."""
    for e in events:
        assert e.stream == f"{scope}/{e.value.decode().split('|')[0]}", (e.stream, e.value)
    return [e.value for e in events]


def test_ours_and_an_official_reader_share_a_group_of_two_streams(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    """A group over streams of 2 and 3 segments: two of our readers (asyncio face) and an
    official one split the five segments, and every event of both streams is read
    exactly once."""
    pv_client.create_stream(scope, "a", segments=2)
    pv_client.create_stream(scope, "b", segments=3)
    events = write_tagged(pv_client, scope, "a", 16, 0, 25)
    events += write_tagged(pv_client, scope, "b", 24, 0, 25)
    pv_client.create_reader_group(scope, "two", ["a", "b"])
    # The official create opens our group as it is: its reader reads both streams too.
    # (The manager owns the official client's runtime: it must outlive its readers.)
    manager = official_manager(pravega.controller_url)
    official_group = manager.create_reader_group("two", scope, "a")

    async def run() -> dict[str, list[bytes]]:
        async with apv.Client(pravega.controller_url) as client:
            group = await client.open_reader_group(scope, "two")
            ours = [await group.create_reader(f"sw-{i}", refresh=0.2) for i in (1, 2)]
            assert ours[0].streams == [f"{scope}/a", f"{scope}/b"]
            official = official_group.create_reader("off")
            got: dict[str, list[bytes]] = {"sw-1": [], "sw-2": [], "off": []}
            done = asyncio.Event()

            def check() -> None:
                if sum(len(v) for v in got.values()) >= len(events):
                    done.set()

            async def read_ours(name: str, r: apv.Reader) -> None:
                while not done.is_set():
                    got[name] += tagged(scope, await r.read_many(500, timeout=0.2))
                    check()

            async def read_official() -> None:
                while not done.is_set():
                    s = await official.get_segment_slice_async()
                    got["off"].extend(bytes(e.data()) for e in s)
                    official.release_segment(s)
                    check()

            reading = asyncio.gather(
                read_ours("sw-1", ours[0]), read_ours("sw-2", ours[1]), read_official()
            )
            await asyncio.wait_for(done.wait(), 60)
            # The official read pending waits for data in its segments: one more event
            # per key of each stream ends it; those are left out of the count.
            for stream, keys in (("a", 16), ("b", 24)):
                with pv_client.create_writer(scope, stream) as w:
                    for k in range(keys):
                        w.write(f"{stream}|end".encode(), routing_key=f"{stream}|k{k}")
            await asyncio.wait_for(reading, 30)
            assert await group.readers() == ["off", "sw-1", "sw-2"]
            # Nothing more arrives for ours (no event read twice).
            for name, r in zip(("sw-1", "sw-2"), ours):
                got[name] += tagged(scope, await r.read_many(1000, timeout=0.5))
                assert await r.offline()
            official.reader_offline()
            return got

    got = {k: [e for e in v if not e.endswith(b"|end")] for k, v in asyncio.run(run()).items()}
    assert all(got.values()), {k: len(v) for k, v in got.items()}
    counts = Counter(e for v in got.values() for e in v)
    assert set(counts) == set(events), "the union is both streams, whole"
    assert max(counts.values()) == 1, "every event read exactly once"
    for v in got.values():
        for p in (b"a|", b"b|"):
            assert in_key_order([e.split(b"|")[1] for e in v if e.startswith(p)])


def test_a_reader_of_two_streams_hands_over_and_follows_successors_per_stream(
    pv_client: pravega.Client, scope: str
) -> None:
    """Two of our readers in a group over two streams; one goes offline mid-way and the
    other takes its segments of both streams; stream ``a`` is then scaled (its successors'
    ids are new, ``b``'s 0 and 1 share ids with ``a``'s predecessors) and read on in
    order. ``read_arrow``'s stream column and the per-stream cuts say where each event is."""
    pv_client.create_stream(scope, "a", segments=2)
    pv_client.create_stream(scope, "b", segments=3)
    events = write_tagged(pv_client, scope, "a", 10, 0, 20)
    events += write_tagged(pv_client, scope, "b", 15, 0, 20)
    group = pv_client.create_reader_group(scope, "rg", ["a", "b"])
    x = group.create_reader("x", refresh=0.1, read_length=2048)
    y = group.create_reader("y", refresh=0.1, read_length=2048)
    got_x: list[bytes] = []
    got_y: list[bytes] = []
    deadline = time.monotonic() + 30
    while (len(got_x) < 50 or len(got_y) < 50) and time.monotonic() < deadline:
        got_x += tagged(scope, x.read_many(25, timeout=0.05))
        batch = y.read_arrow(25, timeout=0.05)
        for value, stream in zip(
            batch.column("value").to_pylist(), batch.column("stream").to_pylist()
        ):
            assert stream == f"{scope}/{value.decode().split('|')[0]}"
            got_y.append(value)
    assert got_x and got_y, "both readers were given segments"
    cuts = x.stream_cuts()
    assert [(c.scope, c.stream) for c in cuts] == [(scope, "a"), (scope, "b")]
    assert x.offline()
    assert group.readers() == ["y"]
    pv_client.scale_stream(scope, "a", [0, 1], [(0.0, 0.3), (0.3, 0.6), (0.6, 1.0)])
    later = write_tagged(pv_client, scope, "a", 10, 20, 30)
    everything = events + later
    while len(got_x) + len(got_y) < len(everything) and time.monotonic() < deadline + 30:
        got_y += tagged(scope, y.read_many(1000, timeout=0.1))
    [cut_a, cut_b] = y.stream_cuts()
    y.close()
    counts = Counter(got_x + got_y)
    assert set(counts) == set(everything), "nothing lost in the hand-over or the scale"
    assert max(counts.values()) == 1, "each event read once"
    for got in (got_x, got_y):
        for p in (b"a|", b"b|"):
            assert in_key_order([e.split(b"|")[1] for e in got if e.startswith(p)])
    # The reader's last cuts and the group's: a's successors, b's three segments.
    a_now = {s.segment_id for s in pv_client.segments(scope, "a")}
    assert set(cut_a.positions) == a_now and set(cut_b.positions) == {0, 1, 2}
    assert [set(c.positions) for c in group.stream_cuts()] == [a_now, {0, 1, 2}]


def test_a_group_of_two_streams_starts_at_a_stream_cut_of_one(
    pv_client: pravega.Client, scope: str
) -> None:
    """``start=`` a cut of ``a``: ``a`` is read from there, ``b`` from its head."""
    pv_client.create_stream(scope, "a", segments=2)
    pv_client.create_stream(scope, "b", segments=1)
    write_tagged(pv_client, scope, "a", 4, 0, 5)
    cut = pv_client.tail(scope, "a")
    want = write_tagged(pv_client, scope, "a", 4, 5, 8)
    want += write_tagged(pv_client, scope, "b", 3, 0, 5)
    group = pv_client.create_reader_group(scope, "rg", ["a", "b"], start=cut)
    assert group.stream_cuts() == [cut, pv_client.head(scope, "b")]
    with group.create_reader("r", refresh=0.2) as r:
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(got) < len(want) and time.monotonic() < deadline:
            got += tagged(scope, r.read_many(100, timeout=0.2))
        assert sorted(got) == sorted(want)
