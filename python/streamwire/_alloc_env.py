"""Allocator settings that must be in place before the engine (``_native``) loads.

The engine allocates with mimalloc. By default mimalloc commits each arena (1 GiB of address
space) up front and asks the kernel for transparent huge pages on it, so the first touch of
any 2 MiB of it zeroes all 2 MiB: in a ``receive_many`` profile ~40% of the I/O thread's
samples were the kernel zeroing huge pages for the receive buffers. Committed on demand, the
arena is neither committed up front nor advised huge, and pages are faulted in as used.
Alternating runs of ``benches/pulsar_ceiling.py --rounds 3`` on pulsar-lite (2026-11-26,
quiet machine): ``receive_many(10_000)`` + list acknowledge 64-69% of the broker's dispatch
ceiling with on-demand commit against 27-51% (median 46%) without; ``send_many`` unchanged.

mimalloc reads the option from the environment the first time it reserves an arena (after
this module runs). A value the user set is kept; child processes inherit the setting, which
only mimalloc reads.
"""

from __future__ import annotations

import os

os.environ.setdefault("MIMALLOC_ARENA_EAGER_COMMIT", "0")
