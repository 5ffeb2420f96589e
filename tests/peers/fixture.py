"""The body every peer fixture of the suite shares (tests/conftest.py and the conftests of
tests/security and tests/spark_cluster): make the peer, start it, hand it to the tests and
close it at teardown. A start failure fails the tests with the peer's log tail (never a
skip), and for a slow peer one failed start fails every later test at once rather than
spending minutes on the same failure again."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Protocol, TypeVar, Union

import pytest

__all__ = ["started"]


class _Peer(Protocol):
    def start(self) -> object: ...
    def close(self) -> None: ...


T = TypeVar("T", bound=_Peer)
Errors = Union[type[BaseException], tuple[type[BaseException], ...]]


@contextlib.contextmanager
def started(
    make: Callable[[], T],
    what: str = "",
    error: Errors = (),
    failures: list[str] | None = None,
) -> Iterator[T]:
    """``with started(Peer) as peer: yield peer`` in a fixture. A start raising ``error``
    (whose message carries the peer's log tail) fails the test as "<what> did not start:
    ..."; other errors propagate as they are. With ``failures`` (a list the conftest keeps
    for the run), a failed start is remembered and fails the later tests without a retry."""
    if failures:
        pytest.fail(failures[0], pytrace=False)
    peer = make()
    try:
        try:
            peer.start()
        except error as exc:
            message = f"{what} did not start: {exc}"
            if failures is not None:
                failures.append(message)
            pytest.fail(message, pytrace=False)
        yield peer
    finally:
        peer.close()
