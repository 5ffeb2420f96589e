"""Exactly-once streaming writes to Pravega, through Pravega transactions.

``writeStream.format("streamwire").option("deliveryGuarantee", "exactly_once")`` with a
Pravega ``service_url`` (``tcp://`` or ``tls://``):

* **Tasks.** Each write task of micro-batch *N* begins a transaction on the target stream,
  records an *intent* ``(query id, N, partition, task attempt, transaction id)`` in the
  query's intents stream (a plain stream, written outside any transaction), writes its rows
  in the transaction, flushes it (every event is held by the segment store) and hands the
  transaction's id to the driver **without committing**. A task that fails aborts its
  transaction; one whose process died leaves it open until its lease runs out, and a
  transaction that is not committed is never visible. A partition with no rows writes
  nothing and begins no transaction.
* **Driver.** The batch's commit reads the batch's intents and decides per partition: if a
  transaction of an earlier attempt of that partition is COMMITTED (or COMMITTING) at the
  controller, the batch was committed before (Spark runs a batch again when the driver died
  before its commit log recorded it, maybe half-way through committing), so the current
  attempt's transaction is aborted; otherwise the current one is committed (and waited for).
  Every other open transaction of the batch (a crashed attempt's, a failed task attempt's) is
  aborted, not left to its lease.

Why this is exactly once although a transaction covers one stream: the marker the Pulsar sink
commits atomically with the rows (``streamwire.spark.exactly_once``) cannot live in the target
stream here, so the durable fact is the transaction's own state at the controller, found
through the intent recorded *before* any row is written. A transaction that can become visible
has an intent; an intent's transaction is either committed (the partition is done), or never
will be once the driver aborts it. It relies, as the Pulsar sink does, on Spark re-running a
batch with the same rows in the same partitions (a deterministic plan re-read from the same
offsets).

Limits (documented in docs/spark.md):

* **Status retention.** The controller forgets a completed transaction after
  ``controller.transaction.ttl.hours`` (24 by default; completed transactions are dropped in
  daily batches, so kept 24 to 48 hours). A query restarted later than that after a crash in
  the middle of a commit cannot tell whether the crashed attempt committed: its commit raises
  ``InvalidTransactionStateError`` naming the transaction rather than guess (never a silent
  duplicate or loss).
* **Lease.** ``transactionTimeoutMs`` (default 120000; the controller accepts 10 s to 600 s by
  default) is how long a transaction lives without a ping. The task's process keeps pinging
  its transaction after the task returns (the transaction object is kept alive there), so the
  lease only matters when that process dies before the driver's commit: if the other tasks
  of the batch take longer than the lease after that, the controller aborts the transaction
  and the driver's commit raises ``TransactionTimeoutError``: the query fails loudly, and its
  restart runs the batch again (the partitions committed before are skipped, the aborted one
  is written anew).
* **Intents stream.** One per query: ``<transactionIntentsPrefix>-<query id>`` in the sink's
  scope (prefix default ``<stream>-intents``), one segment. The driver truncates it behind the
  batch it commits once what lies before that batch's records exceeds 64 KiB, so it stays
  small; a query that is retired leaves its stream behind (delete it with
  ``Client.delete_stream`` after sealing it).

Readers see a batch's rows when the driver commits it; an open or aborted transaction is
never visible (Pravega transactions do not hold back other events, unlike Pulsar's).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Optional

from pyspark.sql.datasource import WriterCommitMessage

try:  # Spark 4.1+: micro-batches reach the writer as Arrow batches
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # pragma: no cover - older Spark
    from pyspark.sql.datasource import (  # type: ignore[assignment]
        DataSourceStreamWriter as _StreamWriterBase,
    )

from streamwire import pravega
from streamwire.spark.config import get_option

__all__ = [
    "PravegaExactlyOnce",
    "PravegaExactlyOnceWriter",
    "PravegaTxnCommit",
    "abort_batch",
    "batch_intents",
    "commit_batch",
    "stream_writer",
    "write_task",
]

log = logging.getLogger("streamwire.spark")

#: The intents read before the committed batch's records that make the driver truncate them.
TRUNCATE_AFTER = 64 * 1024
#: Seconds the intents stream may give nothing before its tail (then the commit fails).
READ_PATIENCE = 60.0


@dataclass(frozen=True)
class PravegaExactlyOnce:
    """The exactly-once settings of a Pravega streaming write (picklable)."""

    intents_prefix: str
    lease: float = 120.0

    @classmethod
    def from_options(cls, options: Mapping[str, str], stream: str) -> Optional[PravegaExactlyOnce]:
        """None unless ``deliveryGuarantee`` is ``exactly_once``."""
        from streamwire.exceptions import ConfigError
        from streamwire.spark.exactly_once import wants_exactly_once

        if not wants_exactly_once(options):
            return None
        prefix = str(get_option(options, "transactionIntentsPrefix", default=f"{stream}-intents"))
        # The intents stream's name is the prefix, '-' and the query id (a 36-character UUID),
        # and a Pravega stream name is at most 255 characters of letters, digits, '-', '.'.
        legal = all((c.isascii() and c.isalnum()) or c in "-." for c in prefix)
        if not prefix or len(prefix) > 255 - 37 or not legal:
            raise ConfigError(
                "transactionIntentsPrefix must be 1 to 218 letters, digits, '-' or '.' (the "
                f"intents stream is '<prefix>-<query id>'), not {prefix!r}"
            )
        text = get_option(options, "transactionTimeoutMs", default="120000")
        try:
            lease_ms = float(str(text))
        except ValueError:
            lease_ms = 0.0
        if not lease_ms >= 1000:
            raise ConfigError(
                "transactionTimeoutMs (the Pravega transactions' lease) must be a number of "
                f"milliseconds, at least 1000 (the controller's bounds: 10 s to 600 s by "
                f"default), not {text!r}"
            )
        return cls(prefix, lease_ms / 1000.0)

    def intents_stream(self, query: str) -> str:
        return f"{self.intents_prefix}-{query}"


@dataclass
class PravegaTxnCommit(WriterCommitMessage):
    """What a task hands the driver: its transaction, flushed and still open (None: the task
    had no rows)."""

    partition_id: int
    rows: int
    txn: Optional[int]
    query: str
    batch: int


# -- process-local state of the tasks --------------------------------------------------------

_lock = threading.Lock()
#: Transactions handed to the driver, kept referenced so that this process goes on renewing
#: their leases until the driver ends them (a dropped transaction stops being pinged).
_handed: list[Any] = []
#: This process's writer of each intents stream (which it made sure exists), by (pid, client
#: config, scope, stream): a task's intent costs one append, not a new writer.
_intent_writers: dict[tuple[int, pravega.ClientConfig, str, str], Any] = {}
_txn_writers: dict[tuple[pravega.ClientConfig, str, str, float], tuple[int, Any]] = {}


def _keep(txn: Any) -> None:
    with _lock:
        # Those the driver ended (a ping then finds them committed or aborted) are let go.
        _handed[:] = [t for t in _handed if t.open]
        _handed.append(txn)


def _txn_writer(client: Any, config: Any, scope: str, stream: str, lease: float) -> Any:
    key = (config, scope, stream, lease)
    pid = os.getpid()
    with _lock:
        hit = _txn_writers.get(key)
        if hit is not None and hit[0] == pid and not hit[1].closed:
            return hit[1]
    writer = client.create_transactional_writer(scope, stream, lease=lease)
    with _lock:
        _txn_writers[key] = (pid, writer)
    return writer


def _record_intent(client: Any, config: Any, scope: str, name: str, record: bytes) -> None:
    """Append ``record`` to the intents stream ``name`` and wait until it is stored."""
    key = (os.getpid(), config, scope, name)
    with _lock:
        writer = _intent_writers.get(key)
    if writer is None:
        client.create_stream(scope, name, segments=1)  # False when it exists: fine
        writer = client.create_writer(scope, name)
        with _lock:
            _intent_writers[key] = writer
    try:
        writer.write(record)
        writer.flush()
    except BaseException:
        # A writer that failed is not reused (the next task makes a new one).
        with _lock:
            _intent_writers.pop(key, None)
        writer.close()
        raise


def _task_attempt() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return int(ctx.taskAttemptId()) if ctx is not None else -1


def write_task(
    config: Any,
    eo: PravegaExactlyOnce,
    batches: Iterable[Any],
    query: str,
    batch: int,
    partition: int,
    attempt: Optional[int] = None,
) -> PravegaTxnCommit:
    """Begin a transaction, record the intent, write ``batches`` (Arrow, ``value`` and an
    optional ``routing_key`` column) in it and flush; return it open. On any failure the
    transaction is aborted and the error raised.

    ``config`` is the sink's ``PravegaSourceConfig``."""
    from streamwire.spark.pravega_source import client_for

    client = client_for(config.client)
    txn: Any = None
    rows = 0
    try:
        for b in batches:
            if b.num_rows == 0:
                continue
            if "value" not in b.schema.names:
                raise ValueError("streamwire (Pravega): the written rows need a 'value' column")
            if txn is None:
                txn = _begin(client, config, eo, query, batch, partition, attempt)
            keys = b.column("routing_key") if "routing_key" in b.schema.names else None
            rows += txn.write_many(b.column("value"), keys)
        if txn is not None:
            txn.flush()
    except BaseException:
        if txn is not None:
            try:
                txn.abort()
            except Exception:  # the original error matters more; the lease ends it anyway
                log.warning("streamwire: aborting Pravega transaction %x failed", txn.id)
        raise
    if txn is None:
        return PravegaTxnCommit(partition, 0, None, query, batch)
    _keep(txn)
    return PravegaTxnCommit(partition, rows, int(txn.id), query, batch)


