"""The ``streamwire`` Data Source for Pravega (``service_url`` = ``tcp://controller:port``,
or ``tls://controller:port``; options ``scope`` and ``stream``; or several streams:
``stream`` = ``a,b`` in ``scope``, or ``streams`` = ``scope1/a,scope2/b``).

A secured cluster (the official Java connector's option names where it has them):
``pravega.tls.trustStore`` (a PEM CA file; also ``tls_trust_certs_file``),
``pravega.tls.validateHostName`` (``false`` turns host-name checks off),
``pravega.auth.username`` / ``pravega.auth.password`` (Basic), or ``pravega.auth.method`` /
``pravega.auth.token`` (another auth handler).

Pravega positions are stream cuts: each segment's byte offset, between events. So:

- offsets are ``{"<segment id>": <offset>}`` (a stream cut; JSON in Spark's checkpoint); with
  several streams, ``{"<scope>/<stream>": {"<segment id>": <offset>}, ...}``;
- batch reads plan one input partition per segment between ``startingOffsets`` (``earliest``
  = the stream's head, by default, or offsets JSON) and ``endingOffsets`` (``latest`` = the
  tail at planning, or offsets JSON), following the successors of segments sealed in between
  (a scale); each partition reads exactly the events whose frames start in its byte range;
- streaming reads (micro-batches) go from the checkpointed cut to the tail at each trigger:
  no gap and no duplicate across restarts. ``maxRecordsPerTrigger`` / ``maxBytesPerTrigger``
  (event payload bytes) cap a micro-batch: the driver reads ahead from the batch's start
  (a stream has no index to count events by) and ends the batch at the stream cut after the
  events that fit (at least one event, so a larger one still goes through); with several
  streams the cap is shared evenly, and what a stream does not use goes to the others;
- writes: each task's Arrow batches go through ``write_many`` (with the ``routing_key``
  column when present) and the task fails if anything was not written.

Columns: ``value`` (binary), ``stream`` (``scope/stream``), ``segment`` (bigint id),
``offset`` (bigint). Routing keys are not stored with Pravega events, so reads have no key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from pyspark.sql.datasource import DataSourceArrowWriter

from streamwire import pravega
from streamwire.spark import _log_source as log
from streamwire.spark.config import get_option, has_scheme, parse_bool

__all__ = [
    "SCHEMA",
    "PravegaBatchReader",
    "PravegaStreamReader",
    "PravegaWriter",
    "is_pravega",
]

SCHEMA = "value binary, stream string, segment bigint, offset bigint"
COLUMNS = ["value", "stream", "segment", "offset"]

Offsets = dict[str, int]


def is_pravega(options: Mapping[str, str]) -> bool:
    return has_scheme(options, "tcp://") or has_scheme(options, "tls://")


def client_config(url: str, timeout: float, options: Mapping[str, str]) -> pravega.ClientConfig:
    """The client's settings from the options: TLS and credentials as well as the URL."""

    def text(*names: str) -> Optional[str]:
        value = get_option(options, *names)
        return str(value) if value else None

    validate = parse_bool(
        get_option(options, "pravega.tls.validateHostName", "tls_validate_hostname"), True
    )
    return pravega.ClientConfig(
        url,
        timeout=timeout,
        tls_trust_certs_file=text(
            "pravega.tls.trustStore", "tlsTrustCertsFilePath", "tls_trust_certs_file"
        ),
        tls_disable_hostname_verification_DANGEROUS=not validate,
        username=text("pravega.auth.username", "username"),
        password=text("pravega.auth.password", "password"),
        auth_method=text("pravega.auth.method", "auth_method"),
        auth_token=text("pravega.auth.token", "auth_token"),
    )


