"""A process-local, fork-aware cache of clients and producers for executors.

Why: Spark reuses Python workers across tasks (``spark.python.worker.reuse``), so connecting once
per worker instead of once per task saves a TCP + handshake + lookup round trip per partition.
The cache is keyed by :class:`~streamwire.spark.config.ClientConfig` (and topic + producer options
for producers). It is emptied in a forked child -- the handles belong to the parent's runtime and
would raise ``ForkedProcessError`` -- and closed at interpreter exit. Spark workers usually leave
with ``os._exit``, so nothing here is relied on to flush: writers flush explicitly before a task
returns.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import streamwire
from streamwire.spark import _timing
from streamwire.spark.config import ClientConfig

__all__ = ["CacheStats", "clear", "get_client", "get_producer", "stats"]


@dataclass
class CacheStats:
    """Counters for this process (tests use them to prove reuse)."""

    pid: int
    clients_created: int = 0
    client_hits: int = 0
    producers_created: int = 0
    producer_hits: int = 0


_lock = threading.Lock()
_clients: dict[ClientConfig, Any] = {}
_producers: dict[tuple[ClientConfig, str, Hashable], Any] = {}
_stats = CacheStats(pid=os.getpid())
# Handles inherited from a parent process are kept referenced forever: dropping them in the child
# would run destructors against a runtime that does not exist here.
_orphans: list[Any] = []


def _after_fork() -> None:
    global _lock, _stats
    _lock = threading.Lock()  # the parent's lock may have been held by another thread at fork
    _orphans.extend(_clients.values())
    _orphans.extend(_producers.values())
    _clients.clear()
    _producers.clear()
    _stats = CacheStats(pid=os.getpid())


def _check_pid() -> None:
    # Belt and braces for fork paths that bypass os.register_at_fork hooks.
    if _stats.pid != os.getpid():
        _after_fork()


def get_client(config: ClientConfig) -> Any:
    """The cached client for ``config`` in this process, created on first use."""
    _check_pid()
    with _lock:
        client = _clients.get(config)
        if client is not None:
            _stats.client_hits += 1
            return client
        with _timing.phase("client start"):
            client = config.new_client()
        _clients[config] = client
        _stats.clients_created += 1
        return client


def get_producer(config: ClientConfig, topic: str, **options: Any) -> Any:
    """A cached producer for ``(config, topic, options)``.

    Producers with an explicit ``producer_name`` are not cached: a name can be connected only once
    per topic, and a retried task elsewhere must be able to take it over.
    """
    if options.get("producer_name"):
        client = get_client(config)
        with _timing.phase("producer create"):
            return client.create_producer(topic, **options)
    key = (config, topic, tuple(sorted((k, _hashable(v)) for k, v in options.items())))
    _check_pid()
    with _lock:
        producer = _producers.get(key)
        if producer is not None:
            _stats.producer_hits += 1
            return producer
    client = get_client(config)
    with _timing.phase("producer create"):
        producer = client.create_producer(topic, **options)
    with _lock:
        existing = _producers.get(key)
        if existing is not None:  # another thread won the race
            _orphans.append(producer)
            _stats.producer_hits += 1
            return existing
        _producers[key] = producer
        _stats.producers_created += 1
    return producer


def discard_producer(config: ClientConfig, topic: str, producer: Any) -> None:
    """Forget (and close) a producer that failed, so the next task gets a fresh one."""
    with _lock:
        for key, value in list(_producers.items()):
            if value is producer and key[0] == config and key[1] == topic:
                del _producers[key]
    try:
        producer.close()
    except Exception:
        pass


def stats() -> CacheStats:
    """A copy of this process's cache counters."""
    _check_pid()
    with _lock:
        return CacheStats(**vars(_stats))


def clear() -> None:
    """Flush and close every cached producer, then close every cached client."""
    _check_pid()
    with _lock:
        producers = list(_producers.values())
        clients = list(_clients.values())
        _producers.clear()
        _clients.clear()
    for producer in producers:
        try:
            producer.flush()
            producer.close()
        except Exception:
            pass
    for client in clients:
        try:
            client.close()
        except Exception:
            pass


def _hashable(value: Any) -> Hashable:
    if isinstance(value, dict):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value  # type: ignore[no-any-return]


streamwire._after_fork_hooks.append(_after_fork)
atexit.register(clear)
