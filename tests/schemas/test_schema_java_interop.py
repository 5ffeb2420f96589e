"""PROTOBUF_NATIVE and KeyValue schemas against the official Java client (the official Python
client has neither ProtobufNative nor KeyValue), on Apache Pulsar 4.0.7.

The Java side is ``tests/schemas/java/SchemaInterop.java``; its protobuf classes are generated
at test time from ``tests/schemas/java/sw/*.proto`` (the message shape of
``tests/schemas/protos.py``) by ``protoc`` from Maven Central
(``com.google.protobuf:protoc:<protobuf-java version>:exe:linux-x86_64``, checked against
Central's SHA-1 and cached next to the Apache fixture's jars), then compiled once per session
with the fixture's classpath. Two JVM runs in all, one per direction:

* Java writes: on each topic a streamwire producer registers its schema first and sends some
  values; the Java producer (``Schema.PROTOBUF_NATIVE(Reading.class)``,
  ``Schema.KeyValue(...)``) then joins the same topic (no IncompatibleSchemaError) and sends
  more; a streamwire consumer reads both, ``Message.value`` and ``receive_arrow``.
* Java reads: the Java producer registers first and sends; a streamwire producer joins the
  topic and sends; a Java consumer reads everything and prints it as JSON (protobuf with
  ``JsonFormat``), compared here.

Setting up (download, protoc, javac) failing is a test failure with the reason, never a skip.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import hashlib
import json
import os
import platform
import re
import subprocess
import tempfile
import threading
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest
import streamwire
from streamwire.schema import (
    AvroSchema,
    Int32,
    JsonSchema,
    KeyValueSchema,
    ProtobufNative,
    Schema,
    StringSchema,
)

from tests.peers.apache import MAVEN_CENTRAL, cache_root, resolve_classpath
from tests.peers.java_program import JAVA_ENV, compile_program, run_tool
from tests.schemas.protos import check_arrow_row, reading_classes, sample

HERE = Path(__file__).resolve().parent / "java"
#: The JVM's environment: the fixture's PULSAR_* variables are not the client's business.


# --------------------------------------------------------------------------------------------
# Record types of the KeyValue halves: the Java classes Label, Measure and Grade in
# SchemaInterop.java, field for field (Java's Avro reflection makes object fields nullable and
# primitives not: Optional[X] here for the first, a bare type for the second).
# --------------------------------------------------------------------------------------------
class Grade(enum.Enum):
    LOW = "low"
    MID = "mid"
    HIGH = "high"


@dataclasses.dataclass
class Label:
    name: Optional[str]
    shard: Int32


@dataclasses.dataclass
class Measure:
    sensor: Optional[str]
    total: int
    count: Int32
    ratio: Optional[float]
    ok: bool
    tags: Optional[list[str]]
    sizes: Optional[dict[str, int]]
    grade: Optional[Grade]
    origin: Optional[Label]


def measure(i: int) -> Measure:
    """A Measure with every field set on even rows, the nullable ones null on odd rows."""
    even = i % 2 == 0
    return Measure(
        sensor=f"s{i}" if even else None,
        total=(1 << 40) + i,
        count=i - 3,
        ratio=i / 4 if even else None,
        ok=even,
        tags=[f"t{j}" for j in range(i % 3)] if even else None,
        sizes={f"k{j}": j * 10 for j in range(i % 3)} if even else None,
        grade=list(Grade)[i % 3] if even else None,
        origin=Label(name=f"o{i}", shard=i) if even else None,
    )


def plain(v: Any) -> Any:
    """The JSON form Jackson reads into the Java classes (enums by name)."""
    if isinstance(v, enum.Enum):
        return v.name
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def from_plain(cls: Any, d: Any) -> Any:
    """A record of ``cls`` from the Java client's JSON print of it (inverse of ``plain``)."""
    if d is None:
        return None
    if cls is Label:
        return Label(**d)
    grade = None if d["grade"] is None else Grade[d["grade"]]
    return Measure(**{**d, "grade": grade, "origin": from_plain(Label, d["origin"])})


#: The protobuf classes of protos.py (one pool for the module): Reading, Point, Other.
PB = reading_classes()


def pb_values(start: int, n: int, nulls: bool = False) -> list[Any]:
    """Readings ``start`` .. ``start + n``; with ``nulls`` every third one is None (a null
    value: ``null_value`` on the wire, as the Java client sends a null)."""
    reading, point, _ = PB
    return [
        None if nulls and i % 3 == 1 else sample(reading, point, i) for i in range(start, start + n)
    ]


