"""Chunking together with end-to-end encryption, on Apache Pulsar.

As the Java client does it: the producer compresses a message once, cuts the compressed bytes
into chunks that fit the broker's maximum (5 MiB here), and seals every chunk on its own (its
own IV; the wrapped data keys in every chunk's metadata). The consumer opens each chunk,
reassembles, then decompresses. A chunk that cannot be decrypted takes the failure action, as
in the Java consumer: FAIL holds it unacknowledged and the next receive raises
``CryptoError``; DISCARD acknowledges it with ``DecryptionError``; CONSUME delivers the whole
message still sealed (the chunks' sealed bytes one after the other) with its encryption
context. The interop with the Java client is in ``test_e2e_java.py``; the official Python
client reads what we write here.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any, Optional

import pytest
import streamwire

from tests.security._e2e import (
    crypto_errors,
    decrypting,
    official_drain,
    produce_encrypted,
    receive_n,
)
from tests.security.conftest import KeyPair

MIB = 1024 * 1024
TAG = 16  # the AES-GCM tag each sealed chunk carries


def _big() -> bytes:
    # Random (incompressible): 11 MiB in 5 MiB chunks is 3 chunks, with or without a codec.
    return os.urandom(11 * MIB)


def _produce(url: str, topic: str, key: KeyPair, data: list[bytes], compression: Any) -> list[Any]:
    return produce_encrypted(
        url, topic, key, data, one_by_one=True, chunking=True, compression=compression
    )


@pytest.mark.parametrize("compression", [None, "lz4", "zstd"], ids=str)
def test_chunked_and_encrypted_round_trip(
    apache_broker: Any,
    rsa_keys: dict[str, KeyPair],
    ec_keys: dict[str, KeyPair],
    unique_topic: str,
    compression: Optional[str],
) -> None:
    key = ec_keys["p384"] if compression == "zstd" else rsa_keys["a"]
    data = [b"before", _big(), b"after"]
    ids = _produce(apache_broker.service_url, unique_topic, key, data, compression)
    assert ids[2].entry_id - ids[0].entry_id == 4  # before, 3 chunks, after
    with streamwire.Client(apache_broker.service_url) as client:
        with decrypting(client, unique_topic, key.private, "s") as c:
            got = receive_n(c, 3, 30)
            assert [m.data() for m in got] == data
            assert [m.message_id for m in got] == ids
            assert all(m.encryption_context() is None for m in got)
            assert c.stats()["invalid"] == 0
            for m in got:
                c.acknowledge(m)


def test_official_client_reassembles_what_we_chunk_and_encrypt(
    apache_broker: Any, official_pulsar: ModuleType, rsa_keys: dict[str, KeyPair], unique_topic: str
) -> None:
    a = rsa_keys["a"]
    data = [_big(), b"tail"]
    _produce(apache_broker.service_url, unique_topic, a, data, "lz4")
    theirs = official_drain(
        official_pulsar, apache_broker.service_url, unique_topic, "official", a, 2
    )
    assert [g.data for g in theirs] == data


def test_fail_holds_every_chunk_and_the_right_key_reads_it_later(
    apache_broker: Any, rsa_keys: dict[str, KeyPair], unique_topic: str
) -> None:
    a, b = rsa_keys["a"], rsa_keys["b"]
    big = _big()
    _produce(apache_broker.service_url, unique_topic, a, [big], None)
    with streamwire.Client(apache_broker.service_url) as client:
        with decrypting(client, unique_topic, b.private, "sub") as c:
            errors = crypto_errors(c, 3, "chunked message")
            assert len(errors) == 3, errors  # one per chunk
            assert all("could not be decrypted" in e and "chunk" in e for e in errors), errors
            assert c.stats()["invalid"] == 3
        # Nothing was acknowledged: the right key reads the whole message on the same
        # subscription.
        with decrypting(client, unique_topic, a.private, "sub", earliest=False) as c:
            assert [m.data() for m in receive_n(c, 1, 30)] == [big]


def test_discard_acknowledges_every_chunk(
    apache_broker: Any, rsa_keys: dict[str, KeyPair], unique_topic: str
) -> None:
    a, b = rsa_keys["a"], rsa_keys["b"]
    _produce(apache_broker.service_url, unique_topic, a, [_big(), b"last"], "lz4")
    with streamwire.Client(apache_broker.service_url) as client:
        with decrypting(
            client, unique_topic, b.private, "sub", crypto_failure_action="discard"
        ) as c:
            assert c.receive_many(10, timeout=3.0) == []
            assert c.stats()["invalid"] == 4  # 3 chunks + the small message
        with decrypting(client, unique_topic, a.private, "sub", earliest=False) as c:
            assert c.receive_many(10, timeout=2.0) == []


def test_consume_delivers_the_sealed_chunks_whole_with_the_context(
    apache_broker: Any, rsa_keys: dict[str, KeyPair], unique_topic: str
) -> None:
    a = rsa_keys["a"]
    big = _big()
    _produce(apache_broker.service_url, unique_topic, a, [big], None)
    with streamwire.Client(apache_broker.service_url) as client:
        with client.subscribe(
            unique_topic, "raw", initial_position="earliest", crypto_failure_action="consume"
        ) as c:
            got = receive_n(c, 1, 30)
            assert c.receive_many(10, timeout=0.5) == []
    assert len(got) == 1
    m = got[0]
    # Three chunks, each sealed on its own: the payload is their sealed bytes in order.
    assert len(m.data()) == len(big) + 3 * TAG
    assert big[:4096] not in m.data()
    ctx = m.encryption_context()
    assert ctx is not None
    assert list(ctx.keys) == ["k"]
    assert len(ctx.param) == 12
    assert ctx.uncompressed_size == len(big)
