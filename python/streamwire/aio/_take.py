"""The wait-then-take loop of the TANK and Pravega asyncio receives, written once.

Their native objects read ahead into a queue: the awaitable ``wait`` resolves once the queue
has something for a receive (or the time is up), and the plain ``take`` hands out what is
there. A receive cancelled while it waits has taken nothing, so nothing is lost on cancel —
that is why the take happens with no ``await`` between the wake-up and it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, Callable, Optional

__all__ = ["ARROW", "MANY", "ONE", "take_within"]

#: What a receive asks ``take`` for: one item (or None), a list, or a ``pyarrow.RecordBatch``.
ONE, MANY, ARROW = 0, 1, 2


def _empty(kind: int, got: Any) -> bool:
    """Whether ``take`` handed out nothing (None, ``[]`` or a batch of no rows)."""
    if kind == ONE:
        return got is None
    if kind == ARROW:
        return bool(got.num_rows == 0)
    return not got


async def take_within(
    wait: Callable[[int, Optional[float], Optional[list[str]]], Awaitable[Any]],
    take: Callable[[int, int, Optional[list[str]]], Any],
    kind: int,
    most: int,
    timeout: Optional[float],
    columns: Optional[list[str]],
    ended: Callable[[], bool],
) -> Any:
    """Up to ``most`` items of ``kind`` once some are there, or what ``take`` gives (None,
    ``[]``, an empty batch) once ``timeout`` seconds passed (None: wait forever) or
    ``ended()`` says no more will come.

    Args:
        wait: the native awaitable wait (``_await_messages`` / ``_await_events``).
        take: the native take (``_take``).
        kind: ``ONE``, ``MANY`` or ``ARROW``.
        most: the most items to take.
        timeout: seconds to wait at most; None waits forever.
        columns: the Arrow columns wanted (``ARROW`` only); None: all.
        ended: whether the source has ended (a sealed Pravega stream read to its end).
    """
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    left = timeout
    while True:
        await wait(most, left, columns)
        # No await between the wake-up and the take: a cancelled receive took nothing.
        got = take(kind, most, columns)
        if not _empty(kind, got) or ended():
            return got
        if deadline is not None:
            left = deadline - loop.time()
            if left <= 0:
                return got
