"""The official client's option objects: dead-letter, Key_Shared and batch-receive policies,
loggers, cluster failover (``AutoClusterFailover``, ``ServiceInfo``), and the classes
streamwire has no equivalent for (``ServiceInfoProvider``), which say so."""

from __future__ import annotations

import logging
import sys
from typing import Any, Optional, Union

import streamwire
from streamwire.compat._auth import Authentication
from streamwire.compat._common import _check_type, _check_type_or_none, _missing, _raise
from streamwire.compat._enums import KeySharedMode, LoggerLevel
from streamwire.exceptions import StreamwireError

__all__ = [
    "AutoClusterFailover",
    "ConsoleLogger",
    "ConsumerBatchReceivePolicy",
    "ConsumerDeadLetterPolicy",
    "ConsumerKeySharedPolicy",
    "CryptoKeyReader",
    "FileLogger",
    "ServiceInfo",
    "ServiceInfoProvider",
]


class ServiceInfo:
    """One cluster for :class:`AutoClusterFailover`: its service URL, and optionally its own
    authentication and CA bundle -> :class:`streamwire.ServiceInfo`.

    Args:
        service_url: the cluster's service URL.
        authentication: how to authenticate to this cluster (token, basic, OAuth2, or
            ``AuthenticationTLS``: the client certificate presented to this cluster). None:
            the client's ``authentication``.
        tls_trust_certs_file_path: the CA bundle for this cluster. None: the client's.
    """

    def __init__(
        self,
        service_url: str,
        authentication: Optional[Authentication] = None,
        tls_trust_certs_file_path: Optional[str] = None,
    ) -> None:
        _check_type(str, service_url, "service_url")
        _check_type_or_none(Authentication, authentication, "authentication")
        _check_type_or_none(str, tls_trust_certs_file_path, "tls_trust_certs_file_path")
        options = authentication.client_options() if authentication is not None else {}
        self._authentication = authentication
        self._native = streamwire.ServiceInfo(
            service_url, tls_trust_certs_file=tls_trust_certs_file_path, **options
        )

    @property
    def service_url(self) -> str:
        """The cluster's service URL."""
        return self._native.service_url

    @property
    def use_tls(self) -> bool:
        """Whether the URL's scheme is a TLS one (``pulsar+ssl://``, ``https://``)."""
        return self.service_url.startswith(("pulsar+ssl://", "https://"))

    @property
    def tls_trust_certs_file_path(self) -> Optional[str]:
        """This cluster's CA bundle, or None (the client's)."""
        return self._native.tls_trust_certs_file

    def __repr__(self) -> str:
        return (
            f"ServiceInfo(service_url={self.service_url!r}, use_tls={self.use_tls!r}, "
            f"tls_trust_certs_file_path={self.tls_trust_certs_file_path!r})"
        )


class AutoClusterFailover:
    """Automatic failover between clusters, given to :class:`Client` as its
    ``service_url`` -> :class:`streamwire.AutoClusterFailover` (same rules).

    Args:
        primary: the preferred cluster.
        secondary: the fallback clusters, in order.
        check_interval_ms: milliseconds between probes.
        failover_threshold: failed probes in a row before moving away.
        switch_back_threshold: good probes of the primary in a row before moving back.
    """

    def __init__(
        self,
        primary: ServiceInfo,
        secondary: list[ServiceInfo],
        check_interval_ms: int = 5000,
        failover_threshold: int = 1,
        switch_back_threshold: int = 1,
    ) -> None:
        _check_type(ServiceInfo, primary, "primary")
        _check_type(list, secondary, "secondary")
        for s in secondary:
            _check_type(ServiceInfo, s, "secondary")
        _check_type(int, check_interval_ms, "check_interval_ms")
        _check_type(int, failover_threshold, "failover_threshold")
        _check_type(int, switch_back_threshold, "switch_back_threshold")
        self.primary = primary
        self.secondary = list(secondary)
        try:
            self._native = streamwire.AutoClusterFailover(
                primary._native,
                [s._native for s in secondary],
                check_interval=check_interval_ms / 1000.0,
                failover_threshold=failover_threshold,
                switch_back_threshold=switch_back_threshold,
            )
        except StreamwireError as e:
            _raise(e)


