"""``format("streamwire")`` on Pravega (``service_url`` = ``tcp://controller``), against the
suite's Pravega standalone: batch write and read back, stream-cut offsets, column selection,
reads across a scale, and streaming reads restarted from a checkpoint with no gap and no
duplicate; and a batch write and read over ``tls://`` with Basic auth on the secured
standalone."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from streamwire import pravega as pv

from tests.spark.helpers import available_now, copy_stream


def fresh(url: str, segments: int) -> tuple[str, str]:
    scope, stream = "sp" + uuid.uuid4().hex[:10], "s"
    with pv.Client(url) as c:
        c.create_scope(scope)
        c.create_stream(scope, stream, segments=segments)
    return scope, stream


def write(url: str, scope: str, stream: str, values: list[bytes]) -> None:
    with pv.Client(url) as c, c.create_writer(scope, stream) as w:
        w.write_many(values, [f"k{i % 13}" for i in range(len(values))])


def _reader(spark: Any, url: str, scope: str, stream: str) -> Any:
    return (
        spark.read.format("streamwire")
        .option("service_url", url)
        .option("scope", scope)
        .option("stream", stream)
    )


def test_batch_write_then_read(spark: Any, pravega: Any) -> None:
    url = pravega.controller_url
    scope, stream = fresh(url, 3)
    rows = [(f"v{i}".encode(), f"key{i % 7}") for i in range(1000)]
    df = spark.createDataFrame(rows, "value binary, routing_key string")
    df.write.format("streamwire").mode("append").option("service_url", url).option(
        "scope", scope
    ).option("stream", stream).save()
    back = _reader(spark, url, scope, stream).load()
    assert back.columns == ["value", "stream", "segment", "offset"]
    got = back.collect()
    assert sorted(bytes(r.value) for r in got) == sorted(r[0] for r in rows)
    assert {r.stream for r in got} == {f"{scope}/{stream}"}
    # A routing key's rows share a segment.
    by_key: dict[int, set[int]] = {}
    for r in got:
        by_key.setdefault(int(bytes(r.value)[1:]) % 7, set()).add(r.segment)
    assert all(len(s) == 1 for s in by_key.values())


def test_offsets_and_column_selection(spark: Any, pravega: Any) -> None:
    url = pravega.controller_url
    scope, stream = fresh(url, 1)
    values = [b"%03d" % i for i in range(100)]  # 11-byte frames
    with pv.Client(url) as c, c.create_writer(scope, stream) as w:
        w.write_many(values)
    df = (
        _reader(spark, url, scope, stream)
        .schema("value binary, offset bigint")
        .option("startingOffsets", json.dumps({"0": 110}))
        .option("endingOffsets", json.dumps({"0": 220}))
        .load()
    )
    got = sorted((r.offset, bytes(r.value)) for r in df.collect())
    assert got == [(11 * i, b"%03d" % i) for i in range(10, 20)]


def test_batch_read_follows_a_scale(spark: Any, pravega: Any) -> None:
    url = pravega.controller_url
    scope, stream = fresh(url, 1)
    with pv.Client(url) as c:
        head = c.head(scope, stream)
        write(url, scope, stream, [b"a%d" % i for i in range(500)])
        seg = c.segments(scope, stream)[0]
        c.scale_stream(scope, stream, [seg.segment_id], [(0.0, 0.5), (0.5, 1.0)])
        write(url, scope, stream, [b"b%d" % i for i in range(500)])
        assert len(c.segments(scope, stream)) == 2
    df = _reader(spark, url, scope, stream).option(
        "startingOffsets", json.dumps({str(k): v for k, v in head.positions.items()})
    )
    got = [bytes(r.value) for r in df.load().collect()]
    assert sorted(got) == sorted(
        [b"a%d" % i for i in range(500)] + [b"b%d" % i for i in range(500)]
    )


def _stream(spark: Any, url: str, scope: str, stream: str, out: Path, ckpt: Path) -> Any:
    opts = {"service_url": url, "scope": scope, "stream": stream, "startingOffsets": "earliest"}
    return available_now(
        spark, opts, out, ckpt, ("cast(value as string) as v", "segment", "offset")
    )


def test_streaming_restarts_from_the_checkpoint(spark: Any, pravega: Any, tmp_path: Path) -> None:
    url = pravega.controller_url
    scope, stream = fresh(url, 2)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    write(url, scope, stream, [b"a%d" % i for i in range(300)])
    _stream(spark, url, scope, stream, out, ckpt)
    write(url, scope, stream, [b"b%d" % i for i in range(200)])
    _stream(spark, url, scope, stream, out, ckpt)
    rows = spark.read.parquet(str(out)).collect()
    assert len(rows) == 500
    assert {r.v for r in rows} == {f"a{i}" for i in range(300)} | {f"b{i}" for i in range(200)}
    assert len({(r.segment, r.offset) for r in rows}) == 500


def _batches(spark: Any, options: dict[str, str], ckpt: Path) -> list[list[Any]]:
    """Run a streaming query to the streams' tails (Trigger.AvailableNow); the rows of each
    micro-batch, in order."""
    got: dict[int, list[Any]] = {}

    def keep(df: Any, batch_id: int) -> None:
        got[batch_id] = df.collect()

    reader = spark.readStream.format("streamwire")
    for k, v in options.items():
        reader = reader.option(k, v)
    query = (
        reader.load()
        .writeStream.foreachBatch(keep)
        .option("checkpointLocation", str(ckpt))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    assert query.exception() is None, query.exception()
    return [got[i] for i in sorted(got) if got[i]]


def test_streaming_caps_records_per_trigger(spark: Any, pravega: Any, tmp_path: Path) -> None:
    url = pravega.controller_url
    scope, stream = fresh(url, 2)
    write(url, scope, stream, [b"r%04d" % i for i in range(1000)])
    options = {
        "service_url": url,
        "scope": scope,
        "stream": stream,
        "startingOffsets": "earliest",
        "maxRecordsPerTrigger": "300",
    }
    batches = _batches(spark, options, tmp_path / "ckpt")
    assert [len(b) for b in batches] == [300, 300, 300, 100]
    values = [bytes(r.value) for b in batches for r in b]
    assert sorted(values) == [b"r%04d" % i for i in range(1000)]
    # A restart from the checkpoint reads only what came later, still capped.
    write(url, scope, stream, [b"s%04d" % i for i in range(450)])
    more = _batches(spark, options, tmp_path / "ckpt")
    assert [len(b) for b in more] == [300, 150]
    assert sorted(bytes(r.value) for b in more for r in b) == [b"s%04d" % i for i in range(450)]


def test_streaming_caps_bytes_per_trigger(spark: Any, pravega: Any, tmp_path: Path) -> None:
    url = pravega.controller_url
    scope, stream = fresh(url, 2)
    values = [b"%05d" % i + b"y" * 95 for i in range(600)]  # 100-byte payloads
    write(url, scope, stream, values)
    options = {
        "service_url": url,
        "scope": scope,
        "stream": stream,
        "startingOffsets": "earliest",
        "maxBytesPerTrigger": "25050",
    }
    batches = _batches(spark, options, tmp_path / "ckpt")
    sizes = [len(b) for b in batches]
    assert sizes == [250, 250, 100], sizes
    assert sorted(bytes(r.value) for b in batches for r in b) == sorted(values)


def test_streaming_reads_several_streams(spark: Any, pravega: Any, tmp_path: Path) -> None:
    url = pravega.controller_url
    scope_a, a = fresh(url, 2)
    scope_b, b = fresh(url, 1)
    write(url, scope_a, a, [b"a%03d" % i for i in range(300)])
    write(url, scope_b, b, [b"b%03d" % i for i in range(100)])
    options = {
        "service_url": url,
        "streams": f"{scope_a}/{a},{scope_b}/{b}",
        "startingOffsets": "earliest",
        "maxRecordsPerTrigger": "200",
    }
    batches = _batches(spark, options, tmp_path / "ckpt")
    # 100 each first (an even share), then what b (drained) leaves goes to a.
    assert [len(x) for x in batches] == [200, 200]
    assert sorted(bytes(r.value) for r in batches[0] if r.stream == f"{scope_b}/{b}") == [
        b"b%03d" % i for i in range(100)
    ]
    rows = [r for x in batches for r in x]
    assert {r.stream for r in rows} == {f"{scope_a}/{a}", f"{scope_b}/{b}"}
    assert sorted(bytes(r.value) for r in rows) == sorted(
        [b"a%03d" % i for i in range(300)] + [b"b%03d" % i for i in range(100)]
    )
    # The checkpoint holds one cut per stream; a restart reads only the new events.
    write(url, scope_b, b, [b"c%03d" % i for i in range(50)])
    more = _batches(spark, options, tmp_path / "ckpt")
    assert sorted(bytes(r.value) for x in more for r in x) == [b"c%03d" % i for i in range(50)]
    # A batch read of the same two streams sees everything.
    df = spark.read.format("streamwire").option("service_url", url)
    df = df.option("streams", options["streams"]).load()
    assert df.count() == 450


def test_streaming_write_copies_a_stream_and_resumes(
    spark: Any, pravega: Any, tmp_path: Path
) -> None:
    """``writeStream.format("streamwire")`` to Pravega: a stream read from one Pravega stream
    is written to another, micro-batch by micro-batch (with a routing key column); a second
    run resumes from the checkpoint and writes only what was added."""
    url = pravega.controller_url
    (scope, source), (sink_scope, sink) = fresh(url, 2), fresh(url, 1)
    opts = {"service_url": url, "scope": scope, "stream": source, "startingOffsets": "earliest"}
    to = {"service_url": url, "scope": sink_scope, "stream": sink}
    cols = ("value", "cast(segment as string) as routing_key")
    write(url, scope, source, [b"a%d" % i for i in range(300)])
    copy_stream(spark, opts, to, tmp_path / "ckpt", cols)
    write(url, scope, source, [b"b%d" % i for i in range(200)])
    copy_stream(spark, opts, to, tmp_path / "ckpt", cols)
    got = sorted(bytes(r.value) for r in _reader(spark, url, sink_scope, sink).load().collect())
    assert got == sorted([b"a%d" % i for i in range(300)] + [b"b%d" % i for i in range(200)])


def test_batch_write_and_read_over_tls_with_auth(spark: Any, secure_pravega: Any) -> None:
    """``tls://`` with the trust file and Basic credentials as options (the executors build
    their clients from them), against the secured standalone."""
    from tests.peers.pravega import ACCOUNTS

    url = secure_pravega.controller_url
    secured = {
        "service_url": url,
        "pravega.tls.trustStore": str(secure_pravega.pki.ca),
        "pravega.auth.username": "writer",
        "pravega.auth.password": ACCOUNTS["writer"],
    }
    scope = "spt" + uuid.uuid4().hex[:8]
    with pv.Client(
        url,
        tls_trust_certs_file=secured["pravega.tls.trustStore"],
        username="writer",
        password=ACCOUNTS["writer"],
    ) as c:
        c.create_scope(scope)
        c.create_stream(scope, "s", segments=2)
    rows = [(f"t{i}".encode(), f"k{i % 5}") for i in range(300)]
    df = spark.createDataFrame(rows, "value binary, routing_key string")
    df.write.format("streamwire").mode("append").options(**secured).option("scope", scope).option(
        "stream", "s"
    ).save()
    back = spark.read.format("streamwire").options(**secured).option("scope", scope)
    got = back.option("stream", "s").load().collect()
    assert sorted(bytes(r.value) for r in got) == sorted(r[0] for r in rows)


def test_pravega_tls_and_auth_options_reach_its_client_config() -> None:
    from streamwire.spark.pravega_source import PravegaSourceConfig

    cfg = PravegaSourceConfig.from_options(
        {
            "service_url": "tls://h:9090",
            "scope": "sc",
            "stream": "st",
            "pravega.tls.trustStore": "/ca.pem",
            "pravega.tls.validateHostName": "false",
            "pravega.auth.username": "u",
            "pravega.auth.password": "s3cret-pw",
        }
    ).client
    assert (cfg.controller_uri, cfg.tls_trust_certs_file) == ("tls://h:9090", "/ca.pem")
    assert cfg.tls_disable_hostname_verification_DANGEROUS is True
    assert (cfg.username, cfg.password, cfg.auth_method, cfg.auth_token) == (
        "u",
        "s3cret-pw",
        None,
        None,
    )
    assert "s3cret-pw" not in repr(cfg)
    token = PravegaSourceConfig.from_options(
        {
            "service_url": "tls://h:9090",
            "scope": "sc",
            "stream": "st",
            "pravega.auth.method": "Bearer",
            "pravega.auth.token": "t0k",
        }
    ).client
    assert (
        token.auth_method,
        token.auth_token,
        token.tls_disable_hostname_verification_DANGEROUS,
    ) == (
        "Bearer",
        "t0k",
        False,
    )
