"""Resolves asyncio futures on their loop's thread (called by the engine's bridge).

The engine's dispatcher thread hands each loop one batch of ``(future, exception, value)``
items through ``loop.call_soon_threadsafe(_resolve_many, items)``. Running here, on the loop,
makes "was this future cancelled?" a question with a stable answer: a cancelled receive's
messages go back to their consumer (``Received.orphan``) instead of being dropped. A live
receive's future gets the ``Received`` itself; the awaiting coroutine builds its value, so a
cancellation that lands after resolution also hands the messages back (see ``aio._Receiving``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from streamwire._native import Received


def _resolve_many(items: list[tuple[asyncio.Future[Any], BaseException | None, Any]]) -> None:
    for fut, exc, value in items:
        if fut.done():
            if exc is None and type(value) is Received:
                value.orphan()
            continue
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(value)
