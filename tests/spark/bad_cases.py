"""Bad input to the Spark Data Source's typed columns (``valueSchema`` and friends) and to the
engine calls under them (``Producer.send_many`` of a ``pyarrow.RecordBatch``,
``Lookup.schema``): each case raises its documented typed exception on the driver (the
source's ``schema()`` / ``writer()``, run here without a Spark job) and the client keeps
working. Rendered into ``docs/bad-input.md`` (see ``tests/test_bad_input.py``); run against
Apache Pulsar by ``tests/spark/test_schema_bad_input.py``."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

import streamwire
from streamwire import ConfigError, InvalidArgumentError, SchemaError

from tests.bad_runner import BadCase

POINT = {
    "type": "record",
    "name": "Point",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "count", "type": "int"},
        {"name": "color", "type": ["null", {"type": "enum", "name": "C", "symbols": ["R", "G"]}]},
    ],
}
UNION = {
    "type": "record",
    "name": "U",
    "fields": [{"name": "either", "type": ["int", "string"]}],
}
CLASH = {"type": "record", "name": "K", "fields": [{"name": "key", "type": "string"}]}


@dataclass
class SparkCtx:
    url: str
    client: streamwire.Client
    topic: str  # AVRO schema POINT
    union_topic: str  # AVRO schema UNION
    clash_topic: str  # AVRO schema CLASH
    string_topic: str  # STRING schema
    plain_topic: str  # no schema
    producer: streamwire.Producer  # POINT, on topic
    protobuf_topic: str = ""  # PROTOBUF_NATIVE schema sw.test.Reading (tests/schemas/protos.py)
    kv_topic: str = ""  # KEY_VALUE schema: key AVRO POINT, value STRING, SEPARATED


SparkCase = BadCase[SparkCtx, object]


def _source(c: SparkCtx, topic: Optional[str], **options: str) -> Any:
    from streamwire.spark.datasource import StreamwireDataSource

    where = {"topic": topic} if topic is not None else {}
    return StreamwireDataSource({"service_url": c.url, **where, **options})


def _read(topic_attr: str, **options: str) -> Callable[[SparkCtx], object]:
    return lambda c: _source(c, getattr(c, topic_attr), **options).schema()


def _write(ddl: str, topic_attr: str = "topic", **options: str) -> Callable[[SparkCtx], object]:
    def run(c: SparkCtx) -> object:
        return _source(c, getattr(c, topic_attr), **options).writer(_struct(ddl), False)

    return run


def _stream_write(
    ddl: str, topic_attr: Optional[str] = "topic", **options: str
) -> Callable[[SparkCtx], object]:
    def run(c: SparkCtx) -> object:
        topic = getattr(c, topic_attr) if topic_attr else None
        return _source(c, topic, **options).streamWriter(_struct(ddl), False)

    return run


def _log_stream_write(url: str, **options: str) -> Callable[[SparkCtx], object]:
    """A streaming sink on TANK or Pravega (``url``): its options are checked when Spark asks
    for the writer, before anything connects."""

    def run(c: SparkCtx) -> object:
        from streamwire.spark.datasource import StreamwireDataSource

        where = {"service_url": url, "topic": "t", "scope": "sc", "stream": "st"}
        source = StreamwireDataSource({**where, **options})
        return source.streamWriter(_struct("value binary"), False)

    return run


def _struct(ddl: str) -> Any:
    """A StructType from ``name type, ...`` with simple types (no JVM needed)."""
    from pyspark.sql import types as T

    simple = {
        "string": T.StringType(),
        "int": T.IntegerType(),
        "bigint": T.LongType(),
        "double": T.DoubleType(),
        "decimal": T.DecimalType(10, 2),
        "map<int,string>": T.MapType(T.IntegerType(), T.StringType()),
        "binary": T.BinaryType(),
    }
    fields = []
    for part in ddl.split(","):
        name, typ = part.split()
        fields.append(T.StructField(name, simple[typ], True))
    return T.StructType(fields)


def _batch(**columns: Any) -> Any:
    import pyarrow as pa

    return pa.RecordBatch.from_pydict(columns)


def _send(**columns: Any) -> Callable[[SparkCtx], object]:
    return lambda c: c.producer.send_many(_batch(**columns))


SPARK_SCHEMA_CASES: list[SparkCase] = [
    SparkCase(
        "write: pulsar.client.* option",
        "one the source does not take (statsIntervalSeconds)",
        ConfigError,
        _write("value binary", **{"pulsar.client.statsIntervalSeconds": "60"}),
    ),
    SparkCase(
        "write: pulsar.producer.* option",
        "one the source does not take (hashingScheme)",
        ConfigError,
        _write("value binary", **{"pulsar.producer.hashingScheme": "Murmur3_32Hash"}),
    ),
    SparkCase(
        "write: pulsar.producer.* option",
        "contradicts the source's own spelling (sendTimeoutMs)",
        ConfigError,
        _write("value binary", sendTimeoutMs="1000", **{"pulsar.producer.sendTimeoutMs": "2"}),
    ),
    SparkCase(
        "writeStream: deliveryGuarantee",
        "neither at_least_once nor exactly_once",
        ConfigError,
        _stream_write("value binary", deliveryGuarantee="twice"),
    ),
    SparkCase(
        "writeStream: deliveryGuarantee",
        "exactly_once with a topic column and no transactionMarkerTopic",
        ConfigError,
        _stream_write("value binary, topic string", None, deliveryGuarantee="exactly_once"),
    ),
    SparkCase(
        "writeStream (TANK): deliveryGuarantee",
        "exactly_once (TANK has no transactions)",
        ConfigError,
        _log_stream_write("tank://127.0.0.1:1", deliveryGuarantee="exactly_once"),
    ),
    SparkCase(
        "writeStream (Pravega): transactionTimeoutMs",
        "500 (under a second)",
        ConfigError,
        _log_stream_write(
            "tcp://127.0.0.1:1", deliveryGuarantee="exactly_once", transactionTimeoutMs="500"
        ),
    ),
    SparkCase(
        "writeStream (Pravega): transactionIntentsPrefix",
        "with a '/'",
        ConfigError,
        _log_stream_write(
            "tcp://127.0.0.1:1", deliveryGuarantee="exactly_once", transactionIntentsPrefix="a/b"
        ),
    ),
    SparkCase(
        "writeStream (Pravega): deliveryGuarantee",
        "neither at_least_once nor exactly_once",
        ConfigError,
        _log_stream_write("tcp://127.0.0.1:1", deliveryGuarantee="twice"),
    ),
    SparkCase(
        "read: pulsar.reader.* option",
        "one the source does not take (readCompacted)",
        ConfigError,
        _read("topic", **{"pulsar.reader.readCompacted": "true"}),
    ),
    SparkCase("read: valueSchema", "not JSON", SchemaError, _read("topic", valueSchema="{nope")),
    SparkCase(
        "read: valueSchema",
        "JSON that is no record definition",
        SchemaError,
        _read("topic", valueSchema='{"type": "string"}'),
    ),
    SparkCase(
        "read: valueSchemaType",
        "xml",
        SchemaError,
        _read("topic", valueSchema=json.dumps(POINT), valueSchemaType="xml"),
    ),
    SparkCase(
        "read: topic schema",
        "a union other than [null, X]",
        SchemaError,
        _read("union_topic"),
        note="read it with valueSchema=none",
    ),
    SparkCase(
        "read: topic schema",
        "a record field named like a metadata column (key)",
        SchemaError,
        _read("clash_topic"),
        note="scalaNames=true names the metadata __key, ...",
    ),
    SparkCase(
        "write: DataFrame",
        "a column that is no field of the topic's record",
        SchemaError,
        _write("name string, count int, extra string"),
        note="on the driver, nothing sent",
    ),
    SparkCase(
        "write: DataFrame",
        "a string column for an int field",
        SchemaError,
        _write("name string, count string"),
        note="on the driver, nothing sent",
    ),
    SparkCase(
        "write: DataFrame",
        "no column for a non-nullable field",
        SchemaError,
        _write("count int"),
        note="on the driver, nothing sent",
    ),
    SparkCase(
        "write: DataFrame",
        "a decimal column, topic without a schema",
        SchemaError,
        _write("price decimal", "plain_topic"),
    ),
    SparkCase(
        "write: DataFrame",
        "typed columns for a topic with a STRING schema",
        SchemaError,
        _write("name string", "string_topic"),
    ),
    SparkCase(
        "write: batchingType",
        "by_key (not default or key_based)",
        ConfigError,
        _write("name string, count int", batchingType="by_key"),
        note="on the driver, nothing sent",
    ),
    SparkCase(
        "write: valueSchemaType",
        "xml",
        SchemaError,
        _write("name string, count int", valueSchema=json.dumps(POINT), valueSchemaType="xml"),
    ),
    SparkCase(
        "Producer.send_many()",
        "RecordBatch with a null in a non-nullable field",
        SchemaError,
        _send(name=["a", None], count=[1, 2]),
        note="nothing of the batch is sent",
    ),
    SparkCase(
        "Producer.send_many()",
        "RecordBatch with a column that is no field",
        SchemaError,
        _send(name=["a"], count=[1], extra=[1]),
    ),
    SparkCase(
        "Producer.send_many()",
        "RecordBatch with a bigint beyond an Avro int",
        SchemaError,
        _send(name=["a"], count=[1 << 40]),
    ),
    SparkCase(
        "Producer.send_many()",
        "RecordBatch with a string that is no enum symbol",
        SchemaError,
        _send(name=["a"], count=[1], color=["blue"]),
    ),
    SparkCase(
        "Producer.send_many()",
        "RecordBatch with a string column for an int field",
        SchemaError,
        _send(name=["a"], count=["1"]),
    ),
    SparkCase(
        "write: DataFrame",
        "a string column for an int32 field of a PROTOBUF_NATIVE topic",
        SchemaError,
        _write("sensor string, count string", "protobuf_topic"),
        note="on the driver, nothing sent",
    ),
    SparkCase(
        "write: DataFrame",
        "a column that is no field of a PROTOBUF_NATIVE topic's message",
        SchemaError,
        _write("sensor string, extra int", "protobuf_topic"),
        note="on the driver, nothing sent",
    ),
    SparkCase(
        "write: DataFrame",
        "no 'value' column for a KEY_VALUE topic",
        SchemaError,
        _write("key string", "kv_topic"),
        note="on the driver, nothing sent",
    ),
    SparkCase(
        "write: DataFrame",
        "a string 'key' column for a KEY_VALUE topic's record key half",
        SchemaError,
        _write("key string, value string", "kv_topic"),
        note="on the driver, nothing sent",
    ),
    SparkCase(
        "Lookup.schema()",
        "malformed topic name",
        InvalidArgumentError,
        lambda c: c.client.lookup().schema("persistent://only-tenant"),
    ),
]