class ServiceInfoProvider:
    """The official service discovery hook: not supported here (any ``args`` and ``kwargs``
    raise ``NotImplementedError``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _missing("pulsar.ServiceInfoProvider")


class CryptoKeyReader:
    """The official key reader for end-to-end encryption: an RSA key pair as PEM files, used
    for every key name. A producer reads the public key file when it is created, a consumer or
    reader the private one (each needs only its own file).

    Args:
        public_key_path: the public key file.
        private_key_path: the private key file.
    """

    def __init__(self, public_key_path: str, private_key_path: str) -> None:
        _check_type(str, public_key_path, "public_key_path")
        _check_type(str, private_key_path, "private_key_path")
        self.public_key_path = public_key_path
        self.private_key_path = private_key_path

    def _for_producer(self) -> streamwire.CryptoKeyReader:
        return streamwire.CryptoKeyReader(public_key_path=self.public_key_path)

    def _for_consumer(self) -> streamwire.CryptoKeyReader:
        return streamwire.CryptoKeyReader(private_key_path=self.private_key_path)


class ConsumerDeadLetterPolicy:
    """The dead-letter policy of a consumer (``dead_letter_policy=``).

    Args:
        max_redeliver_count: deliveries of a message before it goes to the dead-letter topic.
        dead_letter_topic: the dead-letter topic (default: ``<topic>-<subscription>-DLQ``).
        initial_subscription_name: a subscription to create on the dead-letter topic.
    """

    def __init__(
        self,
        max_redeliver_count: int,
        dead_letter_topic: Optional[str] = None,
        initial_subscription_name: Optional[str] = None,
    ) -> None:
        if max_redeliver_count is None or max_redeliver_count < 1:
            raise ValueError("max_redeliver_count must be greater than 0")
        self._max = max_redeliver_count
        self._topic = dead_letter_topic
        self._initial = initial_subscription_name

    @property
    def dead_letter_topic(self) -> Optional[str]:
        """The dead-letter topic, if given."""
        return self._topic

    @property
    def max_redeliver_count(self) -> int:
        """Deliveries before the dead-letter topic."""
        return self._max

    @property
    def initial_subscription_name(self) -> Optional[str]:
        """The subscription created on the dead-letter topic, if given."""
        return self._initial

    def policy(self) -> dict[str, Union[int, str, None]]:
        """streamwire's ``dead_letter_policy`` mapping."""
        out: dict[str, Union[int, str, None]] = {"max_redeliver_count": self._max}
        if self._topic is not None:
            out["dead_letter_topic"] = self._topic
        if self._initial is not None:
            out["initial_subscription_name"] = self._initial
        return out


class ConsumerKeySharedPolicy:
    """The Key_Shared options of a consumer (``key_shared_policy=``).

    Args:
        key_shared_mode: ``KeySharedMode.AutoSplit`` or ``KeySharedMode.Sticky``.
        allow_out_of_order_delivery: give a moved key's messages to its new consumer at once.
        sticky_ranges: the hash ranges ``[(start, end), ...]`` of a sticky consumer.
    """

    def __init__(
        self,
        key_shared_mode: KeySharedMode = KeySharedMode.AutoSplit,
        allow_out_of_order_delivery: bool = False,
        sticky_ranges: Optional[list[tuple[int, int]]] = None,
    ) -> None:
        if key_shared_mode == KeySharedMode.Sticky and sticky_ranges is None:
            raise ValueError(
                "When using key_shared_mode = KeySharedMode.Sticky you must also provide "
                "sticky_ranges"
            )
        self._mode = key_shared_mode
        self._ooo = allow_out_of_order_delivery
        self._ranges = list(sticky_ranges or [])

    @property
    def key_shared_mode(self) -> KeySharedMode:
        """The Key_Shared mode."""
        return self._mode

    @property
    def allow_out_of_order_delivery(self) -> bool:
        """Whether out-of-order delivery is allowed."""
        return self._ooo

    @property
    def sticky_ranges(self) -> list[tuple[int, int]]:
        """The sticky hash ranges."""
        return list(self._ranges)

    def policy(self) -> dict[str, Any]:
        """streamwire's ``key_shared_policy`` mapping."""
        out: dict[str, Any] = {"allow_out_of_order_delivery": self._ooo}
        if self._mode == KeySharedMode.Sticky:
            out["sticky"] = list(self._ranges)
        return out