@dataclass(frozen=True)
class PravegaSourceConfig:
    """What executors need, picklable."""

    client: pravega.ClientConfig
    #: ``(scope, stream)`` of every stream read (one to write).
    streams: tuple[tuple[str, str], ...]
    read: log.ReadKnobs
    max_records: Optional[int] = None
    max_bytes: Optional[int] = None

    @property
    def scope(self) -> str:
        return self.streams[0][0]

    @property
    def stream(self) -> str:
        return self.streams[0][1]

    @property
    def several(self) -> bool:
        """Several streams: offsets are keyed by ``scope/stream``."""
        return len(self.streams) > 1

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> PravegaSourceConfig:
        url, op = log.service_of(options)
        return cls(
            client=client_config(url, op, options),
            streams=_streams_of(options),
            read=log.ReadKnobs.from_options(options),
            max_records=_cap(options, "maxRecordsPerTrigger"),
            max_bytes=_cap(options, "maxBytesPerTrigger"),
        )


def _streams_of(options: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    listed = get_option(options, "streams")
    scope = get_option(options, "scope")
    stream = get_option(options, "stream")
    out: list[tuple[str, str]] = []
    if listed:
        if stream:
            raise ValueError("streamwire (Pravega): set 'stream' or 'streams', not both")
        for item in str(listed).split(","):
            sc, sep, st = item.strip().partition("/")
            if not sep or not sc or not st or "/" in st:
                raise ValueError(
                    f"streamwire (Pravega): 'streams' lists scope/stream names, not {item!r}"
                )
            out.append((sc, st))
    elif scope and stream:
        out = [(str(scope), st.strip()) for st in str(stream).split(",")]
        if any(not st for _, st in out):
            raise ValueError(f"streamwire (Pravega): bad 'stream' option {stream!r}")
    else:
        raise ValueError(
            "streamwire (Pravega): set the 'scope' and 'stream' options (or 'streams')"
        )
    if len(set(out)) != len(out):
        raise ValueError("streamwire (Pravega): a stream is named twice")
    return tuple(out)


def _cap(options: Mapping[str, str], name: str) -> Optional[int]:
    text = get_option(options, name)
    if text is None:
        return None
    try:
        value = int(str(text))
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"streamwire (Pravega): {name} must be a positive integer, not {text!r}")
    return value


_clients: log.ClientCache[pravega.ClientConfig, pravega.Client] = log.ClientCache()


def client_for(config: pravega.ClientConfig) -> pravega.Client:
    return _clients.get(config, config.create)


# -- offsets (stream cuts) ---------------------------------------------------------------------

#: Each stream's cut, keyed by ``scope/stream``.
Cuts = dict[str, Offsets]


def _name(scope: str, stream: str) -> str:
    return f"{scope}/{stream}"


def _cut(name: str, offsets: Offsets) -> pravega.StreamCut:
    body = ",".join(
        f"{int(s)}={int(o)}" for s, o in sorted(offsets.items(), key=lambda x: int(x[0]))
    )
    return pravega.StreamCut(f"{name}:{body}")


def _offsets(cut: pravega.StreamCut) -> Offsets:
    return {str(s): o for s, o in cut.positions.items()}


def to_spark(config: PravegaSourceConfig, cuts: Cuts) -> dict[str, Any]:
    """The checkpointed form: one stream's cut flat (as before several streams were read),
    several keyed by ``scope/stream``."""
    if config.several:
        return {k: dict(v) for k, v in cuts.items()}
    return dict(cuts[_name(config.scope, config.stream)])


def from_spark(config: PravegaSourceConfig, offsets: Mapping[str, Any]) -> Cuts:
    """Spark's offsets (JSON or what :func:`to_spark` gave) as cuts of every stream read."""
    names = [_name(sc, st) for sc, st in config.streams]
    if not config.several:
        return {names[0]: {str(int(s)): int(o) for s, o in offsets.items()}}
    missing = [n for n in names if not isinstance(offsets.get(n), Mapping)]
    if missing:
        raise ValueError(
            f"streamwire (Pravega): the offsets name no cut for {missing}; with several "
            f'streams they are {{"scope/stream": {{"<segment id>": <offset>}}, ...}}'
        )
    return {n: {str(int(s)): int(o) for s, o in offsets[n].items()} for n in names}