def _begin(
    client: Any,
    config: Any,
    eo: PravegaExactlyOnce,
    query: str,
    batch: int,
    partition: int,
    attempt: Optional[int],
) -> Any:
    """A new transaction, its intent recorded (and stored) before anything is written in it:
    a driver that finds it later (this process died, or the driver did) can end it."""
    scope, stream = config.scope, config.stream
    txn = _txn_writer(client, config.client, scope, stream, eo.lease).begin()
    try:
        record = {
            "query": query,
            "batch": batch,
            "partition": partition,
            "attempt": _task_attempt() if attempt is None else attempt,
            "txn": f"{txn.id:032x}",
        }
        intents = eo.intents_stream(query)
        _record_intent(client, config.client, scope, intents, json.dumps(record).encode())
    except BaseException:
        txn.abort()
        raise
    return txn


# -- the driver ---------------------------------------------------------------------------------


def batch_intents(
    client: Any, scope: str, intents: str, batch: int
) -> tuple[list[tuple[int, int]], Optional[pravega.StreamCut], int]:
    """``(partition, transaction id)`` of every intent of ``batch`` in the intents stream;
    the cut before its first record of ``batch`` or later (None: there is none) and the bytes
    before that cut from the head (what truncating there would drop). The intents stream has
    one segment, so an event's offset is the cut before it."""
    from streamwire.spark.pravega_source import _covered, _offsets

    head = client.head(scope, intents)
    tail = _offsets(client.tail(scope, intents))
    found: list[tuple[int, int]] = []
    cut: Optional[pravega.StreamCut] = None
    before = 0
    deadline = time.monotonic() + READ_PATIENCE
    with client.create_reader(scope, intents, head) as reader:
        while not _covered(_offsets(reader.position()), tail):
            events = reader.read_many(1000, timeout=1.0)
            if not events:
                # The tail was read from the controller: those events exist.
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"streamwire (Pravega): the intents stream {scope}/{intents} gave "
                        f"nothing for {READ_PATIENCE:.0f} s before its tail"
                    )
                continue
            deadline = time.monotonic() + READ_PATIENCE
            for e in events:
                r = json.loads(e.value)
                if int(r["batch"]) >= batch and cut is None:
                    cut = pravega.StreamCut(f"{scope}/{intents}:{e.segment}={e.offset}")
                    before = e.offset - head.positions.get(e.segment, 0)
                if int(r["batch"]) == batch:
                    found.append((int(r["partition"]), int(r["txn"], 16)))
    return found, cut, before


