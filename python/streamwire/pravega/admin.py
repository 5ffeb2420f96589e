"""Stream administration types of :mod:`streamwire.pravega`: scaling and retention policies,
a stream's configuration as the controller keeps it, and the conversions to and from the
engine's tuples.

Both :class:`streamwire.pravega.Client` and :class:`streamwire.aio.pravega.Client` use them;
the engine's calls take and give whole configurations, and :func:`merged` builds the new
configuration of a partial ``update_stream`` from the one read first.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal, Optional, Union

from streamwire.exceptions import InvalidArgumentError

__all__ = ["UNCHANGED", "Retention", "Scaling", "StreamConfig", "Unchanged"]


class Unchanged(enum.Enum):
    """The type of :data:`UNCHANGED`."""

    UNCHANGED = "UNCHANGED"

    def __repr__(self) -> str:
        return "UNCHANGED"


#: ``update_stream``'s default for each setting: keep what the stream has.
UNCHANGED = Unchanged.UNCHANGED


@dataclass(frozen=True)
class Scaling:
    """An auto-scaling policy: keep each segment near ``target_rate`` events (or kilobytes)
    per second, splitting into ``scale_factor`` segments when it is exceeded.

    Args:
        target_rate: the events (or kilobytes) per second per segment to aim at.
        scale_factor: how many segments a hot segment splits into. Default 2.
        by: ``"events"`` or ``"kbytes"``: what ``target_rate`` counts. Default ``"events"``.
    """

    target_rate: int
    scale_factor: int = 2
    by: Literal["events", "kbytes"] = "events"


@dataclass(frozen=True)
class Retention:
    """Automatic truncation of a stream: the controller drops its oldest events once more
    than ``minimum`` is held (bytes for ``"size"``, milliseconds of age for ``"time"``),
    and always past ``maximum`` when one is given. Make one with :meth:`by_size` or
    :meth:`by_time`.

    Args:
        by: ``"size"`` or ``"time"``.
        minimum: bytes (``"size"``) or milliseconds (``"time"``) always kept.
        maximum: bytes or milliseconds never exceeded, or None for no maximum. Default None.
    """

    by: Literal["size", "time"]
    minimum: int
    maximum: Optional[int] = None

    def __post_init__(self) -> None:
        if self.by not in ("size", "time"):
            raise InvalidArgumentError(f"retention is by 'size' or 'time', not {self.by!r}")
        for name in ("minimum", "maximum"):
            v = getattr(self, name)
            if v is None and name == "maximum":
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InvalidArgumentError(f"retention {name} must be an int >= 0, got {v!r}")
        if self.maximum is not None and self.maximum < self.minimum:
            raise InvalidArgumentError(
                f"retention maximum {self.maximum} is below its minimum {self.minimum}"
            )

    @classmethod
    def by_size(cls, min_bytes: int, max_bytes: Optional[int] = None) -> Retention:
        """Keep at least ``min_bytes`` (and at most ``max_bytes``) of the stream.

        Args:
            min_bytes: bytes always kept.
            max_bytes: bytes never exceeded; None for no maximum. Default None.
        """
        return cls("size", min_bytes, max_bytes)

    @classmethod
    def by_time(cls, seconds: float, max_seconds: Optional[float] = None) -> Retention:
        """Keep events for at least ``seconds`` (and at most ``max_seconds``).

        Args:
            seconds: the age in seconds under which events are kept (stored in milliseconds).
            max_seconds: the age past which events are dropped; None for no maximum.
                Default None.
        """
        return cls(
            "time",
            _millis("seconds", seconds),
            None if max_seconds is None else _millis("max_seconds", max_seconds),
        )

    def _native(self) -> tuple[str, int, Optional[int]]:
        return (self.by, self.minimum, self.maximum)


def _millis(name: str, seconds: float) -> int:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise InvalidArgumentError(f"{name} must be a number >= 0, got {seconds!r}")
    return round(seconds * 1000)


@dataclass(frozen=True)
class StreamConfig:
    """A stream's configuration, as :meth:`Client.stream_config
    <streamwire.pravega.Client.stream_config>` reads it.

    Args:
        segments: the number of segments (the minimum when ``scaling`` is set).
        scaling: the auto-scaling policy (a :class:`streamwire.pravega.Scaling`), or None
            for a fixed number of segments.
        retention: the :class:`Retention` policy, or None for none.
        tags: the stream's tags, sorted (the controller keeps a set).
        timestamp_aggregation_timeout: the controller's setting of that name, kept as read.
        rollover_size_bytes: the controller's setting of that name, kept as read.
    """

    segments: int
    scaling: Optional[Scaling]
    retention: Optional[Retention]
    tags: tuple[str, ...] = ()
    timestamp_aggregation_timeout: int = 0
    rollover_size_bytes: int = 0


NativeScaling = Optional[tuple[str, int, int]]
NativeRetention = Optional[tuple[str, int, Optional[int]]]
NativeConfig = tuple[int, NativeScaling, NativeRetention, list[str], int, int]


def scaling_arg(scaling: Optional[Scaling]) -> NativeScaling:
    """The engine's form of a scaling policy (None: a fixed number of segments)."""
    if scaling is None:
        return None
    if not isinstance(scaling, Scaling):
        raise TypeError(f"scaling must be a pravega.Scaling, not {type(scaling).__name__}")
    return (scaling.by, scaling.target_rate, scaling.scale_factor)


def retention_arg(retention: Optional[Retention]) -> NativeRetention:
    """The engine's form of a retention policy (None: none)."""
    if retention is None:
        return None
    if not isinstance(retention, Retention):
        raise TypeError(f"retention must be a pravega.Retention, not {type(retention).__name__}")
    return retention._native()


def tags_arg(tags: object) -> list[str]:
    """A list of tags from a list/tuple/set of str (a lone str is refused: it is a sequence
    of one-letter tags by accident)."""
    if isinstance(tags, (str, bytes)) or not isinstance(tags, (list, tuple, set, frozenset)):
        raise TypeError(f"tags must be a list of str, not {type(tags).__name__}")
    out = list(tags)
    for t in out:
        if not isinstance(t, str):
            raise TypeError(f"a tag must be a str, not {type(t).__name__}")
    return out


def config_of(row: NativeConfig) -> StreamConfig:
    """The engine's answer as a :class:`StreamConfig`."""
    segments, scaling, retention, tags, ts_timeout, rollover = row
    return StreamConfig(
        segments=segments,
        scaling=None
        if scaling is None
        else Scaling(target_rate=scaling[1], scale_factor=scaling[2], by=_by(scaling[0])),
        retention=None if retention is None else Retention(*retention),  # type: ignore[arg-type]
        tags=tuple(sorted(tags)),  # a set on the controller: no order kept
        timestamp_aggregation_timeout=ts_timeout,
        rollover_size_bytes=rollover,
    )


def _by(kind: str) -> Literal["events", "kbytes"]:
    return "kbytes" if kind == "kbytes" else "events"


def merged(
    current: StreamConfig,
    segments: Union[int, Unchanged],
    scaling: Union[Scaling, Unchanged, None],
    retention: Union[Retention, Unchanged, None],
    tags: Union[list[str], tuple[str, ...], set[str], Unchanged],
) -> StreamConfig:
    """``current`` with every setting that is not :data:`UNCHANGED` replaced."""
    if not isinstance(segments, Unchanged):
        if isinstance(segments, bool) or not isinstance(segments, int) or segments < 1:
            raise InvalidArgumentError(f"segments must be an int >= 1, got {segments!r}")
    if not isinstance(scaling, Unchanged):
        scaling_arg(scaling)
    if not isinstance(retention, Unchanged):
        retention_arg(retention)
    return StreamConfig(
        segments=current.segments if isinstance(segments, Unchanged) else segments,
        scaling=current.scaling if isinstance(scaling, Unchanged) else scaling,
        retention=current.retention if isinstance(retention, Unchanged) else retention,
        tags=current.tags if isinstance(tags, Unchanged) else tuple(tags_arg(tags)),
        timestamp_aggregation_timeout=current.timestamp_aggregation_timeout,
        rollover_size_bytes=current.rollover_size_bytes,
    )
