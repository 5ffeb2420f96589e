"""Typed Spark reads and writes of a 10-field Avro record on Apache Pulsar, side by side with
doing the same in Python per row with the official client's ``pulsar.schema.AvroSchema``.

Write: N rows of a cached DataFrame with 10 typed columns.
  ours:      ``df.write.format("streamwire")`` (schema derived, rows encoded in Rust)
  reference: ``mapInArrow`` encoding each row with the official ``AvroSchema.encode`` into a
             ``value`` column, then the raw ``df.write.format("streamwire")``
Read: the N records back, materialized with the ``noop`` sink.
  ours:      ``spark.read.format("streamwire")`` (typed columns, decoded in Rust)
  reference: the raw read (``valueSchema=none``) + ``mapInArrow`` decoding each row with the
             official ``AvroSchema.decode``
  raw:       the raw read alone (no decoding): the floor
Rates are rows/s of the whole Spark job (local[2], warm JVM: each job runs once untimed first).

With ``--protobuf`` the same 10 fields are a PROTOBUF_NATIVE message (proto3, built with
``descriptor_pb2``): ours writes to a topic registered with it and reads it back typed; the
reference encodes each row with the generated class's ``SerializeToString`` in ``mapInArrow``
before a raw write, and decodes each row with ``FromString`` after a raw read.

Usage: .venv/bin/python benches/spark_schema_bench.py [N] [--protobuf]  (starts Apache Pulsar)
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benches._spark import spark_session

COLUMNS = [
    "cast(concat('SYM', id % 50) as string) as symbol",
    "'XNYS' as venue",
    "if(id % 2 = 0, 'buy', 'sell') as side",
    "concat('trader-', id % 7) as trader",
    "cast(id % 1000 as int) as qty",
    "id as order_id",
    "id * 1000 as ts",
    "cast(id as double) / 8 as price",
    "cast(id % 13 as double) / 100 as fee",
    "id % 3 = 0 as filled",
]
DDL = (
    "symbol string, venue string, side string, trader string, qty int, order_id bigint, "
    "ts bigint, price double, fee double, filled boolean"
)


def official_record() -> Any:
    from pulsar import schema as ps

    class Trade(ps.Record):
        symbol = ps.String()
        venue = ps.String()
        side = ps.String()
        trader = ps.String()
        qty = ps.Integer()
        order_id = ps.Long()
        ts = ps.Long()
        price = ps.Double()
        fee = ps.Double()
        filled = ps.Boolean()

    return Trade


def trade_class() -> Any:
    """The generated-style protobuf class of the 10 fields (``bench.Trade``, proto3)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    types = {
        "string": F.TYPE_STRING,
        "int": F.TYPE_INT32,
        "bigint": F.TYPE_INT64,
        "double": F.TYPE_DOUBLE,
        "boolean": F.TYPE_BOOL,
    }
    fd = descriptor_pb2.FileDescriptorProto(name="bench/trade.proto", package="bench")
    fd.syntax = "proto3"
    m = fd.message_type.add(name="Trade")
    for i, part in enumerate(DDL.split(", "), start=1):
        name, ddl = part.split()
        m.field.add(name=name, number=i, type=types[ddl], label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Trade"))


def encode_rows_protobuf(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    trade = trade_class()
    for b in batches:
        out = [trade(**row).SerializeToString() for row in b.to_pylist()]
        yield pa.RecordBatch.from_arrays([pa.array(out, pa.binary())], names=["value"])


def decode_rows_protobuf(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    trade = trade_class()
    names = [n for n, _ in (p.split() for p in DDL.split(", "))]
    for b in batches:
        recs = [trade.FromString(v) for v in b.column("value").to_pylist()]
        yield pa.RecordBatch.from_pylist(
            [{n: getattr(r, n) for n in names} for r in recs], schema=_arrow_schema(names)
        )


def _arrow_schema(names: list[str]) -> Any:
    import pyarrow as pa

    return pa.schema(
        list(
            zip(
                names,
                [pa.string()] * 4
                + [pa.int32(), pa.int64(), pa.int64()]
                + [pa.float64()] * 2
                + [pa.bool_()],
            )
        )
    )


def encode_rows(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa
    from pulsar import schema as ps

    trade = official_record()
    schema = ps.AvroSchema(trade)
    for b in batches:
        out = [schema.encode(trade(**row)) for row in b.to_pylist()]
        yield pa.RecordBatch.from_arrays([pa.array(out, pa.binary())], names=["value"])


def decode_rows(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa
    from pulsar import schema as ps

    trade = official_record()
    schema = ps.AvroSchema(trade)
    names = [n for n, _ in (p.split() for p in DDL.split(", "))]
    for b in batches:
        recs = [schema.decode(v) for v in b.column("value").to_pylist()]
        yield pa.RecordBatch.from_pylist(
            [{n: getattr(r, n) for n in names} for r in recs], schema=_arrow_schema(names)
        )


def timed(label: str, n: int, fn: Callable[[], Any]) -> float:
    fn()  # warm-up (JIT, Python workers, connections)
    t = time.perf_counter()
    fn()
    dt = time.perf_counter() - t
    rate = n / dt
    print(f"{label:<60} {dt:7.2f} s  {rate:>10,.0f} rows/s", flush=True)
    return rate


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    protobuf = "--protobuf" in sys.argv[1:]
    n = int(args[0]) if args else 200_000
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import streamwire.spark

    from tests.peers.apache import ApachePulsar

    broker: Any = ApachePulsar()
    broker.start()
    spark = spark_session()
    streamwire.spark.register(spark)
    url = broker.service_url
    try:
        df = spark.range(n).selectExpr(*COLUMNS).repartition(2).cache()
        df.count()
        kind = "PROTOBUF_NATIVE" if protobuf else "Avro"
        print(
            f"N={n} rows, 10 fields ({kind}), Apache Pulsar 4.0.7, Spark local[2]; "
            f"load: {os.getloadavg()}"
        )
        topics = {k: f"persistent://public/default/bench-{k}-{uuid.uuid4().hex}" for k in "ab"}

        # Both sides use the official record's definition (every field ["null", X]); for
        # protobuf, topic a is registered with the message (ours writes it as the registry's).
        definition = json.dumps(official_record().schema())
        opts: dict[str, str] = {"valueSchema": definition}
        encoder, decoder, ref_name = encode_rows, decode_rows, "official"
        if protobuf:
            from streamwire.schema import ProtobufNative

            with streamwire.Client(url) as client:
                client.create_producer(topics["a"], schema=ProtobufNative(trade_class())).close()
            opts, encoder, decoder = {}, encode_rows_protobuf, decode_rows_protobuf
            ref_name = "protobuf"

        def write(topic: str, frame: Any, **opts: str) -> Callable[[], Any]:
            def run() -> None:
                w = frame.write.format("streamwire").option("service_url", url)
                for k, v in opts.items():
                    w = w.option(k, v)
                w.option("topic", topic).mode("append").save()

            return run

        ours_w = timed(
            "write ours (typed columns, Rust encode)",
            n,
            write(topics["a"], df, **opts),
        )
        ref = df.mapInArrow(encoder, "value binary")
        ref_w = timed(
            f"write reference (Python per-row {ref_name} encode + raw)", n, write(topics["b"], ref)
        )

        def read(topic: str, **opts: str) -> Any:
            r = spark.read.format("streamwire").option("service_url", url).option("topic", topic)
            for k, v in opts.items():
                r = r.option(k, v)
            return r.load()

        # Each read reads one copy (the warm-up wrote the topic twice: 2n rows).
        m = 2 * n
        ours_r = timed(
            "read ours (typed columns, Rust decode)",
            m,
            lambda: read(topics["a"]).write.format("noop").mode("overwrite").save(),
        )
        ref_r = timed(
            f"read reference (raw + Python per-row {ref_name} decode)",
            m,
            lambda: (
                read(topics["a"], valueSchema="none")
                .select("value")
                .mapInArrow(decoder, DDL)
                .write.format("noop")
                .mode("overwrite")
                .save()
            ),
        )
        timed(
            "read raw bytes (no decoding: the floor)",
            m,
            lambda: (
                read(topics["a"], valueSchema="none").write.format("noop").mode("overwrite").save()
            ),
        )
        print(
            f"write ours/reference {ours_w / ref_w:.2f}x; read ours/reference {ours_r / ref_r:.2f}x"
        )
        print(f"load after: {os.getloadavg()}")
    finally:
        spark.stop()
        broker.close()


if __name__ == "__main__":
    main()
