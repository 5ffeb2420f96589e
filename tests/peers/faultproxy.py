"""A deterministic fault-injecting TCP proxy for Pulsar tests (loopback only).

The proxy runs an asyncio loop in its own daemon thread. Every control method is executed on that
loop and returns once it has taken effect, so a test can say "cut now" and then assert.

    proxy = FaultProxy("127.0.0.1", broker_port)
    client = pulsar.Client(proxy.url)
    proxy.cut_all()                         # every open connection closes now
    proxy.stall(True)                       # accept, but forward nothing (bytes are held)
    proxy.set_latency(0.2)                  # each chunk is delivered 200 ms after it was read
    proxy.truncate_next_frame(TO_CLIENT)    # forward part of the next frame, then close
    proxy.corrupt_next_payload(TO_CLIENT, "MESSAGE")  # flip a payload byte, framing intact
    proxy.refuse(2.0)                       # new connections are closed at once for 2 s
    proxy.record(tmp_path)                  # write each connection's byte streams to files

Frame-level faults understand Pulsar framing (see :mod:`tests.peers.protocol`).

Brokers answer LOOKUP with their own address, and clients then connect there directly. So by
default the proxy rewrites the broker URL in LOOKUP_RESPONSE frames to its own URL; for that it
holds client-bound bytes until each frame is complete. With ``rewrite_lookup=False`` (and no
armed fault) the proxy is byte-transparent (it tracks frame boundaries without holding bytes),
which suits non-Pulsar streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeVar, Union

from .process import Closes
from .protocol import (
    COMMAND_TYPES,
    FrameError,
    frame_length,
    parse_frame,
    rewrite_lookup_response,
)

__all__ = ["TO_BROKER", "TO_CLIENT", "FaultProxy"]

TO_BROKER = "to_broker"
TO_CLIENT = "to_client"
DIRECTIONS = (TO_BROKER, TO_CLIENT)
MAX_SANE_FRAME = 64 * 1024 * 1024  # a larger "size" means the stream is not Pulsar framing

T = TypeVar("T")


@dataclass
class _Fault:
    kind: str  # "truncate" | "corrupt"
    command_type: int | None = None


class _Close:
    """Sentinel: close the connection after forwarding what came before."""


CLOSE = _Close()
Chunk = Union[bytes, _Close]


@dataclass
class _Tracker:
    """Per-connection, per-direction frame boundary tracking and fault application."""

    proxy: FaultProxy
    direction: str
    header: bytearray = field(default_factory=bytearray)  # passthrough: header bytes seen
    remaining: int = 0  # passthrough: bytes of the current frame still to forward
    collecting: bytearray | None = None  # collect mode: the frame being held

    def feed(self, data: bytes) -> list[Chunk]:
        out: list[Chunk] = []
        pos = 0
        n = len(data)
        while pos < n:
            if self.collecting is not None:
                pos = self._collect(data, pos, out)
                if out and out[-1] is CLOSE:
                    return out
                continue
            if self.remaining > 0:
                take = min(self.remaining, n - pos)
                out.append(data[pos : pos + take])
                self.remaining -= take
                pos += take
                continue
            if not self.header and (
                self.proxy._armed[self.direction]
                or (self.direction == TO_CLIENT and self.proxy.rewrite_lookup)
            ):
                self.collecting = bytearray()
                continue
            # Passthrough of a frame header: forward immediately, remember its bytes.
            take = min(4 - len(self.header), n - pos)
            self.header += data[pos : pos + take]
            out.append(data[pos : pos + take])
            pos += take
            if len(self.header) == 4:
                self.remaining = int.from_bytes(self.header, "big")
                self.header.clear()
        return [c for c in out if c is CLOSE or c]

    def _collect(self, data: bytes, pos: int, out: list[Chunk]) -> int:
        assert self.collecting is not None
        buf = self.collecting
        need = frame_length(buf)
        if need is None:
            take = min(4 - len(buf), len(data) - pos)
        else:
            if need > MAX_SANE_FRAME:  # not Pulsar framing: give up collecting, pass through
                out.append(bytes(buf))
                self.remaining = need - len(buf)
                self.collecting = None
                return pos
            take = min(need - len(buf), len(data) - pos)
        buf += data[pos : pos + take]
        pos += take
        need = frame_length(buf)
        if need is not None and len(buf) == need:
            self.collecting = None
            out.extend(self.proxy._apply_fault(self.direction, bytes(buf)))
        return pos


class _Conn:
    def __init__(self, proxy: FaultProxy, cid: int, client_w: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.cid = cid
        self.client_w = client_w
        self.upstream_w: asyncio.StreamWriter | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.closed = asyncio.Event()
        self.eofs = 0
        self.records: dict[str, BinaryIO] = {}

    def abort(self) -> None:
        for w in (self.client_w, self.upstream_w):
            if w is not None:
                w.transport.abort()
        for f in self.records.values():
            with contextlib.suppress(OSError):
                f.close()
        self.records.clear()
        self.closed.set()


class FaultProxy(Closes):
    """Loopback TCP proxy ``127.0.0.1:port`` -> ``upstream_host:upstream_port`` with faults."""

    def __init__(
        self,
        upstream_host: str,
        upstream_port: int,
        listen_port: int = 0,
        *,
        rewrite_lookup: bool = True,
    ) -> None:
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        #: Replace the broker URL in LOOKUP_RESPONSE frames by this proxy's URL, so clients keep
        #: connecting through the proxy (brokers answer lookups with their own address). This
        #: makes the client-bound direction hold each frame until it is complete.
        self.rewrite_lookup = rewrite_lookup
        self.lookups_rewritten = 0
        self._latency = 0.0
        self._stalled: asyncio.Event | None = None  # set == flowing
        self._refuse_until = 0.0
        self._record_dir: Path | None = None
        self._armed: dict[str, list[_Fault]] = {d: [] for d in DIRECTIONS}
        self._conns: set[_Conn] = set()
        self._next_id = 0
        self.connection_count = 0
        self.refused_count = 0
        self._bytes = dict.fromkeys(DIRECTIONS, 0)
        self.applied_faults: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._run, name="FaultProxy", daemon=True)
        self._started = threading.Event()
        self._thread.start()
        self._started.wait()
        self.port: int = self._call(self._start_server(listen_port))

    # -- public API ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"pulsar://127.0.0.1:{self.port}"

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    @property
    def active_connections(self) -> int:
        return len(self._conns)

    @property
    def bytes_forwarded(self) -> dict[str, int]:
        """Bytes delivered so far, per direction (``TO_BROKER``, ``TO_CLIENT``)."""
        return dict(self._bytes)

    def cut_all(self) -> int:
        """Abort every open connection (client and upstream side) now; return how many."""
        return self._call(self._cut_all())

    def stall(self, on: bool = True) -> None:
        """While on, connections are accepted but nothing is forwarded; bytes are held."""
        self._call(self._set_stall(on))

    def set_latency(self, seconds: float) -> None:
        """Deliver each chunk ``seconds`` after it was read (order preserved)."""
        if seconds < 0:
            raise ValueError("latency must be >= 0")
        self._call(self._set(lambda: setattr(self, "_latency", float(seconds))))

    def refuse(self, seconds: float) -> None:
        """For ``seconds``, close new connections immediately after accepting them."""
        deadline = time.monotonic() + seconds
        self._call(self._set(lambda: setattr(self, "_refuse_until", deadline)))

    def truncate_next_frame(self, direction: str) -> None:
        """Forward only part of the next frame in ``direction``, then close that connection."""
        self._arm(direction, _Fault("truncate"))

    def corrupt_next_payload(self, direction: str, command_type: str | int | None = None) -> None:
        """Flip one payload byte of the next payload-carrying frame in ``direction``.

        The byte is in the message payload (after the metadata); sizes, command, checksum field
        and metadata are left intact, so a checksum (when present) no longer matches.
        ``command_type`` (e.g. ``"SEND"`` or ``"MESSAGE"``) restricts which frame is hit.
        """
        ctype: int | None
        if isinstance(command_type, str):
            ctype = COMMAND_TYPES[command_type.upper()]
        else:
            ctype = command_type
        self._arm(direction, _Fault("corrupt", ctype))

    def pending_faults(self, direction: str | None = None) -> int:
        """Armed faults not yet applied."""
        dirs = DIRECTIONS if direction is None else (direction,)
        return sum(len(self._armed[d]) for d in dirs)

    def clear_faults(self) -> None:
        def clear() -> None:
            for faults in self._armed.values():
                faults.clear()

        self._call(self._set(clear))

    def record(self, path: str | Path | None) -> None:
        """Record the streams of connections accepted from now on into directory ``path``.

        Files: ``conn-<n>-to_broker.bin`` and ``conn-<n>-to_client.bin`` (bytes as received,
        before any fault). ``None`` stops recording for new connections.
        """
        target = Path(path) if path is not None else None
        if target is not None:
            target.mkdir(parents=True, exist_ok=True)
        self._call(self._set(lambda: setattr(self, "_record_dir", target)))

    def wait_for_connections(self, count: int, timeout: float = 10.0) -> bool:
        """Wait until at least ``count`` connections have been accepted in total."""
        deadline = time.monotonic() + timeout
        while self.connection_count < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            self._call(self._shutdown(), timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()

    def __repr__(self) -> str:
        return (
            f"FaultProxy(127.0.0.1:{self.port} -> {self.upstream_host}:{self.upstream_port}, "
            f"active={self.active_connections})"
        )

    # -- loop plumbing ------------------------------------------------------------------------
    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._stalled = asyncio.Event()
        self._stalled.set()
        self._loop.call_soon(self._started.set)
        self._loop.run_forever()

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        if not self._thread.is_alive():
            coro.close()
            raise RuntimeError("FaultProxy is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    @staticmethod
    async def _set(fn: Callable[[], object]) -> None:
        fn()

    def _arm(self, direction: str, fault: _Fault) -> None:
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be TO_BROKER or TO_CLIENT, not {direction!r}")
        self._call(self._set(lambda: self._armed[direction].append(fault)))

    async def _start_server(self, port: int) -> int:
        self._server = await asyncio.start_server(self._on_client, "127.0.0.1", port)
        return int(self._server.sockets[0].getsockname()[1])

    async def _set_stall(self, on: bool) -> None:
        assert self._stalled is not None
        if on:
            self._stalled.clear()
        else:
            self._stalled.set()

    async def _cut_all(self) -> int:
        conns = list(self._conns)
        for c in conns:
            c.abort()
        for c in conns:
            for t in c.tasks:
                t.cancel()
        self._conns.difference_update(conns)
        return len(conns)

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._cut_all()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    # -- faults -------------------------------------------------------------------------------
    def _apply_fault(self, direction: str, frame: bytes) -> list[Chunk]:
        """Called with one complete frame while a fault is armed (or lookups are rewritten)."""
        if direction == TO_CLIENT and self.rewrite_lookup:
            rewritten = rewrite_lookup_response(frame, self.url)
            if rewritten is not None:
                self.lookups_rewritten += 1
                frame = rewritten
        armed = self._armed[direction]
        if not armed:
            return [frame]
        fault = armed[0]
        if fault.kind == "truncate":
            armed.pop(0)
            cut = max(1, min(len(frame) - 1, len(frame) // 2))
            self.applied_faults.append(f"truncate {direction} {cut}/{len(frame)} bytes")
            return [frame[:cut], CLOSE]
        try:
            parsed = parse_frame(frame)
        except FrameError:
            return [frame]
        if parsed.payload_start is None or parsed.payload_start >= len(frame):
            return [frame]
        if fault.command_type is not None and parsed.command_type != fault.command_type:
            return [frame]
        armed.pop(0)
        idx = parsed.payload_start + (len(frame) - parsed.payload_start) // 2
        corrupted = bytearray(frame)
        corrupted[idx] ^= 0xFF
        self.applied_faults.append(
            f"corrupt {direction} {parsed.command_name} byte {idx} of {len(frame)}"
        )
        return [bytes(corrupted)]

    # -- connections --------------------------------------------------------------------------
    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if time.monotonic() < self._refuse_until:
            self.refused_count += 1
            writer.transport.abort()
            return
        self._next_id += 1
        conn = _Conn(self, self._next_id, writer)
        self.connection_count += 1
        self._conns.add(conn)
        try:
            up_reader, up_writer = await asyncio.open_connection(
                self.upstream_host, self.upstream_port
            )
        except OSError:
            self._conns.discard(conn)
            conn.abort()
            return
        conn.upstream_w = up_writer
        if conn.closed.is_set():  # cut while connecting
            up_writer.transport.abort()
            return
        if self._record_dir is not None:
            for d in DIRECTIONS:
                conn.records[d] = open(self._record_dir / f"conn-{conn.cid}-{d}.bin", "wb")
        for direction, src, dst in (
            (TO_BROKER, reader, up_writer),
            (TO_CLIENT, up_reader, writer),
        ):
            queue: asyncio.Queue[tuple[float, Chunk] | None] = asyncio.Queue(maxsize=256)
            conn.tasks.append(asyncio.ensure_future(self._read(conn, direction, src, queue)))
            conn.tasks.append(asyncio.ensure_future(self._write(conn, direction, dst, queue)))
        await conn.closed.wait()
        self._conns.discard(conn)

    async def _read(
        self,
        conn: _Conn,
        direction: str,
        src: asyncio.StreamReader,
        queue: asyncio.Queue[tuple[float, Chunk] | None],
    ) -> None:
        tracker = _Tracker(self, direction)
        try:
            while True:
                data = await src.read(65536)
                if not data:
                    break
                rec = conn.records.get(direction)
                if rec is not None:
                    rec.write(data)
                    rec.flush()
                now = time.monotonic()
                for chunk in tracker.feed(data):
                    await queue.put((now, chunk))
                    if chunk is CLOSE:
                        return
        except (ConnectionError, OSError):
            pass
        await queue.put(None)  # EOF (cancellation by cut_all skips this: the conn is gone)

    async def _write(
        self,
        conn: _Conn,
        direction: str,
        dst: asyncio.StreamWriter,
        queue: asyncio.Queue[tuple[float, Chunk] | None],
    ) -> None:
        assert self._stalled is not None
        try:
            while True:
                item = await queue.get()
                if item is None:
                    # Half-close: pass the EOF on, the other direction may still flow.
                    with contextlib.suppress(OSError, RuntimeError):
                        if dst.can_write_eof():
                            dst.write_eof()
                    conn.eofs += 1
                    if conn.eofs == len(DIRECTIONS):
                        conn.abort()
                    return
                t_read, chunk = item
                delay = t_read + self._latency - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await self._stalled.wait()
                if isinstance(chunk, _Close):
                    conn.abort()
                    return
                self._bytes[direction] += len(chunk)
                dst.write(chunk)
                await dst.drain()
        except (ConnectionError, OSError):
            conn.abort()
