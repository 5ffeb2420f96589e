"""End-to-end encryption against the official Java client on Apache Pulsar, both ways.

The Java side is ``tests/security/java/E2eInterop.java`` (compiled once per session against
the Apache fixture's ``pulsar-client-api`` jar, run on its classpath): it produces encrypted
messages for a key name, or consumes and prints what it decrypted. The keys are the session's
openssl-made RSA pairs. Set-up failing (javac, the classpath) fails the test with the reason.
"""

from __future__ import annotations

import base64
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Optional

import pytest
import streamwire

from tests.peers.apache import JAVA, resolve_classpath
from tests.schemas.test_schema_java_interop import JAVA_ENV, JVM_FLAGS, _javac, _run
from tests.security.conftest import KeyPair

HERE = Path(__file__).resolve().parent / "java"


@pytest.fixture(scope="session")
def e2e_java(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """``java ... E2eInterop`` (append the service URL, the mode and its arguments)."""
    _, cp = resolve_classpath()
    classes = tmp_path_factory.mktemp("e2e-java")
    api = [j for j in cp.split(os.pathsep) if os.path.basename(j).startswith("pulsar-client-api-")]
    _run(
        [
            _javac(),
            "-nowarn",
            "-d",
            str(classes),
            "-cp",
            os.pathsep.join(api),
            str(HERE / "E2eInterop.java"),
        ],
        "javac",
    )
    return [JAVA, *JVM_FLAGS, "-cp", f"{classes}{os.pathsep}{cp}", "E2eInterop"]


def _java(cmd: list[str], *args: str) -> list[str]:
    """Run the Java side; its "msg ..." lines (the client logs to stdout too)."""
    out = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=180, env=JAVA_ENV)
    lines = out.stdout.splitlines()
    if out.returncode != 0 or "e2e done" not in lines:
        pytest.fail(
            f"Java client failed (rc={out.returncode}): {out.stdout[-2000:]}\n{out.stderr[-4000:]}",
            pytrace=False,
        )
    return [line[4:] for line in lines if line.startswith("msg ")]


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
