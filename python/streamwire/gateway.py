"""The PIP-64 REST gateway: produce and read Pulsar over HTTP, served by the streamwire engine.

Three ways to run it, with the same flags and ``STREAMWIRE_GATEWAY_*`` environment variables:

- ``streamwire gateway --service-url pulsar://host:6650 --listen 127.0.0.1:8080`` (console
  script);
- :func:`serve` from Python (the interpreter is released while it serves; Ctrl-C stops it
  cleanly: no new connections, requests in flight finish, producers flush and close);
- the ``streamwire-gateway`` binary (``cargo build --release -p streamwire-gateway``), for
  deployments without Python.

Endpoints, bodies and status codes: see the README ("PIP-64 REST gateway").
"""

from __future__ import annotations

from typing import Optional

from streamwire._native import _gateway_run

__all__ = ["serve"]


def serve(
    service_url: str,
    listen: str = "127.0.0.1:8080",
    *,
    max_body_bytes: Optional[int] = None,
    max_messages: Optional[int] = None,
    request_timeout: Optional[float] = None,
    producer_idle: Optional[float] = None,
) -> None:
    """Serve the gateway in front of ``service_url`` on ``listen`` until interrupted.

    Unset options come from the ``STREAMWIRE_GATEWAY_*`` environment, else the defaults.

    Args:
        service_url: the Pulsar cluster to serve (``pulsar://host:6650``).
        listen: the ``host:port`` to listen on. Default ``"127.0.0.1:8080"``.
        max_body_bytes: the largest request body in bytes (larger ones answer 413).
            Default None: 5 MiB.
        max_messages: the most messages in one request (more answer 413). Default None:
            10,000.
        request_timeout: seconds every request ends by (a read's own timeout is capped by
            it). Default None: 30.
        producer_idle: seconds after which an unused producer is closed. Default None: 300.

    Raises:
        ConfigError: a bad option, or the port is in use.
    """
    args = ["--service-url", service_url, "--listen", listen]
    for flag, value in (
        ("--max-body-bytes", max_body_bytes),
        ("--max-messages", max_messages),
        ("--request-timeout", request_timeout),
        ("--producer-idle", producer_idle),
    ):
        if value is not None:
            args += [flag, str(value)]
    _gateway_run(args)
