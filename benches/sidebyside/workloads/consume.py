"""consume_*: consumer throughput on the same pre-filled backlog, same broker, same run.

``setup`` writes the backlog once (our ``send_many``, batching on: 1000 messages or 128 KB per
batch); every round of either side subscribes a fresh subscription at ``earliest`` on that
backlog and takes all of it, acknowledging every message, so both read exactly the same
entries. Both sides stop after the backlog's count of messages *received*; a broker that
re-dispatches entries (pulsar-lite does, under a fast consumer) makes a side read some twice,
which is printed to stderr and makes that side's figure an overestimate.

- ``consume_receive_{100,1024,16384}``: ours ``receive()`` + ``acknowledge(msg)`` per message
  versus theirs ``receive()`` + ``acknowledge(msg)``, at 100 B, 1 KB and 16 KB.
- ``consume_cpu_16384``: the ``consume_receive_16384`` run, measured as the client process's CPU
  time (all threads, ``getrusage``) per MB received — what each client costs where the broker
  sets the rate.
- ``consume_receive_many_100``: ours ``receive_many(1000)`` + ``acknowledge(list)`` versus theirs
  ``receive()`` + ``acknowledge()`` per message (its batch receive needs a batch policy and
  returns the same per-message objects).
- ``consume_arrow_100``: ours ``receive_arrow(1000)`` (a pyarrow RecordBatch) and acknowledging by
  the batch's last id cumulatively (exclusive subscription) versus theirs per message.
"""

from __future__ import annotations

import resource
import sys
import time
import uuid
from typing import Any, Callable

from ..registry import (
    Context,
    Workload,
    import_official,
    import_streamwire,
    ours_client,
    register,
    theirs_client,
)

COUNTS = {100: 200_000, 1024: 100_000, 16384: 20_000}


def _setup(size: int) -> Callable[[Context], None]:
    def setup(ctx: Context) -> None:
        topic = f"persistent://public/default/bench-consume-{uuid.uuid4().hex[:12]}"
        count = COUNTS[size]
        with ours_client(ctx) as client:
            p = client.create_producer(topic, batching_max_messages=1000, batching_max_delay=0.005)
            chunk = [b"y" * size] * 1_000
            for _ in range(count // len(chunk)):
                p.send_many(chunk)
            p.flush()
            p.close()
        ctx.state["topic"] = topic
        ctx.state["count"] = count
        ctx.state["size"] = size

    return setup


def _sub() -> str:
    return f"bench-{uuid.uuid4().hex[:10]}"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _per_mb(ctx: Context, used: float) -> float:
    return float(used * 1000 / (ctx.state["count"] * ctx.state["size"] / 1e6))


def _theirs(ctx: Context, cpu: bool = False) -> float:
    pulsar = import_official()
    client = theirs_client(ctx)
    try:
        c = client.subscribe(
            ctx.state["topic"],
            _sub(),
            initial_position=pulsar.InitialPosition.Earliest,
            receiver_queue_size=1000,
        )
        count = ctx.state["count"]
        c0, t0 = _cpu(), time.perf_counter()
        for _ in range(count):
            m = c.receive(timeout_millis=30_000)
            c.acknowledge(m)
        dt, used = time.perf_counter() - t0, _cpu() - c0
        c.close()
    finally:
        client.close()
    return _per_mb(ctx, used) if cpu else float(count / dt)


def _ours(
    take: Callable[[Any], int], *, subscription_type: str = "exclusive", cpu: bool = False
) -> Any:
    def run(ctx: Context) -> float:
        with ours_client(ctx) as client:
            c = client.subscribe(
                ctx.state["topic"],
                _sub(),
                initial_position="earliest",
                receiver_queue_size=1000,
                subscription_type=subscription_type,
            )
            if take is _arrow:
                import pyarrow  # noqa: F401  (imported once per process, not timed)
            count = ctx.state["count"]
            got = 0
            c0, t0 = _cpu(), time.perf_counter()
            while got < count:
                got += take(c)
            dt, used = time.perf_counter() - t0, _cpu() - c0
            received = c.stats()["received"]
            c.close()
        if received > count:
            print(
                f"    (ours received {received - count} re-dispatched messages twice)",
                file=sys.stderr,
            )
        return _per_mb(ctx, used) if cpu else float(count / dt)

    return run


def _one(c: Any) -> int:
    m = c.receive(timeout=30)
    c.acknowledge(m)
    return 1


def _many(c: Any) -> int:
    msgs = c.receive_many(1000, timeout=30)
    c.acknowledge(msgs)
    return len(msgs)


def _arrow(c: Any) -> int:
    rb = c.receive_arrow(1000, timeout=30)
    n: int = rb.num_rows
    if n:
        streamwire = import_streamwire()
        last = rb.slice(n - 1).to_pylist()[0]
        c.acknowledge_cumulative(
            streamwire.MessageId(
                last["ledger_id"], last["entry_id"], last["partition"], last["batch_index"]
            )
        )
    return n


_WORKLOADS = [
    (f"consume_receive_{size}", size, _one, "receive()+acknowledge() per message, both sides")
    for size in COUNTS
] + [
    (
        "consume_receive_many_100",
        100,
        _many,
        "ours receive_many(1000)+ack list vs theirs per message",
    ),
    (
        "consume_arrow_100",
        100,
        _arrow,
        "ours receive_arrow(1000)+cumulative ack vs theirs per message",
    ),
]

for _name, _size, _take, _desc in _WORKLOADS:
    register(
        Workload(
            name=_name,
            description=f"{COUNTS[_size]} x {_size} B backlog: {_desc}",
            unit="msg/s",
            higher_is_better=True,
            ours=_ours(_take),
            theirs=_theirs,
            setup=_setup(_size),
            default_iterations=1,
        )
    )

register(
    Workload(
        name="consume_cpu_16384",
        description=f"client CPU per MB of receive()+acknowledge() of {COUNTS[16384]} x 16384 B",
        unit="CPU ms/MB",
        higher_is_better=False,
        ours=_ours(_one, cpu=True),
        theirs=lambda ctx: _theirs(ctx, cpu=True),
        setup=_setup(16384),
        default_iterations=1,
    )
)
