"""Workload registry for the side-by-side benchmarks.

A workload is one module in ``benches/sidebyside/workloads/`` that calls :func:`register` with two
functions of the same signature, ``ours(ctx)`` and ``theirs(ctx)``. Each call runs ONE round of
the workload and returns its measurement in ``unit`` (for example the median latency in ms of a
few iterations, or messages per second). An optional ``setup(ctx)`` runs once per broker before
the rounds (create topics, pre-fill data).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class Unavailable(Exception):
    """Raised by an implementation that cannot run here (e.g. ``streamwire`` not importable)."""


@dataclass
class Context:
    """What every implementation gets: the broker URL, the credentials and CA it needs (a
    secured cluster), and per-workload scratch state."""

    service_url: str
    iterations: int
    state: dict[str, Any] = field(default_factory=dict)
    #: A JWT both clients send (token authentication), and the CA bundle both trust.
    auth_token: str | None = None
    tls_ca: str | None = None


RoundFn = Callable[[Context], float]


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    unit: str
    higher_is_better: bool
    ours: RoundFn
    theirs: RoundFn
    setup: Callable[[Context], None] | None = None
    default_iterations: int = 10


WORKLOADS: dict[str, Workload] = {}


def register(workload: Workload) -> Workload:
    if workload.name in WORKLOADS:
        raise ValueError(f"workload {workload.name!r} registered twice")
    WORKLOADS[workload.name] = workload
    return workload


def import_streamwire() -> Any:
    """Import ``streamwire`` lazily; raise :class:`Unavailable` when it is not built/installed."""
    try:
        import streamwire
    except ImportError as exc:
        raise Unavailable(f"streamwire not importable ({exc})") from None
    return streamwire


def import_official() -> Any:
    import pulsar

    return pulsar


def quiet_logger(pulsar: Any) -> Any:
    """A logger for the official client that prints errors only (its INFO lines are noise)."""
    return pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


def ours_client(ctx: Context) -> Any:
    """Our client on ``ctx``'s broker, with its token and CA when it has them."""
    streamwire = import_streamwire()
    kwargs: dict[str, Any] = {}
    if ctx.auth_token:
        kwargs["auth_token"] = ctx.auth_token
    if ctx.tls_ca:
        kwargs["tls_trust_certs_file"] = ctx.tls_ca
    return streamwire.Client(ctx.service_url, **kwargs)


def theirs_client(ctx: Context) -> Any:
    """The official client on ``ctx``'s broker (errors-only logger), token and CA likewise."""
    pulsar = import_official()
    kwargs: dict[str, Any] = {"logger": quiet_logger(pulsar)}
    if ctx.auth_token:
        kwargs["authentication"] = pulsar.AuthenticationToken(ctx.auth_token)
    if ctx.tls_ca:
        kwargs["tls_trust_certs_file_path"] = ctx.tls_ca
    return pulsar.Client(ctx.service_url, **kwargs)
