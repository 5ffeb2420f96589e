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


def test_producer_and_reader_pass_through_options_are_mapped() -> None:
    from streamwire.spark.datasource import _read_options
    from streamwire.spark.writing import ProduceOptions

    opts = ProduceOptions.from_options(
        {
            **BASE,
            "topic": "t",
            "pulsar.producer.producerName": "job",
            "pulsar.producer.sendTimeoutMs": "5000",
            "pulsar.producer.batchingEnabled": "false",
            "pulsar.producer.batchingMaxMessages": "7",
            "pulsar.producer.batchingMaxBytes": "4096",
            "pulsar.producer.batchingMaxPublishDelayMicros": "2500",
            "pulsar.producer.compressionType": "LZ4",
            "pulsar.producer.maxPendingMessages": "99",
            "pulsar.producer.blockIfQueueFull": "false",
            "pulsar.producer.chunkingEnabled": "true",
        },
        3,
    )
    assert (opts.producer_name, opts.send_timeout, opts.batching) == ("job-3", 5.0, False)
    assert (opts.batching_max_messages, opts.batching_max_bytes) == (7, 4096)
    assert opts.batching_max_delay == pytest.approx(0.0025)
    assert (opts.compression, opts.max_pending_messages) == ("lz4", 99)
    assert (opts.block_if_queue_full, opts.chunking) == (False, True)
    kwargs = opts.producer_kwargs()
    assert (kwargs["max_pending_messages"], kwargs["chunking"]) == (99, True)

    read = _read_options(
        {**BASE, "pulsar.reader.receiverQueueSize": "17", "pulsar.reader.readerName": "r"}
    )
    assert (read.receiver_queue_size, read.reader_name) == (17, "r")


def test_unmapped_or_contradicting_producer_and_reader_options_are_refused() -> None:
    from streamwire.spark.datasource import _read_options
    from streamwire.spark.writing import ProduceOptions

    with pytest.raises(ConfigError, match=r"pulsar\.producer\.hashingscheme"):
        ProduceOptions.from_options({**BASE, "pulsar.producer.hashingscheme": "Murmur3_32Hash"}, 0)
    with pytest.raises(ConfigError, match="differ"):
        ProduceOptions.from_options(
            {**BASE, "sendTimeoutMs": "1000", "pulsar.producer.sendTimeoutMs": "2000"}, 0
        )
    with pytest.raises(ConfigError, match=r"pulsar\.reader\.readcompacted"):
        _read_options({**BASE, "pulsar.reader.readcompacted": "true"})


def test_a_write_and_read_configured_with_pass_through_names(spark: Any, lite_broker: Any) -> None:
    import streamwire

    topic = "persistent://public/default/passthrough-write"
    (
        spark.createDataFrame([(b"x%d" % i,) for i in range(20)], "value binary")
        .write.format("streamwire")
        .mode("append")
        .option("service_url", lite_broker.service_url)
        .option("topic", topic)
        .option("pulsar.producer.producerName", "pt")
        .option("pulsar.producer.batchingEnabled", "false")
        .option("pulsar.producer.compressionType", "ZSTD")
        .save()
    )
    with streamwire.Client(lite_broker.service_url) as c:
        with c.create_reader(topic, "earliest") as r:
            got = [r.read_next(timeout=10) for _ in range(20)]
    # Unbatched: every message is its own entry; the producer name came from the option.
    assert {m.message_id.batch_index for m in got} == {-1}
    assert all(m.producer_name.startswith("pt-") for m in got)
    assert sorted(m.data() for m in got) == sorted(b"x%d" % i for i in range(20))
    df = (
        spark.read.format("streamwire")
        .option("service_url", lite_broker.service_url)
        .option("topic", topic)
        .option("pulsar.reader.receiverQueueSize", "5")
        .option("pulsar.reader.readerName", "pt-reader")
        .load()
    )
    assert df.count() == 20
