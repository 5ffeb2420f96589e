"""Launcher for pulsar-lite (PyPI ``pulsar-lite``), a Pulsar-protocol broker binary.

Usage::

    with PulsarLite() as broker:
        client = pulsar.Client(broker.service_url)

The metrics server (which binds 0.0.0.0:8080 by default) is always disabled; the broker binds
127.0.0.1 only. ``restart()`` keeps the port and the database, for reconnection tests.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .process import OneProcessPeer, ServerProcess
from .util import LOOPBACK, free_port, tail, tcp_accepts

__all__ = ["PulsarLite", "PulsarLiteError", "find_binary"]


class PulsarLiteError(RuntimeError):
    """pulsar-lite could not be found or did not start."""


def find_binary() -> str:
    """Path of the ``pulsar-lite`` executable shipped in the installed ``pulsar_lite`` wheel.

    ``PULSAR_LITE_BINARY`` overrides it (the wheel's own finder honours the same variable).
    """
    env = os.environ.get("PULSAR_LITE_BINARY")
    if env and os.path.isfile(env):
        return os.path.abspath(env)
    try:
        from pulsar_lite.binary_finder import find_pulsar_lite_binary
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise PulsarLiteError("pulsar-lite is not installed (pip install pulsar-lite)") from exc
    return str(find_pulsar_lite_binary())


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    raise TypeError(f"unsupported TOML value for pulsar-lite config: {value!r}")


def render_config(extra: dict[str, Any] | None = None) -> str:
    """TOML text for pulsar-lite: top-level ``extra`` keys plus ``[metrics] enabled = false``.

    pulsar-lite ignores unknown keys and parse errors silently, so keep keys to the known ones:
    ``default_partitions``, ``max_message_size_bytes``, ``keep_alive_interval_secs``,
    ``handshake_timeout_secs``, ``connection_liveness_check_timeout_secs``, ``max_connections``,
    ``max_connections_per_ip``, ``publish_rate_messages_per_sec``, ``publish_rate_bytes_per_sec``...
    """
    lines = [f"{key} = {_toml_value(value)}" for key, value in (extra or {}).items()]
    if any(key == "metrics" or key.startswith("metrics.") for key in extra or {}):
        raise ValueError("the [metrics] section is managed by PulsarLite (always disabled)")
    lines += ["", "[metrics]", "enabled = false", ""]
    return "\n".join(lines)


class PulsarLite(OneProcessPeer):
    """A pulsar-lite broker on a free loopback port, with its own temporary data directory."""

    def __init__(
        self,
        config: dict[str, Any] | None = None,
        *,
        port: int | None = None,
        log_level: str = "info",
        start_timeout: float = 20.0,
        handshake_probe: bool = True,
        workdir: str | Path | None = None,
    ) -> None:
        self.config: dict[str, Any] = dict(config or {})
        self.port: int = port or free_port()
        self.log_level = log_level
        self.start_timeout = start_timeout
        self.handshake_probe = handshake_probe
        self._make_workdir(workdir, "streamwire-lite-")
        self.db_prefix = self.workdir / "db"
        self.config_path = self.workdir / "pulsar-lite.toml"
        self.log_path = self.workdir / "pulsar-lite.log"
        self.binary = find_binary()
        self.process = ServerProcess("pulsar-lite", self.log_path, error=PulsarLiteError)

    # -- properties ---------------------------------------------------------------------------
    @property
    def service_url(self) -> str:
        return f"pulsar://{LOOPBACK}:{self.port}"

    @property
    def address(self) -> tuple[str, int]:
        return (LOOPBACK, self.port)

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> PulsarLite:
        if self.running:
            return self
        self.config_path.write_text(render_config(self.config))
        self.process.start(
            [
                self.binary,
                "--addr",
                f"{LOOPBACK}:{self.port}",
                "--db-path",
                str(self.db_prefix),
                "--config",
                str(self.config_path),
                "--log-level",
                self.log_level,
            ],
            self._ready,
            timeout=self.start_timeout,
            cwd=self.workdir,
            interval=0.02,
        )
        return self

    def _ready(self) -> bool:
        """Listening, and (with ``handshake_probe``) CONNECT answered by CONNECTED."""
        if not tcp_accepts(LOOPBACK, self.port):
            return False
        if not self.handshake_probe:
            return True
        from .protocol import handshake

        try:
            handshake(LOOPBACK, self.port, timeout=2.0)
            return True
        except (OSError, ValueError):
            return False

    def log_tail(self, lines: int = 60) -> str:
        return tail(self.log_path, lines)

    def __repr__(self) -> str:
        return f"PulsarLite(url={self.service_url!r}, pid={self.pid}, workdir='{self.workdir}')"
