"""Tables the benches print, written once: the write and read MiB/s of each client.

Every bench prints Markdown tables of medians; the benches that time a write and a read of
the same bytes (Pravega events, byte streams) print them the same way through here.
"""

from __future__ import annotations

import statistics

__all__ = ["print_mib_rates"]


def print_mib_rates(rows: dict[str, list[tuple[float, float]]], mib: float) -> None:
    """A table of each client's median write and read MiB/s.

    Args:
        rows: per client, the ``(write seconds, read seconds)`` of each round.
        mib: the MiB written (and read) per round.
    """
    print("| client | write MiB/s | read MiB/s |")
    print("|---|---:|---:|")
    for name, rounds in rows.items():
        write = statistics.median(mib / r[0] for r in rounds)
        read = statistics.median(mib / r[1] for r in rounds)
        print(f"| {name} | {write:.0f} | {read:.0f} |")
