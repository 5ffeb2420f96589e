"""The installed ``streamwire`` console script, run as a user runs it, on each protocol:
pulsar-lite, the TANK broker (real or double) and Pravega 0.13.0 standalone. What the CLI
produced is checked with the library (and on Pulsar with the official client)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from types import ModuleType

import pytest
from streamwire import pravega as pv
from streamwire import tank
from streamwire.cli.histogram import Histogram

from tests.cli.bad_cases import CLI_CASES, CliCase
from tests.peers.apache import ApachePulsar
from tests.peers.lite import PulsarLite
from tests.peers.pravega import PravegaStandalone
from tests.peers.tank import TankBroker

SCRIPT = Path(sys.executable).parent / "streamwire"


def run(
    *args: str, stdin: bytes | None = None, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# -- Pulsar ---------------------------------------------------------------------------------


def test_pulsar_produce_read_consume_lookup_topics(
    lite_broker: PulsarLite, official_pulsar: ModuleType
) -> None:
    url = lite_broker.service_url
    topic = f"persistent://public/default/cli-{uuid.uuid4().hex[:10]}"
    r = run("produce", url, topic, "-m", "one", "-m", "two", "-k", "k1", "-p", "src=cli")
    assert r.returncode == 0, r.stderr
    assert "produced 2 message(s)" in r.stderr
    r = run("produce", url, topic, "-f", "-", stdin=b"three\nfour\n")
    assert r.returncode == 0, r.stderr

    # The official client reads what the CLI wrote, with its key and property.
    client = official_pulsar.Client(url)
    try:
        reader = client.create_reader(topic, official_pulsar.MessageId.earliest)
        got = [reader.read_next(timeout_millis=5000) for _ in range(4)]
        assert [m.data() for m in got] == [b"one", b"two", b"three", b"four"]
        assert got[0].partition_key() == "k1"
        assert got[0].properties() == {"src": "cli"}
    finally:
        client.close()

    r = run("read", url, topic, "--format", "json", "--idle", "1")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["value"] for row in rows] == ["one", "two", "three", "four"]
    assert rows[0]["key"] == "k1" and rows[0]["properties"] == {"src": "cli"}

    r = run("consume", url, topic, "-s", "cli-sub", "--start", "earliest", "-n", "2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.rsplit(" ", 1)[1] for line in lines] == ["one", "two"]
    assert " key=k1 " in lines[0]
    # Both acknowledged (one batch, wholly acknowledged): the subscription goes on after them.
    r = run("consume", url, topic, "-s", "cli-sub", "-n", "2", "--idle", "5")
    assert r.returncode == 0, r.stderr
    assert [line.rsplit(" ", 1)[1] for line in r.stdout.splitlines()] == ["three", "four"]

    r = run("lookup", url, topic)
    assert r.returncode == 0, r.stderr
    (row,) = [json.loads(line) for line in r.stdout.splitlines()]
    assert row["topic"] == topic and row["broker"].startswith("pulsar://")


def test_pulsar_topics_on_apache(apache_broker: ApachePulsar) -> None:
    # pulsar-lite does not answer GetTopicsOfNamespace: list on Apache Pulsar.
    url = apache_broker.service_url
    topic = f"persistent://public/default/cli-{uuid.uuid4().hex[:10]}"
    assert run("produce", url, topic, "-m", "x").returncode == 0
    r = run("topics", url, "public/default")
    assert r.returncode == 0, r.stderr
    assert topic in r.stdout.splitlines()


def test_pulsar_perf_produce_and_consume(lite_broker: PulsarLite) -> None:
    url = lite_broker.service_url
    topic = f"persistent://public/default/cli-perf-{uuid.uuid4().hex[:10]}"
    r = run("perf", "produce", url, topic, "--seconds", "2.5", "--rate", "8000", "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.splitlines()[-1])
    sent = summary["messages"]
    assert 12_000 <= sent <= 20_001 and summary["msg_per_s"] > 0  # paced at --rate
    lat = summary["latency"]
    assert 0 < lat["p50_ms"] <= lat["p99_ms"] <= lat["max_ms"]
    assert "msg/s" in r.stderr  # the progress line (non-tty: one line a second)

    r = run("perf", "consume", url, topic, "--start", "earliest", "-s", "p", "-n", str(sent))
    assert r.returncode == 0, r.stderr
    assert f"consume: {sent:,} messages" in r.stdout
    assert "p99" in r.stdout and "| #" in r.stdout  # summary and histogram bars


# -- TANK and Pravega -----------------------------------------------------------------------


def test_tank_produce_read_lookup_topics(tank_broker: TankBroker) -> None:
    name = "cli" + uuid.uuid4().hex[:12]
    with tank.Client(tank_broker.url) as c:
        c.create_topic(name, partitions=2)
    r = run("produce", tank_broker.url, name, "-m", "a", "-m", "b", "-k", "kk")
    assert r.returncode == 0, r.stderr
    r = run("read", tank_broker.url, name, "--format", "json", "--idle", "1")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert sorted(row["value"] for row in rows) == ["a", "b"]
    assert {row["key"] for row in rows} == {"kk"}
    r = run("lookup", tank_broker.url, name)
    parts = [json.loads(line) for line in r.stdout.splitlines()]
    assert [p["partition"] for p in parts] == [0, 1]
    assert sum(p["high_water"] for p in parts) == 2
    assert name in run("topics", tank_broker.url).stdout.splitlines()
    r = run("perf", "produce", tank_broker.url, name, "-n", "5000", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[-1])["messages"] == 5000
    # No subscriptions on TANK: a clear, typed refusal, exit status 2.
    r = run("consume", tank_broker.url, name, "-s", "x")
    assert r.returncode == 2 and "InvalidArgumentError" in r.stderr


def test_pravega_produce_read_lookup_topics(pravega: PravegaStandalone) -> None:
    url = pravega.controller_url
    scope, stream = "cli" + uuid.uuid4().hex[:8], "s1"
    with pv.Client(url) as c:
        c.create_scope(scope)
        c.create_stream(scope, stream, segments=2)
    topic = f"{scope}/{stream}"
    r = run("produce", url, topic, "-m", "e1", "-m", "e2", "-k", "route")
    assert r.returncode == 0, r.stderr
    r = run("read", url, topic, "--idle", "1")
    assert r.returncode == 0, r.stderr
    assert [line.split("] ", 1)[1] for line in r.stdout.splitlines()] == ["e1", "e2"]
    segs = [json.loads(line) for line in run("lookup", url, topic).stdout.splitlines()]
    assert [(s["low"], s["high"]) for s in segs] == [(0.0, 0.5), (0.5, 1.0)]
    assert run("topics", url, scope).stdout.splitlines() == [topic]
    r = run("perf", "produce", url, topic, "-n", "3000", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[-1])["messages"] == 3000


def test_pravega_administration_commands(pravega: PravegaStandalone) -> None:
    url = pravega.controller_url
    scope = "cli" + uuid.uuid4().hex[:8]
    r = run("pravega", "create-scope", url, scope)
    assert r.returncode == 0 and "created" in r.stderr, r.stderr
    assert scope in run("pravega", "scopes", url).stdout.splitlines()
    r = run(
        "pravega", "create-stream", url, f"{scope}/s", "--segments", "2",
        "--retention-size", "1048576", "--tag", "t1", "--tag", "t2",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    run("pravega", "create-stream", url, f"{scope}/other", "--scaling", "events:100:3")
    described = json.loads(run("pravega", "describe", url, f"{scope}/s").stdout)
    assert described["segments"] == 2 and described["tags"] == ["t1", "t2"]
    assert described["retention"] == {"by": "size", "minimum": 1048576, "maximum": None}
    assert len(described["open_segments"]) == 2
    with pv.Client(url) as c:
        other = c.stream_config(scope, "other")
        assert other.scaling == pv.Scaling(100, 3) and other.tags == ()
    assert run("pravega", "streams", url, scope, "--tag", "t2").stdout.split() == ["s"]
    r = run(
        "pravega", "update-stream", url, f"{scope}/s",
        "--retention-time", "60:120", "--no-tags",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    updated = json.loads(r.stdout)
    assert updated["retention"] == {"by": "time", "minimum": 60000, "maximum": 120000}
    assert updated["tags"] == [] and updated["segments"] == 2
    assert run("pravega", "streams", url, scope, "--tag", "t2").stdout == ""
    run("produce", url, f"{scope}/s", "-m", "e1", "-m", "e2", "-k", "k")
    r = run("pravega", "truncate", url, f"{scope}/s", "tail")
    assert r.returncode == 0 and "truncated" in r.stderr, r.stderr
    assert run("read", url, f"{scope}/s", "--idle", "1").stdout == ""
    # Bad arguments: exit 2 with the reason, before anything connects.
    for args, says in (
        (("update-stream", url, f"{scope}/s"), "nothing to change"),
        (("update-stream", url, f"{scope}/s", "--fixed", "--scaling", "events:1"), "not both"),
        (("create-stream", url, "noscope"), "scope/stream"),
        (("create-stream", url, f"{scope}/x", "--scaling", "fast"), "events|kbytes"),
        (("create-stream", url, f"{scope}/x", "--retention-size", "big"), "N or N:MAX"),
        (("truncate", "tcp://127.0.0.1:1", f"{scope}/s", "nocut"), "stream cut"),
    ):
        r = run("pravega", *args)
        assert r.returncode == 2 and says in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr
    r = run("pravega", "describe", url, f"{scope}/missing")
    assert r.returncode == 1 and "TopicNotFoundError" in r.stderr, r.stderr


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CLI_CASES, ids=lambda c: c.input)
def test_bad_arguments(case: CliCase) -> None:
    r = run(*case.args, timeout=60)
    assert r.returncode == case.code, (r.stdout, r.stderr)
    assert case.says in r.stderr
    assert "Traceback" not in r.stderr


def test_histogram_percentiles_within_five_percent() -> None:
    h = Histogram()
    for v in range(1, 10_001):
        h.record(float(v))
    for p in (50.0, 90.0, 99.0, 99.9):
        exact = p / 100 * 10_000
        assert abs(h.percentile(p) - exact) / exact <= 0.05
    assert h.percentile(100.0) == 10_000.0
    assert h.count == 10_000 and h.min == 1.0
    assert len(h.render(rows=8)) == 8
    with pytest.raises(ValueError):
        h.percentile(101.0)
    assert Histogram().percentile(50.0) == 0.0


def test_gateway_help_lists_every_flag() -> None:
    r = run("gateway", "--help")
    assert r.returncode == 0, r.stderr
    for flag in ("--service-url", "--consumer-idle", "--advertised-url", "--tls-cert", "/metrics"):
        assert flag in r.stdout, flag
