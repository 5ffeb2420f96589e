"""Exactly-once streaming writes to Pulsar, through Pulsar transactions.

``deliveryGuarantee=exactly_once`` on a ``writeStream`` (Apache Pulsar with transactions on):

* **Tasks.** Each write task of micro-batch *N* starts a transaction of its own, sends its rows
  in it, and sends one *marker* in it to the marker topic (key ``<query id>/<N>/<partition>``),
  then flushes and hands the transaction's id to the driver **without committing**. A task that
  fails aborts its transaction (or, if its process died, the broker aborts it at its timeout):
  its rows are never seen.
* **Driver.** The batch's commit commits the transactions of the tasks Spark reports as
  successful, and aborts those whose partition an earlier attempt of the same batch already
  committed: their markers are visible in the marker topic, since a marker commits with its rows.

So a batch Spark re-runs after a crash (the driver died before Spark recorded the batch, maybe
half-way through committing) is written once: the partitions committed before the crash are
skipped, the others are committed now. This relies on the re-run splitting the batch's rows over
the write tasks as the first run did, which Spark does for a micro-batch re-read from the same
offsets through a deterministic plan (the same condition as the batch writes' ``producerName``).

Open transactions: each task records its transaction's id in an *intents* topic (never written
in a transaction) before sending in it. The driver's commit first aborts every transaction of
the batch that is not among the ones it is committing (an attempt before a crash, a task attempt
that failed): a transaction left open would hold back what readers may see of the marker topic
(the broker's *max read position*) until its timeout, and its abort now costs nothing. After each
commit no transaction of the batch is left open.

Reading back: records of batch *N* (intents and markers) are all sent after every record of
batch *N - 1* (Spark starts a batch after the previous one's commit), so the driver reads from a
window before the current attempt's first record, widened until it holds a record of an earlier
batch of the query (or starts at the topic's start) — never the whole history.

Consumers of the written topic see the rows of a batch when the driver commits it (readers and
consumers read committed data only); an open transaction also holds back later messages of the
topic for them, as everywhere in Pulsar.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from pyspark.sql.datasource import WriterCommitMessage

from streamwire.spark.config import ClientConfig, get_option
from streamwire.spark.offsets import normalize_topic

__all__ = [
    "ExactlyOnce",
    "TxnWriteCommit",
    "abort_batch",
    "batch_records",
    "commit_batch",
    "wants_exactly_once",
    "write_task",
]

log = logging.getLogger("streamwire.spark")

#: Spark's local properties naming the running query and micro-batch (set by its micro-batch
#: execution on every job of a batch, and handed to the Python workers of its tasks).
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"


@dataclass(frozen=True)
class ExactlyOnce:
    """The exactly-once settings of a streaming write (picklable)."""

    marker_topic: str
    txn_timeout: float = 300.0

    @property
    def intents_topic(self) -> str:
        """Where each task records its transaction's id before sending in it (never written in
        a transaction, so always readable to its end)."""
        return f"{self.marker_topic}-intents"

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> Optional[ExactlyOnce]:
        """None unless ``deliveryGuarantee`` is ``exactly_once``."""
        from streamwire.exceptions import ConfigError

        if not wants_exactly_once(options):
            return None
        marker = get_option(options, "transactionMarkerTopic")
        topic = get_option(options, "topic")
        if not marker:
            if not topic:
                raise ConfigError(
                    "deliveryGuarantee=exactly_once with a 'topic' column needs the "
                    "'transactionMarkerTopic' option (one topic per query)"
                )
            marker = f"{normalize_topic(str(topic))}-streamwire-markers"
        timeout_ms = float(get_option(options, "transactionTimeoutMs", default="300000"))
        if not timeout_ms > 0:
            raise ConfigError(f"transactionTimeoutMs must be positive, not {timeout_ms!r}")
        return cls(normalize_topic(str(marker)), timeout_ms / 1000.0)


def wants_exactly_once(options: Mapping[str, str]) -> bool:
    """Whether ``deliveryGuarantee`` asks for ``exactly_once`` (else ``at_least_once``, the
    default); any other value is a ``ConfigError``. Every protocol's sink reads it so."""
    from streamwire.exceptions import ConfigError

    text = str(get_option(options, "deliveryGuarantee", default="at_least_once"))
    mode = text.strip().lower().replace("-", "_")
    if mode in ("at_least_once", "atleastonce"):
        return False
    if mode not in ("exactly_once", "exactlyonce"):
        raise ConfigError(
            f"deliveryGuarantee must be 'at_least_once' or 'exactly_once', not {text!r}"
        )
    return True


