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
import time
from pathlib import Path
from typing import Any, Optional

import pytest
import streamwire

from tests.peers.java_program import JAVA_ENV, compile_program
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


def _receive(c: Any, n: int, timeout: float = 30) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got.extend(c.receive_many(n - len(got), timeout=1.0))
    return got


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
    _java(
        e2e_java,
        apache_broker.service_url,
        "produce",
        unique_topic,
        str(a.public),
        "java-key",
        str(batching).lower(),
        codec,
        str(n),
    )
    with streamwire.Client(apache_broker.service_url) as client:
        with client.subscribe(
            unique_topic,
            "ours",
            initial_position="earliest",
            crypto_key_reader=streamwire.CryptoKeyReader(private_key_path=a.private),
        ) as c:
            got: list[Any] = []
            deadline = time.monotonic() + 20
            while len(got) < n and time.monotonic() < deadline:
                got.extend(c.receive_many(n, timeout=1.0))
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
    with streamwire.Client(apache_broker.service_url) as client:
        with client.create_producer(
            unique_topic,
            batching=batching,
            batching_max_delay=0.01,
            compression=compression,
            encryption_keys=["k"],
            crypto_key_reader=streamwire.CryptoKeyReader(public_key_path=b.public),
        ) as p:
            p.send_many(data)
    lines = _java(
        e2e_java, apache_broker.service_url, "consume", unique_topic, str(b.private), str(len(data))
    )
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
    _java(
        e2e_java,
        apache_broker.service_url,
        "produce",
        unique_topic,
        str(k.public),
        "java-ec",
        "true",
        "LZ4",
        str(n),
    )
    with streamwire.Client(apache_broker.service_url) as client:
        with client.subscribe(
            unique_topic,
            "ours",
            initial_position="earliest",
            crypto_key_reader=streamwire.CryptoKeyReader(private_key_path=k.private),
        ) as c:
            got = _receive(c, n)
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
    with streamwire.Client(apache_broker.service_url) as client:
        with client.create_producer(
            unique_topic,
            batching=True,
            batching_max_delay=0.01,
            compression="zstd",
            encryption_keys=["ec"],
            crypto_key_reader=streamwire.CryptoKeyReader(public_key_path=k.public),
        ) as p:
            p.send_many(data)
    lines = _java(
        e2e_java, apache_broker.service_url, "consume", unique_topic, str(k.private), str(len(data))
    )
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
    _java(
        e2e_java,
        apache_broker.service_url,
        "produce",
        unique_topic,
        str(a.public),
        "java-key",
        "false",
        codec,
        str(n),
        "100000",
        str(size),
    )
    with streamwire.Client(apache_broker.service_url) as client:
        with client.subscribe(
            unique_topic,
            "ours",
            initial_position="earliest",
            crypto_key_reader=streamwire.CryptoKeyReader(private_key_path=a.private),
        ) as c:
            got = _receive(c, n)
            stats = c.stats()
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
    private = b.private if opener == "rsa" else ec.private
    lines = _java(e2e_java, apache_broker.service_url, "consume", unique_topic, str(private), "2")
    assert lines == [
        f"{len(data[0])} {hashlib.sha256(data[0]).hexdigest()}",
        base64.b64encode(data[1]).decode(),
    ]
