"""Instructions per message of the bulk paths, counted by callgrind (load-independent, unlike
wall-clock time on a shared machine): ``send_many`` of 10,000-element lists and of a pyarrow
array (``send_list``, ``send_arrow``: a list of ids back; ``send_list_bulk``,
``send_arrow_bulk``: ``ids=False``, the bulk path with no per-message item or result object;
``send_list_bulk_ids``: ``ids=False`` and then ``.ids()``, the list made from the ranges),
``receive_many(10_000)`` + list ``acknowledge``, ``receive_arrow(10_000)`` + one
cumulative ack per call. One process per run, against one pulsar-lite started outside
valgrind; a receive run drains a backlog produced beforehand by the raw ceiling binary
(``benches/src/bin/pulsar_ceiling.rs``). Every thread of the process is counted.

Per-message cost = (instructions of a run with 2N messages - a run with N) / N, which cancels
start-up, imports, connection and the first prefetch.

Usage: .venv/bin/python benches/pulsar_bulk_cost.py [N] [--keep DIR]
(needs valgrind; N defaults to 100,000; ``--keep`` leaves the callgrind files in DIR for
``callgrind_annotate --inclusive=yes``).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benches import callgrind  # noqa: E402

CHUNK = 10_000
MODES = (
    "send_list",
    "send_arrow",
    "send_list_bulk",
    "send_arrow_bulk",
    "send_list_bulk_ids",
    "receive_many_ack",
    "receive_arrow_cum",
)


def run_one(url: str, mode: str, topic: str, n: int) -> None:
    """One measured process: ``n`` messages of ``mode`` (called under valgrind)."""
    import streamwire

    with streamwire.Client(url) as c:
        if mode.startswith("send"):
            chunk: object = [b"x" * 100] * CHUNK
            if mode.startswith("send_arrow"):
                import pyarrow as pa

                chunk = pa.array(chunk, type=pa.binary())
            ids = not mode.endswith(("_bulk", "_bulk_ids"))
            with c.create_producer(topic) as p:
                for _ in range(n // CHUNK):
                    sent = p.send_many(chunk, ids=ids)  # type: ignore[call-overload]
                    if mode.endswith("_bulk_ids"):
                        sent.ids()
            return
        consumer = c.subscribe(
            topic,
            f"s-{uuid.uuid4().hex[:6]}",
            initial_position="earliest",
            receiver_queue_size=CHUNK,
        )
        got = 0
        while got < n:
            if mode == "receive_many_ack":
                msgs = consumer.receive_many(min(CHUNK, n - got), timeout=60)
                consumer.acknowledge(msgs)
                got += len(msgs)
            else:
                rb = consumer.receive_arrow(
                    min(CHUNK, n - got), timeout=60, columns=["value", "message_id"]
                )
                if rb.num_rows:
                    consumer.acknowledge_cumulative(
                        streamwire.MessageId.deserialize(rb.column("message_id")[-1].as_py())
                    )
                got += rb.num_rows
        consumer.close()


def instructions(url: str, mode: str, topic: str, n: int, keep: Path | None) -> int:
    with tempfile.TemporaryDirectory() as d:
        out = (keep or Path(d)) / f"cg.{mode}.{n}.out"
        return callgrind.instructions(__file__, [url, mode, topic, str(n)], out)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        run_one(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        return
    args = sys.argv[1:]
    keep = None
    if "--keep" in args:
        i = args.index("--keep")
        keep = Path(args[i + 1]).resolve()
        keep.mkdir(parents=True, exist_ok=True)
        del args[i : i + 2]
    modes = [a for a in args if a in MODES] or list(MODES)
    nums = [a for a in args if a.isdigit()]
    n = int(nums[0]) if nums else 100_000
    from benches.pulsar_ceiling import BIN, build_ceiling
    from tests.peers.lite import PulsarLite

    build_ceiling()
    broker = PulsarLite().start()
    try:
        url = broker.service_url
        addr = url.split("//", 1)[1]
        for mode in modes:
            counts = []
            for k in (n, 2 * n):
                topic = f"persistent://public/default/cost-{uuid.uuid4().hex[:10]}"
                if mode.startswith("receive"):
                    subprocess.run(
                        [str(BIN), "produce", addr, topic, str(k), "100", "1000"],
                        check=True,
                        capture_output=True,
                    )
                counts.append(instructions(url, mode, topic, k, keep))
            per = (counts[1] - counts[0]) / n
            print(f"{mode:>18}: {per:>8,.0f} instructions per message", flush=True)
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
