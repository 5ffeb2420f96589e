"""``send_many(values, schema=S)`` on Apache Pulsar 4.0.7 (issue 16): every message of the call
carries ``S``'s registry version (GET_OR_CREATE_SCHEMA, once per producer and schema), the
messages batch together (a batch carries one version: a message of another version closes
the open batch first), and consumers decode each message with its writer's version —
``Message.value``, ``receive_arrow``, and the official client with its ``pulsar.schema``
classes."""

from __future__ import annotations

import asyncio
from types import ModuleType
from typing import Any

import pytest
import streamwire
from streamwire import aio
from streamwire.schema import AvroSchema, JsonSchema

from tests.schemas.records import official_multi_classes
from tests.schemas.test_schema_versions import V1, renamed_v2, v1_schema


def v2_dict(i: int, note: str | None = None) -> dict[str, Any]:
    return {"id": i, "name": f"n{i}", "note": note}


def as_v2(v: Any) -> dict[str, Any]:
    """A value as read with V2 (a V1 value gets V2's default note)."""
    if isinstance(v, V1):
        return {"id": v.id, "name": v.name, "note": None}
    return dict(v)


@pytest.mark.parametrize("kind", ["avro", "json"])
def test_send_many_with_another_schema_carries_its_version(
    apache_broker: Any, unique_topic: str, kind: str
) -> None:
    import pyarrow as pa

    v2 = renamed_v2(kind)
    own = [V1(0, "zero"), V1(1, "one")]
    other = [v2_dict(2, "two"), v2_dict(3, None), v2_dict(4, "four")]
    arrow = pa.RecordBatch.from_pylist(
        [v2_dict(5, "five"), v2_dict(6, None)],
        schema=pa.schema([("id", pa.int64()), ("name", pa.string()), ("note", pa.string())]),
    )
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=v1_schema(kind))
        own_ids = p.send_many(own)
        other_ids = p.send_many(other, schema=v2)
        arrow_ids = p.send_many(arrow, schema=v2)
        v2_version = p.register_schema(v2)
        assert v2_version and v2_version != p.schema_version
        # One call of one schema is one batch entry (not one entry per message), and
        # calls of different versions are different entries.
        for ids in (own_ids, other_ids, arrow_ids):
            assert len({(m.ledger_id, m.entry_id) for m in ids}) == 1
            assert [m.batch_index for m in ids] == list(range(len(ids)))
        assert own_ids[0].entry_id != other_ids[0].entry_id != arrow_ids[0].entry_id
        written = own + other + arrow.to_pylist()
        versions = [p.schema_version] * 2 + [v2_version] * 5
        # Message.value with the reader's schema V2, and with V1.
        r = client.create_reader(unique_topic, "earliest", schema=v2)
        got = [r.read_next(timeout=15) for _ in written]
        assert [m.value for m in got] == [as_v2(v) for v in written]
        assert [m.schema_version for m in got] == versions
        r.close()
        r1 = client.create_reader(unique_topic, "earliest", schema=v1_schema(kind))
        got1 = [r1.read_next(timeout=15).value for _ in written]
        assert got1 == [V1(v["id"], v["name"]) for v in map(as_v2, written)]
        r1.close()
        # receive_arrow: each message decoded with its writer's version, resolved to V2.
        c = client.subscribe(unique_topic, "arrow", initial_position="earliest", schema=v2)
        rows: list[Any] = []
        while len(rows) < len(written):
            batch = c.receive_arrow(100, timeout=15, columns=["value"])
            rows += batch.column("value").to_pylist()
        assert rows == [as_v2(v) for v in written]
        c.close()
        p.close()


