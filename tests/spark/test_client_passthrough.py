"""The Scala connector's ``pulsar.client.*`` pass-through options: the ones this source maps
reach the client with its units (milliseconds there, seconds here); any other fails the query
at once with its name, instead of being ignored; a Spark read configured only with them runs."""

from __future__ import annotations

from typing import Any

import pytest
from streamwire import ConfigError
from streamwire.spark import ClientConfig

BASE = {"service_url": "pulsar://127.0.0.1:6650"}


def test_mapped_options_reach_the_client_config() -> None:
    cfg = ClientConfig.from_options(
        {
            "pulsar.client.serviceUrl": "pulsar://h:6650",
            "pulsar.client.operationTimeoutMs": "45000",
            "pulsar.client.connectionTimeoutMs": "500",
            "pulsar.client.numIoThreads": "3",
            "pulsar.client.tlsTrustCertsFilePath": "/ca.pem",
            "pulsar.client.tlsCertificateFilePath": "/c.pem",
            "pulsar.client.tlsKeyFilePath": "/k.pem",
            "pulsar.client.listenerName": "external",
        }
    )
    assert (cfg.service_url, cfg.operation_timeout, cfg.connection_timeout) == (
        "pulsar://h:6650",
        45.0,
        0.5,
    )
    assert (cfg.io_threads, cfg.listener_name) == (3, "external")
    assert (cfg.tls_trust_certs_file, cfg.tls_cert_file, cfg.tls_key_file) == (
        "/ca.pem",
        "/c.pem",
        "/k.pem",
    )
    # Our own spelling wins over the pass-through one.
    cfg = ClientConfig.from_options(
        {**BASE, "operationTimeout": "7", "pulsar.client.operationTimeoutMs": "45000"}
    )
    assert cfg.operation_timeout == 7.0


def test_an_unmapped_pass_through_option_is_refused_by_name() -> None:
    # Spark lower-cases option keys: the check must not depend on the case.
    with pytest.raises(ConfigError, match=r"pulsar\.client\.statsintervalseconds"):
        ClientConfig.from_options({**BASE, "pulsar.client.statsintervalseconds": "60"})
    with pytest.raises(ConfigError, match="differ"):
        ClientConfig.from_options({**BASE, "pulsar.client.serviceUrl": "pulsar://other:6650"})


def test_a_read_configured_with_pass_through_names_only(spark: Any, lite_broker: Any) -> None:
    import streamwire

    topic = "persistent://public/default/passthrough-read"
    with streamwire.Client(lite_broker.service_url) as c, c.create_producer(topic) as p:
        p.send_many([b"a", b"b", b"c"])
    df = (
        spark.read.format("streamwire")
        .option("pulsar.client.serviceUrl", lite_broker.service_url)
        .option("pulsar.client.operationTimeoutMs", "20000")
        .option("topic", topic)
        .load()
    )
    assert sorted(bytes(r.value) for r in df.select("value").collect())[-3:] == [b"a", b"b", b"c"]
