"""Capture golden byte streams of an official-client session, through the fault proxy.

    python -m tests.peers.capture_golden [--broker lite|apache|both] [--out DIR]

Writes ``official_to_<broker>_client.bin`` (client -> broker bytes) and
``official_to_<broker>_broker.bin`` (broker -> client bytes) into
``rust/streamwire-pulsar/tests/golden/`` by default. Each file is a concatenation of complete
frames (if the client opened several connections, their streams follow one another in
connection order, each starting with CONNECT / CONNECTED).

The session: connect, partitioned-metadata + lookup, a producer batching with LZ4 (several
messages with keys and properties), an unbatched producer, a subscription with flow, messages
and individual + cumulative acks, then close.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import sys
import tempfile
import time
from pathlib import Path

from .faultproxy import FaultProxy
from .protocol import parse_frame, split_frames

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "rust" / "streamwire-pulsar" / "tests" / "golden"


def run_session(service_url: str, topic: str) -> None:
    import pulsar

    client = pulsar.Client(service_url, operation_timeout_seconds=30, log_conf_file_path=None)
    try:
        client.get_topic_partitions(topic)  # PARTITIONED_METADATA (+ LOOKUP)
        consumer = client.subscribe(
            topic,
            "golden-sub",
            consumer_type=pulsar.ConsumerType.Shared,
            receiver_queue_size=100,
        )
        batched = client.create_producer(
            topic,
            producer_name="golden-batched",
            batching_enabled=True,
            batching_max_messages=5,
            batching_max_publish_delay_ms=50,
            compression_type=pulsar.CompressionType.LZ4,
        )
        for i in range(5):
            batched.send_async(
                f"batched message {i} ".encode() * 4,
                None,
                partition_key=f"k{i % 2}",
                properties={"i": str(i)},
                event_timestamp=1_700_000_000_000 + i,
            )
        batched.flush()
        plain = client.create_producer(topic, producer_name="golden-plain", batching_enabled=False)
        for i in range(3):
            plain.send(f"plain message {i}".encode(), properties={"p": str(i)})
        received = []
        for _ in range(8):
            msg = consumer.receive(timeout_millis=15000)
            received.append(msg)
            consumer.acknowledge(msg)
        if len(received) != 8:
            raise RuntimeError(f"expected 8 messages, got {len(received)}")
        batched.close()
        plain.close()
        consumer.close()
        time.sleep(0.2)  # let the ack grouping timer flush before the connection closes
    finally:
        client.close()


def summarize(stream: bytes) -> tuple[collections.Counter[str], int]:
    frames, rest = split_frames(stream)
    if rest:
        raise RuntimeError(f"stream ends with {len(rest)} bytes of an incomplete frame")
    names: collections.Counter[str] = collections.Counter()
    checksummed = 0
    for raw in frames:
        frame = parse_frame(raw)
        names[frame.command_name] += 1
        if frame.checksum is not None:
            checksummed += 1
    return names, checksummed


def capture(kind: str, service_host: str, service_port: int, out: Path) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="streamwire-golden-"))
    try:
        with FaultProxy(service_host, service_port) as proxy:
            proxy.record(tmp)
            run_session(proxy.url, f"persistent://public/default/golden-{int(time.time())}")
            deadline = time.monotonic() + 10
            while proxy.active_connections and time.monotonic() < deadline:
                time.sleep(0.05)
            if proxy.lookups_rewritten == 0:
                print("note: no LOOKUP_RESPONSE was rewritten", file=sys.stderr)
        for direction, suffix in (("to_broker", "client"), ("to_client", "broker")):
            files = sorted(
                tmp.glob(f"conn-*-{direction}.bin"), key=lambda p: int(p.name.split("-")[1])
            )
            stream = b"".join(f.read_bytes() for f in files)
            names, checksummed = summarize(stream)
            target = out / f"official_to_{kind}_{suffix}.bin"
            target.write_bytes(stream)
            print(
                f"{target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}: "
                f"{len(stream)} bytes, {sum(names.values())} frames from {len(files)} "
                f"connection(s), {checksummed} with CRC32C; {dict(sorted(names.items()))}"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.peers.capture_golden")
    parser.add_argument("--broker", choices=["lite", "apache", "both"], default="both")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.broker in ("lite", "both"):
        from .lite import PulsarLite

        with PulsarLite() as lite:
            capture("lite", "127.0.0.1", lite.port, args.out)
    if args.broker in ("apache", "both"):
        from .apache import ApachePulsar

        with ApachePulsar() as apache:
            capture("apache", "127.0.0.1", apache.broker_port, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