def test_single_sends_and_send_many_of_two_schemas_interleaved(
    apache_broker: Any, unique_topic: str
) -> None:
    v2 = renamed_v2("avro")
    with streamwire.Client(apache_broker.service_url) as client:
        # A long batching delay: the async sends below land in open batches, so the
        # batching rule (one version per batch, in order) decides what goes where.
        p = client.create_producer(unique_topic, schema=AvroSchema(V1), batching_max_delay=0.5)
        v2_version = p.register_schema(v2)
        own = p.schema_version
        plan: list[tuple[str, Any]] = [
            ("async", V1(0, "a")),
            ("async-v2", v2_dict(1, "b")),
            ("async-v2", v2_dict(2, "c")),
            ("many", [V1(3, "d"), V1(4, "e")]),
            ("many-v2", [v2_dict(5, "f"), v2_dict(6, None)]),
            ("async", V1(7, "g")),
            ("many-v2", [v2_dict(8, "h")]),
            ("async-v2", v2_dict(9, "i")),
            ("send", V1(10, "j")),
            ("many", [V1(11, "k")]),
            ("send-v2", v2_dict(12, "l")),
        ]
        written: list[Any] = []
        versions: list[bytes | None] = []
        futures = []
        for how, v in plan:
            schema = v2 if how.endswith("-v2") else None
            version = v2_version if schema else own
            if how.startswith("async"):
                futures.append(p.send_async(v, schema=schema))
                written.append(v)
                versions.append(version)
            elif how.startswith("many"):
                # send_many waits for its receipts: the open async batch goes first.
                p.send_many(v, schema=schema)
                written += v
                versions += [version] * len(v)
            else:
                p.send(v, schema=schema)
                written.append(v)
                versions.append(version)
        ids = [f.result(timeout=15) for f in futures]
        assert len(ids) == 5
        # Consecutive async sends of one version shared a batch; another version did not.
        assert (ids[1].ledger_id, ids[1].entry_id) == (ids[2].ledger_id, ids[2].entry_id)
        assert ids[0].entry_id != ids[1].entry_id
        r = client.create_reader(unique_topic, "earliest", schema=v2)
        got = [r.read_next(timeout=15) for _ in written]
        assert [m.value for m in got] == [as_v2(v) for v in written]
        assert [m.schema_version for m in got] == versions
        assert [m.value["id"] for m in got] == list(range(13))
        assert r.read_many(10, timeout=0.5) == []
        r.close()
        p.close()


def test_the_official_client_reads_send_many_of_another_schema(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    s = official_pulsar.schema
    OfficialV1, OfficialV2 = official_multi_classes(official_pulsar)
    oc = official_pulsar.Client(apache_broker.service_url)
    try:
        with streamwire.Client(apache_broker.service_url) as client:
            p = client.create_producer(unique_topic, schema=JsonSchema(V1))
            c1 = oc.subscribe(unique_topic, "o1", schema=s.JsonSchema(OfficialV1))
            c2 = oc.subscribe(unique_topic, "o2", schema=s.JsonSchema(OfficialV2))
            p.send_many([v2_dict(1, "x"), v2_dict(2, None)], schema=renamed_v2("json"))
            p.send_many([V1(3, "three")])
            v2_version = p.register_schema(renamed_v2("json"))
            got1 = [c1.receive(15_000) for _ in range(3)]
            assert [(m.value().id, m.value().name) for m in got1] == [
                (1, "n1"),
                (2, "n2"),
                (3, "three"),
            ]
            got2 = [c2.receive(15_000) for _ in range(3)]
            assert [(m.value().id, m.value().note) for m in got2] == [
                (1, "x"),
                (2, None),
                (3, None),
            ]
            # The official client gives the version as a str of the bytes.
            seen = [m.schema_version().encode("latin-1") for m in got2]
            assert seen == [v2_version, v2_version, p.schema_version]
            p.close()
    finally:
        oc.close()


def test_asyncio_send_many_with_schema(apache_broker: Any, unique_topic: str) -> None:
    async def main() -> None:
        v2 = renamed_v2("avro")
        async with aio.Client(apache_broker.service_url) as client:
            p = await client.create_producer(unique_topic, schema=AvroSchema(V1))
            f1 = p.send_many([v2_dict(1, "a"), v2_dict(2, None)], schema=v2)
            f2 = p.send_many([V1(3, "c")])
            ids = await f1
            await f2
            assert [m.batch_index for m in ids] == [0, 1]
            version = await p.register_schema(v2)
            r = await client.create_reader(unique_topic, "earliest", schema=v2)
            got = [await r.read_next(timeout=15) for _ in range(3)]
            assert [m.value for m in got] == [
                v2_dict(1, "a"),
                v2_dict(2, None),
                v2_dict(3, None) | {"name": "c"},
            ]
            own = p._native.schema_version  # the aio wrapper has no getter for it
            assert [m.schema_version for m in got] == [version, version, own]
            await r.close()
            await p.close()

    asyncio.run(main())


def test_send_many_with_schema_in_a_transaction(apache_broker: Any, unique_topic: str) -> None:
    v2 = renamed_v2("avro")
    with streamwire.Client(apache_broker.service_url, operation_timeout=30) as client:
        p = client.create_producer(unique_topic, schema=AvroSchema(V1))
        r = client.create_reader(unique_topic, "earliest", schema=v2)
        t = client.transaction()
        p.send_many([v2_dict(1, "a"), v2_dict(2, None)], schema=v2, txn=t)
        p.send_many([V1(3, "c")], txn=t)
        assert r.read_many(10, timeout=1) == []  # not visible before the commit
        t.commit()
        got = [r.read_next(timeout=15) for _ in range(3)]
        assert [m.value["id"] for m in got] == [1, 2, 3]
        assert got[0].value == v2_dict(1, "a")
        version = p.register_schema(v2)
        assert [m.schema_version for m in got] == [version, version, p.schema_version]
        r.close()
        p.close()
