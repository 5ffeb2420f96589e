"""produce_*: producer throughput, batching on, same broker, same run.

- ``produce_async_<size>``: N messages of <size> bytes through the per-message async API,
  then flush. Theirs: ``send_async(value, callback)`` (its API requires a callback; ours
  passes a no-op one too, so both pay for a per-message completion delivered to Python).
- ``produce_many_100``: ours ``send_many`` (one call per 10,000 messages) versus theirs
  ``send_async`` per message (it has no bulk API) — the per-message rate a pipeline gets.
- ``produce_cpu_16384``: the ``produce_async_16384`` run, measured as the client process's CPU
  time (all threads, ``getrusage``) per MB sent — what each client costs where the broker, not
  the client, sets the rate (16 KB messages on a small machine).
"""

from __future__ import annotations

import resource
import time
import uuid

from ..registry import (
    Context,
    Workload,
    ours_client,
    register,
    theirs_client,
)

COUNT = {100: 200_000, 1024: 100_000, 16384: 20_000}


def _topic() -> str:
    return f"persistent://public/default/bench-produce-{uuid.uuid4().hex[:12]}"


def _noop(*_args: object) -> None:
    return None


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _theirs(size: int, ctx: Context, cpu: bool = False) -> float:
    n = COUNT[size]
    payload = b"x" * size
    client = theirs_client(ctx)
    try:
        producer = client.create_producer(
            _topic(),
            batching_enabled=True,
            batching_max_publish_delay_ms=1,
            max_pending_messages=10_000,
            block_if_queue_full=True,
        )
        c0, t0 = _cpu(), time.perf_counter()
        for _ in range(n):
            producer.send_async(payload, _noop)
        producer.flush()
        dt, used = time.perf_counter() - t0, _cpu() - c0
        producer.close()
    finally:
        client.close()
    return used * 1000 / (n * size / 1e6) if cpu else n / dt


def _ours(size: int, ctx: Context, cpu: bool = False) -> float:
    n = COUNT[size]
    payload = b"x" * size
    with ours_client(ctx) as client:
        producer = client.create_producer(_topic(), max_pending_messages=10_000)
        c0, t0 = _cpu(), time.perf_counter()
        for _ in range(n):
            producer.send_async(payload, _noop)
        producer.flush()
        dt, used = time.perf_counter() - t0, _cpu() - c0
        producer.close()
    return used * 1000 / (n * size / 1e6) if cpu else n / dt


def _ours_many(ctx: Context) -> float:
    n = COUNT[100]
    chunk = [b"x" * 100] * 10_000
    with ours_client(ctx) as client:
        producer = client.create_producer(_topic(), max_pending_messages=10_000)
        t0 = time.perf_counter()
        for _ in range(n // len(chunk)):
            producer.send_many(chunk)
        dt = time.perf_counter() - t0
        producer.close()
    return n / dt


for _size in (100, 1024, 16384):
    register(
        Workload(
            name=f"produce_async_{_size}",
            description=f"send_async of {COUNT[_size]} x {_size} B + flush, batching on",
            unit="msg/s",
            higher_is_better=True,
            ours=lambda ctx, s=_size: _ours(s, ctx),  # type: ignore[misc]
            theirs=lambda ctx, s=_size: _theirs(s, ctx),  # type: ignore[misc]
            default_iterations=1,
        )
    )

register(
    Workload(
        name="produce_many_100",
        description="ours send_many (10k per call) vs theirs send_async, 200k x 100 B",
        unit="msg/s",
        higher_is_better=True,
        ours=_ours_many,
        theirs=lambda ctx: _theirs(100, ctx),
        default_iterations=1,
    )
)

register(
    Workload(
        name="produce_cpu_16384",
        description=f"client CPU per MB of send_async of {COUNT[16384]} x 16384 B + flush",
        unit="CPU ms/MB",
        higher_is_better=False,
        ours=lambda ctx: _ours(16384, ctx, cpu=True),
        theirs=lambda ctx: _theirs(16384, ctx, cpu=True),
        default_iterations=1,
    )
)