def pb_plain(v: Any) -> Optional[str]:
    # Protobuf values travel to Java serialized (base64), parsed there by the generated
    # class: JsonFormat's parser would turn -0.0 (a Point's y in the samples) into 0.0.
    return None if v is None else base64.b64encode(v.SerializeToString()).decode()


def pb_from_java(printed: Any) -> Any:
    """A Reading from the Java client's JsonFormat print of one."""
    from google.protobuf import json_format

    return None if printed is None else json_format.ParseDict(printed, PB[0]())


@dataclasses.dataclass(frozen=True)
class KvCase:
    key: str  # "string" | "json"
    value: str  # "json" | "avro" | "pb"
    encoding: str  # "INLINE" | "SEPARATED"

    @property
    def id(self) -> str:
        return f"{self.key}-{self.value}-{self.encoding.lower()}"

    def schema(self) -> KeyValueSchema:
        key: Schema = StringSchema() if self.key == "string" else JsonSchema(Label)
        value: Schema = {"json": JsonSchema, "avro": AvroSchema}.get(
            self.value, lambda _: ProtobufNative(PB[0])
        )(Measure)
        return KeyValueSchema(key, value, encoding=self.encoding.lower())

    def values(self, start: int, n: int) -> list[tuple[Any, Any]]:
        """Pairs; every third has a None value and the one after it a None key."""
        out: list[tuple[Any, Any]] = []
        for i in range(start, start + n):
            key: Any = f"k{i}" if self.key == "string" else Label(name=f"n{i}", shard=-i)
            value = pb_values(i, 1)[0] if self.value == "pb" else measure(i)
            out.append((None if i % 3 == 2 else key, None if i % 3 == 1 else value))
        return out

    def task(self, topic: str, values: list[tuple[Any, Any]], expect: int) -> dict[str, Any]:
        value_plain = pb_plain if self.value == "pb" else plain
        return {
            "topic": topic,
            "schema": "kv",
            "key": self.key,
            "value": self.value,
            "encoding": self.encoding,
            "values": [{"key": plain(k), "value": value_plain(v)} for k, v in values],
            "expect": expect,
        }

    def from_java(self, printed: Any) -> tuple[Any, Any]:
        key = printed["key"] if self.key == "string" else from_plain(Label, printed["key"])
        assert key != "", "a None key read back as an empty string"
        if self.value == "pb":
            return key, pb_from_java(printed["value"])
        return key, from_plain(Measure, printed["value"])


KV_CASES = [
    KvCase("string", "json", "INLINE"),
    KvCase("json", "avro", "INLINE"),
    KvCase("string", "avro", "SEPARATED"),
    KvCase("json", "json", "SEPARATED"),
    KvCase("string", "pb", "INLINE"),
    KvCase("json", "pb", "SEPARATED"),
]
#: Values each side writes on every topic.
OURS_N, JAVA_N = 3, 6


# --------------------------------------------------------------------------------------------
# Set-up: protoc from Maven Central, protoc + javac once per session.
# --------------------------------------------------------------------------------------------
def _jar_version(classpath: str, artifact: str) -> str:
    for jar in classpath.split(os.pathsep):
        m = re.fullmatch(rf"{re.escape(artifact)}-(\d+\.\d+\.\d+)\.jar", os.path.basename(jar))
        if m:
            return m.group(1)
    raise AssertionError(f"{artifact} is not on the Apache Pulsar fixture's classpath")


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as resp:
        data: bytes = resp.read()
        return data


#: Maven Central's classifier of protoc for this machine (``platform.machine()``).
PROTOC_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch_64", "arm64": "aarch_64"}


def protoc(version: str) -> Path:
    """The cached ``protoc`` of ``version``, downloaded from Maven Central on first use."""
    exe = cache_root() / f"protoc-{version}" / "protoc"
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe
    arch = PROTOC_ARCH.get(platform.machine().lower())
    if arch is None:
        pytest.fail(f"no protoc on Maven Central for {platform.machine()}", pytrace=False)
    name = f"protoc-{version}-linux-{arch}.exe"
    base = f"{MAVEN_CENTRAL}/com/google/protobuf/protoc/{version}/{name}"
    try:
        data = _fetch(base)
        want = _fetch(base + ".sha1").decode().split()[0]
    except OSError as e:
        pytest.fail(f"could not download protoc {version} from {base}: {e}", pytrace=False)
    if hashlib.sha1(data).hexdigest() != want:
        pytest.fail(f"protoc {version} from {base} does not match its .sha1", pytrace=False)
    exe.parent.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.chmod(0o755)
    tmp.replace(exe)  # atomic: a concurrent session sees the whole file or none
    return exe


