"""Runs ``tests/spark/bad_cases.py`` against Apache Pulsar: each case raises its typed
exception, and the client and the typed producer keep working after it (nothing of a refused
batch reaches the topic)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import streamwire
from streamwire.schema import AvroSchema, KeyValueSchema, ProtobufNative, StringSchema

from tests.bad_runner import check_raises, ids
from tests.schemas.protos import reading_classes
from tests.spark.bad_cases import CLASH, POINT, SPARK_SCHEMA_CASES, UNION, SparkCase, SparkCtx


@pytest.fixture(scope="module")
def sctx(apache_broker: Any) -> Iterator[tuple[SparkCtx, streamwire.Consumer]]:
    url = apache_broker.service_url
    base = f"persistent://public/default/bad-spark-{uuid.uuid4().hex}"
    with streamwire.Client(url, operation_timeout=20) as client:
        producer = client.create_producer(base, schema=AvroSchema(definition=POINT))
        consumer = client.subscribe(
            base, "live", initial_position="earliest", schema=AvroSchema(definition=POINT)
        )
        for suffix, schema in (
            ("-union", AvroSchema(definition=UNION)),
            ("-clash", AvroSchema(definition=CLASH)),
            ("-string", StringSchema()),
            ("-protobuf", ProtobufNative(reading_classes()[0])),
            (
                "-kv",
                KeyValueSchema(AvroSchema(definition=POINT), StringSchema(), encoding="separated"),
            ),
        ):
            client.create_producer(base + suffix, schema=schema).close()
        yield (
            SparkCtx(
                url,
                client,
                base,
                base + "-union",
                base + "-clash",
                base + "-string",
                base + "-plain",
                producer,
                base + "-protobuf",
                base + "-kv",
            ),
            consumer,
        )


#: The tags of the good batches sent after each case (one per case, in order).
SENT_CHECKS: set[str] = set()


@pytest.mark.parametrize("case", SPARK_SCHEMA_CASES, ids=ids(SPARK_SCHEMA_CASES))
def test_spark_schema_bad_input(
    sctx: tuple[SparkCtx, streamwire.Consumer], case: SparkCase
) -> None:
    ctx, consumer = sctx

    def still_works(ctx: SparkCtx) -> None:
        # A good record batch goes through and is the next new message: the only others
        # allowed before it are earlier cases' checks that arrived late (a loaded machine
        # once took over 15 s to deliver one, and every later case then read its
        # predecessor's). Nothing of a refused batch may arrive.
        import pyarrow as pa

        tag = uuid.uuid4().hex
        ctx.producer.send_many(pa.RecordBatch.from_pydict({"name": [tag], "count": [1]}))
        while True:
            m = consumer.receive(timeout=60)
            consumer.acknowledge(m)
            value = m.value
            if isinstance(value, dict) and value.get("name") in SENT_CHECKS:
                continue
            break
        SENT_CHECKS.add(tag)
        assert value == {"name": tag, "count": 1, "color": None}, json.dumps(str(value))

    check_raises(case, ctx, still_works)
