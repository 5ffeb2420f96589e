"""Waiting for a known number of messages, written once for every test that reads them.

Most tests send ``n`` messages and then read until all ``n`` came (or a deadline passed, and
the test's own assertion says what was missing). :func:`gather` is that loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["gather"]

T = TypeVar("T")


def gather(take: Callable[[int], Sequence[T]], n: int, timeout: float) -> list[T]:
    """Call ``take(left)`` (``left``: how many are still missing) until ``n`` items came or
    ``timeout`` seconds passed; everything that came, in order."""
    got: list[T] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got += take(n - len(got))
    return got