def _resolve(config: PravegaSourceConfig, spec: Optional[str], default: str) -> Cuts:
    """``earliest`` (the heads), ``latest`` (the tails now) or offsets JSON."""
    client = client_for(config.client)
    text = (spec or default).strip()
    if text in ("earliest", "latest"):
        at = client.head if text == "earliest" else client.tail
        return {_name(sc, st): _offsets(at(sc, st)) for sc, st in config.streams}
    try:
        given = json.loads(text)
        return from_spark(config, given)
    except (ValueError, AttributeError, TypeError) as exc:
        raise ValueError(
            f"streamwire (Pravega): offsets must be 'earliest', 'latest' or a stream cut as "
            f'JSON like {{"0": 1024, "1": 0}} (segment id: byte offset; with several streams '
            f'keyed by "scope/stream"), not {text!r}'
        ) from exc


@dataclass(frozen=True)
class Range:
    segment: int
    start: int  # first byte
    end: int  # exclusive
    stream: str = ""  # scope/stream ("" in plans made before several streams were read)

    def to_json(self) -> str:
        return json.dumps([self.segment, self.start, self.end, self.stream])

    @classmethod
    def from_json(cls, text: str) -> Range:
        s, a, b, *name = json.loads(text)
        return cls(int(s), int(a), int(b), str(name[0]) if name else "")


def _ranges(config: PravegaSourceConfig, start: Cuts, end: Cuts) -> list[Range]:
    client = client_for(config.client)
    out: list[Range] = []
    for sc, st in config.streams:
        name = _name(sc, st)
        spans = client.segment_ranges(sc, st, _cut(name, start[name]), _cut(name, end[name]))
        out += [Range(s, a, b, name) for s, a, b in spans]
    return out


# -- rate limits ---------------------------------------------------------------------------------


def _covered(pos: Offsets, tail: Offsets) -> bool:
    """Whether a reader at ``pos`` has nothing left before ``tail``."""
    return all(int(pos.get(s, -1)) >= o for s, o in tail.items()) and set(pos) <= set(tail)


def _capped(pos: Offsets, tail: Offsets) -> Offsets:
    """``pos`` no further than ``tail`` on the segments both name (both are event boundaries,
    so their minimum is one). A segment only in ``pos`` is a predecessor the tail has moved
    past (kept as read)."""
    return {s: min(o, tail[s]) if s in tail else o for s, o in pos.items()}


