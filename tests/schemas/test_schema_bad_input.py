"""Runs ``tests/schemas/bad_cases.py`` against Apache Pulsar: each case raises its typed
exception, and the client, the typed producer and a typed consumer keep working after it
(nothing of a refused send reaches the topic)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import streamwire
from streamwire.schema import AvroSchema, KeyValueSchema, StringSchema

from tests.bad_runner import check_raises, ids
from tests.schemas.bad_cases import SCHEMA_CASES, Point, SchemaCase, SchemaCtx


@pytest.fixture(scope="module")
def sctx(apache_broker: Any) -> Iterator[tuple[SchemaCtx, streamwire.Consumer]]:
    url = apache_broker.service_url
    topic = f"persistent://public/default/bad-schema-{uuid.uuid4().hex}"
    with streamwire.Client(url, operation_timeout=20) as client:
        producer = client.create_producer(topic, schema=AvroSchema(Point))
        consumer = client.subscribe(
            topic, "live", initial_position="earliest", schema=AvroSchema(Point)
        )
        kv = client.create_producer(
            f"{topic}-kv",
            schema=KeyValueSchema(StringSchema(), StringSchema(), encoding="separated"),
        )
        yield SchemaCtx(url, topic, client, producer, kv), consumer


@pytest.mark.parametrize("case", SCHEMA_CASES, ids=ids(SCHEMA_CASES))
def test_schema_bad_input(sctx: tuple[SchemaCtx, streamwire.Consumer], case: SchemaCase) -> None:
    ctx, consumer = sctx

    def still_works(ctx: SchemaCtx) -> None:
        # The next message is the one sent now: a refused value sent nothing.
        marker = Point(int(uuid.uuid4().int % 10**9), "after")
        ctx.producer.send(marker)
        msg = consumer.receive(timeout=15)
        assert msg.value == marker
        consumer.acknowledge(msg)

    check_raises(case, ctx, still_works)
