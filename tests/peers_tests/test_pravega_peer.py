"""The Pravega standalone fixture serves real clients: the official client (PyPI ``pravega``)
writes events with routing keys to a 4-segment stream and its reader group reads every one
back. (streamwire's own Pravega client is being built; this keeps the peer honest meanwhile.)"""

from __future__ import annotations

import asyncio
import uuid

from tests.peers.pravega import PravegaStandalone


def test_official_client_round_trip(pravega: PravegaStandalone) -> None:
    import pravega_client

    scope, stream = "sw" + uuid.uuid4().hex[:8], "events"
    manager = pravega_client.StreamManager(pravega.controller_url)
    manager.create_scope(scope)
    manager.create_stream(scope, stream, 4)
    writer = manager.create_writer(scope, stream, 1000)
    sent = {b"%04d" % i for i in range(500)}
    for i, e in enumerate(sorted(sent)):
        writer.write_event_bytes(e, routing_key=f"k{i % 10}")
    writer.flush()
    group = manager.create_reader_group("rg" + uuid.uuid4().hex[:8], scope, stream)
    reader = group.create_reader("r1")

    async def read_all() -> set[bytes]:
        got: set[bytes] = set()
        for _ in range(200):
            if len(got) >= len(sent):
                break
            segment_slice = await reader.get_segment_slice_async()
            got |= {bytes(e.data()) for e in segment_slice}
            reader.release_segment(segment_slice)
        return got

    try:
        assert asyncio.run(read_all()) == sent
    finally:
        reader.reader_offline()
