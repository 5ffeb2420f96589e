"""One helper for every server process the suite starts (pulsar-lite, Apache Pulsar, TANK,
Pravega, the Apache cluster, Spark): start a command with its output in a log file, wait for
a readiness probe with a deadline, stop by PID (SIGTERM, then SIGKILL), and put the log's
tail in every start-up failure so a broken peer explains itself instead of hanging or
skipping. Also the life cycle every peer shares (:class:`Closes`, :class:`Peer`,
:class:`OneProcessPeer`) and the foreground loop of their ``python -m`` entry points
(:func:`serve_until_signal`)."""

from __future__ import annotations

import abc
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from .util import kill_pid, stop_pid, tail, track

__all__ = [
    "Closes",
    "OneProcessPeer",
    "Peer",
    "ProcessOwner",
    "ServerProcess",
    "serve_until_signal",
]

C = TypeVar("C", bound="Closes")
P = TypeVar("P", bound="Peer")
OP = TypeVar("OP", bound="OneProcessPeer")


class ServerProcess:
    """A child process with a log file and a readiness probe."""

    def __init__(
        self,
        name: str,
        log_path: Path,
        *,
        error: type[Exception] = RuntimeError,
        extra_logs: Sequence[Path] = (),
    ) -> None:
        self.name = name
        self.log_path = log_path
        self.extra_logs = list(extra_logs)
        self.error = error
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(
        self,
        cmd: Sequence[str],
        ready: Callable[[], bool],
        *,
        timeout: float,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        interval: float = 0.05,
    ) -> None:
        """Start ``cmd`` and wait until ``ready()`` is true; on failure the process is killed
        and ``error`` raised with the log's tail."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(f"=== start {time.strftime('%H:%M:%S')}: {' '.join(cmd)[:300]}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                list(cmd),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=str(cwd) if cwd else None,
                env=dict(env) if env is not None else None,
            )
        track(self._proc)
        try:
            self._wait(ready, timeout, interval)
        except BaseException:
            self.kill()
            raise

    def _wait(self, ready: Callable[[], bool], timeout: float, interval: float) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        while not ready():
            if self._proc.poll() is not None:
                raise self.error(
                    f"{self.name} exited with {self._proc.returncode} during start-up\n"
                    + self.log_tail()
                )
            if time.monotonic() > deadline:
                raise self.error(f"{self.name} not ready within {timeout:.0f}s\n" + self.log_tail())
            time.sleep(interval)

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM by PID, SIGKILL after ``timeout``; the exit code (None: never started)."""
        return stop_pid(self._proc, timeout) if self._proc is not None else None

    def kill(self) -> int | None:
        """SIGKILL by PID (a crash: no clean shutdown)."""
        return kill_pid(self._proc) if self._proc is not None else None

    def log_tail(self, lines: int = 80) -> str:
        parts = []
        for path in (self.log_path, *self.extra_logs):
            text = tail(path, lines)
            if text:
                parts.append(f"--- {path} (last {lines} lines) ---\n{text}")
        return "\n".join(parts) or "(no log output)"


class Closes(abc.ABC):
    """``with thing:`` closes it when the block ends (an exception included)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release what this object holds."""

    def __enter__(self: C) -> C:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Peer(Closes):
    """A started peer with a working directory: ``with peer:`` starts it; :meth:`close` stops
    it and removes the directory when the peer made it (one given by the caller is kept)."""

    workdir: Path
    _own_workdir = True

    def _make_workdir(self, workdir: str | Path | None, prefix: str) -> None:
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=prefix))
        self.workdir.mkdir(parents=True, exist_ok=True)

    @abc.abstractmethod
    def start(self: P) -> P:
        """Start the peer; returns it, ready to serve."""

    @abc.abstractmethod
    def stop(self) -> object:
        """Stop the peer (its directory stays)."""

    def close(self) -> None:
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self: P) -> P:
        return self.start()


class ProcessOwner:
    """Something that is one :class:`ServerProcess` (``process``): its PID and liveness."""

    process: ServerProcess

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process.running


class OneProcessPeer(Peer, ProcessOwner):
    """A peer that is one process: stop (SIGTERM, then SIGKILL after ``stop_timeout``),
    kill (SIGKILL: a crash), restart on the same ports and data, and the logs' tails."""

    #: Seconds a SIGTERM has before SIGKILL.
    stop_timeout = 10.0

    def stop(self, timeout: float | None = None) -> int | None:
        """SIGTERM by PID, SIGKILL after ``timeout``; the exit code (None: never started)."""
        return self.process.stop(self.stop_timeout if timeout is None else timeout)

    def kill(self) -> int | None:
        """SIGKILL by PID (a crash: no clean shutdown)."""
        return self.process.kill()

    def restart(self: OP, *, hard: bool = False, downtime: float = 0.0) -> OP:
        """Stop (SIGTERM, or SIGKILL with ``hard``), wait ``downtime`` s, and start again on
        the same ports and data."""
        if hard:
            self.kill()
        else:
            self.stop()
        if downtime:
            time.sleep(downtime)
        return self.start()

    def log_tail(self, lines: int = 80) -> str:
        return self.process.log_tail(lines)


def serve_until_signal(
    start: Callable[[], None], alive: Callable[[], bool], close: Callable[[], None]
) -> None:
    """The foreground life of a ``python -m tests.peers.<peer>``: ``start()`` (which prints
    the URLs), then wait while ``alive()`` until SIGTERM or SIGINT, then ``close()``."""
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)  # also when started in the background (SIG_IGN)
    try:
        start()
        while not stop and alive():
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        close()
