"""Byte streams (``Client.create_byte_stream``) on the Pravega standalone, the official client
(PyPI ``pravega``: ``StreamManager.create_byte_stream``) reading what ours wrote and the
other way round; conditional appends that keep two writers from interleaving; seek, tell,
truncate, heads and tails; reads that wait at the tail; both faces."""

from __future__ import annotations

import asyncio
import io
import pickle
import threading
import time

import pytest
from streamwire import pravega
from streamwire.aio import pravega as apv
from streamwire.exceptions import (
    AlreadyClosedError,
    ConfigError,
    InvalidArgumentError,
    OperationTimeoutError,
    OutOfRangeError,
    ServerError,
)

from tests.peers.pravega import PravegaStandalone


def blob(n: int, seed: int = 0) -> bytes:
    return bytes((i * 7 + seed) % 251 for i in range(n))


def official_read(url: str, scope: str, stream: str, n: int) -> bytes:
    """``n`` bytes from offset 0 with the official byte stream (its ``readinto`` holds the
    interpreter while it waits at the tail, so never ask it for more than is there)."""
    import pravega_client

    # The manager must outlive its byte stream (the official one does not keep it alive:
    # its runtime stops and readinto waits forever).
    manager = pravega_client.StreamManager(url)
    bs = manager.create_byte_stream(scope, stream)
    out = bytearray()
    while len(out) < n:
        buf = bytearray(n - len(out))
        got = bs.readinto(buf)
        out += buf[:got]
    return bytes(out)