def _advance(
    config: PravegaSourceConfig,
    name: str,
    start: Offsets,
    tail: Offsets,
    records: Optional[int],
    nbytes: Optional[int],
    first: bool,
) -> tuple[Offsets, int, int, bool]:
    """Read ahead from ``start`` toward ``tail``: at most ``records`` events and ``nbytes``
    payload bytes (but one event at least when ``first``, so that an event larger than the
    cap still goes through). Returns the cut after the events taken, their count and bytes,
    and whether the stream ran out (reached ``tail``) before a cap stopped it.

    The reader's position after the events it handed out is a valid cut whatever segments
    they came from (successors included), and a read asks for no more events than fit: for
    bytes, the bytes left divided by the largest event seen (the first read takes one). A
    read that still overshoots (a larger event) is not taken: the cut before it is."""
    import pyarrow.compute as pc

    if _covered(start, tail):
        return start, 0, 0, True
    client = client_for(config.client)
    scope, stream = name.split("/", 1)
    taken = size = largest = 0
    pos = start
    with client.create_reader(scope, stream, _cut(name, start)) as reader:
        while True:
            left = config.read.max_batch if records is None else records - taken
            if nbytes is not None:
                left = min(left, 1 if largest == 0 else (nbytes - size) // largest)
            if left <= 0:
                return _capped(pos, tail), taken, size, False
            batch = reader.read_arrow(left, timeout=config.read.poll_timeout, columns=["value"])
            if batch.num_rows == 0:
                return _capped(pos, tail), taken, size, True
            lengths = pc.binary_length(batch.column(0)).fill_null(0).to_pylist()
            more = sum(lengths)
            if nbytes is not None and size + more > nbytes and (taken or not first):
                return _capped(pos, tail), taken, size, False
            taken += batch.num_rows
            size += more
            largest = max(largest, 1, *lengths)
            pos = _offsets(reader.position())
            if _covered(pos, tail):
                return _capped(pos, tail), taken, size, True


def limited_end(
    config: PravegaSourceConfig,
    start: Cuts,
    tail: Cuts,
    records: Optional[int],
    nbytes: Optional[int],
) -> Cuts:
    """The end of a micro-batch from ``start`` capped at ``records`` events and ``nbytes``
    payload bytes over every stream, never past ``tail``. Each stream gets an even share
    first; what the streams that ran out did not use goes to the others, in order."""
    names = list(start)
    end = dict(start)
    k = len(names)
    left_r, left_b = records, nbytes
    unfinished: list[str] = []

    def take(name: str, r: Optional[int], b: Optional[int]) -> bool:
        nonlocal left_r, left_b
        first = (left_r, left_b) == (records, nbytes)
        end[name], n, size, ran_out = _advance(config, name, end[name], tail[name], r, b, first)
        left_r = None if left_r is None else left_r - n
        left_b = None if left_b is None else left_b - size
        return ran_out

    for i, name in enumerate(names):
        share_r = None if records is None else records // k + (1 if i < records % k else 0)
        share_b = None if nbytes is None else nbytes // k + (1 if i < nbytes % k else 0)
        if share_r == 0 or share_b == 0 or not take(name, share_r, share_b):
            unfinished.append(name)
    for name in unfinished:
        if (left_r is not None and left_r <= 0) or (left_b is not None and left_b <= 0):
            break
        take(name, left_r, left_b)
    return end


def read_range(config: PravegaSourceConfig, r: Range, columns: Sequence[str]) -> Iterator[Any]:
    """Arrow batches of the events of segment ``r.segment`` whose frames start in
    ``[r.start, r.end)`` — exactly those."""
    import pyarrow.compute as pc

    client = client_for(config.client)
    fetch = ["value", "segment", "offset"]
    name = r.stream or _name(config.scope, config.stream)
    scope, stream = name.split("/", 1)
    cut = pravega.StreamCut(f"{name}:{r.segment}={r.start}")
    knobs = config.read
    with client.create_reader(scope, stream, cut) as reader:
        done_to = r.start
        patience = log.Patience(knobs.read_timeout)
        while done_to < r.end:
            batch = reader.read_arrow(knobs.max_batch, timeout=knobs.poll_timeout, columns=fetch)
            stalled = (
                f"streamwire (Pravega): segment {r.segment} stopped at byte {done_to} "
                f"before {r.end} (planned from the stream's cuts)"
            )
            if patience.waiting(batch, stalled):
                continue
            # Successors may follow once the segment ends: keep this segment's events in range.
            mask = pc.and_(
                pc.equal(batch.column("segment"), r.segment),
                pc.less(batch.column("offset"), r.end),
            )
            kept = batch.filter(mask)
            if kept.num_rows < batch.num_rows:
                done_to = r.end
            if kept.num_rows:
                last_off = kept.column("offset")[-1].as_py()
                last_len = len(kept.column("value")[-1].as_py())
                done_to = max(done_to, last_off + 8 + last_len)
                yield _select(kept, name, columns)


def _select(batch: Any, stream: str, columns: Sequence[str]) -> Any:
    import pyarrow as pa

    arrays = []
    for name in columns:
        if name == "stream":
            arrays.append(pa.array([stream] * batch.num_rows))
        else:
            arrays.append(batch.column(name))
    return pa.RecordBatch.from_arrays(arrays, names=list(columns))


# -- batch read --------------------------------------------------------------------------------


class PravegaBatchReader(log.LogBatchReader):
    def __init__(self, options: dict[str, str], schema: Any) -> None:
        self.config = PravegaSourceConfig.from_options(options)
        self.columns = log.columns_of(schema, COLUMNS, "Pravega")
        super().__init__(options)

    def plan(self) -> list[str]:
        start = _resolve(self.config, self.starting, "earliest")
        end = _resolve(self.config, self.ending, "latest")
        return [r.to_json() for r in _ranges(self.config, start, end)]

    def read_planned(self, text: str) -> Iterator[Any]:
        return read_range(self.config, Range.from_json(text), self.columns)


# -- streaming read ----------------------------------------------------------------------------


class PravegaStreamReader(log.LogStreamReader[Cuts]):
    """Micro-batches from the checkpointed stream cuts to the tails at each trigger, or as
    far as ``maxRecordsPerTrigger`` / ``maxBytesPerTrigger`` allow."""

    def __init__(self, options: dict[str, str], schema: Any) -> None:
        self.config = PravegaSourceConfig.from_options(options)
        self.columns = log.columns_of(schema, COLUMNS, "Pravega")
        super().__init__(options)

    def tail(self) -> Cuts:
        return _resolve(self.config, "latest", "latest")

    def initialOffset(self) -> dict[str, Any]:
        return to_spark(self.config, _resolve(self.config, self.starting, "latest"))

    def getDefaultReadLimit(self) -> Any:
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxBytes, ReadMaxRows

        # Spark takes one limit; with both options set, both are applied (see latestOffset).
        if self.config.max_records is not None:
            return ReadMaxRows(self.config.max_records)
        if self.config.max_bytes is not None:
            return ReadMaxBytes(self.config.max_bytes)
        return ReadAllAvailable()

    def latestOffset(self, start: Optional[dict[str, Any]] = None, limit: Any = None) -> Any:
        tail = self._target or self.tail()
        if start is None or limit is None or type(limit).__name__ == "ReadAllAvailable":
            return to_spark(self.config, tail)
        records = getattr(limit, "max_rows", None)
        nbytes = getattr(limit, "max_bytes", None)
        # The other option, when both are set: Spark passes only the one limit it was given.
        records = records if records is not None else self.config.max_records
        nbytes = nbytes if nbytes is not None else self.config.max_bytes
        begin = from_spark(self.config, start)
        return to_spark(self.config, limited_end(self.config, begin, tail, records, nbytes))

    def reportLatestOffset(self) -> Any:
        return to_spark(self.config, self.tail())

    def plan(self, start: dict[str, Any], end: dict[str, Any]) -> list[str]:
        ranges = _ranges(self.config, from_spark(self.config, start), from_spark(self.config, end))
        return [r.to_json() for r in ranges]

    def read_planned(self, text: str) -> Iterator[Any]:
        return read_range(self.config, Range.from_json(text), self.columns)


# -- write -------------------------------------------------------------------------------------


class PravegaWriter(DataSourceArrowWriter):
    """Arrow batches -> ``write_many``; the task fails if anything was not written."""

    def __init__(self, options: dict[str, str]) -> None:
        self.config = PravegaSourceConfig.from_options(options)
        if self.config.several:
            raise ValueError("streamwire (Pravega): a write goes to one stream")

    def write(self, iterator: Iterator[Any]) -> log.LogWriteCommit:
        client = client_for(self.config.client)
        with client.create_writer(self.config.scope, self.config.stream) as writer:

            def send(batch: Any) -> None:
                names = batch.schema.names
                keys = batch.column("routing_key") if "routing_key" in names else None
                writer.write_many(batch.column("value"), keys)

            rows = log.write_batches(iterator, "Pravega", send)
            writer.flush()
        return log.LogWriteCommit(rows)
