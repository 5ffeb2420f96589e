"""End-to-end encryption with a key reader object of the caller's (``get_public_key`` /
``get_private_key``, as the Java client's ``CryptoKeyReader`` interface) instead of a
``streamwire.CryptoKeyReader``, interoperable with the official client on Apache Pulsar both
ways; the metadata its public side returns reaches its private side; a reader that raises or
has no key gives a typed ``CryptoError``, or the chosen failure action on a consumer.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Optional, Union

import pytest
import streamwire
from streamwire.exceptions import CryptoError

from tests.interop._official_read import drain, official_client
from tests.security._e2e import receive_n
from tests.security.conftest import KeyPair


class FileKeys:
    """Keys by name from PEM files, recording every question it is asked."""

    def __init__(self, pairs: dict[str, KeyPair], *, tag: Optional[str] = None) -> None:
        self.pairs = pairs
        self.tag = tag
        self.asked: list[tuple[str, str, dict[str, str]]] = []

    def get_public_key(
        self, key_name: str, metadata: dict[str, str]
    ) -> Union[bytes, tuple[bytes, dict[str, str]], None]:
        self.asked.append(("public", key_name, dict(metadata)))
        pair = self.pairs.get(key_name)
        if pair is None:
            return None
        pem = pair.public.read_bytes()
        return (pem, {"tag": self.tag}) if self.tag else pem

    def get_private_key(self, key_name: str, metadata: dict[str, str]) -> Optional[str]:
        self.asked.append(("private", key_name, dict(metadata)))
        pair = self.pairs.get(key_name)
        return pair.private.read_text() if pair else None


def test_object_reader_interoperates_both_ways(
    apache_broker: Any,
    official_pulsar: ModuleType,
    rsa_keys: dict[str, KeyPair],
    unique_topic: str,
) -> None:
    url = apache_broker.service_url
    a = rsa_keys["a"]
    keys = FileKeys({"ka": a}, tag="v7")
    data = [b"secret-%d" % i for i in range(20)]
    with streamwire.Client(url) as client:
        with client.create_producer(
            unique_topic, encryption_keys=["ka"], crypto_key_reader=keys
        ) as p:
            for d in data:
                p.send_async(d)
    assert ("public", "ka", {}) in keys.asked
    # The official client decrypts what our object-keyed producer sealed.
    oc = official_client(official_pulsar, url)
    try:
        consumer = oc.subscribe(
            unique_topic,
            "official",
            initial_position=official_pulsar.InitialPosition.Earliest,
            crypto_key_reader=official_pulsar.CryptoKeyReader(str(a.public), str(a.private)),
        )
        assert [g.data for g in drain(consumer, len(data))] == data
        # And we decrypt, with the object, what the official client seals.
        theirs = oc.create_producer(
            unique_topic,
            encryption_key="ka",
            crypto_key_reader=official_pulsar.CryptoKeyReader(str(a.public), str(a.private)),
        )
        for i in range(5):
            theirs.send(b"official-%d" % i)
        theirs.close()
    finally:
        oc.close()
    with streamwire.Client(url) as client:
        with client.subscribe(
            unique_topic, "ours", initial_position="earliest", crypto_key_reader=keys
        ) as consumer:
            got = receive_n(consumer, len(data) + 5)
    assert [m.data() for m in got] == data + [b"official-%d" % i for i in range(5)]
    private = [(name, meta) for kind, name, meta in keys.asked if kind == "private"]
    assert ("ka", {"tag": "v7"}) in private, "our producer's metadata reaches the reader"
    # Data keys are cached: the reader is asked once per data key, not per message.
    assert len(private) <= 2


def test_object_reader_failures_are_typed(
    apache_broker: Any, rsa_keys: dict[str, KeyPair], unique_topic: str
) -> None:
    class Raising:
        def get_public_key(self, key_name: str, metadata: dict[str, str]) -> bytes:
            raise RuntimeError("vault unreachable")

        def get_private_key(self, key_name: str, metadata: dict[str, str]) -> bytes:
            raise RuntimeError("vault unreachable")

    with streamwire.Client(apache_broker.service_url) as client:
        with pytest.raises(CryptoError, match="vault unreachable"):
            client.create_producer(
                unique_topic, encryption_keys=["ka"], crypto_key_reader=Raising()
            )
        with pytest.raises(CryptoError, match="no public key"):
            client.create_producer(
                unique_topic, encryption_keys=["kb"], crypto_key_reader=FileKeys({})
            )
        with client.create_producer(
            unique_topic, encryption_keys=["ka"], crypto_key_reader=FileKeys({"ka": rsa_keys["a"]})
        ) as p:
            p.send(b"sealed")
        # A consumer whose reader raises: "fail" holds the message back with a CryptoError,
        # "discard" drops it.
        with client.subscribe(
            unique_topic, "fails", initial_position="earliest", crypto_key_reader=Raising()
        ) as consumer:
            with pytest.raises(CryptoError, match="vault unreachable"):
                consumer.receive(timeout=10)
        with client.subscribe(
            unique_topic,
            "discards",
            initial_position="earliest",
            crypto_key_reader=Raising(),
            crypto_failure_action="discard",
        ) as consumer:
            assert consumer.receive_many(10, timeout=2.0) == []
