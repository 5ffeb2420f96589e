"""Byte streams: a Pravega stream of one segment read and written as plain bytes, as the
official client's ``StreamManager.create_byte_stream`` gives them (``write``, ``flush``,
``readinto``, ``seek``, ``tell``, ``truncate``, ``current_head_offset``,
``current_tail_offset``).

Writes are conditional appends: the bytes land only where this writer believes the tail is,
so two writers never interleave; the second one's ``write``/``flush`` raises instead. Unlike
the official client, a byte stream opened on a stream that already holds data writes at its
tail (the official one starts at offset 0 and fails). ``truncate(offset)`` drops the data
*before* ``offset`` (the head moves), as in the official client — not ``io``'s resize.

The calls are defined once for both faces (:mod:`streamwire._faces`): :class:`ByteStream`
here returns values, ``streamwire.aio.pravega.ByteStream`` awaits the same definitions.
"""

from __future__ import annotations

import io
from typing import NoReturn, Optional, Union

from streamwire._faces import Closes, Steps, call, two_faces
from streamwire._native import PravegaByteStream as _NativeByteStream

__all__ = ["ByteStream"]

_Data = Union[bytes, bytearray, memoryview]


class _Wrapped:
    """The native byte stream, its name and state (pickling refused by the native object)."""

    #: The module the repr names.
    _FACE = "streamwire.pravega"

    def __init__(self, native: _NativeByteStream) -> None:
        self._native = native

    @property
    def stream(self) -> str:
        """The stream, as ``scope/stream``."""
        return self._native.stream

    @property
    def closed(self) -> bool:
        """Whether the byte stream is closed."""
        return self._native.closed

    def __reduce__(self) -> NoReturn:
        self._native.__reduce__()  # raises: a byte stream does not cross processes
        raise AssertionError("unreachable")

    def __repr__(self) -> str:
        return f"<{self._FACE}" + repr(self._native)[len("<streamwire.pravega") :]


class _ByteStreamBase(_Wrapped):
    """What :class:`ByteStream` and ``streamwire.aio.pravega.ByteStream`` share: every call,
    written once."""

    @two_faces
    def write(self, data: _Data) -> Steps[int]:
        """Buffer ``data`` and return its length; whole 1 MiB blocks are sent at once. The
        bytes are durable once :meth:`flush` returns. A failed send (another writer appended
        meanwhile, the stream was sealed) raises, and the bytes buffered with it are dropped:
        the error says how many.

        Args:
            data: the bytes (``bytes``, ``bytearray`` or ``memoryview``).
        """
        n: int = yield call("write", data)
        return n

    @two_faces
    def flush(self, timeout: Optional[float] = None) -> Steps[None]:
        """Send what is buffered and wait until the segment store has it.

        Args:
            timeout: seconds to wait at most. Default None: the client's timeout per block.
        """
        yield call("flush", timeout)

    @two_faces
    def read(self, size: int = -1, timeout: Optional[float] = None) -> Steps[bytes]:
        """Up to ``size`` bytes from the read position: at least one (at the tail it waits
        for data), ``b""`` only at the end of a sealed stream. ``size=-1`` (the default):
        every byte up to the tail as it is now (at least one).

        Args:
            size: bytes at most, or -1. Default -1.
            timeout: seconds to wait for data at most, then ``OperationTimeoutError``.
                Default None: no limit.
        """
        if size is not None and (not isinstance(size, int) or isinstance(size, bool)):
            raise TypeError(f"size must be an int, not {type(size).__name__}")
        if size is None or size < 0:
            tail: int = yield call("current_tail_offset")
            at: int = yield call("tell")
            size = max(tail - at, 1)
            out = bytearray()
            while len(out) < size:
                got: bytes = yield call("read", size - len(out), timeout)
                if not got:
                    break  # the end of a sealed stream
                out += got
            return bytes(out)
        data: bytes = yield call("read", size, timeout)
        return data

    @two_faces
    def readinto(
        self, buffer: Union[bytearray, memoryview], timeout: Optional[float] = None
    ) -> Steps[int]:
        """Read into ``buffer`` (as :meth:`read` with ``size=len(buffer)``); returns how many
        bytes were written into it.

        Args:
            buffer: a writable buffer (``bytearray``, or a ``memoryview`` of one).
            timeout: as for :meth:`read`. Default None.
        """
        view = memoryview(buffer).cast("B")
        if view.readonly:
            raise TypeError("readinto needs a writable buffer (a bytearray), not a read-only one")
        data: bytes = yield call("read", len(view), timeout)
        view[: len(data)] = data
        return len(data)

    @two_faces
    def seek(self, offset: int, whence: int = 0) -> Steps[int]:
        """Move the read position to ``offset`` from ``whence`` (0: the start, 1: the read
        position, 2: the tail) and return it.

        Args:
            offset: bytes (negative with ``whence`` 1 or 2).
            whence: as ``io.IOBase.seek``. Default 0.
        """
        at: int = yield call("seek", offset, whence)
        return at

    @two_faces
    def tell(self) -> Steps[int]:
        """The read position."""
        at: int = yield call("tell")
        return at

    @two_faces
    def truncate(self, offset: int) -> Steps[None]:
        """Drop the data before ``offset`` (the head moves there).

        Args:
            offset: the new head, at most the tail.
        """
        yield call("truncate", offset)

    @two_faces
    def current_head_offset(self) -> Steps[int]:
        """The first readable offset (0 until :meth:`truncate`)."""
        at: int = yield call("current_head_offset")
        return at

    @two_faces
    def current_tail_offset(self) -> Steps[int]:
        """The offset the next flushed byte lands at (bytes still buffered not counted)."""
        at: int = yield call("current_tail_offset")
        return at

    @two_faces
    def seal(self) -> Steps[None]:
        """Flush, then seal the stream: nothing more can be written to it (by anyone), and
        reads return ``b""`` at its end."""
        yield call("seal")

    @two_faces
    def close(self) -> Steps[None]:
        """Flush, then close. Idempotent."""
        yield call("close")

    def readable(self) -> bool:
        """True (as ``io``'s objects say)."""
        return True

    def writable(self) -> bool:
        """True."""
        return True

    def seekable(self) -> bool:
        """True."""
        return True


class ByteStream(_ByteStreamBase, Closes, io.RawIOBase):  # type: ignore[misc]
    """A Pravega stream of one segment as bytes (made by
    :meth:`streamwire.pravega.Client.create_byte_stream`), an ``io.RawIOBase``: ``read``,
    ``readinto``, ``readall``, ``readline``, iteration by line and ``io.BufferedReader`` work
    as on a file. Reading starts at offset 0, writing at the tail; a context manager closes
    (and so flushes) it.

    Args:
        native: the engine's byte stream; made by the client, not by callers.
    """

    def __init__(self, native: _NativeByteStream) -> None:
        _ByteStreamBase.__init__(self, native)
        io.RawIOBase.__init__(self)

    def __del__(self) -> None:
        # io's finalizer would close, and so flush over the network, from a garbage
        # collection (maybe at interpreter exit, after the engine stopped): a finalizer must
        # not block on a server. Bytes not flushed are the caller's to flush or close.
        pass
