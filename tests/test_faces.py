"""``streamwire._faces``: one definition of a waiting call drives both faces (issue 31).

The runtime half uses a stand-in native object (no broker: what is tested is the driving of
the definition, the brokers' tests cover the real calls); the typing half runs mypy --strict
on user code of the real TANK and Pravega classes, and checks that a wrongly typed use is
refused, so the test can fail.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from streamwire._faces import Awaiting, Blocking, Steps, call, two_faces

_PYTHON_DIR = Path(__file__).resolve().parent.parent / "python"


class _Native:
    """Records the calls; ``_a`` forms return awaitables, as the engine's do."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        def method(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args, kwargs))
            if name.endswith("boom"):
                raise ValueError(name)
            result = {"config": {"n": 1}, "write": None}[name.removeprefix("_a")]
            if not name.startswith("_a"):
                return result
            fut = asyncio.get_running_loop().create_future()
            fut.set_result(result)
            return fut

        return method


class _Base:
    _native: Any

    def __init__(self) -> None:
        self._native = _Native()

    @two_faces
    def update(self, name: str, *, n: int = 2) -> Steps[dict[str, int]]:
        """Read, change, write back: two native calls."""
        config: dict[str, int] = yield call("config", name)
        new = {**config, "n": n}
        yield call("write", name, new=new)
        return new

    @two_faces
    def fail(self) -> Steps[None]:
        """A native call that raises."""
        yield call("boom")


class _BlockingFace(_Base, Blocking):
    pass


class _AsyncFace(_Base, Awaiting):
    pass


def test_the_blocking_face_makes_the_blocking_calls_and_returns_the_value() -> None:
    face = _BlockingFace()
    assert face.update("s", n=5) == {"n": 5}
    assert face._native.calls == [("config", ("s",), {}), ("write", ("s",), {"new": {"n": 5}})]
    assert _BlockingFace.update(face, "t") == {"n": 2}  # called on the class, as on the object
    with pytest.raises(ValueError, match="boom"):
        face.fail()


def test_the_asyncio_face_awaits_the_a_calls_with_the_same_definition() -> None:
    face = _AsyncFace()
    assert inspect.iscoroutinefunction(face.update)
    assert face.update.__doc__ == _BlockingFace().update.__doc__
    assert asyncio.run(face.update("s", n=7)) == {"n": 7}
    assert face._native.calls == [("_aconfig", ("s",), {}), ("_awrite", ("s",), {"new": {"n": 7}})]
    with pytest.raises(ValueError, match="_aboom"):
        asyncio.run(face.fail())


def test_the_signature_is_the_definitions() -> None:
    params = list(inspect.signature(_AsyncFace().update).parameters)
    assert params[-2:] == ["name", "n"]


_USER_CODE = """
from typing import assert_type
from streamwire import pravega, tank
from streamwire.aio import pravega as apravega, tank as atank

def blocking(c: tank.Client, p: pravega.Client) -> None:
    assert_type(c.create_producer("t", batch_delay=0.1), tank.Producer)
    assert_type(c.partitions("t"), list[tank.PartitionInfo])
    assert_type(c.close(), None)
    r = p.create_reader("s", "t")
    assert_type(r, pravega.Reader)
    assert_type(r.position(), pravega.StreamCut)
    assert_type(p.update_stream("s", "t", segments=3), pravega.StreamConfig)

async def awaited(c: atank.Client, p: apravega.Client) -> None:
    assert_type(await c.create_producer("t"), atank.Producer)
    assert_type(await c.create_consumer("t", start={0: 1}), atank.Consumer)
    assert_type(await c.topics(), list[tank.TopicInfo])
    r = await p.create_reader("s", "t")
    assert_type(r, apravega.Reader)
    assert_type(await r.position(), pravega.StreamCut)
    assert_type(await p.create_writer("s", "t", window=1), apravega.Writer)
"""

# Each must be refused: a value taken from the asyncio face without await, an unknown
# option, a wrongly typed argument.
_WRONG = """
async def f1(c: atank.Client) -> None:
    x: list[tank.TopicInfo] = c.topics()  # refused
def f2(c: tank.Client) -> None:
    c.create_producer("t", batch_dealy=1.0)  # refused
def f3(c: pravega.Client) -> None:
    c.create_stream("s", "t", segments="2")  # refused
"""


def _mypy(code: str, tmp_path: Path) -> tuple[int, str]:
    src = tmp_path / "user_code.py"
    src.write_text(textwrap.dedent(code))
    env = {**os.environ, "MYPYPATH": str(_PYTHON_DIR)}
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), src],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    return done.returncode, done.stdout + done.stderr


def test_type_checkers_see_a_value_on_one_face_and_a_coroutine_on_the_other(
    tmp_path: Path,
) -> None:
    code, out = _mypy(_USER_CODE, tmp_path)
    assert code == 0, out
    header = _USER_CODE.split("\ndef blocking")[0] + "\n"
    code, out = _mypy(header + _WRONG, tmp_path)
    lines = (header + _WRONG).splitlines()
    refused = [i + 1 for i, line in enumerate(lines) if line.endswith("# refused")]
    reported = {int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line}
    assert code == 1 and reported == set(refused), out
