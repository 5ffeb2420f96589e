"""The gateway under load while the broker restarts: nothing answered with an id is lost.

    .venv/bin/python benches/gateway_faults.py                       # 1M messages, Apache Pulsar
    .venv/bin/python benches/gateway_faults.py --messages 200000 --clients 16

Starts Apache Pulsar 4.0 standalone (journal fsync on, as in ``faults_1m.py``) and the gateway
binary in front of it. ``--clients`` HTTP clients (httpx, one keep-alive connection each, one
thread each) POST PIP-64 bodies of ``--batch`` messages; each message's value starts with its
8-byte index. When half of the messages were answered the broker process is restarted (stopped,
then started on the same ports and data). A message whose answer was an error (HTTP error,
``error_code`` in its slot, or a dropped connection) is sent again later, as a client would.

Afterwards the official client reads the topic from the start. Checked: every message that was
answered 200 with a ``messageId`` is stored (**lost must be 0**), and the ids the gateway gave
are the ids the official reader sees. Duplicates (a request whose answer was lost in the
restart, then re-sent) are reported, not failed: the gateway's producers have no names, so
the broker cannot de-duplicate them. Prints a report and a ``BENCH {json}`` line; exit status
1 when something acknowledged was lost. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.peers.apache import ApachePulsar  # noqa: E402
from tests.peers.gateway import Gateway  # noqa: E402

DURABLE = {"journalSyncData": "true", "brokerShutdownTimeoutMs": "60000"}


class Work:
    """Indexes to send, what was acknowledged (and under which id), and the counters."""

    def __init__(self, n: int) -> None:
        self.lock = threading.Lock()
        self.todo = list(range(n - 1, -1, -1))  # popped from the end: ascending order
        self.acked: dict[int, str] = {}
        self.sent_again = 0
        self.errors: dict[str, int] = {}
        self.in_flight = 0  # requests taken and not yet settled

    def take(self, k: int) -> list[int]:
        with self.lock:
            got = self.todo[-k:][::-1]
            del self.todo[-k:]
            self.in_flight += bool(got)
            return got

    def finished(self) -> bool:
        """Nothing left to send, and nothing out that could come back."""
        with self.lock:
            return not self.todo and not self.in_flight

    def settle(self, acked: list[tuple[int, str]], again: list[int], why: str) -> None:
        with self.lock:
            self.in_flight -= 1
            for i, mid in acked:
                self.acked[i] = mid
            if again:
                self.todo.extend(reversed(again))
                self.sent_again += len(again)
                self.errors[why] = self.errors.get(why, 0) + len(again)


def client_loop(
    url: str, path: str, work: Work, batch: int, size: int, stop: threading.Event
) -> None:
    import httpx

    pad = b"x" * max(0, size - 8)
    with httpx.Client(base_url=url, timeout=60.0) as http:
        while not stop.is_set():
            idx = work.take(batch)
            if not idx:
                if work.finished():
                    return
                time.sleep(0.05)  # another client's failed request may come back
                continue
            body = {
                "messages": [
                    {"value": base64.b64encode(i.to_bytes(8, "big") + pad).decode()} for i in idx
                ]
            }
            try:
                r = http.post(path, json=body)
            except httpx.HTTPError as e:
                work.settle([], idx, type(e).__name__)
                time.sleep(0.2)
                continue
            if r.status_code != 200:
                work.settle([], idx, f"http {r.status_code}")
                time.sleep(0.2)
                continue
            acked, again, why = [], [], ""
            for i, slot in zip(idx, r.json()["messageIds"]):
                if slot.get("messageId"):
                    acked.append((i, slot["messageId"]))
                else:  # {"messageId": null, "error_code": 1|2, "error": ...}
                    again.append(i)
                    why = f"error_code {slot.get('error_code')}: {str(slot.get('error'))[:60]}"
            work.settle(acked, again, why)


def read_back(service_url: str, topic: str) -> dict[int, list[str]]:
    """Payload index -> the ids (base64 of ``MessageId.serialize()``) the official reader saw."""
    import pulsar

    client = pulsar.Client(service_url, operation_timeout_seconds=30)
    seen: dict[int, list[str]] = {}
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        # Until the broker says nothing more is there (a timeout alone could stop early at a
        # slow ledger after the restart and count messages as lost that are stored).
        while reader.has_message_available():
            m = reader.read_next(60_000)
            i = int.from_bytes(m.data()[:8], "big")
            seen.setdefault(i, []).append(base64.b64encode(m.message_id().serialize()).decode())
        return seen
    finally:
        client.close()


def run(args: argparse.Namespace) -> int:
    print("starting Apache Pulsar standalone ...", flush=True)
    broker = ApachePulsar(extra_conf=DURABLE)
    broker.start()
    gateway = Gateway(broker.service_url).start()
    name = f"t-{uuid.uuid4().hex[:12]}"
    topic = f"persistent://public/default/{name}"
    path = f"/topics/public/default/{name}"
    work = Work(args.messages)
    report: dict[str, Any] = {"bench": "gateway_faults", "messages": args.messages}
    try:
        import pulsar

        # A subscription first: without one (and no retention) Pulsar may delete the ledgers a
        # restart closes before the read-back.
        oc = pulsar.Client(broker.service_url)
        oc.subscribe(topic, "keep").close()
        oc.close()
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=client_loop,
                args=(gateway.url, path, work, args.batch, args.size, stop),
                daemon=True,
            )
            for _ in range(args.clients)
        ]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        restarted = None
        while any(t.is_alive() for t in threads):
            time.sleep(0.1)
            if restarted is None and len(work.acked) >= args.messages // 2:
                r0 = time.monotonic()
                print(f"  {len(work.acked):,} acknowledged: restarting the broker", flush=True)
                broker.restart()
                restarted = round(time.monotonic() - r0, 1)
                print(f"  broker restarted in {restarted} s", flush=True)
            if time.monotonic() - t0 > args.max_seconds:
                stop.set()
                print("  time limit reached: stopping the clients", flush=True)
                break
        elapsed = time.monotonic() - t0
        for t in threads:
            t.join(timeout=70)
        print("  reading back with the official client ...", flush=True)
        seen = read_back(broker.service_url, topic)
        lost = [i for i in work.acked if i not in seen]
        wrong_id = [i for i, mid in work.acked.items() if i in seen and mid not in seen[i]]
        duplicates = sum(len(v) - 1 for v in seen.values())
        report.update(
            {
                "clients": args.clients,
                "batch": args.batch,
                "acknowledged": len(work.acked),
                "stored_distinct": len(seen),
                "lost": len(lost),
                "ids_not_matching": len(wrong_id),
                "duplicates": duplicates,
                "sent_again": work.sent_again,
                "errors": work.errors,
                "restart_s": restarted,
                "seconds": round(elapsed, 1),
                "msg_per_s": round(len(work.acked) / elapsed),
            }
        )
    finally:
        gateway.close()
        broker.close()
    print(json.dumps(report, indent=2))
    print("BENCH " + json.dumps(report, separators=(",", ":")), flush=True)
    return 1 if report.get("lost", 1) or report.get("ids_not_matching", 1) else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=1_000_000)
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--max-seconds", type=float, default=900)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
