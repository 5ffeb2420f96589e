"""The ``streamwire`` command.

    streamwire gateway [--service-url URL] [--listen ADDR:PORT] [...]   the PIP-64 REST gateway

``streamwire gateway --help`` lists the gateway's flags and environment variables.
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


def main(argv: Optional[list[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command != "gateway":
        print(f"streamwire: unknown command {command!r}\n{USAGE}", file=sys.stderr)
        return 2
    from streamwire._native import _gateway_run

    if any(a in ("-h", "--help") for a in rest):
        print(USAGE)
        print(
            "flags: --service-url --listen --max-body-bytes --max-messages --request-timeout "
            "--producer-idle (or STREAMWIRE_GATEWAY_<FLAG> in the environment)"
        )
        return 0
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        print("streamwire gateway: serving (Ctrl-C stops it)", file=sys.stderr, flush=True)
        _gateway_run(rest)
    except StreamwireError as e:
        print(f"streamwire gateway: {e}", file=sys.stderr)
        return 2 if type(e).__name__ == "ConfigError" else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
