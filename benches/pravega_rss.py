"""Writer memory over many events: RSS of this process while 5M events of 100 B go through
``write_many`` (lists of 10,000) and ``write_async``, against a Pravega standalone.

    .venv/bin/python benches/pravega_rss.py [--events 5000000] [--controller tcp://...]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from streamwire import pravega  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--controller")
    ap.add_argument("--events", type=int, default=5_000_000)
    args = ap.parse_args()
    server = None
    url = args.controller
    if url is None:
        from tests.peers.pravega import PravegaStandalone

        server = PravegaStandalone(heap="6g").start()
        url = server.controller_url
    try:
        c = pravega.Client(url)
        scope = "rss" + uuid.uuid4().hex[:6]
        c.create_scope(scope)
        for mode in ("write_many", "write_async"):
            stream = mode.replace("_", "")
            c.create_stream(scope, stream)
            with c.create_writer(scope, stream) as w:
                batch = [b"x" * 100] * 10_000
                base = rss_mb()
                peak = base
                start = time.perf_counter()
                for i in range(args.events // 10_000):
                    if mode == "write_many":
                        w.write_many(batch)
                    else:
                        for ev in batch:
                            w.write_async(ev)
                    if i % 50 == 0:
                        peak = max(peak, rss_mb())
                w.flush()
                peak = max(peak, rss_mb())
                rate = args.events / (time.perf_counter() - start)
            print(
                f"{mode}: {args.events:,} events, {rate:,.0f}/s, RSS before {base:.0f} MB, "
                f"peak {peak:.0f} MB (+{peak - base:.1f} MB), after {rss_mb():.0f} MB",
                flush=True,
            )
            c.seal_stream(scope, stream)
            c.delete_stream(scope, stream)
    finally:
        if server is not None:
            server.close()


if __name__ == "__main__":
    main()
