"""The TANK broker of the test suite: the real one when ``STREAMWIRE_TANK_BIN`` names a built
``tank`` binary (see docs/tank.md, "Testing against a real TANK broker"), else the broker double in
``tank_double.py``. Both bind 127.0.0.1 on a free port and keep their data in a temporary
directory across ``restart()``/``kill()``+``start()``, so fault tests run the same on both.

Ready means: a TCP connection gets the broker's greeting Ping.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from .process import OneProcessPeer, ServerProcess
from .util import LOOPBACK, free_port

__all__ = ["TankBroker", "TankBrokerError", "greets"]

ROOT = Path(__file__).resolve().parents[2]


class TankBrokerError(RuntimeError):
    """The TANK broker (real or double) did not start."""


def greets(port: int, timeout: float = 1.0) -> bool:
    """True when a connection to ``port`` receives TANK's greeting Ping."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=timeout) as s:
            data = b""
            while len(data) < 5:
                more = s.recv(5 - len(data))
                if not more:
                    return False
                data += more
            return data == b"\x03\x00\x00\x00\x00"
    except OSError:
        return False


class TankBroker(OneProcessPeer):
    """A TANK broker on a free loopback port with its own data directory."""

    def __init__(self, *, binary: str | None = None, port: int | None = None) -> None:
        self.binary = binary if binary is not None else os.environ.get("STREAMWIRE_TANK_BIN")
        self.kind = "real" if self.binary else "double"
        self.port = port or free_port()
        self._make_workdir(None, f"streamwire-tank-{self.kind}-")
        self.data_dir = self.workdir / "data"
        self.data_dir.mkdir()
        self.process = ServerProcess(
            f"TANK broker ({self.kind})", self.workdir / "tank.log", error=TankBrokerError
        )

    @property
    def url(self) -> str:
        return f"tank://{LOOPBACK}:{self.port}"

    def _cmd(self) -> list[str]:
        if self.binary:
            return [self.binary, "-p", str(self.data_dir), "-l", f"{LOOPBACK}:{self.port}"]
        return [
            sys.executable,
            "-m",
            "tests.peers.tank_double",
            "--port",
            str(self.port),
            "--data-dir",
            str(self.data_dir),
        ]

    def start(self, timeout: float = 30.0) -> TankBroker:
        if not self.running:
            self.process.start(self._cmd(), lambda: greets(self.port), timeout=timeout, cwd=ROOT)
        return self

    def __repr__(self) -> str:
        return f"<TankBroker {self.kind} {self.url}>"
