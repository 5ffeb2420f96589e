"""End-to-end encryption, interoperable with the official client on Apache Pulsar.

RSA key pairs are made by the test with ``openssl`` (PKCS#8 private keys, SubjectPublicKeyInfo
public keys: what ``openssl genrsa`` / ``openssl rsa -pubout`` write and the official
``pulsar.CryptoKeyReader`` reads). Both directions, batching on and off, every compression
codec, several recipient keys; then the failure actions FAIL / DISCARD / CONSUME, a tampered
payload and unusable keys, each giving the typed ``CryptoError`` or the chosen action.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import threading
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

import pytest
import streamwire
from streamwire import aio
from streamwire.exceptions import CryptoError

from tests.interop._official_read import drain, official_client
from tests.peers.faultproxy import TO_CLIENT
from tests.security._e2e import (
    crypto_errors,
    decrypting,
    official_drain,
    produce_encrypted,
    receive_n,
)
from tests.security.conftest import KeyPair

CODECS = [None, "lz4", "zlib", "zstd", "snappy"]
OFFICIAL_CODEC = {None: "NONE", "lz4": "LZ4", "zlib": "ZLib", "zstd": "ZSTD", "snappy": "SNAPPY"}


def _payloads(n: int) -> list[bytes]:
    data = [(f"secret-{i}-" * (1 + i % 5)).encode() for i in range(n)]
    data[1] = b""  # an empty payload
    data[2] = b"\x00\xff" * 2000  # binary, compressible
    return data


@pytest.mark.parametrize("compression", CODECS, ids=[str(c).lower() for c in CODECS])
@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
def test_official_decrypts_what_we_encrypt(
    apache_broker: Any,
    official_pulsar: ModuleType,
    rsa_keys: dict[str, KeyPair],
    unique_topic: str,
    batching: bool,
    compression: Optional[str],
) -> None:
    # Two recipients with different keys; the official consumer holds only the second one's
    # private key, so it must find its own wrapped data key among the two.
    a, b = rsa_keys["a"], rsa_keys["b"]
    reader = streamwire.CryptoKeyReader(
        keys={"ka": (a.public.read_bytes(), None), "kb": (b.public.read_bytes(), None)}
    )
    data = _payloads(40)
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(
            unique_topic,
            batching=batching,
            batching_max_messages=10,
            batching_max_delay=0.005,
            compression=compression,
            encryption_keys=["ka", "kb"],
            crypto_key_reader=reader,
        )
        half = len(data) // 2
        futs = [p.send_async(d, properties={"i": str(i)}) for i, d in enumerate(data[:half])]
        for f in futs:
            f.result(20)
        # The default path and the bulk one (`ids=False`: batches cut from one buffer, then
        # compressed and encrypted per entry as any batch; unbatched producers fall back).
        three_q = half + (len(data) - half) // 2
        p.send_many(data[half:three_q])
        assert len(p.send_many(data[three_q:], ids=False)) == len(data) - three_q
        p.close()
    got = official_drain(
        official_pulsar, apache_broker.service_url, unique_topic, "check", b, len(data)
    )
    assert [g.data for g in got] == data
    assert [g.properties.get("i") for g in got[:half]] == [str(i) for i in range(half)]
    if batching:
        assert any(g.batch_index > 0 for g in got), "nothing was batched"


@pytest.mark.parametrize("compression", CODECS, ids=[str(c).lower() for c in CODECS])
@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
def test_we_decrypt_what_the_official_client_encrypts(
    apache_broker: Any,
    official_pulsar: ModuleType,
    rsa_keys: dict[str, KeyPair],
    unique_topic: str,
    batching: bool,
    compression: Optional[str],
) -> None:
    a = rsa_keys["a"]
    data = _payloads(40)
    oc = official_client(official_pulsar, apache_broker.service_url)
    try:
        p = oc.create_producer(
            unique_topic,
            batching_enabled=batching,
            batching_max_messages=10,
            batching_max_publish_delay_ms=5,
            compression_type=getattr(official_pulsar.CompressionType, OFFICIAL_CODEC[compression]),
            encryption_key="ka",
            crypto_key_reader=official_pulsar.CryptoKeyReader(str(a.public), str(a.private)),
        )
        for d in data:
            p.send_async(d, None)
        p.flush()
        p.close()
    finally:
        oc.close()
    with streamwire.Client(apache_broker.service_url) as client:
        with decrypting(client, unique_topic, a.private, "ours") as consumer:
            got = receive_n(consumer, len(data))
            assert [m.data() for m in got] == data
            assert all(m.encryption_context() is None for m in got)
            if batching:
                assert any(m.message_id.batch_index > 0 for m in got), "nothing was batched"
        # A reader decrypts too.
        with client.create_reader(
            unique_topic,
            "earliest",
            crypto_key_reader=streamwire.CryptoKeyReader(private_key_path=a.private),
        ) as reader:
            assert [m.data() for m in receive_n(reader, len(data))] == data


def _produce_encrypted(
    url: str, topic: str, pair: KeyPair, data: list[bytes], *, batching: bool, compression: Any
) -> None:
    produce_encrypted(
        url,
        topic,
        pair,
        data,
        name="ka",
        one_by_one=not batching,
        batching=batching,
        batching_max_delay=0.05,
        compression=compression,
    )


@pytest.mark.parametrize("reader_kind", ["none", "wrong_key"])
def test_fail_holds_the_message_and_raises_crypto_error(
    apache_broker: Any, rsa_keys: dict[str, KeyPair], unique_topic: str, reader_kind: str
) -> None:
    a, b = rsa_keys["a"], rsa_keys["b"]
    data = [b"one", b"two"]
    _produce_encrypted(
        apache_broker.service_url, unique_topic, a, data, batching=False, compression=None
    )
    wrong = streamwire.CryptoKeyReader(private_key_path=b.private)
    with streamwire.Client(apache_broker.service_url) as client:
        with client.subscribe(
            unique_topic,
            "sub",
            initial_position="earliest",
            subscription_type="shared",
            crypto_key_reader=None if reader_kind == "none" else wrong,
        ) as c:
            errors = crypto_errors(c, 2)
            assert len(errors) == 2, errors
            assert all("could not be decrypted" in e for e in errors), errors
            assert c.stats()["invalid"] == 2
        # Not acknowledged: a consumer with the right key gets both on the same subscription.
        with client.subscribe(
            unique_topic,
            "sub",
            subscription_type="shared",
            crypto_key_reader=streamwire.CryptoKeyReader(private_key_path=a.private),
        ) as c:
            assert sorted(m.data() for m in receive_n(c, 2)) == sorted(data)


def test_discard_acknowledges_and_drops(
    apache_broker: Any, rsa_keys: dict[str, KeyPair], unique_topic: str
) -> None:
    a, b = rsa_keys["a"], rsa_keys["b"]
    _produce_encrypted(
        apache_broker.service_url, unique_topic, a, [b"x", b"y"], batching=True, compression="lz4"
    )
    with streamwire.Client(apache_broker.service_url) as client:
        with decrypting(
            client, unique_topic, b.private, "sub", crypto_failure_action="discard"
        ) as c:
            assert c.receive_many(10, timeout=3.0) == []
            assert c.stats()["invalid"] == 1
        # Acknowledged (with DecryptionError): the right key finds nothing left.
        with decrypting(client, unique_topic, a.private, "sub", earliest=False) as c:
            assert c.receive_many(10, timeout=2.0) == []


@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
def test_consume_hands_over_the_encrypted_payload_and_its_context(
    apache_broker: Any,
    official_pulsar: ModuleType,
    rsa_keys: dict[str, KeyPair],
    unique_topic: str,
    batching: bool,
) -> None:
    a = rsa_keys["a"]
    data = [b"alpha" * 50, b"beta" * 50, b"gamma" * 50]
    _produce_encrypted(
        apache_broker.service_url, unique_topic, a, data, batching=batching, compression="zlib"
    )
    with streamwire.Client(apache_broker.service_url) as client:
        with client.subscribe(
            unique_topic, "raw", initial_position="earliest", crypto_failure_action="consume"
        ) as c:
            got = receive_n(c, 1 if batching else 3, timeout=10)
            assert c.receive_many(10, timeout=0.5) == []
    assert len(got) == (1 if batching else 3)
    for m in got:
        ctx = m.encryption_context()
        assert ctx is not None
        assert list(ctx.keys) == ["ka"]
        wrapped, meta = ctx.keys["ka"]
        assert len(wrapped) == 256 and meta == {}  # RSA-2048 wraps to 256 bytes
        assert len(ctx.param) == 12
        assert ctx.algorithm == ""
        assert ctx.compression_type == "zlib"
        assert ctx.batch_size == (3 if batching else None)
        assert all(d not in m.data() for d in data), "plaintext in an encrypted payload"
    if not batching:
        assert [m.encryption_context().uncompressed_size for m in got] == [len(d) for d in data]
    # The official client with CONSUME hands over the same bytes (single messages only).
    if not batching:
        oc = official_client(official_pulsar, apache_broker.service_url)
        try:
            consumer = oc.subscribe(
                unique_topic,
                "raw-official",
                initial_position=official_pulsar.InitialPosition.Earliest,
                crypto_failure_action=official_pulsar.ConsumerCryptoFailureAction.CONSUME,
            )
            theirs = drain(consumer, 3)
        finally:
            oc.close()
        assert [g.data for g in theirs] == [m.data() for m in got]


def test_tampered_payload_is_a_crypto_error(
    lite_broker: Any, fault_proxy: Any, rsa_keys: dict[str, KeyPair], unique_topic: str
) -> None:
    # pulsar-lite sends MESSAGE frames without a checksum: the flipped byte reaches the
    # decryption, whose GCM tag must catch it.
    a = rsa_keys["a"]
    _produce_encrypted(
        lite_broker.service_url, unique_topic, a, [b"m0", b"m1"], batching=False, compression=None
    )
    proxy = fault_proxy(lite_broker)
    proxy.corrupt_next_payload(TO_CLIENT, "MESSAGE")
    with streamwire.Client(proxy.url) as client:
        with decrypting(client, unique_topic, a.private, "t") as c:
            with pytest.raises(CryptoError, match="authentication"):
                for _ in range(10):
                    c.receive_many(10, timeout=1.0)
            assert proxy.pending_faults(TO_CLIENT) == 0
            assert [m.data() for m in receive_n(c, 1)] == [b"m1"]


def test_unusable_keys_fail_producer_creation(
    apache_broker: Any, rsa_keys: dict[str, KeyPair], tmp_path: Path, unique_topic: str
) -> None:
    # An EC key on a curve neither Java's default nor this client supports for ECIES here.
    k1, ec = tmp_path / "k1.pem", tmp_path / "k1_pub.pem"
    subprocess.run(
        ["openssl", "ecparam", "-name", "secp256k1", "-genkey", "-noout", "-out", str(k1)],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        ["openssl", "ec", "-in", str(k1), "-pubout", "-out", str(ec)],
        check=True,
        capture_output=True,
    )
    secret = rsa_keys["a"].private.read_bytes()
    with streamwire.Client(apache_broker.service_url) as client:
        with pytest.raises(CryptoError, match="no public key") as e:
            client.create_producer(
                unique_topic,
                encryption_keys=["ka"],
                crypto_key_reader=streamwire.CryptoKeyReader(private_key=secret),
            )
        with pytest.raises(
            CryptoError, match=r"\"ka\".*EC curve 1\.3\.132\.0\.10 is not supported"
        ):
            client.create_producer(
                unique_topic,
                encryption_keys=["ka"],
                crypto_key_reader=streamwire.CryptoKeyReader(public_key_path=ec),
            )
        # A private key where the public key belongs: refused, and never echoed.
        with pytest.raises(CryptoError) as e:
            client.create_producer(
                unique_topic,
                encryption_keys=["ka"],
                crypto_key_reader=streamwire.CryptoKeyReader(public_key=secret),
            )
        assert secret.decode().splitlines()[1] not in str(e.value)
        assert "PRIVATE" not in repr(streamwire.CryptoKeyReader(private_key=secret))


def test_many_producers_rotate_independent_data_keys(
    apache_broker: Any, rsa_keys: dict[str, KeyPair]
) -> None:
    # Each producer has its own data key; the consumer's cache keeps one per wrapped key.
    a = rsa_keys["a"]
    topic = f"persistent://public/default/e2e-many-{uuid.uuid4().hex}"
    with streamwire.Client(apache_broker.service_url) as client:
        with decrypting(client, topic, a.private, "s", earliest=False) as c:
            for i in range(3):
                with client.create_producer(
                    topic,
                    encryption_keys=["ka"],
                    crypto_key_reader=streamwire.CryptoKeyReader(public_key_path=a.public),
                ) as p:
                    p.send(f"from-{i}".encode())
            assert sorted(m.data() for m in receive_n(c, 3)) == [
                b"from-0",
                b"from-1",
                b"from-2",
            ]


def test_listener_skips_what_it_cannot_decrypt_and_goes_on(
    apache_broker: Any,
    rsa_keys: dict[str, KeyPair],
    unique_topic: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # One message for key a (the consumer has only b's private key), then one for b: under
    # FAIL the first is held back and logged, and the listener still gets the second.
    a, b = rsa_keys["a"], rsa_keys["b"]
    got: list[bytes] = []
    done = threading.Event()

    def listener(consumer: streamwire.Consumer, msg: streamwire.Message) -> None:
        got.append(msg.data())
        consumer.acknowledge(msg)
        done.set()

    # The "streamwire" logger's level is the process's (a compat test may have raised it).
    caplog.set_level(logging.WARNING, logger="streamwire")
    with streamwire.Client(apache_broker.service_url) as client:
        with decrypting(
            client, unique_topic, b.private, "l", earliest=False, message_listener=listener
        ) as c:
            for pair, body in ((a, b"for-a"), (b, b"for-b")):
                with client.create_producer(
                    unique_topic,
                    encryption_keys=["k"],
                    crypto_key_reader=streamwire.CryptoKeyReader(public_key_path=pair.public),
                ) as p:
                    p.send(body)
            assert done.wait(20), "the listener never got the decryptable message"
            assert got == [b"for-b"]
            assert c.stats()["invalid"] == 1
    assert any("could not be decrypted" in r.getMessage() for r in caplog.records)


def test_asyncio_faces_encrypt_and_decrypt(
    apache_broker: Any, rsa_keys: dict[str, KeyPair], unique_topic: str
) -> None:
    a = rsa_keys["a"]

    async def main() -> list[bytes]:
        async with aio.Client(apache_broker.service_url) as client:
            consumer = await client.subscribe(
                unique_topic,
                "s",
                crypto_key_reader=streamwire.CryptoKeyReader(private_key_path=a.private),
            )
            producer = await client.create_producer(
                unique_topic,
                compression="lz4",
                encryption_keys=["k"],
                crypto_key_reader=streamwire.CryptoKeyReader(public_key_path=a.public),
            )
            await producer.send_many([b"x1", b"x2", b"x3"])
            out: list[bytes] = []
            while len(out) < 3:
                msgs = await consumer.receive_many(10, timeout=10)
                assert msgs, "nothing received"
                out += [m.data() for m in msgs]
            await producer.close()
            await consumer.close()
            return out

    assert asyncio.run(main()) == [b"x1", b"x2", b"x3"]


def test_compat_module_encrypts_and_reads_contexts_as_the_official_client(
    apache_broker: Any,
    official_pulsar: ModuleType,
    rsa_keys: dict[str, KeyPair],
    unique_topic: str,
) -> None:
    # A program written for the official client, run on streamwire.compat: its producer's
    # messages decrypt in the official consumer, and with CONSUME both clients report the same
    # encryption context for the same undecrypted message.
    import streamwire.compat as compat

    a = rsa_keys["a"]
    client = compat.Client(apache_broker.service_url)
    try:
        p = client.create_producer(
            unique_topic,
            encryption_key="ka",
            crypto_key_reader=compat.CryptoKeyReader(str(a.public), str(a.private)),
            compression_type=compat.CompressionType.LZ4,
        )
        p.send(b"hello from compat" * 10)
        p.close()
        raw = client.subscribe(
            unique_topic,
            "raw",
            initial_position=compat.InitialPosition.Earliest,
            crypto_failure_action=compat.ConsumerCryptoFailureAction.CONSUME,
        )
        ours = raw.receive(10_000).encryption_context()
    finally:
        client.close()
    oc = official_client(official_pulsar, apache_broker.service_url)
    try:
        plain = oc.subscribe(
            unique_topic,
            "plain",
            initial_position=official_pulsar.InitialPosition.Earliest,
            crypto_key_reader=official_pulsar.CryptoKeyReader(str(a.public), str(a.private)),
        )
        assert plain.receive(10_000).data() == b"hello from compat" * 10
        raw = oc.subscribe(
            unique_topic,
            "raw-official",
            initial_position=official_pulsar.InitialPosition.Earliest,
            crypto_failure_action=official_pulsar.ConsumerCryptoFailureAction.CONSUME,
        )
        # The official context is valid only while its message lives: compared right here.
        theirs_msg = raw.receive(10_000)
        theirs = theirs_msg.encryption_context()
        assert ours is not None and theirs is not None
        _same_context(ours, theirs)
    finally:
        oc.close()


def _same_context(ours: Any, theirs: Any) -> None:
    assert [(k.key, k.value, k.metadata) for k in ours.keys()] == [
        (k.key, k.value, k.metadata) for k in theirs.keys()
    ]
    assert ours.param() == theirs.param()
    assert ours.algorithm() == theirs.algorithm()
    assert ours.compression_type().name == theirs.compression_type().name
    assert ours.uncompressed_message_size() == theirs.uncompressed_message_size()
    assert ours.batch_size() == theirs.batch_size()