def read_exactly(bs: pravega.ByteStream, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        out += bs.read(n - len(out), timeout=20)
    return bytes(out)


def test_ours_writes_the_official_client_reads(
    pv_client: pravega.Client, scope: str, pravega: PravegaStandalone
) -> None:
    pv_client.create_stream(scope, "bytes", segments=1)
    # Small writes that stay buffered, and one over a block (sent before flush).
    parts = [b"hello ", blob(3 * 1024 * 1024 + 17), b"", b" end"]
    with pv_client.create_byte_stream(scope, "bytes") as bs:
        assert [bs.write(p) for p in parts] == [len(p) for p in parts]
        # Whole blocks went out before flush (in flight, not waited for: they land soon).
        deadline = time.monotonic() + 20
        while bs.current_tail_offset() < 3 * 1024 * 1024:
            assert time.monotonic() < deadline, "whole blocks did not go out before flush"
            time.sleep(0.05)
        bs.flush()
        total = sum(map(len, parts))
        assert bs.current_tail_offset() == total
        assert bs.current_head_offset() == 0
    assert official_read(pravega.controller_url, scope, "bytes", total) == b"".join(parts)


def test_ours_reads_what_the_official_client_wrote_and_appends_at_its_tail(
    pv_client: pravega.Client, scope: str, pravega: PravegaStandalone
) -> None:
    import pravega_client

    pv_client.create_stream(scope, "theirs", segments=1)
    manager = pravega_client.StreamManager(pravega.controller_url)
    official = manager.create_byte_stream(scope, "theirs")
    theirs = [blob(1000, 1), blob(70_000, 2)]
    for p in theirs:
        official.write(p)
    official.flush()
    with pv_client.create_byte_stream(scope, "theirs") as bs:
        assert read_exactly(bs, 71_000) == b"".join(theirs)
        assert bs.tell() == 71_000
        # The official writer starts at offset 0 and so fails on a stream with data; ours
        # starts at the tail.
        bs.write(b"ours")
        bs.flush()
        assert bs.current_tail_offset() == 71_004
        assert bs.read(10, timeout=10) == b"ours"
    assert official_read(pravega.controller_url, scope, "theirs", 71_004)[-4:] == b"ours"


def test_two_writers_never_interleave_the_second_one_raises(
    pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "shared", segments=1)
    a = pv_client.create_byte_stream(scope, "shared")
    b = pv_client.create_byte_stream(scope, "shared")
    a.write(b"A" * 10)
    a.flush()
    b.write(b"B" * 5)  # b starts at the tail: after a's bytes
    b.flush()
    a.write(b"a" * 3)  # a still believes the stream is 10 bytes long
    with pytest.raises(ServerError, match="another writer") as err:
        a.flush()
    assert "3 bytes" in str(err.value), "the error says what was not written"
    # The failed bytes are gone; the next write starts again at the tail.
    a.write(b"C" * 2)
    a.flush()
    a.seek(0)
    assert read_exactly(a, 17) == b"A" * 10 + b"B" * 5 + b"C" * 2
    assert a.current_tail_offset() == 17
    a.close()
    b.close()


def test_a_window_of_blocks_behind_a_conflict_is_reported_whole_and_nothing_lands(
    pv_client: pravega.Client, scope: str
) -> None:
    """Several 1 MiB blocks go out before the first is answered, each conditional on the one
    before it: when another writer got in between, none of them lands and the error counts
    every byte of them and of what was still buffered."""
    pv_client.create_stream(scope, "window", segments=1)
    a = pv_client.create_byte_stream(scope, "window")
    b = pv_client.create_byte_stream(scope, "window")
    a.write(b"A")
    a.flush()
    b.write(b"B")
    b.flush()
    big = 5 * 1024 * 1024 + 7
    with pytest.raises(ServerError, match="another writer") as err:
        a.write(b"x" * big)
        a.flush()
    assert f"{big} bytes" in str(err.value), str(err.value)
    assert a.current_tail_offset() == 2
    a.write(b"C")
    a.flush()
    a.seek(0)
    assert read_exactly(a, 3) == b"ABC"
    a.close()
    b.close()


def test_seek_tell_truncate_and_the_head(pv_client: pravega.Client, scope: str) -> None:
    pv_client.create_stream(scope, "seek", segments=1)
    data = blob(100)
    with pv_client.create_byte_stream(scope, "seek") as bs:
        bs.write(data)
        bs.flush()
        assert bs.seek(10) == 10
        assert read_exactly(bs, 5) == data[10:15]
        assert bs.tell() == 15
        assert bs.seek(-5, 1) == 10
        assert bs.seek(-3, 2) == 97
        assert read_exactly(bs, 3) == data[97:]
        bs.truncate(50)
        assert bs.current_head_offset() == 50
        assert bs.current_tail_offset() == 100
        bs.seek(0)
        with pytest.raises(OutOfRangeError, match="starts at offset 50"):
            bs.read(10, timeout=10)
        bs.seek(bs.current_head_offset())
        assert read_exactly(bs, 50) == data[50:]
        with pytest.raises(InvalidArgumentError, match="before the stream's start"):
            bs.seek(-1)
        with pytest.raises(InvalidArgumentError, match="whence"):
            bs.seek(0, 3)
        assert bs.tell() == 100, "a refused seek leaves the position"


def test_a_read_at_the_tail_waits_for_data_or_times_out(
    pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "wait", segments=1)
    reader = pv_client.create_byte_stream(scope, "wait")
    writer = pv_client.create_byte_stream(scope, "wait")
    t0 = time.monotonic()
    with pytest.raises(OperationTimeoutError):
        reader.read(10, timeout=0.5)
    assert time.monotonic() - t0 < 10

    def later() -> None:
        time.sleep(0.5)
        writer.write(b"late")
        writer.flush()

    t = threading.Thread(target=later)
    t.start()
    assert reader.read(10) == b"late", "a read with no timeout waits for the data"
    t.join()
    buf = bytearray(8)
    writer.write(b"12345")
    writer.flush()
    assert reader.readinto(buf, timeout=10) == 5
    assert bytes(buf[:5]) == b"12345"
    reader.close()
    writer.close()


def test_a_sealed_stream_reads_to_its_end_as_a_file(pv_client: pravega.Client, scope: str) -> None:
    pv_client.create_stream(scope, "sealed", segments=1)
    bs = pv_client.create_byte_stream(scope, "sealed")
    assert isinstance(bs, io.RawIOBase)
    bs.write(b"first line\nsecond line\nlast words")
    bs.seal()  # flushes first
    assert bs.readline() == b"first line\n"
    buffered = io.BufferedReader(bs)
    assert list(buffered) == [b"second line\n", b"last words"]
    assert bs.read(10, timeout=10) == b"", "the end of a sealed stream reads as b''"
    bs.seek(0)
    assert bs.readall() == b"first line\nsecond line\nlast words"
    with pytest.raises(ServerError, match=r"(?i)seal"):
        bs.write(b"more")
        bs.flush()
    with pytest.raises(AlreadyClosedError, match="sealed"):
        pv_client.create_byte_stream(scope, "sealed")


def test_read_minus_one_reads_up_to_the_tail(pv_client: pravega.Client, scope: str) -> None:
    pv_client.create_stream(scope, "all", segments=1)
    with pv_client.create_byte_stream(scope, "all") as bs:
        data = blob(3 * 1024 * 1024 + 5)
        bs.write(data)
        bs.flush()
        assert bs.read() == data, "several engine reads, up to the tail"
        bs.write(b"x")
        bs.flush()
        assert bs.read() == b"x"


def test_refusals_are_typed(pv_client: pravega.Client, scope: str) -> None:
    pv_client.create_stream(scope, "three", segments=3)
    with pytest.raises(ConfigError, match="exactly one segment"):
        pv_client.create_byte_stream(scope, "three")
    pv_client.create_stream(scope, "one", segments=1)
    bs = pv_client.create_byte_stream(scope, "one")
    with pytest.raises(TypeError, match="bytes-like"):
        bs.write("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="writable"):
        bs.readinto(memoryview(b"read-only"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="size must be an int"):
        bs.read("10")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="offset"):
        bs.truncate(-5)
    with pytest.raises(TypeError, match=r"pickle|process"):
        pickle.dumps(bs)
    assert bs.readable() and bs.writable() and bs.seekable()
    assert "ByteStream" in repr(bs) and bs.stream == f"{scope}/one"
    bs.close()
    bs.close()  # idempotent
    assert bs.closed
    with pytest.raises(AlreadyClosedError):
        bs.write(b"x")
    with pytest.raises(AlreadyClosedError):
        bs.read(1)


def test_the_asyncio_face(pravega: PravegaStandalone, scope: str) -> None:
    async def main() -> tuple[bytes, int, int]:
        async with apv.Client(pravega.controller_url) as client:
            await client.create_stream(scope, "aio", segments=1)
            async with await client.create_byte_stream(scope, "aio") as bs:
                assert await bs.write(b"0123456789") == 10
                await bs.flush()
                assert await bs.seek(4) == 4
                got = await bs.read(3, timeout=10)
                buf = bytearray(3)
                n = await bs.readinto(buf, timeout=10)
                tail = await bs.current_tail_offset()
                with pytest.raises(OperationTimeoutError):
                    await bs.read(1, timeout=0.3)
                return got + bytes(buf[:n]), await bs.tell(), tail

    got, at, tail = asyncio.run(main())
    assert (got, at, tail) == (b"456789", 10, 10)
