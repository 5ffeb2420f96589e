"""Client metrics: every client, producer, consumer, reader and writer of this process.

The engine keeps the counters (relaxed atomics, one add per batch on the hot path); this
module reads them:

* :func:`snapshot` — a list of dicts, one per live entity (the same dicts ``metrics()``
  returns on a producer, consumer, reader, writer or client);
* :func:`prometheus_text` — Prometheus text exposition format 0.0.4;
* :func:`serve` — a small HTTP endpoint serving ``/metrics`` (a Python thread; scraping is not
  a hot path), stopped by closing the returned handle;
* :func:`enable_opentelemetry` — observable instruments on an OpenTelemetry meter, when the
  ``opentelemetry`` package is installed.

A closed producer's (consumer's, ...) own series disappear; its totals stay in its client's
``messages_sent`` / ``bytes_sent`` / ``messages_received`` / ``bytes_received`` and
``reconnects``, so the per-client counters never go backwards.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Callable, Optional

from streamwire import _native
from streamwire.exceptions import ConfigError, InvalidArgumentError, NotSupportedError

if TYPE_CHECKING:
    from http.server import ThreadingHTTPServer

__all__ = [
    "CONTENT_TYPE",
    "COUNTERS",
    "GAUGES",
    "MetricsServer",
    "enable_opentelemetry",
    "prometheus_text",
    "serve",
    "snapshot",
]

#: The Content-Type of :func:`prometheus_text` (exposition format 0.0.4).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: Counter keys per kind (dict keys; Prometheus names are ``streamwire_<kind>_<key>_total``).
COUNTERS: dict[str, tuple[str, ...]] = {
    "client": (
        "connections",
        "lookups",
        "reconnects",
        "messages_sent",
        "bytes_sent",
        "messages_received",
        "bytes_received",
    ),
    "producer": ("messages", "bytes", "batches", "errors", "reconnects"),
    "writer": ("messages", "bytes", "batches", "errors", "reconnects"),
    "consumer": (
        "messages",
        "bytes",
        "batches",
        "acks",
        "nacks",
        "redeliveries",
        "dead_lettered",
        "reconnects",
    ),
    "reader": ("messages", "bytes", "batches", "reconnects"),
}

#: Gauge keys per kind (Prometheus names are ``streamwire_<kind>_<key>``).
GAUGES: dict[str, tuple[str, ...]] = {
    "client": ("pending_bytes",),
    "producer": ("pending_messages",),
    "writer": ("pending_messages",),
    "consumer": ("receive_queue",),
    "reader": ("receive_queue",),
}

_LABELS = ("protocol", "client_id", "topic", "name")


def snapshot() -> list[dict[str, Any]]:
    """One dict per live client, producer, consumer, reader and writer of this process."""
    return _native._metrics_snapshot()


def prometheus_text() -> str:
    """Every live entity's series in Prometheus text exposition format 0.0.4."""
    return _native._metrics_prometheus_text()


def _handler_class() -> type[Any]:
    """The request handler, built on first use: importing ``http.server`` costs ~35 ms, which
    every ``import streamwire`` would otherwise pay for an endpoint few processes start."""
    from http.server import BaseHTTPRequestHandler

    class _Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != "/metrics":
                self.send_error(404, "only /metrics is served")
                return
            body = prometheus_text().encode()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # scrapes are not worth a line on stderr each

    return _Handler


class MetricsServer:
    """A running ``/metrics`` endpoint; :meth:`close` (or leaving a ``with`` block) stops it.

    Made by :func:`serve`, not directly.

    Args:
        server: the bound HTTP server; it is served from a daemon thread from now on.
    """

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="streamwire-metrics", daemon=True
        )
        self._thread.start()
        self._closed = False

    @property
    def host(self) -> str:
        """The address the endpoint listens on."""
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        """The port the endpoint listens on (the one picked when ``serve`` was given 0)."""
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The endpoint's full URL, ``http://host:port/metrics``."""
        return f"http://{self.host}:{self.port}/metrics"

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has stopped the endpoint."""
        return self._closed

    def close(self) -> None:
        """Stop serving and free the port. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else self.url
        return f"<streamwire.metrics.MetricsServer {state}>"


