"""One helper for every server process the suite starts (pulsar-lite, Apache Pulsar, TANK,
later Pravega): start a command with its output in a log file, wait for a readiness probe
with a deadline, stop by PID (SIGTERM, then SIGKILL), and put the log's tail in every
start-up failure so a broken peer explains itself instead of hanging or skipping."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from .util import kill_pid, stop_pid, tail, track

__all__ = ["ServerProcess"]


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