class ConsumerBatchReceivePolicy:
    """What one ``batch_receive()`` returns: at most ``max_num_message`` messages and
    ``max_num_bytes`` bytes, waiting at most ``timeout_ms`` (a negative number: no limit)."""

    def __init__(self, max_num_message: int, max_num_bytes: int, timeout_ms: int) -> None:
        self.max_num_message = max_num_message
        self.max_num_bytes = max_num_bytes
        self.timeout_ms = timeout_ms

    def policy(self) -> ConsumerBatchReceivePolicy:
        """The policy itself (the official method returns the C++ object)."""
        return self


_DEFAULT_BATCH = ConsumerBatchReceivePolicy(-1, 10 * 1024 * 1024, 100)


class ConsoleLogger:
    """Send the client's log to standard output at ``log_level``."""

    def __init__(self, log_level: LoggerLevel = LoggerLevel.Info) -> None:
        _check_type(LoggerLevel, log_level, "log_level")
        self.log_level = log_level


class FileLogger:
    """Send the client's log to ``log_file`` at ``log_level``."""

    def __init__(self, log_level: LoggerLevel, log_file: str) -> None:
        _check_type(LoggerLevel, log_level, "log_level")
        _check_type(str, log_file, "log_file")
        self.log_level = log_level
        self.log_file = log_file


_LEVELS = {
    LoggerLevel.Debug: logging.DEBUG,
    LoggerLevel.Info: logging.INFO,
    LoggerLevel.Warn: logging.WARNING,
    LoggerLevel.Error: logging.ERROR,
}


class _Forward(logging.Handler):
    # streamwire logs on the "streamwire" logger; a Client(logger=...) gets those records.
    def __init__(self, target: logging.Logger) -> None:
        super().__init__()
        self.target = target

    def emit(self, record: logging.LogRecord) -> None:
        if self.target.isEnabledFor(record.levelno):
            self.target.handle(record)


# One handler per destination, however many clients name it.
_HANDLERS: dict[tuple[object, ...], logging.Handler] = {}


def _install_logger(logger: Any) -> None:
    handler: logging.Handler
    if isinstance(logger, logging.Logger):
        key: tuple[object, ...] = ("logger", logger.name)
        level = logger.getEffectiveLevel()
        handler = _HANDLERS.get(key) or _Forward(logger)
    elif isinstance(logger, ConsoleLogger):
        key, level = ("console",), _LEVELS[logger.log_level]
        handler = _HANDLERS.get(key) or logging.StreamHandler(sys.stdout)
    elif isinstance(logger, FileLogger):
        key, level = ("file", logger.log_file), _LEVELS[logger.log_level]
        handler = _HANDLERS.get(key) or logging.FileHandler(logger.log_file)
    else:
        raise ValueError(
            "Logger is expected to be either None, logger.Logger, pulsar.ConsoleLogger or "
            "pulsar.FileLogger"
        )
    target = logging.getLogger("streamwire")
    handler.setLevel(level)
    if key not in _HANDLERS:
        _HANDLERS[key] = handler
        target.addHandler(handler)
    # Each destination filters by its own handler's level; the logger's level is only ever
    # lowered (so that the engine emits what a destination asks for), never raised: an
    # Error-level logger must not silence the warnings other listeners of the process get.
    if level < target.getEffectiveLevel():
        target.setLevel(level)