def _state(client: Any, config: Any, txn_id: int) -> str:
    return str(client.transaction(config.scope, config.stream, txn_id).status())


def commit_batch(
    config: Any, eo: PravegaExactlyOnce, commits: Sequence[PravegaTxnCommit], batch: int
) -> tuple[int, int]:
    """Commit the tasks' transactions of ``batch``, except those of partitions an earlier
    attempt committed (aborted instead), and abort every other open transaction of the batch.
    Returns (rows committed, rows skipped)."""
    from streamwire.exceptions import InvalidTransactionStateError
    from streamwire.spark.pravega_source import client_for

    current = {c.partition_id: c for c in commits if c.txn is not None}
    if not current:
        return 0, 0
    client = client_for(config.client)
    query = next(iter(current.values())).query
    intents = eo.intents_stream(query)
    found, cut, before = batch_intents(client, config.scope, intents, batch)
    mine = {c.txn for c in current.values()}
    done: set[int] = set()
    stale: list[int] = []
    for partition, txn_id in found:
        if txn_id in mine:
            continue
        state = _state(client, config, txn_id)
        if state in ("COMMITTED", "COMMITTING"):
            done.add(partition)
        elif state == "OPEN":
            stale.append(txn_id)
        elif state == "UNKNOWN":
            raise InvalidTransactionStateError(
                f"streamwire (Pravega): micro-batch {batch} of query {query} was attempted "
                f"before by transaction {txn_id:032x}, which the controller no longer knows "
                "(it forgets completed transactions after controller.transaction.ttl.hours, "
                "24 by default): whether that attempt committed cannot be told, so nothing "
                "is committed; see docs/spark.md"
            )
    # The others first: none is ever committed once it is aborted.
    for txn_id in stale:
        _abort_quietly(client, config, txn_id)
    committed = sum(c.rows for p, c in current.items() if p not in done)
    skipped = sum(c.rows for p, c in current.items() if p in done)

    def end(partition: int) -> None:
        txn_id = current[partition].txn
        assert txn_id is not None
        handle = client.transaction(config.scope, config.stream, txn_id)
        if partition in done:
            handle.abort()
        else:
            handle.commit()  # returns once COMMITTED

    # Side by side: each is a controller call and a wait for its workflow (the calls release
    # the interpreter). A crash half-way leaves each either COMMITTING/COMMITTED (skipped by
    # the re-run) or OPEN (committed by it); the first failure is raised once all have ended.
    with ThreadPoolExecutor(max_workers=min(16, len(current))) as pool:
        for f in [pool.submit(end, p) for p in sorted(current)]:
            f.result()
    if skipped:
        log.warning(
            "streamwire (Pravega): micro-batch %d was written before (partitions %s): "
            "%d rows skipped",
            batch,
            sorted(done),
            skipped,
        )
    # Records of earlier batches are no longer needed (this batch's are, until Spark has
    # recorded it): dropped once they add up.
    if cut is not None and before >= TRUNCATE_AFTER:
        try:
            client.truncate_stream(config.scope, intents, cut)
        except Exception:
            log.warning("streamwire (Pravega): truncating %s failed", intents, exc_info=True)
    return committed, skipped


