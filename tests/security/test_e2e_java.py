"""End-to-end encryption against the official Java client on Apache Pulsar, both ways.

The Java side is ``tests/security/java/E2eInterop.java`` (compiled once per session against
the Apache fixture's ``pulsar-client-api`` jar, run on its classpath): it produces encrypted
messages for a key name, or consumes and prints what it decrypted. The keys are the session's
openssl-made RSA and EC pairs (EC: the Java client wraps the data key with BouncyCastle's
ECIES). Chunked messages are encrypted chunk by chunk by both clients. Set-up failing (javac,
the classpath) fails the test with the reason.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any, Optional

import pytest
import streamwire

from tests.peers.java_program import JAVA_ENV, compile_program
from tests.security._e2e import decrypting, produce_encrypted, receive_n
from tests.security.conftest import KeyPair

HERE = Path(__file__).resolve().parent / "java"


@pytest.fixture(scope="session")
def e2e_java(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """``java ... E2eInterop`` (append the service URL, the mode and its arguments)."""
    classes = tmp_path_factory.mktemp("e2e-java")
    return compile_program(classes, [HERE / "E2eInterop.java"], "E2eInterop")


def _java(cmd: list[str], *args: str) -> list[str]:
    """Run the Java side; its "msg ..." lines (the client logs to stdout too)."""
    out = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=180, env=JAVA_ENV)
    lines = out.stdout.splitlines()
    if out.returncode != 0 or "e2e done" not in lines:
        pytest.fail(
            f"Java client failed (rc={out.returncode}): {out.stdout[-2000:]}\n{out.stderr[-4000:]}",
            pytrace=False,
        )
    return [line[4:] for line in lines if line.startswith(("msg ", "big "))]


def _java_produce(
    cmd: list[str], url: str, topic: str, key: KeyPair, name: str, batching: bool, *args: str
) -> None:
    """The Java producer sends to ``topic`` encrypted for ``key`` (named ``name``); ``args``:
    the codec, the count, and for chunks the chunk size and the payload size."""
    _java(cmd, url, "produce", topic, str(key.public), name, str(batching).lower(), *args)


def _java_consume(cmd: list[str], url: str, topic: str, key: KeyPair, n: int) -> list[str]:
    """What the Java consumer decrypts with ``key``: ``n`` lines, base64 or ``size sha256``."""
    return _java(cmd, url, "consume", topic, str(key.private), str(n))


def _ours_read(url: str, topic: str, key: KeyPair, n: int, timeout: float) -> tuple[list[Any], Any]:
    """``n`` messages our consumer decrypts with ``key``, and its stats after them."""
    with streamwire.Client(url) as client:
        with decrypting(client, topic, key.private, "ours") as c:
            return receive_n(c, n, timeout), c.stats()


def chunk_payload(i: int, size: int) -> bytes:
    """``E2eInterop.payload(i, size)``: the first half a xorshift64 stream, the rest zeros."""
    out = bytearray(size)
    x = (0x9E3779B97F4A7C15 * (i + 1)) & 0xFFFFFFFFFFFFFFFF
    for j in range(size // 2):
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        out[j] = x & 0xFF
    return bytes(out)


@pytest.mark.parametrize(
    ("batching", "codec"), [(False, "NONE"), (True, "LZ4"), (True, "ZSTD")], ids=str
)
def test_we_decrypt_what_java_encrypts(
    apache_broker: Any,
    e2e_java: list[str],
    rsa_keys: dict[str, KeyPair],
    unique_topic: str,
    batching: bool,
    codec: str,
) -> None:
    a = rsa_keys["a"]
    n = 30
    url = apache_broker.service_url
    _java_produce(e2e_java, url, unique_topic, a, "java-key", batching, codec, str(n))
    got, _ = _ours_read(url, unique_topic, a, n, 20)
    assert [m.data() for m in got] == [f"java-{i}".encode() for i in range(n)]
    if batching:
        assert any(m.message_id.batch_index > 0 for m in got), "Java did not batch"


@pytest.mark.parametrize(
    ("batching", "compression"), [(False, None), (True, "zstd"), (True, "snappy")], ids=str
)
def test_java_decrypts_what_we_encrypt(
    apache_broker: Any,
    e2e_java: list[str],
    rsa_keys: dict[str, KeyPair],
    unique_topic: str,
    batching: bool,
    compression: Optional[str],
) -> None:
    b = rsa_keys["b"]
    data = [f"ours-{i}".encode() * (1 + i % 4) for i in range(30)]
    produce_encrypted(
        apache_broker.service_url,
        unique_topic,
        b,
        data,
        batching=batching,
        batching_max_delay=0.01,
        compression=compression,
    )
    lines = _java_consume(e2e_java, apache_broker.service_url, unique_topic, b, len(data))
    assert [base64.b64decode(x) for x in lines] == data


@pytest.mark.parametrize("curve", ["p521", "p256"])
def test_we_decrypt_what_java_encrypts_with_ec_keys(
    apache_broker: Any,
    e2e_java: list[str],
    ec_keys: dict[str, KeyPair],
    unique_topic: str,
    curve: str,
) -> None:
    # p521: explicit curve parameters after an EC PARAMETERS block, as Pulsar's docs make them.
    k = ec_keys[curve]
    n = 20
    url = apache_broker.service_url
    _java_produce(e2e_java, url, unique_topic, k, "java-ec", True, "LZ4", str(n))
    got, _ = _ours_read(url, unique_topic, k, n, 30)
    assert [m.data() for m in got] == [f"java-{i}".encode() for i in range(n)]


@pytest.mark.parametrize("curve", ["p521", "p256"])
def test_java_decrypts_what_we_encrypt_with_ec_keys(
    apache_broker: Any,
    e2e_java: list[str],
    ec_keys: dict[str, KeyPair],
    unique_topic: str,
    curve: str,
) -> None:
    k = ec_keys[curve]
    data = [f"ours-ec-{i}".encode() * (1 + i % 3) for i in range(20)]
    produce_encrypted(
        apache_broker.service_url,
        unique_topic,
        k,
        data,
        name="ec",
        batching=True,
        batching_max_delay=0.01,
        compression="zstd",
    )
    lines = _java_consume(e2e_java, apache_broker.service_url, unique_topic, k, len(data))
    assert [base64.b64decode(x) for x in lines] == data


@pytest.mark.parametrize("codec", ["NONE", "LZ4"])
def test_we_reassemble_what_java_chunks_and_encrypts(
    apache_broker: Any,
    e2e_java: list[str],
    rsa_keys: dict[str, KeyPair],
    unique_topic: str,
    codec: str,
) -> None:
    # 300 kB payloads in chunks of at most 100 kB: 3 chunks uncompressed, 2 with LZ4 (half
    # the payload is zeros); every chunk sealed on its own by the Java producer.
    a = rsa_keys["a"]
    n, size = 3, 300_000
    url = apache_broker.service_url
    chunks = ("100000", str(size))
    _java_produce(e2e_java, url, unique_topic, a, "java-key", False, codec, str(n), *chunks)
    got, stats = _ours_read(url, unique_topic, a, n, 30)
    assert [m.data() for m in got] == [chunk_payload(i, size) for i in range(n)]
    # Chunked: the ids name the last chunk and carry the first (a span of entries).
    ids = [m.message_id for m in got]
    assert ids[1].entry_id - ids[0].entry_id == (3 if codec == "NONE" else 2), ids
    assert stats["invalid"] == 0


@pytest.mark.parametrize(("compression", "opener"), [(None, "rsa"), ("lz4", "ec")], ids=str)
def test_java_reassembles_what_we_chunk_and_encrypt(
    apache_broker: Any,
    e2e_java: list[str],
    rsa_keys: dict[str, KeyPair],
    ec_keys: dict[str, KeyPair],
    unique_topic: str,
    compression: Optional[str],
    opener: str,
) -> None:
    # The broker's 5 MiB maximum is the chunk size: 11 MiB of random bytes (+1 MiB of zeros
    # for the codec) make 3 chunks, each sealed on its own, for an RSA and an EC recipient;
    # the Java consumer holds one of the two private keys.
    b, ec = rsa_keys["b"], ec_keys["p521"]
    mib = 1024 * 1024
    data = [os.urandom(11 * mib) + bytes(mib), b"small one after"]
    reader = streamwire.CryptoKeyReader(
        keys={"rsa": (b.public.read_bytes(), None), "ec": (ec.public.read_bytes(), None)}
    )
    with streamwire.Client(apache_broker.service_url) as client:
        with client.create_producer(
            unique_topic,
            chunking=True,
            compression=compression,
            encryption_keys=["rsa", "ec"],
            crypto_key_reader=reader,
        ) as p:
            ids = [p.send(d) for d in data]
    assert ids[1].entry_id - ids[0].entry_id == 1
    key = b if opener == "rsa" else ec
    lines = _java_consume(e2e_java, apache_broker.service_url, unique_topic, key, 2)
    assert lines == [
        f"{len(data[0])} {hashlib.sha256(data[0]).hexdigest()}",
        base64.b64encode(data[1]).decode(),
    ]
