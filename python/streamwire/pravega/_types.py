"""Value types of the Pravega client (segments, stream cuts, start positions) and the base of
every wrapper of a native object; re-exported by :mod:`streamwire.pravega`, where they are
documented."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Literal, NamedTuple, TypeVar, Union

from streamwire._native import PravegaReader, PravegaTransactionalWriter, PravegaWriter

__all__ = ["SegmentInfo", "Start", "StreamCut"]


class SegmentInfo(NamedTuple):
    """One open segment of a stream and the part of the routing-key space it owns.

    Args:
        segment_id: the controller's id: ``epoch << 32 | number``.
        number: the segment number.
        epoch: the stream epoch (scale) that created the segment.
        low: the lower bound of its routing-key range (0.0 to 1.0).
        high: the upper bound of that range (exclusive).
    """

    #: The controller's id: ``epoch << 32 | number``.
    segment_id: int
    number: int
    epoch: int
    low: float
    high: float


@dataclass(frozen=True)
class StreamCut:
    """A position in a stream: each segment's offset, between events. Picklable and
    printable; ``StreamCut.parse(str(cut))`` gives it back.

    Args:
        text: the cut's text form, ``scope/stream:segment=offset,...``.
    """

    text: str

    @classmethod
    def parse(cls, text: str) -> StreamCut:
        """The cut whose text form is ``text``.

        Raises:
            InvalidArgumentError: ``text`` is not a stream cut.
        """
        if not isinstance(text, str) or ":" not in text:
            from streamwire.exceptions import InvalidArgumentError

            raise InvalidArgumentError(f"not a stream cut: {text!r}")
        return cls(text)

    @property
    def scope(self) -> str:
        """The scope of the cut's stream."""
        return self.text.split(":", 1)[0].split("/", 1)[0]

    @property
    def stream(self) -> str:
        """The name of the cut's stream (without the scope)."""
        return self.text.split(":", 1)[0].split("/", 1)[1]

    @property
    def positions(self) -> dict[int, int]:
        """Segment id → offset of the next event."""
        rest = self.text.split(":", 1)[1]
        if not rest:
            return {}
        return {int(s): int(o) for s, o in (p.split("=", 1) for p in rest.split(","))}

    def __str__(self) -> str:
        return self.text


Start = Union[Literal["head", "tail", "earliest", "latest"], StreamCut, str]


_N = TypeVar("_N")


class _Wrapped(Generic[_N]):
    """What both faces' wrappers of one native object share: pickling refused, the repr.

    Args:
        native: the engine's object (made by the client, not by callers).
    """

    #: The module the repr names (the native repr names the blocking one).
    _FACE = "streamwire.pravega"

    def __init__(self, native: _N) -> None:
        self._native = native

    def __reduce__(self) -> Any:
        return self._native.__reduce__()

    def __repr__(self) -> str:
        return f"<{self._FACE}" + repr(self._native)[len("<streamwire.pravega") :]


# The native objects that can be closed and keep metrics.
_L = TypeVar("_L", PravegaWriter, PravegaTransactionalWriter, PravegaReader)


class _Live(_Wrapped[_L]):
    """A wrapper of a native object that can be closed and keeps metrics: what a reader (both
    faces) and the asyncio writers show besides their calls."""

    @property
    def closed(self) -> bool:
        """Whether it is closed."""
        return self._native.closed

    def metrics(self) -> dict[str, Any]:
        """Its metrics (docs/observability.md)."""
        return self._native.metrics()
