"""Picklable connection settings and the parsing of Data Source options into them.

Live ``streamwire.Client`` objects cannot travel to executors (they hold sockets and a runtime that
does not survive ``fork()``), so everything that crosses a pickle boundary carries a
:class:`ClientConfig` instead and asks the process-local cache for a client on the executor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, cast

if TYPE_CHECKING:
    from streamwire.spark._types import ClientLike

__all__ = ["ClientConfig", "expand_passthrough", "get_option", "has_scheme", "parse_bool"]


def get_option(options: Mapping[str, str], *names: str, default: Optional[str] = None) -> Any:
    """First present option among ``names`` (case-insensitive: Spark lower-cases option keys)."""
    lowered = {str(k).lower(): v for k, v in options.items()}
    for name in names:
        value = lowered.get(name.lower())
        if value is not None and value != "":
            return value
    return default


def has_scheme(options: Mapping[str, str], prefix: str) -> bool:
    """Whether the service URL starts with ``prefix`` (its scheme picks the protocol)."""
    url = get_option(options, "service_url", "serviceUrl", "service.url")
    return bool(url) and str(url).startswith(prefix)


def parse_bool(value: Any, default: bool) -> bool:
    """Spark passes every option as a string; accept the usual spellings."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"not a boolean option value: {value!r}")


@dataclass(frozen=True)
class ClientConfig:
    """How to reach a cluster: picklable, hashable (it is the cache key), no live state.

    ``io_threads`` defaults to 1: Spark runs one Python worker per task slot, and Tokio's default of
    one thread per core *per process* would oversubscribe the executor.
    """

    service_url: str
    operation_timeout: float = 30.0
    connection_timeout: float = 10.0
    io_threads: Optional[int] = 1
    auth_token: Optional[str] = field(default=None, repr=False)
    auth_token_file: Optional[str] = None
    tls_trust_certs_file: Optional[str] = None
    tls_cert_file: Optional[str] = None
    tls_key_file: Optional[str] = None
    #: OAuth 2.0 client-credentials parameters (the official clients' JSON), see AuthOauth2.
    auth_oauth2: Optional[str] = field(default=None, repr=False)
    #: The brokers' advertised listener to be handed addresses of (multi-network clusters).
    listener_name: Optional[str] = None

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ClientConfig:
        """Build from Data Source options (Scala connector names accepted too)."""
        url = get_option(
            options, "service_url", "service.url", "serviceUrl", "pulsar.client.serviceUrl"
        )
        if not url:
            raise ValueError(
                "streamwire: option 'service_url' (or 'service.url') is required, "
                "e.g. .option('service_url', 'pulsar://127.0.0.1:6650')"
            )
        _check_client_passthrough(options)
        op_timeout = get_option(options, "operationTimeout", "operation_timeout")
        conn_timeout = get_option(options, "connectionTimeout", "connection_timeout")
        # The Scala connector's pass-through names are milliseconds, always.
        op_ms = get_option(options, "pulsar.client.operationTimeoutMs")
        conn_ms = get_option(options, "pulsar.client.connectionTimeoutMs")
        if op_timeout is None and op_ms is not None:
            op_timeout = float(op_ms) / 1000.0
        if conn_timeout is None and conn_ms is not None:
            conn_timeout = float(conn_ms) / 1000.0
        io_threads = get_option(options, "ioThreads", "io_threads", "pulsar.client.numIoThreads")
        token = get_option(options, "authToken", "auth_token")
        oauth2 = get_option(options, "authOauth2", "auth_oauth2")
        # The Scala connector names a plug-in class and its parameters: OAuth2's parameters are
        # its JSON, a token plug-in's are the token (optionally as "token:<jwt>").
        plugin = str(get_option(options, "pulsar.client.authPluginClassName", default=""))
        params = get_option(options, "pulsar.client.authParams")
        if params is not None and oauth2 is None and "oauth2" in plugin.lower():
            oauth2 = params
        elif params is not None and token is None:
            token = str(params).removeprefix("token:")

        def path(*names: str) -> Optional[str]:
            value = get_option(options, *names)
            return str(value) if value else None

        return cls(
            service_url=str(url),
            # The Scala connector's operationTimeout is in milliseconds; ours is seconds, so a
            # value above 1000 is taken as milliseconds.
            operation_timeout=_seconds(op_timeout, 30.0),
            connection_timeout=_seconds(conn_timeout, 10.0),
            io_threads=int(io_threads) if io_threads is not None else 1,
            auth_token=str(token) if token is not None else None,
            auth_token_file=path("authTokenFile", "auth_token_file"),
            tls_trust_certs_file=path(
                "tlsTrustCertsFilePath",
                "tls_trust_certs_file",
                "pulsar.client.tlsTrustCertsFilePath",
            ),
            tls_cert_file=path(
                "tlsCertFilePath", "tls_cert_file", "pulsar.client.tlsCertificateFilePath"
            ),
            tls_key_file=path("tlsKeyFilePath", "tls_key_file", "pulsar.client.tlsKeyFilePath"),
            auth_oauth2=str(oauth2) if oauth2 is not None else None,
            listener_name=path("listenerName", "listener_name", "pulsar.client.listenerName"),
        )

    def client(self) -> ClientLike:
        """The process-local cached client for this config (created on first use)."""
        from streamwire.spark.cache import get_client

        client: ClientLike = get_client(self)
        return client

    def new_client(self) -> ClientLike:
        """A fresh, uncached client; the caller owns and closes it."""
        import streamwire

        kwargs: dict[str, Any] = {
            "operation_timeout": self.operation_timeout,
            "connection_timeout": self.connection_timeout,
        }
        if self.io_threads is not None:
            kwargs["io_threads"] = self.io_threads
        if self.auth_token is not None:
            kwargs["auth_token"] = self.auth_token
        if self.auth_oauth2 is not None:
            kwargs["auth"] = streamwire.AuthOauth2.from_params(self.auth_oauth2)
        names = ("auth_token_file", "tls_trust_certs_file", "tls_cert_file", "tls_key_file")
        for name in (*names, "listener_name"):
            value = getattr(self, name)
            if value is not None:
                kwargs[name] = value
        return cast("ClientLike", streamwire.Client(self.service_url, **kwargs))