@pytest.fixture(scope="session")
def java_cmd(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """``java ... SchemaInterop`` (append the service URL and the mode)."""
    _, cp = resolve_classpath()
    exe = protoc(_jar_version(cp, "protobuf-java"))
    _jar_version(cp, "protobuf-java-util")  # JsonFormat
    work = tmp_path_factory.mktemp("java-interop")
    gen, classes = work / "gen", work / "classes"
    gen.mkdir()
    protos = ["sw/common.proto", "sw/reading.proto"]
    run_tool([str(exe), f"-I{HERE}", f"--java_out={gen}", *protos], "protoc")
    sources = [str(p) for p in gen.rglob("*.java")] + [str(HERE / "SchemaInterop.java")]
    jars = ("pulsar-client-api-", "protobuf-java-", "jackson-", "avro-1")
    return compile_program(classes, sources, "SchemaInterop", jars=jars)


# --------------------------------------------------------------------------------------------
# The two JVM runs.
# --------------------------------------------------------------------------------------------
class JavaRun:
    """One JVM of SchemaInterop with the tasks on stdin; stdout read line by line."""

    def __init__(self, cmd: list[str], url: str, mode: str, tasks: list[dict[str, Any]]):
        self.err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [*cmd, url, mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
            text=True,
            env=JAVA_ENV,
        )
        # A hung JVM must not hang the session: killed after 300 s whatever it does.
        self.timer = threading.Timer(300, self.proc.kill)
        self.timer.start()
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(tasks) + "\n")
        self.proc.stdin.flush()

    def fail(self, why: str) -> None:
        self.proc.kill()
        self.err.seek(0)
        pytest.fail(f"Java client: {why}\n{self.err.read()[-4000:]}", pytrace=False)

    def lines_until(self, last: str) -> list[str]:
        assert self.proc.stdout is not None
        out: list[str] = []
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            if line == last:
                return out
            out.append(line)
        tail = "\n".join(out[-30:])
        self.fail(f"exited (rc={self.proc.wait()}) before {last!r}; stdout (end):\n{tail}")
        return out

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        self.timer.cancel()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.err.close()


def _client(broker: Any) -> streamwire.Client:
    # A loaded 2-core machine (a fresh broker creating a dozen topics' ledgers at once) can
    # take longer than the default 30 s; the Java client is given the same 120 s.
    return streamwire.Client(broker.service_url, operation_timeout=120)


def _topic(what: str) -> str:
    return f"persistent://public/default/java-{what}-{uuid.uuid4().hex[:12]}"


@dataclasses.dataclass
class Topics:
    pb: str
    kv: dict[KvCase, str]


def _pb_task(topic: str, values: list[Any], expect: int) -> dict[str, Any]:
    return {
        "topic": topic,
        "schema": "pb",
        "values": [pb_plain(v) for v in values],
        "expect": expect,
    }


@pytest.fixture(scope="module")
def java_wrote(apache_broker: Any, java_cmd: list[str]) -> Iterator[Topics]:
    """Ours registers first and writes OURS_N values, then Java writes JAVA_N, per topic."""
    reading = PB[0]
    topics = Topics(_topic("pb"), {case: _topic(case.id) for case in KV_CASES})
    tasks = [_pb_task(topics.pb, pb_values(OURS_N, JAVA_N, nulls=True), 0)]
    with _client(apache_broker) as client:
        p = client.create_producer(topics.pb, schema=ProtobufNative(reading))
        p.send_many(pb_values(0, OURS_N, nulls=True))
        p.close()
        for case, topic in topics.kv.items():
            p = client.create_producer(topic, schema=case.schema())
            p.send_many(case.values(0, OURS_N))
            p.close()
            tasks.append(case.task(topic, case.values(OURS_N, JAVA_N), 0))
    run = JavaRun(java_cmd, apache_broker.service_url, "produce", tasks)
    try:
        sent = run.lines_until("DONE")
        assert [x for x in sent if x.startswith("SENT")] == [f"SENT {t['topic']}" for t in tasks]
    finally:
        run.close()
    yield topics


