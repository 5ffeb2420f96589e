"""streamwire.pravega and the official client (PyPI ``pravega``) on one standalone server:
what each writes the other reads complete and in per-key order, and a routing key's events
land in the same segment whichever client wrote them."""

from __future__ import annotations

import asyncio
import uuid

from streamwire import pravega

from tests.peers.pravega import PravegaStandalone
from tests.pravega.test_pravega_client import read_n


def official_read_all(url: str, scope: str, stream: str, n: int) -> list[bytes]:
    import pravega_client

    manager = pravega_client.StreamManager(url)
    group = manager.create_reader_group("rg" + uuid.uuid4().hex[:8], scope, stream)
    reader = group.create_reader("r1")

    async def read() -> list[bytes]:
        got: list[bytes] = []
        for _ in range(2000):
            if len(got) >= n:
                break
            segment_slice = await reader.get_segment_slice_async()
            got += [bytes(e.data()) for e in segment_slice]
            reader.release_segment(segment_slice)
        return got

    try:
        return asyncio.run(read())
    finally:
        reader.reader_offline()


def per_key(events: list[bytes]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for e in events:
        k, n = e.decode().split(":")
        out.setdefault(k, []).append(int(n))
    return out


def test_official_reader_reads_what_we_write(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "s", segments=4)
    keys = [f"key-{i}" for i in range(40)]
    events = [f"{k}:{n}".encode() for n in range(50) for k in keys]
    with pv_client.create_writer(scope, "s") as w:
        for i in range(0, len(events), 400):
            chunk = events[i : i + 400]
            w.write_many(chunk, routing_keys=[e.decode().split(":")[0] for e in chunk])
    got = official_read_all(pravega.controller_url, scope, "s", len(events))
    assert sorted(got) == sorted(events), "complete, no duplicate"
    assert all(v == list(range(50)) for v in per_key(got).values()), "per-key order"


def test_we_read_what_the_official_writer_writes_in_the_same_segments(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    import pravega_client

    pv_client.create_stream(scope, "s", segments=4)
    keys = [f"k{i}" for i in range(64)]
    manager = pravega_client.StreamManager(pravega.controller_url)
    theirs = manager.create_writer(scope, "s", 1000)
    for n in range(10):
        for k in keys:
            theirs.write_event_bytes(f"{k}:{n}".encode(), routing_key=k)
    theirs.flush()
    with pv_client.create_writer(scope, "s") as w:
        for n in range(10, 20):
            w.write_many([f"{k}:{n}".encode() for k in keys], routing_keys=keys)
    with pv_client.create_reader(scope, "s", "head") as r:
        got = read_n(r, 20 * len(keys))
    assert len(got) == 20 * len(keys)
    segments: dict[str, set[int]] = {}
    for e in got:
        segments.setdefault(e.value.decode().split(":")[0], set()).add(e.segment)
    assert all(len(s) == 1 for s in segments.values()), (
        "a key's events are in one segment whichever client wrote them"
    )
    assert len({min(s) for s in segments.values()}) == 4
    assert all(v == list(range(20)) for v in per_key([e.value for e in got]).values())
