"""consume_*: consumer throughput on the same pre-filled backlog, same broker, same run.

``setup`` writes ``COUNT`` x 100 B once (our ``send_many``, batching on); every round of either
side subscribes a fresh subscription at ``earliest`` on that backlog and takes all of it,
acknowledging every message, so both read exactly the same entries.

- ``consume_receive_100``: ours ``receive()`` + ``acknowledge(msg)`` per message versus theirs
  ``receive()`` + ``acknowledge(msg)``.
- ``consume_receive_many_100``: ours ``receive_many(1000)`` + ``acknowledge(list)`` versus theirs
  ``receive()`` + ``acknowledge()`` per message (its batch receive needs a batch policy and
  returns the same per-message objects).
- ``consume_arrow_100``: ours ``receive_arrow(1000)`` (a pyarrow RecordBatch) and acknowledging by
  the batch's last id cumulatively (exclusive subscription) versus theirs per message.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Callable

from ..registry import Context, Workload, import_official, import_streamwire, quiet_logger, register

COUNT = 200_000
SIZE = 100


def _setup(ctx: Context) -> None:
    streamwire = import_streamwire()
    topic = f"persistent://public/default/bench-consume-{uuid.uuid4().hex[:12]}"
    with streamwire.Client(ctx.service_url) as client:
        p = client.create_producer(topic, batching_max_messages=1000, batching_max_delay=0.005)
        chunk = [b"y" * SIZE] * 10_000
        for _ in range(COUNT // len(chunk)):
            p.send_many(chunk)
        p.flush()
        p.close()
    ctx.state["topic"] = topic


def _sub() -> str:
    return f"bench-{uuid.uuid4().hex[:10]}"


def _theirs(ctx: Context) -> float:
    pulsar = import_official()
    client = pulsar.Client(ctx.service_url, logger=quiet_logger(pulsar))
    try:
        c = client.subscribe(
            ctx.state["topic"],
            _sub(),
            initial_position=pulsar.InitialPosition.Earliest,
            receiver_queue_size=1000,
        )
        t0 = time.perf_counter()
        for _ in range(COUNT):
            m = c.receive(timeout_millis=30_000)
            c.acknowledge(m)
        dt = time.perf_counter() - t0
        c.close()
    finally:
        client.close()
    return COUNT / dt


def _ours(take: Callable[[Any], int], *, subscription_type: str = "exclusive") -> Any:
    def run(ctx: Context) -> float:
        streamwire = import_streamwire()
        with streamwire.Client(ctx.service_url) as client:
            c = client.subscribe(
                ctx.state["topic"],
                _sub(),
                initial_position="earliest",
                receiver_queue_size=1000,
                subscription_type=subscription_type,
            )
            got = 0
            t0 = time.perf_counter()
            while got < COUNT:
                got += take(c)
            dt = time.perf_counter() - t0
            c.close()
        return COUNT / dt

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


for _name, _take, _desc in (
    ("consume_receive_100", _one, "receive()+acknowledge() per message, both sides"),
    ("consume_receive_many_100", _many, "ours receive_many(1000)+ack list vs theirs per message"),
    ("consume_arrow_100", _arrow, "ours receive_arrow(1000)+cumulative ack vs theirs per message"),
):
    register(
        Workload(
            name=_name,
            description=f"{COUNT} x {SIZE} B backlog: {_desc}",
            unit="msg/s",
            higher_is_better=True,
            ours=_ours(_take),
            theirs=_theirs,
            setup=_setup,
            default_iterations=1,
        )
    )
