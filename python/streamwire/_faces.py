"""Both faces of a waiting call from one Python definition (issue 31): ``@two_faces``.

The blocking classes (``streamwire.tank.Client``, ``streamwire.pravega.Client``, ...) and
their asyncio twins (``streamwire.aio.tank.Client``, ...) wrap the same native object; the
blocking face calls its method ``name``, the asyncio face awaits ``_aname``. A call that is
the same on both faces but for that is written once, in a base class both faces share, as
a generator that yields the native calls it makes and gets their results back::

    @two_faces
    def partitions(self, topic: str) -> Steps[list[PartitionInfo]]:
        \"\"\"The partitions of ``topic``.\"\"\"
        got: list[tuple[int, int, int]] = yield call("partitions", topic)
        return [PartitionInfo(*p) for p in got]

On a class that is also :class:`Blocking`, ``client.partitions("t")`` runs the native
``partitions`` and returns the list; on an :class:`Awaiting` class it is a coroutine that
awaits ``_apartitions``. So the signature, the docstring, the argument conversion and the
result conversion exist once, and type checkers still see a value on the blocking face and
a coroutine on the asyncio face (the descriptor's ``__get__`` is overloaded on the face).

Why generators and not a flag tested in every body: a body may make more than one native
call (read, change, write back), and the same body must not know which face drives it —
the pattern the sans-I/O protocol libraries use. The API reference shows each face's
methods with their own return type and ``async`` label (``scripts/griffe_native_docs.py``).

Hot paths (sends, writes, receives) are not written this way: their awaitable side returns
lighter futures and hands messages back on cancel, so each face keeps its own shell.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Coroutine, Generator
from typing import Any, Callable, Generic, Optional, TypeVar, Union, overload

if sys.version_info >= (3, 10):
    from typing import Concatenate, ParamSpec

    _P = ParamSpec("_P")
else:  # 3.9's typing has no ParamSpec: a plain type variable stands in at run time
    _P = TypeVar("_P")

_T = TypeVar("_T")

__all__ = ["Awaiting", "Blocking", "Closes", "NativeCall", "Steps", "call", "two_faces"]


class NativeCall:
    """One call of the native object: the blocking method's name and its arguments."""

    __slots__ = ("args", "kwargs", "name")

    def __init__(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.name = name
        self.args = args
        self.kwargs = kwargs


def call(name: str, *args: Any, **kwargs: Any) -> NativeCall:
    """The native call ``name(*args, **kwargs)`` (its awaitable form is ``_aname``)."""
    return NativeCall(name, args, kwargs)


#: What a ``@two_faces`` body is: it yields native calls, gets their results, returns ``T``.
Steps = Generator[NativeCall, Any, _T]


class Blocking:
    """Marks a class whose ``@two_faces`` calls wait and return their value."""

    __slots__ = ()
    _native: Any


_B = TypeVar("_B", bound="Closes")


class Closes(Blocking):
    """A blocking class that ``with`` closes: ``with x:`` gives ``x`` and calls ``x.close()``
    at the end of the block (the asyncio face's twin is ``streamwire.aio._Closing``)."""

    __slots__ = ()
    close: Callable[[], object]

    def __enter__(self: _B) -> _B:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Awaiting:
    """Marks a class whose ``@two_faces`` calls are coroutines (the asyncio face)."""

    __slots__ = ()
    _native: Any


def _step(steps: Steps[Any], got: Any) -> tuple[Optional[NativeCall], Any]:
    """Send ``got`` into ``steps``: its next native call, or None and the call's result."""
    try:
        return steps.send(got), None
    except StopIteration as done:
        return None, done.value


def _run(native: Any, steps: Steps[_T]) -> _T:
    """Drive ``steps`` with the blocking native calls."""
    c, result = _step(steps, None)
    while c is not None:
        c, result = _step(steps, getattr(native, c.name)(*c.args, **c.kwargs))
    done: _T = result
    return done


async def _arun(native: Any, steps: Steps[_T]) -> _T:
    """Drive ``steps`` with the awaitable native calls (``_a`` + name)."""
    c, result = _step(steps, None)
    while c is not None:
        c, result = _step(steps, await getattr(native, "_a" + c.name)(*c.args, **c.kwargs))
    done: _T = result
    return done


class two_faces(Generic[_P, _T]):
    """The method ``body`` defines, on both faces (see the module docstring)."""

    def __init__(self, body: Callable[Concatenate[Any, _P], Steps[_T]]) -> None:
        self.body = body
        functools.update_wrapper(self, body)

    @overload
    def __get__(self, obj: None, owner: Optional[type] = None) -> two_faces[_P, _T]: ...

    @overload
    def __get__(self, obj: Blocking, owner: Optional[type] = None) -> Callable[_P, _T]: ...

    @overload
    def __get__(
        self, obj: Awaiting, owner: Optional[type] = None
    ) -> Callable[_P, Coroutine[Any, Any, _T]]: ...

    def __get__(
        self, obj: Union[Blocking, Awaiting, None], owner: Optional[type] = None
    ) -> Callable[..., Any]:
        if obj is None:
            return self
        body = self.body
        if isinstance(obj, Awaiting):

            async def awaited(*args: Any, **kwargs: Any) -> Any:
                return await _arun(obj._native, body(obj, *args, **kwargs))

            return functools.wraps(body)(awaited)

        def waited(*args: Any, **kwargs: Any) -> Any:
            return _run(obj._native, body(obj, *args, **kwargs))

        return functools.wraps(body)(waited)

    def __call__(self, obj: Union[Blocking, Awaiting], *args: Any, **kwargs: Any) -> Any:
        """Called on the class (``Client.close(client)``): as through the instance."""
        return self.__get__(obj)(*args, **kwargs)
