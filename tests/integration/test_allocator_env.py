"""The engine's allocator commits its arenas on demand (``streamwire/_alloc_env.py``): no
arena is committed up front and advised for transparent huge pages, whose first touch zeroed
2 MiB at a time under every receive buffer."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

# A child process moves ~120 MB through a producer and a consumer (enough for the engine's
# threads to reserve arenas), then reports its mappings of at least 256 MiB that are advised
# for huge pages ("hg" in smaps' VmFlags): mimalloc's eagerly committed arenas are 1 GiB.
CHILD = textwrap.dedent(
    """
    import os, sys, uuid
    import streamwire
    url = sys.argv[1]
    topic = f"persistent://public/default/alloc-{uuid.uuid4().hex[:10]}"
    with streamwire.Client(url) as c:
        consumer = c.subscribe(topic, "s", receiver_queue_size=10_000)
        with c.create_producer(topic) as p:
            values = [b"x" * 1000] * 10_000
            for _ in range(12):
                p.send_many(values)
        n = 0
        while n < 120_000:
            got = consumer.receive_many(10_000, timeout=30)
            assert got, "nothing received"
            consumer.acknowledge(got)
            n += len(got)
    big_hg = 0
    size = 0
    with open("/proc/self/smaps") as f:
        for line in f:
            if line.startswith("Size:"):
                size = int(line.split()[1]) * 1024
            elif line.startswith("VmFlags:") and " hg" in line and size >= 256 << 20:
                big_hg += 1
    print(os.environ.get("MIMALLOC_ARENA_EAGER_COMMIT"), big_hg)
    """
)


def _child(url: str, env_value: Any) -> tuple[str, int]:
    env = dict(os.environ)
    env.pop("MIMALLOC_ARENA_EAGER_COMMIT", None)
    if env_value is not None:
        env["MIMALLOC_ARENA_EAGER_COMMIT"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", CHILD, url],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    return out[0], int(out[1])


def test_arenas_are_committed_on_demand(lite_broker: Any) -> None:
    setting, huge_arenas = _child(lite_broker.service_url, None)
    assert setting == "0"
    assert huge_arenas == 0


def test_a_users_setting_wins(lite_broker: Any) -> None:
    # mimalloc's own default (2: commit arenas up front where the OS overcommits) brings back
    # the huge-page-advised arenas: the check above would see them.
    setting, huge_arenas = _child(lite_broker.service_url, "2")
    assert setting == "2"
    assert huge_arenas >= 1
