"""``streamwire gateway``: the PIP-64 REST gateway in this process (the engine's own flag
parser reads the arguments, so the console script and the plain binary take the same ones).
"""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import Optional

from streamwire.exceptions import StreamwireError

USAGE = "usage: streamwire gateway [--service-url URL] [--listen ADDR:PORT] [options]"


def _stop_on_sigterm(signum: int, frame: Optional[FrameType]) -> None:
    raise KeyboardInterrupt


def run(rest: list[str]) -> int:
    from streamwire._native import _gateway_run, _gateway_usage

    if any(a in ("-h", "--help") for a in rest):
        print(USAGE)
        print(_gateway_usage())
        print("(every flag also as STREAMWIRE_GATEWAY_<FLAG> in the environment)")
        return 0
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        print("streamwire gateway: serving (Ctrl-C stops it)", file=sys.stderr, flush=True)
        _gateway_run(rest)
    except StreamwireError as e:
        print(f"streamwire gateway: {e}", file=sys.stderr)
        return 2 if type(e).__name__ == "ConfigError" else 1
    return 0
