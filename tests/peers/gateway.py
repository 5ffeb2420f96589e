"""The PIP-64 gateway binary (``target/release/streamwire-gateway``, built by
``scripts/bootstrap.sh``; ``STREAMWIRE_GATEWAY_BIN`` overrides it) in front of a broker, on a
free loopback port; ready when ``GET /healthz`` answers 200."""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.request
from pathlib import Path

from .process import ServerProcess
from .util import LOOPBACK, free_port

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["Gateway", "GatewayError", "binary"]


class GatewayError(RuntimeError):
    """The gateway did not start."""


def binary() -> str:
    env = os.environ.get("STREAMWIRE_GATEWAY_BIN")
    path = Path(env) if env else ROOT / "target" / "release" / "streamwire-gateway"
    if not path.is_file():
        raise GatewayError(
            f"no gateway binary at {path}: run scripts/bootstrap.sh (it builds it) or set "
            "STREAMWIRE_GATEWAY_BIN"
        )
    return str(path)


class Gateway:
    def __init__(self, service_url: str, *extra: str) -> None:
        self.service_url = service_url
        self.extra = list(extra)
        self.port = free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix="streamwire-gateway-"))
        self.process = ServerProcess(
            "streamwire-gateway", self.workdir / "gateway.log", error=GatewayError
        )

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=1) as r:
                return int(r.status) == 200
        except OSError:
            return False

    def start(self) -> Gateway:
        cmd = [
            binary(),
            "--service-url",
            self.service_url,
            "--listen",
            f"{LOOPBACK}:{self.port}",
            *self.extra,
        ]
        self.process.start(cmd, self._ready, timeout=30)
        return self

    def stop(self) -> int | None:
        return self.process.stop()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def log_tail(self) -> str:
        return self.process.log_tail()
