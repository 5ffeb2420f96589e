"""The PIP-64 REST gateway: produce and read Pulsar over HTTP, served by the streamwire engine.

Three ways to run it, with the same flags and ``STREAMWIRE_GATEWAY_*`` environment variables:

- ``streamwire gateway --service-url pulsar://host:6650 --listen 127.0.0.1:8080`` (console
  script);
- :func:`serve` from Python (the interpreter is released while it serves; Ctrl-C stops it
  cleanly: no new connections, requests in flight finish, producers flush and close);
- the ``streamwire-gateway`` binary (``cargo build --release -p streamwire-gateway``), for
  deployments without Python.

Endpoints, bodies and status codes: docs/gateway.md and its OpenAPI page (docs/gateway-api.md,
generated from the document the gateway serves at ``GET /openapi.json``).

One access record per request goes to the ``streamwire.gateway.access`` logger (its message
is logfmt: ``peer=… method=… path=… route=… status=… ms=…``, the same fields as ``extra``);
configure ``logging`` to see it (``logging.basicConfig(level=logging.INFO)``).
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
    consumer_idle: Optional[float] = None,
    max_pending_messages: Optional[int] = None,
    node_id: Optional[str] = None,
    advertised_url: Optional[str] = None,
    tls_cert: Optional[str] = None,
    tls_key: Optional[str] = None,
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
        consumer_idle: seconds after which an unused consumer instance is closed. Default
            None: 300.
        max_pending_messages: the most messages one producer holds unacknowledged; past it
            messages are answered ``error_code`` 2 with ``Retry-After`` (a request none of
            whose messages could be queued answers 429). Default None: 200,000.
        node_id: this node's name inside consumer instance ids (1 to 64 of ``A-Z a-z 0-9 -
            _``). Default None: derived from the advertised URL.
        advertised_url: the URL clients reach this node at (``base_uri`` and redirects start
            with it). Default None: ``http(s)://<listen>``.
        tls_cert: a PEM certificate chain: serve HTTPS (with ``tls_key``). Default None.
        tls_key: the PEM private key of ``tls_cert``. Default None.

    Raises:
        ConfigError: a bad option, or the port is in use.
        TypeError: an option of the wrong type.
    """
    args = ["--service-url", service_url, "--listen", listen]
    numbers = (
        ("--max-body-bytes", max_body_bytes),
        ("--max-messages", max_messages),
        ("--request-timeout", request_timeout),
        ("--producer-idle", producer_idle),
        ("--consumer-idle", consumer_idle),
        ("--max-pending-messages", max_pending_messages),
    )
    for flag, number in numbers:
        if number is None:
            continue
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise TypeError(f"{flag[2:].replace('-', '_')} must be a number, not {number!r}")
        args += [flag, str(number)]
    texts = (
        ("--node-id", node_id),
        ("--advertised-url", advertised_url),
        ("--tls-cert", tls_cert),
        ("--tls-key", tls_key),
    )
    for flag, text in texts:
        if text is None:
            continue
        if not isinstance(text, str):
            raise TypeError(f"{flag[2:].replace('-', '_')} must be a string, not {text!r}")
        args += [flag, text]
    _gateway_run(args)