#: The Scala connector's ``pulsar.client.*`` pass-through options this source maps (to the
#: option named in the docs' connection table), by lower-cased name.
CLIENT_PASSTHROUGH = (
    "serviceUrl",
    "authPluginClassName",
    "authParams",
    "operationTimeoutMs",
    "connectionTimeoutMs",
    "numIoThreads",
    "tlsTrustCertsFilePath",
    "tlsCertificateFilePath",
    "tlsKeyFilePath",
    "listenerName",
)


def _check_client_passthrough(options: Mapping[str, str]) -> None:
    """A ``pulsar.client.*`` option this source does not map fails the query at once: the
    Scala connector hands them all to its client, and quietly ignoring one (a TLS or auth
    setting above all) would run the job with other settings than its author meant."""
    known = {f"pulsar.client.{n}".lower() for n in CLIENT_PASSTHROUGH}
    for key in options:
        k = str(key).lower()
        if k.startswith("pulsar.client.") and k not in known:
            from streamwire.exceptions import ConfigError

            raise ConfigError(
                f"streamwire: option {key!r} is not supported; the pulsar.client.* options "
                f"taken are {', '.join(CLIENT_PASSTHROUGH)} (see the options reference for "
                "their streamwire names)"
            )
    if get_option(options, "pulsar.client.serviceUrl") is not None:
        url = get_option(options, "service_url", "service.url", "serviceUrl")
        if url is not None and url != get_option(options, "pulsar.client.serviceUrl"):
            from streamwire.exceptions import ConfigError

            raise ConfigError("streamwire: service_url and pulsar.client.serviceUrl differ")


#: The Scala connector's ``pulsar.producer.*`` pass-through options this source maps: the
#: Java ``ProducerConfigurationData`` name -> (this source's option, factor to its unit).
PRODUCER_PASSTHROUGH: dict[str, tuple[str, float]] = {
    "producerName": ("producerName", 1.0),
    "sendTimeoutMs": ("sendTimeoutMs", 1.0),
    "batchingEnabled": ("batchingEnabled", 1.0),
    "batchingMaxMessages": ("batchingMaxMessages", 1.0),
    "batchingMaxBytes": ("batchingMaxBytes", 1.0),
    "batchingMaxPublishDelayMicros": ("batchingMaxPublishDelayMs", 0.001),
    "compressionType": ("compressionType", 1.0),
    "maxPendingMessages": ("maxPendingMessages", 1.0),
    "blockIfQueueFull": ("blockIfQueueFull", 1.0),
    "chunkingEnabled": ("chunkingEnabled", 1.0),
}

#: The same for ``pulsar.reader.*`` (Java ``ReaderConfigurationData``).
READER_PASSTHROUGH: dict[str, tuple[str, float]] = {
    "receiverQueueSize": ("receiverQueueSize", 1.0),
    "readerName": ("readerName", 1.0),
}


def expand_passthrough(options: Mapping[str, str], kind: str) -> dict[str, str]:
    """``options`` with the Scala connector's ``pulsar.<kind>.*`` names (``kind`` is
    ``producer`` or ``reader``) rewritten to this source's options, in their units.

    An unmapped name fails at once (the Scala connector hands every one to its Java builder, so
    ignoring one would run the job with other settings than its author meant), and so does a
    pass-through value that contradicts this source's own spelling of the same option."""
    from streamwire.exceptions import ConfigError

    table = PRODUCER_PASSTHROUGH if kind == "producer" else READER_PASSTHROUGH
    by_lower = {name.lower(): target for name, target in table.items()}
    prefix = f"pulsar.{kind}."
    out = {str(k): v for k, v in options.items()}
    for key, value in options.items():
        k = str(key).lower()
        if not k.startswith(prefix):
            continue
        target = by_lower.get(k[len(prefix) :])
        if target is None:
            raise ConfigError(
                f"streamwire: option {key!r} is not supported; the {prefix}* options taken "
                f"are {', '.join(table)} (see the options reference for their streamwire names)"
            )
        name, factor = target
        mapped = str(value) if factor == 1.0 else repr(float(value) * factor)
        own = get_option(options, name)
        if own is not None and str(own) != mapped:
            raise ConfigError(f"streamwire: {name}={own!r} and {key}={value!r} differ")
        out[name] = mapped
    return out


def _seconds(value: Any, default: float) -> float:
    if value is None:
        return default
    number = float(value)
    return number / 1000.0 if number > 1000 else number