def _abort_quietly(client: Any, config: Any, txn_id: int) -> None:
    """Abort an earlier attempt's open transaction; one that ended meanwhile (its lease ran
    out) is fine."""
    try:
        client.transaction(config.scope, config.stream, txn_id).abort()
    except Exception as exc:
        log.debug("streamwire (Pravega): transaction %032x had ended: %s", txn_id, exc)


def abort_batch(config: Any, commits: Sequence[PravegaTxnCommit]) -> None:
    """Abort the open transactions of a failed batch (best effort: their leases end the
    rest)."""
    from streamwire.spark.pravega_source import client_for

    client = client_for(config.client)
    for c in commits:
        if c.txn is None:
            continue
        try:
            client.transaction(config.scope, config.stream, c.txn).abort()
        except Exception:
            log.warning("streamwire (Pravega): aborting transaction %032x failed", c.txn)


# -- the Spark stream writer ----------------------------------------------------------------------


def stream_writer(options: dict[str, str]) -> Any:
    """The streaming sink for a Pravega ``writeStream``: exactly once with
    ``deliveryGuarantee=exactly_once``, else at least once."""
    from streamwire.spark._log_source import LogStreamWriter
    from streamwire.spark.pravega_source import PravegaSourceConfig, PravegaWriter

    config = PravegaSourceConfig.from_options(options)
    eo = PravegaExactlyOnce.from_options(options, config.stream)
    if eo is None:
        return LogStreamWriter(PravegaWriter(options), "Pravega")
    if config.several:
        raise ValueError("streamwire (Pravega): a write goes to one stream")
    return PravegaExactlyOnceWriter(config, eo)


class PravegaExactlyOnceWriter(_StreamWriterBase):
    """Tasks write in open transactions; the driver's commit commits them (see the module's
    docstring)."""

    def __init__(self, config: Any, eo: PravegaExactlyOnce) -> None:
        self.config = config
        self.eo = eo

    def write(self, iterator: Any) -> WriterCommitMessage:
        from streamwire.spark.datasource import _as_arrow
        from streamwire.spark.exactly_once import batch_context
        from streamwire.spark.executor import _partition_id

        query, batch = batch_context()
        return write_task(self.config, self.eo, _as_arrow(iterator), query, batch, _partition_id())

    def commit(self, messages: list[Optional[WriterCommitMessage]], batchId: int) -> None:
        txns = [m for m in messages if isinstance(m, PravegaTxnCommit)]
        done, skipped = commit_batch(self.config, self.eo, txns, batchId)
        log.info(
            "streamwire (Pravega): micro-batch %d committed %d events (%d skipped: written before)",
            batchId,
            done,
            skipped,
        )

    def abort(self, messages: list[Optional[WriterCommitMessage]], batchId: int) -> None:
        txns = [m for m in messages if isinstance(m, PravegaTxnCommit)]
        abort_batch(self.config, txns)
        log.warning(
            "streamwire (Pravega): micro-batch %d aborted (%d transactions)", batchId, len(txns)
        )
