"""The other direction of transaction interop: the Java client (the official Python client,
3.13, has no transactions) commits one transaction and aborts another; streamwire's reader
sees exactly the committed messages, and a streamwire transaction's acks on them stick."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import streamwire

from tests.peers.apache import JAVA, ApachePulsar, resolve_classpath

HERE = Path(__file__).resolve().parent


def test_java_transactions_read_by_streamwire(apache_broker: ApachePulsar) -> None:
    topic = f"persistent://public/default/txn-java-{uuid.uuid4().hex}"
    _, cp = resolve_classpath()
    out = subprocess.run(
        [JAVA, "-cp", cp, str(HERE / "JavaTxnWriter.java"), apache_broker.service_url, topic],
        capture_output=True,
        text=True,
        timeout=180,
        env={k: v for k, v in os.environ.items() if not k.startswith("PULSAR_")},
    )
    assert out.returncode == 0 and "WROTE" in out.stdout, out.stderr[-3000:]
    with streamwire.Client(apache_broker.service_url) as client:
        got: list[bytes] = []
        with client.create_reader(topic, "earliest") as r:
            while True:
                try:
                    got.append(r.read_next(timeout=1.5).data())
                except streamwire.OperationTimeoutError:
                    break
        assert got == [b"java-committed-1", b"java-committed-2"]
        c = client.subscribe(topic, "s", initial_position="earliest")
        msgs = [c.receive(timeout=10) for _ in range(2)]
        with client.transaction() as t:
            c.acknowledge(msgs, txn=t)
        c.close()
        c = client.subscribe(topic, "s", initial_position="earliest")
        assert c.receive_many(10, timeout=2) == []
        c.close()