def serve(port: int = 0, host: str = "127.0.0.1") -> MetricsServer:
    """Serve :func:`prometheus_text` at ``http://host:port/metrics`` from a daemon thread.

    ``port=0`` picks a free port (read it from the handle's ``port``). Close the handle to
    stop serving.
    """
    if isinstance(port, bool) or not isinstance(port, int):
        raise TypeError(f"port must be an int, got {type(port).__name__}")
    if not isinstance(host, str):
        raise TypeError(f"host must be a str, got {type(host).__name__}")
    if not 0 <= port <= 65535:
        raise InvalidArgumentError(f"port must be between 0 and 65535, got {port}")
    if not host:
        raise InvalidArgumentError("host must not be empty")
    from http.server import ThreadingHTTPServer

    try:
        server = ThreadingHTTPServer((host, port), _handler_class())
    except OSError as e:
        raise ConfigError(f"cannot serve metrics on {host}:{port}: {e}") from e
    server.daemon_threads = True
    return MetricsServer(server)


def _attributes(d: dict[str, Any]) -> dict[str, Any]:
    return {k: d[k] for k in _LABELS if k in d}


def _observer(kind: str, key: str) -> Callable[[Any], Iterable[Any]]:
    from opentelemetry.metrics import Observation

    def observe(_options: Any) -> Iterable[Any]:
        # Entities with the same attributes are summed (as in the Prometheus text).
        totals: dict[tuple[tuple[str, Any], ...], Any] = {}
        for d in snapshot():
            if d["kind"] == kind and key in d:
                attrs = tuple(_attributes(d).items())
                totals[attrs] = totals.get(attrs, 0) + d[key]
        return [Observation(v, dict(attrs)) for attrs, v in totals.items()]

    return observe


def enable_opentelemetry(meter_provider: Optional[Any] = None) -> Any:
    """Register observable instruments for every series on an OpenTelemetry meter.

    Counters become ``ObservableCounter`` s named ``streamwire.<kind>.<key>``, gauges
    ``ObservableGauge`` s, and the send-latency histogram two observable counters
    (``streamwire.<kind>.send_latency.count`` and ``.sum`` in seconds). Values are read when
    the meter provider collects. ``meter_provider`` defaults to the global one. Returns the
    meter. Raises :class:`~streamwire.exceptions.NotSupportedError` when the
    ``opentelemetry`` package is not installed.
    """
    try:
        from opentelemetry import metrics as otel
    except ImportError as e:
        raise NotSupportedError(
            "enable_opentelemetry needs the opentelemetry package "
            "(pip install opentelemetry-api, plus opentelemetry-sdk to export)"
        ) from e
    if meter_provider is None:
        meter = otel.get_meter("streamwire", _native.__version__)
    elif callable(getattr(meter_provider, "get_meter", None)):
        meter = meter_provider.get_meter("streamwire", _native.__version__)
    else:
        raise TypeError(
            f"meter_provider must be an OpenTelemetry MeterProvider, "
            f"got {type(meter_provider).__name__}"
        )
    for kind, keys in COUNTERS.items():
        for key in keys:
            unit = "By" if key.startswith("bytes") or key.endswith("bytes") else "1"
            meter.create_observable_counter(
                f"streamwire.{kind}.{key}", callbacks=[_observer(kind, key)], unit=unit
            )
    for kind, keys in GAUGES.items():
        for key in keys:
            unit = "By" if key.endswith("bytes") else "1"
            meter.create_observable_gauge(
                f"streamwire.{kind}.{key}", callbacks=[_observer(kind, key)], unit=unit
            )
    for kind in ("producer", "writer"):
        meter.create_observable_counter(
            f"streamwire.{kind}.send_latency.count",
            callbacks=[_observer(kind, "send_latency_count")],
            unit="1",
        )
        meter.create_observable_counter(
            f"streamwire.{kind}.send_latency.sum",
            callbacks=[_observer(kind, "send_latency_sum_seconds")],
            unit="s",
        )
    return meter
