"""``streamwire gateway``: the PIP-64 REST gateway in this process (the engine's own flag
parser reads the arguments, so the console script and the plain binary take the same ones).

Its log goes through ``logging``: the ``streamwire`` logger gets a stderr handler at
``--log-level`` (or ``STREAMWIRE_GATEWAY_LOG_LEVEL``; ``info`` by default), so the access
records (``streamwire.gateway.access``) show as the plain binary's lines do.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from types import FrameType
from typing import Optional

from streamwire.exceptions import StreamwireError

USAGE = "usage: streamwire gateway [--service-url URL] [--listen ADDR:PORT] [options]"


def _stop_on_sigterm(signum: int, frame: Optional[FrameType]) -> None:
    raise KeyboardInterrupt


_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}


def _log_level(rest: list[str]) -> Optional[int]:
    """The ``--log-level`` asked for (the engine's parser rejects a bad one); ``None``: off."""
    value = os.environ.get("STREAMWIRE_GATEWAY_LOG_LEVEL", "info")
    for i, a in enumerate(rest):
        if a == "--log-level" and i + 1 < len(rest):
            value = rest[i + 1]
        elif a.startswith("--log-level="):
            value = a.split("=", 1)[1]
    return _LEVELS.get(value.lower())


def _log_to_stderr(level: Optional[int]) -> None:
    if level is None:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("ts=%(asctime)s level=%(levelname)s target=%(name)s %(message)s")
    )
    logger = logging.getLogger("streamwire")
    logger.addHandler(handler)
    logger.setLevel(level)


def run(rest: list[str]) -> int:
    from streamwire._native import _gateway_run, _gateway_usage

    if any(a in ("-h", "--help") for a in rest):
        print(USAGE)
        print(_gateway_usage())
        print("(every flag also as STREAMWIRE_GATEWAY_<FLAG> in the environment)")
        return 0
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    _log_to_stderr(_log_level(rest))
    try:
        print("streamwire gateway: serving (Ctrl-C stops it)", file=sys.stderr, flush=True)
        _gateway_run(rest)
    except StreamwireError as e:
        print(f"streamwire gateway: {e}", file=sys.stderr)
        return 2 if type(e).__name__ == "ConfigError" else 1
    return 0
