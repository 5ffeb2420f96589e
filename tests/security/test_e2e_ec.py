"""End-to-end encryption with EC keys, on Apache Pulsar.

The Java client wraps the data key with BouncyCastle's ECIES when its key reader gives EC keys;
streamwire does the same on P-256, P-384 and P-521, with the curve named or spelled out
(explicit parameters, as Pulsar's documentation generates keys). The Java interop both ways
is in ``test_e2e_java.py``. The official Python client (C++) reads RSA keys only: a message
whose only recipient key is EC cannot be decrypted there, and its failure action applies --
checked here so the documentation says what really happens.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import streamwire

from tests.interop._official_read import drain, official_client
from tests.security._e2e import decrypting, produce_encrypted, receive_n
from tests.security.conftest import KeyPair


def _produce(url: str, topic: str, key: KeyPair, data: list[bytes], **kw: Any) -> None:
    produce_encrypted(url, topic, key, data, name="ec", **kw)


@pytest.mark.parametrize("curve", ["p256", "p384", "p521"])
def test_ec_round_trip_on_every_curve(
    apache_broker: Any, ec_keys: dict[str, KeyPair], unique_topic: str, curve: str
) -> None:
    k = ec_keys[curve]
    data = [f"ec-{curve}-{i}".encode() * (1 + i % 7) for i in range(25)]
    _produce(apache_broker.service_url, unique_topic, k, data, batching=True, compression="lz4")
    with streamwire.Client(apache_broker.service_url) as client:
        with decrypting(client, unique_topic, k.private, "s") as c:
            assert [m.data() for m in receive_n(c, len(data))] == data
        # Without the key, CONSUME shows the ECIES-wrapped data key: the uncompressed
        # ephemeral point (0x04, X, Y), the 32-byte data key, a 20-byte HMAC-SHA1 tag.
        with client.subscribe(
            unique_topic, "raw", initial_position="earliest", crypto_failure_action="consume"
        ) as c:
            ctx = receive_n(c, 1)[0].encryption_context()
    point = {"p256": 65, "p384": 97, "p521": 133}[curve]
    wrapped, _ = ctx.keys["ec"]
    assert len(wrapped) == point + 32 + 20 and wrapped[0] == 4


def test_official_client_cannot_open_ec_messages_and_takes_its_failure_action(
    apache_broker: Any, official_pulsar: ModuleType, ec_keys: dict[str, KeyPair], unique_topic: str
) -> None:
    k = ec_keys["p256"]
    data = [b"for java and streamwire only", b"second"]
    _produce(apache_broker.service_url, unique_topic, k, data, batching=False)
    oc = official_client(official_pulsar, apache_broker.service_url)
    try:
        reader = official_pulsar.CryptoKeyReader(str(k.public), str(k.private))
        # FAIL (its default): nothing is delivered.
        failing = oc.subscribe(
            unique_topic,
            "official-fail",
            initial_position=official_pulsar.InitialPosition.Earliest,
            crypto_key_reader=reader,
        )
        assert drain(failing, 1, timeout=3.0, extra_wait=0) == []
        # CONSUME: the encrypted payloads, as ours hands them over.
        consuming = oc.subscribe(
            unique_topic,
            "official-consume",
            initial_position=official_pulsar.InitialPosition.Earliest,
            crypto_key_reader=reader,
            crypto_failure_action=official_pulsar.ConsumerCryptoFailureAction.CONSUME,
        )
        theirs = drain(consuming, 2)
    finally:
        oc.close()
    with streamwire.Client(apache_broker.service_url) as client:
        with client.subscribe(
            unique_topic, "raw", initial_position="earliest", crypto_failure_action="consume"
        ) as c:
            ours = [m.data() for m in receive_n(c, 2)]
    assert [g.data for g in theirs] == ours
    assert all(d not in o for d, o in zip(data, ours))
