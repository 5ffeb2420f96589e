"""The session's Pravega standalone holds real volumes: 640 MB written through a 2-segment
stream and read back, every event exactly once.

The emulator's own settings (tier 2 in memory behind a 128 MiB cache) fail this in the store
part-way (measured: after ~410 MB here, the containers shut down and the writer reports the
segment unreachable; a Spark job failed at ~130 MB with ``CacheFullException``). The fixture
(tests/peers/pravega.py) puts tier 2 on disk and sizes the cache; this test is its proof.
"""

from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.compute as pc
from streamwire import pravega

from tests.peers.pravega import PravegaStandalone

EVENT = 1000  # bytes per event
PER_CALL = 10_000  # events per write_many: 10 MB
CALLS = 64  # 640 MB in all


def test_640_mb_written_and_read_back_exactly_once(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "big", segments=2)
    pad = b"x" * (EVENT - 12)
    keys = [f"k{i % 97}" for i in range(PER_CALL)]
    with pv_client.create_writer(scope, "big") as w:
        for call in range(CALLS):
            events = [b"%03d%09d" % (call, i) + pad for i in range(PER_CALL)]
            assert w.write_many(events, routing_keys=keys, timeout=120.0) == PER_CALL
    total = CALLS * PER_CALL
    ids: list[pa.Array] = []
    n = 0
    deadline = time.monotonic() + 300.0
    with pv_client.create_reader(scope, "big", start="head") as r:
        while n < total and time.monotonic() < deadline:
            batch = r.read_arrow(100_000, timeout=5.0, columns=["value"])
            values = batch.column(0)
            assert pc.all(pc.equal(pc.binary_length(values), EVENT)).as_py()
            ids.append(pc.binary_slice(values, 0, 12))
            n += batch.num_rows
        assert r.read_arrow(10, timeout=0.5).num_rows == 0, "nothing past the written events"
    assert n == total
    # Every (call, index) pair exactly once: nothing lost, nothing duplicated.
    assert pc.count_distinct(pa.chunked_array(ids)).as_py() == total
    # The data goes to the on-disk tier 2 (the store moves it there in the background).
    deadline = time.monotonic() + 60.0
    while tier2_bytes(pravega) < total * EVENT and time.monotonic() < deadline:
        time.sleep(0.5)
    assert tier2_bytes(pravega) >= total * EVENT


def tier2_bytes(server: PravegaStandalone) -> int:
    return sum(f.stat().st_size for f in server.tier2.rglob("*") if f.is_file())
