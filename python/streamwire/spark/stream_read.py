"""The Pulsar micro-batch source of the Data Source (``spark.readStream.format("streamwire")``).

Offsets: ``{partition_topic: {"ledger","entry","batch"}}`` (exclusive: read up to and including),
plus ``"subscription": <name>`` when the query holds a derived durable subscription (the name is
made when the query starts and lives in the checkpoint's offsets from then on).

- **Admission control** (``maxRecordsPerTrigger``, ``maxBytesPerTrigger``,
  ``minOffsetsPerTrigger`` + ``maxTriggerDelay``): see :mod:`streamwire.spark.admission`; exact
  across ledgers with ``admin.url``, bounded without it.
- **Retention held from the start**: with ``predefinedSubscription`` (or ``subscriptionName`` /
  ``commitToSubscription``, or a name derived from ``subscriptionPrefix``) the query creates a
  durable subscription at its start position before the first batch plans, so the broker keeps
  every ledger the query has yet to read; the subscription moves (a cumulative acknowledgement)
  only when Spark commits a batch. The checkpoint, not the subscription, stays the source of
  truth for where the query is.
- **Time positions**: ``startingTime`` resolves each partition's start by a seek by publish time
  on the broker; ``endingTime`` stops each partition before its first message published at or
  after that time (the query then idles there).

Everything on ``self`` is options or plain data: Spark pickles this object. Live consumers that
hold subscriptions live in a module-level cache of the driver's Python process.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Optional

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from streamwire.spark.config import ClientConfig, get_option

if TYPE_CHECKING:
    from streamwire.spark.offsets import Position
    from streamwire.spark.reading import ReadOptions

try:  # Spark 4.2+: admission control (ReadMaxRows) and Trigger.AvailableNow
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxBytes,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - older Spark: the caps fall back to the options alone
    ReadAllAvailable = ReadMaxBytes = ReadMaxRows = None  # type: ignore[assignment,misc]

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass


__all__ = ["StreamwireStreamReader"]

log = logging.getLogger("streamwire.spark")

# (config, subscription, partition) -> the consumer that holds and acknowledges it
_sub_consumers: dict[tuple[ClientConfig, str, str], Any] = {}

# The key of the derived subscription's name in the offsets (topics always contain "://").
_SUB_KEY = "subscription"

_EARLIEST_JSON = {"ledger": -1, "entry": -1, "batch": -1}


def _positions(offsets: Optional[dict[str, Any]]) -> dict[str, Position]:
    from streamwire.spark.offsets import position_from_json

    return {t: position_from_json(v) for t, v in (offsets or {}).items() if "://" in t}


class StreamwireStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch source for Pulsar topics (see the module docstring)."""

    def __init__(
        self,
        options: dict[str, str],
        columns: Optional[tuple[int, ...]] = None,
        read_options: Optional[ReadOptions] = None,
    ) -> None:
        from streamwire.spark.admin import AdminConfig
        from streamwire.spark.datasource import (
            _by_timestamp,
            _duration_seconds,
            _read_options,
            _time_option,
            _topics,
        )
        from streamwire.spark.offsets import parse_offsets_option

        self.options = options
        self.config = ClientConfig.from_options(options)
        self.admin = AdminConfig.from_options(options, self.config)
        self.read_options = read_options or _read_options(options, columns)
        self.topics, self.pattern = _topics(options)
        self.starting = parse_offsets_option(
            get_option(options, "startingOffsets"), default="latest"
        )
        mr = get_option(options, "maxRecordsPerTrigger", "maxOffsetsPerTrigger")
        self.max_records = _positive(mr, "maxRecordsPerTrigger")
        self.max_bytes = _positive(get_option(options, "maxBytesPerTrigger"), "maxBytesPerTrigger")
        self.min_records = _positive(
            get_option(options, "minOffsetsPerTrigger", "minRecordsPerTrigger"),
            "minOffsetsPerTrigger",
        )
        self.max_trigger_delay = _duration_seconds(
            get_option(options, "maxTriggerDelay", default="15m")
        )
        self.subscription = get_option(
            options, "predefinedSubscription", "subscriptionName", "commitToSubscription"
        )
        self.subscription_prefix = get_option(options, "subscriptionPrefix")
        self.min_partitions = int(get_option(options, "minPartitions", default="0"))
        self.starting_time = _time_option(options, "startingTime")
        self.ending_time = _time_option(options, "endingTime")
        self.starting_by_time = _by_timestamp(options, "startingOffsetsByTimestamp")
        # Driver-side state (the reader object lives in one driver process for the query).
        self._target: Optional[dict[str, Any]] = None
        self._last_trigger: Optional[float] = None  # monotonic time of the last batch
        self._ceilings: dict[str, Position] = {}
        self._latest_seen: Optional[dict[str, Position]] = None
        self._derived: Optional[str] = None  # the subscriptionPrefix name made here

    # -- driver helpers (no live handle is stored on self: Spark pickles this object) -------
    def _client(self) -> Any:
        from streamwire.spark.cache import get_client

        return get_client(self.config)

    def _partitions(self) -> list[str]:
        from streamwire.spark.reading import resolve_topics

        return resolve_topics(self._client(), self.topics, self.pattern)

    def _latest(self) -> dict[str, Position]:
        from streamwire.spark.reading import last_message_id

        client = self._client()
        if not self.subscription:
            return {t: last_message_id(client, t) for t in self._partitions()}
        # The consumers holding the subscription answer without a reader made per partition.
        from streamwire.spark.reading import _last_or_empty

        name = str(self.subscription)
        return {
            t: _last_or_empty(self._consumer(name, t).get_last_message_id)
            for t in self._partitions()
        }

    def _under_ceilings(self, latest: dict[str, Position]) -> dict[str, Position]:
        """``endingTime``: no partition goes past its last message before that time."""
        if self.ending_time is None:
            return latest
        from streamwire.spark.datasource import _time_ends
        from streamwire.spark.offsets import position_key

        # A message published at or after endingTime cannot exist before that time (clocks
        # agreeing): until then there is nothing to look up.
        unresolved = [t for t in latest if t not in self._ceilings]
        if unresolved and time.time() * 1000 >= self.ending_time:
            for t, end in _time_ends(self._client(), unresolved, self.ending_time).items():
                if end is not None:
                    self._ceilings[t] = end
        out = dict(latest)
        for t, end in self._ceilings.items():
            if t in out and position_key(end) < position_key(out[t]):
                out[t] = end
        return out

    def _subscription_name(self, offsets: Optional[dict[str, Any]]) -> Optional[str]:
        if self.subscription:
            return str(self.subscription)
        named = (offsets or {}).get(_SUB_KEY)
        return str(named) if named else None

    # -- Spark's calls ------------------------------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        from streamwire.spark.datasource import _time_offsets
        from streamwire.spark.offsets import EARLIEST, offset_json, predecessor
        from streamwire.spark.reading import last_message_id

        client = self._client()
        names = self._partitions()
        specs: dict[str, Any]
        if self.starting_time is not None:
            specs = _time_offsets(client, names, self.starting_time)
        elif isinstance(self.starting, dict):
            specs = {t: self.starting.get(t, "latest") for t in names}
        else:
            specs = dict.fromkeys(names, self.starting)
        if self.starting_by_time is not None:
            from streamwire.spark.datasource import _per_partition_times

            found = _per_partition_times(client, self.starting_by_time, names)
            specs.update({t: p or "latest" for t, p in found.items()})
        positions: dict[str, Position] = {}
        for topic, spec in specs.items():
            if spec == "earliest":
                positions[topic] = EARLIEST
            elif spec == "latest":
                positions[topic] = last_message_id(client, topic)
            else:
                positions[topic] = predecessor(spec)
        result: dict[str, Any] = offset_json(positions)
        name = self.subscription
        if not name and self.subscription_prefix:
            # Spark may ask for the initial offset more than once in a run (Trigger.AvailableNow
            # asks too): one name per reader, or each call would leave a subscription behind.
            if self._derived is None:
                self._derived = f"{self.subscription_prefix}-{uuid.uuid4().hex[:12]}"
            name = self._derived
            result[_SUB_KEY] = name
        if name:
            self._hold(str(name), positions)
        return result

    def _hold(self, name: str, positions: dict[str, Position]) -> None:
        """Create (or take over) the durable subscription on every partition, at the start:
        from now on the broker keeps everything after it."""
        import streamwire
        from streamwire.spark.offsets import partition_index

        for topic, pos in positions.items():
            consumer = self._consumer(name, topic, "earliest" if pos[0] < 0 else "latest")
            if pos[0] < 0:
                target = streamwire.MessageId.earliest
            else:
                # The start's own entry: at most one entry already read is held too.
                target = streamwire.MessageId(pos[0], max(0, pos[1]), partition_index(topic))
            consumer.seek(target)
        log.info("streamwire: subscription %r holds %d partition(s)", name, len(positions))

    def _consumer(self, name: str, topic: str, initial: str = "earliest") -> Any:
        key = (self.config, name, topic)
        consumer = _sub_consumers.get(key)
        if consumer is None:
            consumer = self._client().subscribe(
                topic,
                name,
                subscription_type="failover",
                initial_position=initial,
                # The consumer only holds the cursor and acknowledges: a one-message queue
                # keeps the broker from dispatching the backlog to the driver.
                receiver_queue_size=1,
            )
            _sub_consumers[key] = consumer
        return consumer

    def getDefaultReadLimit(self) -> Any:
        # One limit goes through Spark; the byte cap (with both set) and the minimum are
        # applied from the options on top of it.
        if self.max_records and ReadMaxRows is not None:
            return ReadMaxRows(self.max_records)
        if self.max_bytes and ReadMaxBytes is not None:
            return ReadMaxBytes(self.max_bytes)
        return ReadAllAvailable() if ReadAllAvailable is not None else None

    def prepareForTriggerAvailableNow(self) -> None:
        from streamwire.spark.offsets import offset_json

        self._target = offset_json(self._under_ceilings(self._latest()))

    def latestOffset(
        self, start: Optional[dict[str, Any]] = None, limit: Any = None
    ) -> dict[str, Any]:
        from streamwire.spark.admission import BrokerIo, Caps, Planner
        from streamwire.spark.offsets import offset_json, position_from_json

        if self._target is not None:
            latest = {t: position_from_json(v) for t, v in self._target.items()}
        else:
            latest = self._latest()
        starts = self._check_data_loss(_positions(start), latest)
        latest = self._under_ceilings(latest)
        self._latest_seen = latest
        all_available = ReadAllAvailable is not None and isinstance(limit, ReadAllAvailable)
        max_rows = getattr(limit, "max_rows", None)
        if max_rows is None and limit is None:
            max_rows = self.max_records
        max_bytes = getattr(limit, "max_bytes", None)
        if max_bytes is None and not all_available:
            max_bytes = self.max_bytes
        planner = Planner(BrokerIo(self._client(), self.admin), starts)
        meta = {k: v for k, v in (start or {}).items() if "://" not in k}
        if self.min_records and not all_available and self._target is None:
            waiting, _exact = planner.backlog_rows(latest)
            now = time.monotonic()
            waited = None if self._last_trigger is None else now - self._last_trigger
            if (
                waiting < self.min_records
                and waited is not None
                and (waited < self.max_trigger_delay)
            ):
                return dict(start or {})  # too little yet: no batch this trigger
            self._last_trigger = now
        ends = planner.ends(latest, Caps(max_rows, max_bytes))
        result: dict[str, Any] = offset_json(ends)
        result.update(meta)
        return result

    def _check_data_loss(
        self, starts: dict[str, Position], latest: dict[str, Position]
    ) -> dict[str, Position]:
        """Partitions deleted (gone from the listing) or deleted and made again (empty, or
        behind where the query is) since the last batch: with ``failOnDataLoss`` (default) the
        query fails; without it they are dropped, or read again from their new beginning, with
        a warning."""
        from streamwire.spark.offsets import EARLIEST, position_key
        from streamwire.spark.reading import DataLossError

        gone = sorted(t for t in starts if t not in latest)
        reset = sorted(
            t
            for t, last in latest.items()
            if t in starts
            and starts[t][0] >= 0
            and starts[t][1] >= 0
            and (last[1] < 0 or position_key(last) < position_key(starts[t]))
        )
        if reset:
            # Proof before failing a query: the entry the query stands on is really gone
            # (a broker may answer entry -1 of a new, empty ledger for a topic with data).
            from streamwire.spark.admission import BrokerIo

            io = BrokerIo(self._client(), self.admin, timeout=2.0)
            reset = [t for t in reset if not _entry_exists(io, t, starts[t])]
        if not gone and not reset:
            return starts
        what = "; ".join(
            [f"{t}: deleted" for t in gone]
            + [
                f"{t}: now ends at {latest[t]}, before the query's position {starts[t]}"
                for t in reset
            ]
        )
        if self.read_options.fail_on_data_loss:
            raise DataLossError(
                f"streamwire: partitions were deleted or truncated mid-stream ({what}); "
                "set failOnDataLoss=false to skip them"
            )
        log.warning("streamwire: data lost (failOnDataLoss=false, skipped): %s", what)
        out = {t: p for t, p in starts.items() if t not in gone}
        out.update(dict.fromkeys(reset, EARLIEST))
        return out

    def reportLatestOffset(self) -> Optional[dict[str, Any]]:
        """The newest positions seen at the last trigger (Spark shows them as the source's
        ``latestOffset`` in the query progress: the lag is the distance to ``endOffset``)."""
        from streamwire.spark.offsets import offset_json

        if self._latest_seen is None:
            return None
        return offset_json(self._latest_seen)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        from streamwire.spark.offsets import (
            RangeSpec,
            partition_index,
            position_from_json,
            split_ranges,
        )

        starts = _positions(start)
        ranges = [
            RangeSpec(
                t,
                partition_index(t),
                starts.get(t, position_from_json(_EARLIEST_JSON)),
                pos,
            )
            for t, pos in _positions(end).items()
        ]
        live = [r for r in ranges if not r.is_empty()]
        if self.admin is not None and self.min_partitions > len(live):
            from streamwire.spark.admin import internal_stats
            from streamwire.spark.ledgers import LedgerMap, split_by_ledgers

            maps = {
                r.topic: LedgerMap.from_internal_stats(internal_stats(self.admin, r.topic), r.end)
                for r in live
                if r.topic.startswith("persistent://")
            }
            ranges = split_by_ledgers(live, self.min_partitions, maps)
        else:
            ranges = split_ranges(ranges, self.min_partitions)
        return [InputPartition(r.to_json()) for r in ranges if not r.is_empty()]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from streamwire.spark.offsets import RangeSpec
        from streamwire.spark.reading import read_range

        yield from read_range(self.config, RangeSpec.from_json(partition.value), self.read_options)

    def commit(self, end: dict[str, Any]) -> None:
        """Spark committed everything up to ``end``: move the subscription there."""
        import streamwire
        from streamwire.spark.offsets import partition_index

        name = self._subscription_name(end)
        if not name:
            return
        for topic, pos in _positions(end).items():
            if pos[1] < 0:
                continue  # before a ledger's first entry: nothing of it to acknowledge
            consumer = self._consumer(name, topic)
            consumer.acknowledge_cumulative(
                streamwire.MessageId(pos[0], pos[1], partition_index(topic), pos[2])
            )

    def stop(self) -> None:
        for key in [k for k in _sub_consumers if k[0] == self.config]:
            consumer = _sub_consumers.pop(key)
            try:
                consumer.close()
            except Exception:  # closing on shutdown: the broker drops it anyway
                pass


def _entry_exists(io: Any, topic: str, pos: Position) -> bool:
    found = io.peek(topic, (pos[0], pos[1]))
    return found is not None and (found.position[0], found.position[1]) == (pos[0], pos[1])


def _positive(value: Any, name: str) -> Optional[int]:
    if value is None:
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number <= 0:
        from streamwire.exceptions import ConfigError

        raise ConfigError(f"streamwire: {name} must be a positive integer, got {value!r}")
    return number
