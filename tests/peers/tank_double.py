"""A TANK broker double, written from shared/design/TANK.md, for machines without a real one.

    python -m tests.peers.tank_double --port P --data-dir D [--read-only]

It speaks the same wire protocol as the real broker (TANK v4.0, verified against it through
the golden frames in ``tests/peers_tests/test_tank_golden.py``): a greeting Ping on connect;
Produce and ProduceWithSeqnum (bundles stored exactly as sent, sequence numbers from 1);
Consume with long polling at the tail, whole bundles up to the fetch size (the real broker,
probed, answers whole bundles, at least one, until the fetch size is reached or passed; the
protocol page allows a cut last bundle, which the client's codec handles), boundary faults,
sparse first bundles (0xfe), unknown topic and partition markers;
DiscoverPartitions, CreateTopic, ReloadConf, Status, DiscoverTopics and DiscoverTopology
(standalone). It closes the connection on an unknown message type or a request it cannot
parse, as the broker does. Bundles persist in ``<data-dir>/<topic>/<partition>/log``
(appended and flushed before the produce is acknowledged), so a killed and restarted double
keeps every acknowledged message.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

PING = b"\x03\x00\x00\x00\x00"
VERSION = 400
U64_MAX = (1 << 64) - 1


class Malformed(Exception):
    """The request does not parse: the connection is closed."""


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise Malformed("truncated")
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return int(struct.unpack("<H", self.take(2))[0])

    def u32(self) -> int:
        return int(struct.unpack("<I", self.take(4))[0])

    def u64(self) -> int:
        return int(struct.unpack("<Q", self.take(8))[0])

    def str8(self) -> bytes:
        return self.take(self.u8())

    def varint(self) -> int:
        v = 0
        for i in range(5):
            b = self.u8()
            v |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                return v
        raise Malformed("varint")


def varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def str8(b: bytes) -> bytes:
    return bytes([len(b)]) + b


def frame(msg: int, payload: bytes) -> bytes:
    return struct.pack("<BI", msg, len(payload)) + payload


def bundle_seqs(bundle: bytes, base: int) -> tuple[int, int, bool]:
    """(first seq, last seq, sparse) of a bundle stored at ``base`` (parses the header only:
    the message count sits outside the compressed set)."""
    r = Reader(bundle)
    flags = r.u8()
    count = (flags >> 2) & 0x0F
    if count == 0:
        count = r.varint()
    if count == 0:
        raise Malformed("empty bundle")
    if flags & 0x40:
        first = r.u64()
        last = first if count == 1 else first + r.varint() + 1
        return first, last, True
    return base, base + count - 1, False


@dataclass
class Stored:
    first: int
    last: int
    sparse: bool
    data: bytes  # varint length + bundle, exactly as it goes into a chunk


@dataclass
class Partition:
    path: Path
    bundles: list[Stored] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    bytes_total: int = 0

    @property
    def high_water(self) -> int:
        return self.bundles[-1].last if self.bundles else 0

    @property
    def first_available(self) -> int:
        return self.bundles[0].first if self.bundles else 1

    def append(self, bundle: bytes, base_seq: int | None) -> None:
        base = self.high_water + 1 if base_seq is None else base_seq
        first, last, sparse = bundle_seqs(bundle, base)
        if first <= self.high_water:
            raise ValueError("seq")
        with open(self.path, "ab") as f:
            f.write(struct.pack("<QI", first, len(bundle)) + bundle)
            f.flush()
            os.fsync(f.fileno())
        self.bundles.append(Stored(first, last, sparse, varint(len(bundle)) + bundle))
        self.bytes_total += len(bundle)
        self.changed.set()
        self.changed = asyncio.Event()

    def load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        pos = 0
        while pos + 12 <= len(data):
            first, n = struct.unpack_from("<QI", data, pos)
            bundle = data[pos + 12 : pos + 12 + n]
            if len(bundle) < n:
                break  # a torn tail write: never acknowledged
            f, last, sparse = bundle_seqs(bundle, first)
            self.bundles.append(Stored(f, last, sparse, varint(n) + bundle))
            self.bytes_total += n
            pos += 12 + n


class Broker:
    def __init__(self, data_dir: Path, read_only: bool) -> None:
        self.data_dir = data_dir
        self.read_only = read_only
        self.topics: dict[bytes, list[Partition]] = {}
        self.started = int(time.time())

    def load(self) -> None:
        for tdir in sorted(self.data_dir.iterdir()) if self.data_dir.exists() else []:
            if not tdir.is_dir() or tdir.name.startswith("."):
                continue
            parts = sorted(int(p.name) for p in tdir.iterdir() if p.is_dir() and p.name.isdigit())
            partitions = []
            for i in parts:
                p = Partition(tdir / str(i) / "log")
                p.load()
                partitions.append(p)
            self.topics[tdir.name.encode()] = partitions

    # -- requests ---------------------------------------------------------------------------

    def produce(self, payload: bytes, with_seq: bool) -> bytes:
        r = Reader(payload)
        r.u16()
        req_id = r.u32()
        r.str8()
        r.u8()
        r.u32()
        out = bytearray(struct.pack("<I", req_id))
        for _ in range(r.u8()):
            topic = r.str8()
            parts = self.topics.get(topic)
            n = r.u8()
            items = []
            for _ in range(n):
                pid = r.u16()
                length = r.varint()
                base = r.u64() if with_seq else None
                items.append((pid, base, r.take(length)))
            if parts is None:
                out.append(0xFF)
                continue
            if self.read_only:
                out.append(0xFE)
                continue
            for pid, base, bundle in items:
                if pid >= len(parts):
                    out.append(0x01)
                    continue
                try:
                    parts[pid].append(bundle, base)
                    out.append(0x00)
                except ValueError:
                    out.append(0x0A)
                except Malformed:
                    raise
        return frame(0x01, bytes(out))

    async def consume(self, payload: bytes) -> bytes:
        r = Reader(payload)
        version = r.u16()
        req_id = r.u32()
        r.str8()
        max_wait = r.u64()
        min_bytes = min(r.u32(), 64 * 1024 * 1024)
        if version >= 3:
            r.u8()
        wanted = []
        for _ in range(r.u8()):
            topic = r.str8()
            ps = [(r.u16(), r.u64(), r.u32()) for _ in range(r.u8())]
            wanted.append((topic, ps))
        deadline = time.monotonic() + min(max_wait, 3_600_000) / 1000.0
        start_bytes = {
            (t, pid): self.topics[t][pid].bytes_total
            for t, ps in wanted
            if t in self.topics
            for pid, _, _ in ps
            if pid < len(self.topics[t])
        }
        while True:
            header, chunks, ready, waits = self._answer(req_id, wanted, min_bytes, start_bytes)
            remaining = deadline - time.monotonic()
            if ready or not waits or remaining <= 0:
                return frame(0x02, struct.pack("<I", len(header)) + header + chunks)
            _, pending = await asyncio.wait(
                [asyncio.ensure_future(e.wait()) for e in waits], timeout=remaining
            )
            for p in pending:
                p.cancel()

    def _answer(
        self,
        req_id: int,
        wanted: list[tuple[bytes, list[tuple[int, int, int]]]],
        min_bytes: int,
        start_bytes: dict[tuple[bytes, int], int],
    ) -> tuple[bytes, bytes, bool, list[asyncio.Event]]:
        header = bytearray(struct.pack("<IB", req_id, len(wanted)))
        chunks = bytearray()
        ready = False
        waits: list[asyncio.Event] = []
        for topic, ps in wanted:
            header += str8(topic) + bytes([len(ps)])
            parts = self.topics.get(topic)
            if parts is None:
                header += b"\xff\xff"
                ready = True
                continue
            for pid, seq, fetch_size in ps:
                header += struct.pack("<H", pid)
                if pid >= len(parts):
                    header.append(0xFF)
                    ready = True
                    continue
                p = parts[pid]
                hw = p.high_water
                if seq == U64_MAX:
                    seq = hw + 1
                elif seq == 0:
                    seq = p.first_available
                if seq == hw + 1:
                    grown = p.bytes_total - start_bytes.get((topic, pid), p.bytes_total)
                    if min_bytes and grown >= min_bytes:
                        ready = True
                    waits.append(p.changed)
                    header += b"\x00" + struct.pack("<QQI", hw + 1, hw, 0)
                    continue
                if seq > hw + 1 or seq < p.first_available:
                    header += b"\x01" + struct.pack("<QQIQ", 0, hw, 0, p.first_available)
                    ready = True
                    continue
                i = next(i for i, b in enumerate(p.bundles) if b.last >= seq)
                first = p.bundles[i]
                # As the real broker does (probed): whole bundles, at least one, until the
                # fetch size is reached or passed.
                parts_out = []
                size = 0
                for b in p.bundles[i:]:
                    parts_out.append(b.data)
                    size += len(b.data)
                    if size >= fetch_size:
                        break
                data = b"".join(parts_out)
                if first.sparse:
                    header.append(0xFE)
                else:
                    header += b"\x00" + struct.pack("<Q", first.first)
                header += struct.pack("<QI", hw, len(data))
                chunks += data
                if not min_bytes:
                    ready = True
                else:
                    grown = p.bytes_total - start_bytes.get((topic, pid), p.bytes_total)
                    ready = ready or grown >= min_bytes or len(data) >= min_bytes
                    waits.append(p.changed)
        return bytes(header), bytes(chunks), ready, waits

    def discover_partitions(self, payload: bytes) -> bytes:
        r = Reader(payload)
        req_id = r.u32()
        topic = r.str8()
        ids = []
        while r.pos < len(r.data):
            ids.append(r.u16())
        parts = self.topics.get(topic)
        out = bytearray(struct.pack("<I", req_id) + str8(topic))
        if parts is None:
            return frame(0x06, bytes(out) + b"\x00\x00")
        chosen = ids or list(range(len(parts)))
        out += struct.pack("<H", len(chosen))
        for i in chosen:
            if i < len(parts):
                out += struct.pack("<QQ", parts[i].first_available, parts[i].high_water)
            else:
                out += struct.pack("<QQ", U64_MAX, U64_MAX) + b"\xfb"
        return frame(0x06, bytes(out))

    def create_topic(self, payload: bytes) -> bytes:
        r = Reader(payload)
        req_id = r.u32()
        topic = r.str8()
        n = r.u16()
        config = r.take(r.varint())
        out = struct.pack("<I", req_id) + str8(topic)
        name_ok = 0 < len(topic) <= 64 and b"/" not in topic and not topic.startswith(b".")
        if not name_ok or n == 0:
            return frame(0x07, out + b"\x0a")
        if self.read_only:
            return frame(0x07, out + b"\x05")
        if topic in self.topics:
            return frame(0x07, out + b"\x01")
        tdir = self.data_dir / topic.decode("utf-8", "replace")
        parts = []
        for i in range(n):
            (tdir / str(i)).mkdir(parents=True, exist_ok=True)
            parts.append(Partition(tdir / str(i) / "log"))
        if config:
            (tdir / "config").write_bytes(config)
        self.topics[topic] = parts
        return frame(0x07, out + b"\x00")

    def reload_conf(self, payload: bytes) -> bytes:
        r = Reader(payload)
        req_id = r.u32()
        topic = r.str8()
        pid = r.u16()
        out = struct.pack("<I", req_id) + str8(topic) + struct.pack("<H", pid)
        parts = self.topics.get(topic)
        if parts is None:
            code = 11
        elif pid >= len(parts):
            code = 10
        elif not (parts[pid].path.parent / "config").exists():
            code = 2
        else:
            code = 0
        return frame(0x08, out + bytes([code]))

    def status(self, payload: bytes) -> bytes:
        req_id = Reader(payload).u32()
        nparts = sum(len(p) for p in self.topics.values())
        return frame(
            0x0A,
            struct.pack("<IBBII", req_id, 0, 0, len(self.topics), nparts)
            + struct.pack("<IIII", nparts, 0, self.started, VERSION),
        )

    def discover_topics(self, payload: bytes) -> bytes:
        r = Reader(payload)
        req_id = r.u32()
        out = bytearray(struct.pack("<IIB", req_id, len(self.topics), 0))
        for name, parts in sorted(self.topics.items()):
            out += str8(name) + b"\x01" + struct.pack("<H", len(parts))
        return frame(0x0B, bytes(out))

    def discover_topology(self, payload: bytes) -> bytes:
        req_id = Reader(payload).u32()
        return frame(0x0C, struct.pack("<IH", req_id, 0xFFFF))

    # -- connections ------------------------------------------------------------------------

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        lock = asyncio.Lock()
        tasks: set[asyncio.Task[None]] = set()

        async def send(data: bytes) -> None:
            async with lock:
                writer.write(data)
                await writer.drain()

        async def long_poll(payload: bytes) -> None:
            try:
                await send(await self.consume(payload))
            except Malformed:
                writer.close()
            except (ConnectionError, asyncio.CancelledError):
                pass

        try:
            writer.write(PING)
            await writer.drain()
            while True:
                head = await reader.readexactly(5)
                msg, length = struct.unpack("<BI", head)
                payload = await reader.readexactly(length)
                if msg == 0x03:
                    continue
                if msg == 0x02:
                    t = asyncio.ensure_future(long_poll(payload))
                    tasks.add(t)
                    t.add_done_callback(tasks.discard)
                    continue
                handler = {
                    0x01: lambda p: self.produce(p, False),
                    0x05: lambda p: self.produce(p, True),
                    0x06: self.discover_partitions,
                    0x07: self.create_topic,
                    0x08: self.reload_conf,
                    0x0A: self.status,
                    0x0B: self.discover_topics,
                    0x0C: self.discover_topology,
                }.get(msg)
                if handler is None:
                    break
                await send(handler(payload))
        except (asyncio.IncompleteReadError, ConnectionError, Malformed):
            pass
        finally:
            for t in tasks:
                t.cancel()
            writer.close()


async def main_async(port: int, data_dir: Path, read_only: bool) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    broker = Broker(data_dir, read_only)
    broker.load()
    server = await asyncio.start_server(broker.serve, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--read-only", action="store_true")
    args = parser.parse_args()
    asyncio.run(main_async(args.port, args.data_dir, args.read_only))


if __name__ == "__main__":
    main()