@dataclass
class TxnWriteCommit(WriterCommitMessage):
    """What a task hands the driver: its rows' transaction, still open, and its marker."""

    partition_id: int
    rows: int
    bytes: int
    txn: tuple[int, int]
    #: The marker's (ledger, entry) in the marker topic.
    marker: tuple[int, int]
    #: The (ledger, entry) of the record of the transaction in the intents topic.
    intent: tuple[int, int]
    query: str
    batch: int
    per_topic: dict[str, int] = field(default_factory=dict)


def batch_context() -> tuple[str, int]:
    """``(query id, batch id)`` of the running micro-batch, from the task's local properties."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    query = ctx.getLocalProperty(QUERY_ID_PROPERTY) if ctx is not None else None
    batch = ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx is not None else None
    if query is None or batch is None:
        from streamwire.exceptions import ConfigError

        raise ConfigError(
            "deliveryGuarantee=exactly_once: this task runs outside a streaming micro-batch "
            f"(no {QUERY_ID_PROPERTY} / {BATCH_ID_PROPERTY} local property)"
        )
    return str(query), int(batch)


def _marker_key(query: str, batch: int, partition: int) -> str:
    return f"{query}/{batch}/{partition}"


def write_task(
    config: ClientConfig,
    produce: Any,
    eo: ExactlyOnce,
    batches: Iterable[Any],
    query: str,
    batch: int,
    partition: int,
) -> TxnWriteCommit:
    """Record this task's new transaction in the intents topic, send ``batches`` and the task's
    marker in it, flush, and return it open. On any failure the transaction is aborted and the
    error raised."""
    from streamwire.spark.cache import get_client, get_producer
    from streamwire.spark.writing import produce_batches

    client = get_client(config)
    txn = client.transaction(eo.txn_timeout)
    key = _marker_key(query, batch, partition)
    try:
        # Before anything is sent in it: a driver that finds this transaction open later (this
        # task's process died, or the driver did) can abort it by this record.
        intents = get_producer(config, eo.intents_topic, batching=False)
        intent = intents.send(json.dumps({"txn": list(txn.id)}).encode(), key=key)
        stats = produce_batches(config, batches, produce, txn=txn)
        marker = get_producer(config, eo.marker_topic, batching=False)
        body = {"query": query, "batch": batch, "partition": partition, "rows": stats.rows}
        mid = marker.send(json.dumps(body).encode(), key=key, txn=txn)
        marker.flush()
    except BaseException:
        try:
            txn.abort()
        except Exception:  # the original error matters more; the broker aborts at timeout
            log.warning("streamwire: aborting transaction %s failed", txn.id, exc_info=True)
        raise
    return TxnWriteCommit(
        partition,
        stats.rows,
        stats.bytes,
        txn.id,
        (mid.ledger_id, mid.entry_id),
        (intent.ledger_id, intent.entry_id),
        query,
        batch,
        dict(stats.per_topic),
    )


def batch_records(
    client: Any, topic: str, query: str, batch: int, first: tuple[int, int]
) -> list[tuple[int, bytes]]:
    """``(partition, payload)`` of every visible record of ``query``'s batch ``batch`` in
    ``topic`` (the marker or the intents topic), ``first`` being the (ledger, entry) of one
    record of the current attempt.

    Records of a batch are all sent after every record of the batch before (Spark starts a
    batch once the previous one is committed), so this reads from a window before ``first``,
    widened until it holds a record of an earlier batch of the query (or starts at the
    topic's start), up to the readable end — never the whole history."""
    import streamwire

    ledger, entry = first
    window = 64
    while True:
        start_entry = entry - window
        start: Any = "earliest" if start_entry <= 0 else streamwire.MessageId(ledger, start_entry)
        found, earlier = _scan(client, topic, query, batch, start)
        if earlier or start == "earliest":
            return found
        window *= 4


def _scan(
    client: Any, topic: str, query: str, batch: int, start: Any
) -> tuple[list[tuple[int, bytes]], bool]:
    """Records of the batch from ``start`` to the readable end, and whether a record of an
    earlier batch of the query was among them."""
    found: list[tuple[int, bytes]] = []
    earlier = False
    prefix = f"{query}/"
    with client.create_reader(topic, start, inclusive=True) as reader:
        while reader.has_message_available():
            for m in reader.read_many(1000, timeout=5.0):
                key = m.key or ""
                if not key.startswith(prefix):
                    continue
                _, b, p = key.rsplit("/", 2)
                if int(b) == batch:
                    found.append((int(p), m.data()))
                elif int(b) < batch:
                    earlier = True
    return found, earlier


def commit_batch(
    config: ClientConfig,
    eo: ExactlyOnce,
    commits: list[TxnWriteCommit],
    batch: int,
) -> tuple[int, int]:
    """Commit the tasks' transactions of ``batch``, except those of partitions an earlier
    attempt committed (aborted instead). Returns (rows committed, rows skipped)."""
    from streamwire.spark.cache import get_client

    if not commits:
        return 0, 0
    client = get_client(config)
    query = commits[0].query
    current = {tuple(c.txn) for c in commits}
    # Every other transaction of this batch (an attempt before a crash, a task attempt that
    # failed) is ended first: committed ones stay committed, open ones are aborted now rather
    # than at their timeout. Then none holds back the marker topic's readable end.
    intents = batch_records(client, eo.intents_topic, query, batch, min(c.intent for c in commits))
    for _, payload in intents:
        txn_id = tuple(json.loads(payload)["txn"])
        if txn_id not in current:
            _end_quietly(client, eo, (int(txn_id[0]), int(txn_id[1])))
    markers = batch_records(client, eo.marker_topic, query, batch, min(c.marker for c in commits))
    done = {p for p, _ in markers}
    committed = skipped = 0
    for c in sorted(commits, key=lambda c: c.partition_id):
        txn = client.resume_transaction(c.txn, eo.txn_timeout)
        if c.partition_id in done:
            txn.abort()
            skipped += c.rows
        else:
            txn.commit()
            committed += c.rows
    if skipped:
        log.warning(
            "streamwire: micro-batch %d was written before (partitions %s): %d rows skipped",
            batch,
            sorted(done),
            skipped,
        )
    return committed, skipped


def _end_quietly(client: Any, eo: ExactlyOnce, txn_id: tuple[int, int]) -> None:
    """Abort a transaction of an earlier attempt; one that has ended (committed, aborted, timed
    out) makes the coordinator refuse, which is expected and fine."""
    try:
        client.resume_transaction(txn_id, eo.txn_timeout).abort()
    except Exception as exc:
        log.debug("streamwire: transaction %s had ended: %s", txn_id, exc)


def abort_batch(config: ClientConfig, eo: ExactlyOnce, commits: list[TxnWriteCommit]) -> None:
    """Abort the open transactions of a failed batch (best effort: the broker aborts the rest at
    their timeout)."""
    from streamwire.spark.cache import get_client

    client = get_client(config)
    for c in commits:
        try:
            client.resume_transaction(c.txn, eo.txn_timeout).abort()
        except Exception:
            log.warning("streamwire: aborting transaction %s failed", c.txn, exc_info=True)
