"""Stream administration against the Pravega 0.13.0 standalone, with the official ``pravega``
client as judge where it can observe: retention and tags set at create and changed by
``update_stream`` (the official ``get_stream_tags`` sees them; what the official client
configures, ours reads), scopes and tagged streams listed, and a stream truncated at a cut
(the official reader group then reads from the new head).

Retention is checked as the controller stores it; its enforcement is not waited for: the
controller applies it at most once a minute (``retention.frequency.minutes``, minimum 1).
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pravega_client
import pytest
from streamwire import (
    InvalidArgumentError,
    ReadOnlyError,
    TopicNotFoundError,
    pravega,
)
from streamwire.aio import pravega as apv
from streamwire.pravega import Retention, Scaling, StreamConfig

from tests.peers.pravega import PravegaStandalone

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def official(pravega: PravegaStandalone) -> pravega_client.StreamManager:
    return pravega_client.StreamManager(pravega.controller_url)


def test_retention_and_tags_at_create_and_update(
    pv_client: pravega.Client, scope: str, official: pravega_client.StreamManager
) -> None:
    assert pv_client.create_stream(
        scope, "r", segments=2, retention=Retention.by_size(10 * MIB), tags=["blue", "red"]
    )
    assert pv_client.stream_config(scope, "r") == StreamConfig(
        segments=2,
        scaling=None,
        retention=Retention("size", 10 * MIB, None),
        tags=("blue", "red"),
    )
    assert sorted(official.get_stream_tags(scope, "r")) == ["blue", "red"]
    # A second create leaves the stream as it was.
    assert not pv_client.create_stream(scope, "r", tags=["other"])
    assert pv_client.stream_tags(scope, "r") == ["blue", "red"]

    # Each update changes what it names and keeps the rest.
    new = pv_client.update_stream(scope, "r", retention=Retention.by_time(3600, 7200))
    assert new.retention == Retention("time", 3_600_000, 7_200_000)
    assert pv_client.stream_config(scope, "r") == new
    assert new.tags == ("blue", "red") and new.segments == 2

    pv_client.update_stream(scope, "r", tags=["green"])
    assert official.get_stream_tags(scope, "r") == ["green"]
    cfg = pv_client.stream_config(scope, "r")
    assert cfg.retention == Retention("time", 3_600_000, 7_200_000)

    pv_client.update_stream(scope, "r", segments=3, scaling=Scaling(target_rate=500))
    cfg = pv_client.stream_config(scope, "r")
    assert cfg.segments == 3 and cfg.scaling == Scaling(target_rate=500, scale_factor=2)
    assert len(pv_client.segments(scope, "r")) == 3, "a larger minimum scales the stream up"

    pv_client.update_stream(scope, "r", scaling=None, retention=None, tags=[])
    cfg = pv_client.stream_config(scope, "r")
    assert (cfg.scaling, cfg.retention, cfg.tags) == (None, None, ())
    assert official.get_stream_tags(scope, "r") in ([], None)


def test_what_the_official_client_configures_ours_reads(
    pv_client: pravega.Client, scope: str, official: pravega_client.StreamManager
) -> None:
    assert official.create_stream_with_policy(
        scope,
        "o",
        pravega_client.StreamScalingPolicy.auto_scaling_policy_by_event_rate(100, 3, 2),
        pravega_client.StreamRetentionPolicy.by_time(90_000),
        ["from-official"],
    )
    cfg = pv_client.stream_config(scope, "o")
    assert cfg.segments == 2
    assert cfg.scaling == Scaling(target_rate=100, scale_factor=3, by="events")
    assert cfg.retention == Retention.by_time(90)
    assert cfg.tags == ("from-official",)


def test_scopes_and_streams_by_tag(
    pv_client: pravega.Client, scope: str, official: pravega_client.StreamManager
) -> None:
    other = "sw" + uuid.uuid4().hex[:10]
    pv_client.create_scope(other)
    ours = pv_client.scopes()
    assert {scope, other} <= set(ours)
    assert not any(s.startswith("_") for s in ours)
    # The official listing has Pravega's own `_system` scope too; otherwise the same.
    assert set(ours) == {s for s in official.list_scope() if not s.startswith("_")}

    pv_client.create_stream(scope, "a", tags=["t1", "t2"])
    pv_client.create_stream(scope, "b", tags=["t2"])
    pv_client.create_stream(scope, "c")
    assert sorted(pv_client.streams(scope)) == ["a", "b", "c"]
    assert sorted(pv_client.streams(scope, tag="t2")) == ["a", "b"]
    assert pv_client.streams(scope, tag="t1") == ["a"]
    assert pv_client.streams(scope, tag="none-such") == []
    pv_client.update_stream(scope, "c", tags=["t1"])
    assert sorted(pv_client.streams(scope, tag="t1")) == ["a", "c"]
    pv_client.delete_scope(other)


def official_read_all(
    official: pravega_client.StreamManager, scope: str, stream: str, n: int
) -> list[bytes]:
    rg = official.create_reader_group("rg" + uuid.uuid4().hex[:8], scope, stream)
    reader = rg.create_reader("r1")

    async def read() -> list[bytes]:
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < n and time.monotonic() < deadline:
            sl = await asyncio.wait_for(reader.get_segment_slice_async(), 10)
            got += [bytes(e.data()) for e in sl]
            reader.release_segment(sl)
        return got

    try:
        return asyncio.run(read())
    finally:
        reader.reader_offline()


def test_truncate_at_a_cut(
    pv_client: pravega.Client, scope: str, official: pravega_client.StreamManager
) -> None:
    pv_client.create_stream(scope, "t", segments=2)
    events = [b"e%03d" % i for i in range(200)]
    with pv_client.create_writer(scope, "t") as w:
        w.write_many(events, routing_keys=[f"k{i % 7}" for i in range(200)])
    with pv_client.create_reader(scope, "t") as r:
        first: list[bytes] = []
        while len(first) < 80:
            first += [e.value for e in r.read_many(80 - len(first), timeout=10)]
        cut = r.position()
    pv_client.truncate_stream(scope, "t", cut)
    assert pv_client.head(scope, "t").positions == cut.positions
    rest = set(events) - set(first)
    with pv_client.create_reader(scope, "t", start="head") as r:
        got: list[bytes] = []
        while len(got) < len(rest):
            batch = r.read_many(1000, timeout=10)
            assert batch, f"read {len(got)} of {len(rest)}"
            got += [e.value for e in batch]
        assert r.read(timeout=0.3) is None
    assert sorted(got) == sorted(rest)
    # The official reader group starts at the stream's new head too.
    assert sorted(official_read_all(official, scope, "t", len(rest))) == sorted(rest)

    # Truncating at the tail leaves nothing to read.
    pv_client.truncate_stream(scope, "t", pv_client.tail(scope, "t"))
    with pv_client.create_reader(scope, "t", start="head") as r:
        assert r.read(timeout=0.5) is None


def test_bad_administration_is_refused(pv_client: pravega.Client, scope: str) -> None:
    pv_client.create_stream(scope, "s")
    pv_client.create_stream(scope, "other")
    with pytest.raises(TopicNotFoundError):
        pv_client.stream_config(scope, "missing")
    with pytest.raises(TopicNotFoundError):
        pv_client.update_stream(scope, "missing", tags=["x"])
    with pytest.raises(InvalidArgumentError):
        pv_client.create_stream(scope, "bad", tags=[""])
    with pytest.raises(InvalidArgumentError):
        pv_client.create_stream(scope, "bad", tags=[f"t{i}" for i in range(129)])
    with pytest.raises(TypeError):
        pv_client.create_stream(scope, "bad", tags="one-string")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        Retention.by_size(10, 5)
    with pytest.raises(InvalidArgumentError):
        Retention.by_time(-1)
    with pytest.raises(InvalidArgumentError):
        pv_client.update_stream(scope, "s", segments=0)
    with pytest.raises(InvalidArgumentError, match="not"):
        pv_client.truncate_stream(scope, "s", pv_client.tail(scope, "other"))
    with pytest.raises(TypeError):
        pv_client.truncate_stream(scope, "s", "s:0=0")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        pv_client.streams(scope, tag="")
    assert not pv_client.stream_exists(scope, "bad")
    pv_client.seal_stream(scope, "s")
    with pytest.raises(ReadOnlyError):
        pv_client.update_stream(scope, "s", tags=["late"])


def test_aio_administration(pravega: PravegaStandalone, scope: str) -> None:
    async def main() -> None:
        async with apv.Client(pravega.controller_url) as client:
            assert await client.create_stream(
                scope, "a", retention=Retention.by_size(MIB), tags=["x"]
            )
            cfg = await client.stream_config(scope, "a")
            assert cfg.retention == Retention.by_size(MIB) and cfg.tags == ("x",)
            new = await client.update_stream(scope, "a", tags=["y"], retention=None)
            assert new.tags == ("y",) and new.retention is None
            assert await client.stream_tags(scope, "a") == ["y"]
            assert await client.streams(scope, tag="y") == ["a"]
            assert scope in await client.scopes()
            writer = await client.create_writer(scope, "a")
            assert await writer.write_many([b"1", b"2", b"3"]) == 3
            await writer.close()
            reader = await client.create_reader(scope, "a")
            assert [e.value for e in await reader.read_many(1, timeout=10)] == [b"1"]
            await client.truncate_stream(scope, "a", await reader.position())
            await reader.close()
            reader = await client.create_reader(scope, "a", start="head")
            got = []
            while len(got) < 2:
                got += [e.value for e in await reader.read_many(10, timeout=10)]
            assert got == [b"2", b"3"]
            await reader.close()

    asyncio.run(main())
