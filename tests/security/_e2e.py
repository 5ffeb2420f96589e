"""What the end-to-end encryption tests share: an encrypting producer run, a decrypting
subscription, reading a known number of messages, and counting the ``CryptoError`` each
undecryptable message raises.

The tests (``test_e2e_*.py``) differ in keys, codecs, chunking and the other client they
check against; the set-up and the waiting loops are the same and live here once.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import streamwire
from streamwire.exceptions import CryptoError, OperationTimeoutError

from tests.gather import gather
from tests.interop._official_read import Got, drain, official_client
from tests.security.conftest import KeyPair

__all__ = ["crypto_errors", "decrypting", "official_drain", "produce_encrypted", "receive_n"]


def produce_encrypted(
    url: str,
    topic: str,
    key: KeyPair,
    data: list[bytes],
    *,
    name: str = "k",
    one_by_one: bool = False,
    **options: Any,
) -> list[Any]:
    """Send ``data`` encrypted for ``key``'s public key (named ``name``); the message ids.

    Args:
        url: the service URL.
        topic: the topic.
        key: the recipient's key pair.
        data: the payloads.
        name: the key's name in the messages. Default ``"k"``.
        one_by_one: ``send`` each payload (True) or ``send_many`` them all (False).
        options: more producer options (batching, compression, chunking...).
    """
    with streamwire.Client(url) as client:
        with client.create_producer(
            topic,
            encryption_keys=[name],
            crypto_key_reader=streamwire.CryptoKeyReader(public_key_path=key.public),
            **options,
        ) as p:
            return [p.send(d) for d in data] if one_by_one else p.send_many(data)


def decrypting(
    client: streamwire.Client,
    topic: str,
    private: Path,
    subscription: str,
    *,
    earliest: bool = True,
    **options: Any,
) -> streamwire.Consumer:
    """A subscription that decrypts with the ``private`` key, new ones from the earliest
    message (``earliest=False``: the subscription's own start, for one that exists)."""
    if earliest:
        options["initial_position"] = "earliest"
    return client.subscribe(
        topic,
        subscription,
        crypto_key_reader=streamwire.CryptoKeyReader(private_key_path=private),
        **options,
    )


def official_drain(
    official_pulsar: ModuleType, url: str, topic: str, subscription: str, key: KeyPair, n: int
) -> list[Got]:
    """The ``n`` messages the official client decrypts with ``key`` on a new subscription
    from the earliest message (and nothing more: :func:`drain`)."""
    oc = official_client(official_pulsar, url)
    try:
        consumer = oc.subscribe(
            topic,
            subscription,
            initial_position=official_pulsar.InitialPosition.Earliest,
            crypto_key_reader=official_pulsar.CryptoKeyReader(str(key.public), str(key.private)),
        )
        return drain(consumer, n)
    finally:
        oc.close()


def receive_n(c: Any, n: int, timeout: float = 20.0) -> list[Any]:
    """Up to ``n`` messages of a consumer (or a reader), waiting ``timeout`` seconds at most."""
    take = c.read_many if isinstance(c, streamwire.Reader) else c.receive_many
    return gather(lambda left: take(left, timeout=1.0), n, timeout)


def crypto_errors(c: Any, n: int, what: str = "message") -> list[str]:
    """The messages of the ``CryptoError`` the next ``n`` receives raise (20 s at most); a
    message delivered instead fails the test."""
    errors: list[str] = []
    deadline = time.monotonic() + 20
    while len(errors) < n and time.monotonic() < deadline:
        try:
            m = c.receive(timeout=1.0)
        except CryptoError as e:
            errors.append(str(e))
            continue
        except OperationTimeoutError:
            continue
        pytest.fail(f"an undecryptable {what} was delivered: {m!r}")
    return errors