@dataclasses.dataclass
class JavaRead:
    topics: Topics  # Java's producer registered first, then ours wrote
    auto: Topics  # ours alone wrote; Java's consumer is AUTO_CONSUME
    printed: dict[str, list[Any]]  # the Java consumer's JSON prints, by topic


def _auto(task: dict[str, Any]) -> dict[str, Any]:
    return {**task, "schema": "auto", "values": [], "expect": OURS_N}


@pytest.fixture(scope="module")
def java_read(apache_broker: Any, java_cmd: list[str]) -> Iterator[JavaRead]:
    """Java registers first and writes JAVA_N values, ours then writes OURS_N, per topic; on
    the ``auto`` topics only ours writes, Java reading with AUTO_CONSUME."""
    reading = PB[0]
    topics = Topics(_topic("pb"), {case: _topic(case.id) for case in KV_CASES})
    auto = Topics(_topic("pb-auto"), {case: _topic(f"auto-{case.id}") for case in KV_CASES})
    n = JAVA_N + OURS_N
    tasks = [_pb_task(topics.pb, pb_values(0, JAVA_N, nulls=True), n)]
    tasks += [case.task(t, case.values(0, JAVA_N), n) for case, t in topics.kv.items()]
    tasks += [_auto(_pb_task(auto.pb, [], 0))]
    tasks += [_auto(case.task(t, [], 0)) for case, t in auto.kv.items()]
    run = JavaRun(java_cmd, apache_broker.service_url, "consume", tasks)
    try:
        run.lines_until("READY")
        with _client(apache_broker) as client:
            for t, nulls in [(topics.pb, True), (auto.pb, False)]:
                p = client.create_producer(t, schema=ProtobufNative(reading))
                p.send_many(pb_values(JAVA_N, OURS_N, nulls))
                p.close()
            for case in KV_CASES:
                for t in (topics.kv[case], auto.kv[case]):
                    p = client.create_producer(t, schema=case.schema())
                    p.send_many(case.values(JAVA_N, OURS_N))
                    p.close()
        run.send("GO")
        printed: dict[str, list[Any]] = {}
        for line in run.lines_until("DONE"):
            if not line.startswith("GOT "):
                continue  # the client's log lines
            got = json.loads(line[len("GOT ") :])
            printed.setdefault(got["topic"], []).append(got["value"])
    finally:
        run.close()
    yield JavaRead(topics, auto, printed)


def _versions(admin: Any, topic: str) -> list[dict[str, Any]]:
    u = urllib.parse.urlparse(topic)
    held: list[dict[str, Any]] = admin.request("GET", f"schemas/{u.netloc}{u.path}/schemas")[
        "getSchemaResponses"
    ]
    return held


def _receive_all(client: Any, topic: str, schema: Schema, n: int) -> list[Any]:
    c = client.subscribe(topic, "sw", initial_position="earliest", schema=schema)
    got = [c.receive(timeout=60) for _ in range(n)]
    assert c.receive_many(10, timeout=0.5) == []
    c.close()
    return got


# --------------------------------------------------------------------------------------------
# Protobuf
# --------------------------------------------------------------------------------------------
def test_protobuf_java_producer_to_streamwire_consumer(
    apache_broker: Any,
    apache_admin: Any,
    java_wrote: Topics,
) -> None:
    reading = PB[0]
    want = pb_values(0, OURS_N + JAVA_N, nulls=True)
    assert None in want[:OURS_N] and None in want[OURS_N:]
    with _client(apache_broker) as client:
        got = _receive_all(client, java_wrote.pb, ProtobufNative(reading), len(want))
        assert [m.value for m in got] == want
        assert all(isinstance(m.value, reading) for m in got if m.value is not None)
        # Java's producer registered its own descriptor as a second version of our topic.
        ours_v, java_v = got[0].schema_version, got[-1].schema_version
        assert ours_v != java_v and {m.schema_version for m in got} == {ours_v, java_v}
        c = client.subscribe(
            java_wrote.pb, "arrow", initial_position="earliest", schema=ProtobufNative(reading)
        )
        rows: list[Any] = []
        while len(rows) < len(want):
            batch = c.receive_arrow(100, timeout=60, columns=["value"])
            assert batch.num_rows, f"received {len(rows)} of {len(want)}"
            rows.extend(batch.column("value").to_pylist())
        c.close()
    for row, v in zip(rows, want):
        if v is None:
            assert row is None  # a null value is a null row
            continue
        check_arrow_row(row, v)
    held = _versions(apache_admin, java_wrote.pb)
    assert [h["type"] for h in held] == ["PROTOBUF_NATIVE", "PROTOBUF_NATIVE"]
    _same_root_and_parsing_info(held)


