"""The one runner of the bad-input tables (``docs/bad-input.md``).

Every table's rows are :class:`BadCase` values: ``CASES`` in ``tests/test_bad_input.py`` and
the ``*_CASES`` lists of ``tests/*/bad_cases*.py``. Each row gets the same check here: the
call raises its documented exception (that class exactly, not a subclass) with a message,
and then the protocol's own "still works" check proves the same handles keep working. Rows
of the ``fork`` group run in a forked child (:func:`check_forked`). A protocol's test module
only builds its context and says how it checks the handles still work.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import pytest
from streamwire import ConfigError, InvalidArgumentError

__all__ = [
    "CFG",
    "INV",
    "TYP",
    "BadCase",
    "check_forked",
    "check_raises",
    "check_raises_async",
    "forked",
    "ids",
    "local",
    "now",
]

CtxT = TypeVar("CtxT")
R = TypeVar("R")

#: The exceptions most rows expect, short so a row fits a line.
INV, CFG, TYP = InvalidArgumentError, ConfigError, TypeError


@dataclass(frozen=True)
class BadCase(Generic[CtxT, R]):
    """One row: ``fn(ctx)`` (a blocking call, or an awaitable for the asyncio tables) must
    raise ``expected``."""

    call: str  # the public method
    input: str  # what is wrong with the input
    expected: type[BaseException]
    fn: Callable[[CtxT], R]
    group: str = "input"  # "input" | "closed" | "fork" (run in a forked child)
    note: str = ""

    @property
    def id(self) -> str:
        return f"{self.call}: {self.input}"


def local(cases: Sequence[BadCase[CtxT, R]]) -> list[BadCase[CtxT, R]]:
    """The rows run in this process (all but the ``fork`` group)."""
    return [case for case in cases if case.group != "fork"]


def forked(cases: Sequence[BadCase[CtxT, R]]) -> list[BadCase[CtxT, R]]:
    """The rows of the ``fork`` group (run in a forked child)."""
    return [case for case in cases if case.group == "fork"]


def ids(cases: Sequence[BadCase[Any, Any]]) -> list[str]:
    """The pytest ids of ``cases``."""
    return [case.id for case in cases]


async def now(make: Callable[[], Awaitable[Any]]) -> Any:
    """Await ``make()``: for asyncio rows whose bad call must happen inside the coroutine."""
    return await make()


def check_raises(case: BadCase[CtxT, Any], ctx: CtxT, still_works: Callable[[CtxT], None]) -> None:
    """The row raises exactly its exception with a message; then ``still_works(ctx)``."""
    with pytest.raises(case.expected) as info:
        case.fn(ctx)
    assert type(info.value) is case.expected, (type(info.value), info.value)
    assert str(info.value), "the error message is empty"
    still_works(ctx)


async def check_raises_async(case: BadCase[CtxT, Awaitable[Any]], ctx: CtxT) -> None:
    """An asyncio row raises its exception with a message (a cancelled wait may have none);
    the caller then checks that its handles still work."""
    with pytest.raises(case.expected) as info:
        await case.fn(ctx)
    assert str(info.value) or case.expected is asyncio.CancelledError


def check_forked(
    cases: Sequence[BadCase[CtxT, Any]],
    ctx: CtxT,
    child_works: Callable[[], None],
    still_works: Callable[[CtxT], None],
) -> None:
    """In a forked child every ``fork`` row raises exactly its exception and
    ``child_works()`` (a new client made in the child) succeeds; then ``still_works(ctx)``
    in the parent. The child reports through a pipe and never returns into pytest."""
    fork_cases = forked(cases)
    assert fork_cases
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, never return into pytest
        lines: list[str] = []
        try:
            for case in fork_cases:
                try:
                    case.fn(ctx)
                    lines.append(f"{case.id}: no exception")
                except BaseException as e:
                    if type(e) is not case.expected:
                        lines.append(f"{case.id}: {type(e).__name__}: {e}")
            child_works()
        except BaseException as e:
            lines.append(f"child failed: {type(e).__name__}: {e}")
        finally:
            os.write(write_fd, "\n".join(lines).encode())
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        problems = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert problems == "", problems
    still_works(ctx)
