"""Offset semantics (pure) and minPartitions splitting against a broker."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from streamwire.spark.offsets import (
    EARLIEST,
    RangeSpec,
    parse_offsets_option,
    position_key,
    predecessor,
    split_ranges,
)


def test_whole_entry_sorts_after_its_batch_indexes() -> None:
    assert position_key((3, 5, -1)) > position_key((3, 5, 999))
    assert position_key((3, 5, -1)) < position_key((3, 6, 0))
    assert position_key(EARLIEST) < position_key((0, 0, 0))
    assert predecessor((3, 5, 2)) == (3, 5, 1)
    assert predecessor((3, 5, 0)) == (3, 4, -1)
    assert predecessor((3, 5, -1)) == (3, 4, -1)


def test_parse_offsets() -> None:
    assert parse_offsets_option(None, default="earliest") == "earliest"
    spec = parse_offsets_option(
        '{"t": {"ledger": 1, "entry": 2, "batch": 3}, "u": "latest"}', default="earliest"
    )
    assert spec == {
        "persistent://public/default/t": (1, 2, 3),
        "persistent://public/default/u": "latest",
    }


def test_split_covers_the_range_exactly() -> None:
    r = RangeSpec("t", -1, (7, 9, 2), (7, 100, -1))
    pieces = split_ranges([r], 4)
    assert len(pieces) == 4
    assert pieces[0].start == r.start and pieces[-1].end == r.end
    for a, b in zip(pieces, pieces[1:]):
        assert a.end == b.start
    first = split_ranges([RangeSpec("t", -1, EARLIEST, (7, 100, -1))], 3, {"t": (7, 0, -1)})
    assert len(first) == 3 and first[0].start == EARLIEST


def test_min_partitions_reads_each_message_once(
    spark: Any, lite_broker: Any, unique_topic: str, official_pulsar: ModuleType
) -> None:
    client = official_pulsar.Client(
        lite_broker.service_url,
        logger=official_pulsar.ConsoleLogger(official_pulsar.LoggerLevel.Error),
    )
    producer = client.create_producer(unique_topic, batching_enabled=False)
    for i in range(100):
        producer.send(f"s{i}".encode())
    client.close()
    df = (
        spark.read.format("streamwire")
        .option("service_url", lite_broker.service_url)
        .option("topic", unique_topic)
        .option("minPartitions", "4")
        .load()
    )
    assert df.rdd.getNumPartitions() >= 4
    assert sorted(bytes(r.value) for r in df.collect()) == sorted(
        f"s{i}".encode() for i in range(100)
    )