def _same_root_and_parsing_info(held: list[dict[str, Any]]) -> None:
    """Ours and Java's registry entries name the same root message and file, and carry the
    same ``__PARSING_INFO__`` (our copy of the Java client's field summary)."""
    from google.protobuf import descriptor_pb2

    datas = [json.loads(h["data"]) for h in held]
    assert all(
        list(d) == ["fileDescriptorSet", "rootMessageTypeName", "rootFileDescriptorName"]
        for d in datas
    )
    assert {(d["rootMessageTypeName"], d["rootFileDescriptorName"]) for d in datas} == {
        ("sw.test.Reading", "sw/reading.proto")
    }
    for d in datas:
        fds = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(d["fileDescriptorSet"]))
        assert [f.name for f in fds.file] == ["sw/common.proto", "sw/reading.proto"]
    infos = [json.loads(h["properties"]["__PARSING_INFO__"]) for h in held]
    assert infos[0] == infos[1]


def test_protobuf_streamwire_producer_to_java_consumer(
    apache_admin: Any, java_read: JavaRead
) -> None:
    got = [pb_from_java(d) for d in java_read.printed[java_read.topics.pb]]
    want = pb_values(0, JAVA_N + OURS_N, nulls=True)
    assert None in want[:JAVA_N] and None in want[JAVA_N:]
    assert got == want
    # Java registered first; our producer's descriptor was accepted as a second version.
    held = _versions(apache_admin, java_read.topics.pb)
    assert [h["type"] for h in held] == ["PROTOBUF_NATIVE", "PROTOBUF_NATIVE"]
    _same_root_and_parsing_info(held)


def test_protobuf_java_auto_consume_decodes_with_our_registered_descriptor(
    java_read: JavaRead,
) -> None:
    # Java's AUTO_CONSUME builds its DynamicMessage descriptor from our FileDescriptorSet.
    printed = java_read.printed[java_read.auto.pb]
    assert [pb_from_java(d) for d in printed] == pb_values(JAVA_N, OURS_N)


# --------------------------------------------------------------------------------------------
# KeyValue
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", KV_CASES, ids=lambda c: c.id)
def test_key_value_java_producer_to_streamwire_consumer(
    apache_broker: Any, apache_admin: Any, java_wrote: Topics, case: KvCase
) -> None:
    topic = java_wrote.kv[case]
    want = case.values(0, OURS_N + JAVA_N)
    with _client(apache_broker) as client:
        got = _receive_all(client, topic, case.schema(), len(want))
        # (.value decodes on first access, fetching the writer's version: client open.)
        assert [m.value for m in got] == want
    if case.encoding == "SEPARATED":
        # Java's key: the key's encoding, base64, as the message key (as ours writes it);
        # a None key half is no key at all.
        assert want[-3][0] is not None and got[-3].key is not None
        assert base64.b64decode(got[-3].key) == case.schema().key.encode(want[-3][0])
        assert [m.key is None for m in got] == [k is None for k, _ in want]
    else:
        assert all(m.key is None for m in got)
    held = _versions(apache_admin, topic)
    assert [h["type"] for h in held] == ["KEY_VALUE", "KEY_VALUE"]


@pytest.mark.parametrize("case", KV_CASES, ids=lambda c: c.id)
def test_key_value_streamwire_producer_to_java_consumer(
    apache_admin: Any, java_read: JavaRead, case: KvCase
) -> None:
    topic = java_read.topics.kv[case]
    want = case.values(0, JAVA_N + OURS_N)
    assert [case.from_java(d) for d in java_read.printed[topic]] == want
    held = _versions(apache_admin, topic)
    assert [h["type"] for h in held] == ["KEY_VALUE", "KEY_VALUE"]


@pytest.mark.parametrize("case", KV_CASES, ids=lambda c: c.id)
def test_key_value_java_auto_consume_decodes_with_our_registered_schema(
    java_read: JavaRead, case: KvCase
) -> None:
    # Java's AUTO_CONSUME reads the halves' types and kv.encoding.type from our schema info.
    printed = java_read.printed[java_read.auto.kv[case]]
    assert [case.from_java(d) for d in printed] == case.values(JAVA_N, OURS_N)
