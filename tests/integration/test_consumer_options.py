"""Consumer options of the official client (issue 26), each checked against a real broker:
Key_Shared out-of-order delivery, the regex subscription mode, the byte limit of a batch
receive, the dead-letter topic's initial subscription, and null values."""

from __future__ import annotations

import asyncio
import re
import time
from types import ModuleType
from typing import Any, Optional

import pytest
import streamwire
from streamwire import aio
from streamwire import exceptions as exc

from tests.peers.admin import PulsarAdmin


def _collect(c: Any, seconds: float) -> list[Any]:
    """Everything `c` receives within `seconds` (a check that nothing more comes)."""
    got: list[Any] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got.extend(c.receive_many(1000, timeout=0.2))
    return got


def _drain(c: Any, want: int, seconds: float) -> list[Any]:
    got: list[Any] = []
    end = time.monotonic() + seconds
    while len(got) < want and time.monotonic() < end:
        got.extend(c.receive_many(1000, timeout=0.5))
    return got


# -- Key_Shared: allow_out_of_order_delivery --------------------------------------------------


@pytest.mark.parametrize("allow", [False, True], ids=["in-order", "out-of-order"])
def test_key_shared_out_of_order_delivery(
    apache_broker: Any, unique_topic: str, allow: bool
) -> None:
    """Consumer A holds one unacknowledged message of every key; B joins. In order (the
    default) the broker holds every key that moved to B (each has a message pending with A)
    until A acknowledges; with out-of-order delivery B gets its keys' new messages at once."""
    keys = [f"k{i}" for i in range(100)]
    policy: Optional[dict[str, bool]] = {"allow_out_of_order_delivery": True} if allow else None
    with streamwire.Client(apache_broker.service_url) as client:

        def join() -> streamwire.Consumer:
            return client.subscribe(
                unique_topic, "ks", subscription_type="key_shared", key_shared_policy=policy
            )

        a = join()
        with client.create_producer(unique_topic, batching=False) as p:
            for k in keys:
                p.send_async(b"old-" + k.encode(), key=k)
            p.flush()
            held = _drain(a, len(keys), 30)
            assert len(held) == len(keys)
            b = join()
            for k in keys:
                p.send_async(b"new-" + k.encode(), key=k)
            p.flush()
        got_b = _collect(b, 3.0)
        got_a = _collect(a, 0.5)
        # A gets the new messages of the keys it kept either way: the broker did dispatch.
        assert got_a and all(m.data().startswith(b"new-") for m in got_a)
        if allow:
            assert got_b, "out of order: B gets its keys' new messages while A holds old ones"
        else:
            assert got_b == [], "in order: B's keys wait until A acknowledges their old messages"
            a.acknowledge(held)
            got_b = _drain(b, len(keys) - len(got_a), 30)
        assert all(m.data().startswith(b"new-") for m in got_b)
        assert {m.key for m in got_b}.isdisjoint({m.key for m in got_a}), "each key one owner"
        assert len(got_a) + len(got_b) == len(keys)
        a.close()
        b.close()


def test_key_shared_out_of_order_agrees_with_the_official_client(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    """The broker keeps one out-of-order setting per subscription and refuses a consumer whose
    setting differs from the connected ones': with the official client's consumer holding the
    subscription with `allow_out_of_order_delivery=True`, ours joins only when it says the same
    (so the flag is on the wire, where the official client puts it)."""
    pulsar = official_pulsar
    official = pulsar.Client(apache_broker.service_url)
    try:
        theirs = official.subscribe(
            unique_topic,
            "ks",
            consumer_type=pulsar.ConsumerType.KeyShared,
            key_shared_policy=pulsar.ConsumerKeySharedPolicy(
                key_shared_mode=pulsar.KeySharedMode.AutoSplit, allow_out_of_order_delivery=True
            ),
        )
        with streamwire.Client(apache_broker.service_url, operation_timeout=5) as client:
            with pytest.raises(exc.ConsumerBusyError):
                client.subscribe(unique_topic, "ks", subscription_type="key_shared")
            ours = client.subscribe(
                unique_topic,
                "ks",
                subscription_type="key_shared",
                key_shared_policy={"allow_out_of_order_delivery": True},
            )
            # Both consumers share the keys of one subscription.
            with client.create_producer(unique_topic, batching=False) as p:
                for i in range(200):
                    p.send_async(b"%d" % i, key=f"k{i % 50}")
                p.flush()
            mine = _collect(ours, 2.0)
            ours.acknowledge(mine)
            seen = {m.data() for m in mine}
            end = time.monotonic() + 30
            while len(seen) < 200 and time.monotonic() < end:
                try:
                    m = theirs.receive(timeout_millis=200)
                except pulsar.Timeout:
                    continue
                theirs.acknowledge(m)
                seen.add(m.data())
            assert seen == {b"%d" % i for i in range(200)}
            assert 0 < len(mine) < 200, "both consumers got keys"
            ours.close()
        theirs.close()
    finally:
        official.close()


# -- regex_subscription_mode -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "want", "lookup"),
    [
        ("persistent", {"p"}, "binary"),
        ("non_persistent", {"n"}, "binary"),
        ("all", {"p", "n"}, "binary"),
        ("non_persistent", {"n"}, "http"),
    ],
)
def test_regex_subscription_mode(
    apache_broker: Any, unique_topic: str, mode: str, want: set[str], lookup: str
) -> None:
    """A pattern matching a persistent and a non-persistent topic subscribes to the kinds the
    mode names, at subscribe time and in the re-discovery rounds after it; through an HTTP
    service URL the admin API's listing takes the same mode."""
    name = unique_topic.removeprefix("persistent://public/default/")
    topics = {
        "p": f"persistent://public/default/{name}-p",
        "n": f"non-persistent://public/default/{name}-n",
    }
    later = {
        "p": f"persistent://public/default/{name}-p2",
        "n": f"non-persistent://public/default/{name}-n2",
    }
    url = apache_broker.service_url if lookup == "binary" else apache_broker.admin_url
    with streamwire.Client(url) as client:
        # A non-persistent topic exists (and is listed) while something uses it.
        producers = {k: client.create_producer(t, batching=False) for k, t in topics.items()}
        c = client.subscribe(
            re.compile(re.escape(f"persistent://public/default/{name}") + "-.*"),
            "rx",
            regex_subscription_mode=mode,
            pattern_auto_discovery_period=0.5,
        )
        assert c.stats()["partitions"] == len(want)
        for k, p in producers.items():
            p.send(k.encode())
        got = _collect(c, 2.0)
        assert sorted(m.data() for m in got) == sorted(k.encode() for k in want)
        assert {m.topic for m in got} == {topics[k] for k in want}
        # Topics that appear later are found by the same kinds' listing.
        more = {k: client.create_producer(t, batching=False) for k, t in later.items()}
        end = time.monotonic() + 20
        while c.stats()["partitions"] < 2 * len(want) and time.monotonic() < end:
            time.sleep(0.2)
        time.sleep(1.0)  # one more discovery round: nothing of the other kind comes in
        assert c.stats()["partitions"] == 2 * len(want)
        for k, p in more.items():
            p.send(b"later-" + k.encode())
        got = _collect(c, 2.0)
        assert sorted(m.data() for m in got) == sorted(b"later-" + k.encode() for k in want)
        c.close()
        for p in [*producers.values(), *more.values()]:
            p.close()


# -- receive_many(max_bytes=) ------------------------------------------------------------------


def _greedy(sizes: list[int], max_messages: int, max_bytes: int) -> list[int]:
    """How many messages each receive takes: the first always, then while the bytes fit."""
    counts: list[int] = []
    n = total = 0
    for size in sizes:
        if n and (n == max_messages or total + size > max_bytes):
            counts.append(n)
            n = total = 0
        n += 1
        total += size
    if n:
        counts.append(n)
    return counts


# Payload sizes with a message larger than the whole limit and some empty ones.
SIZES = [(i * 37) % 90 for i in range(60)] + [500] + [0, 0, 10] + [(i * 53) % 70 for i in range(40)]
MAX_BYTES = 200


def _wait_queued(c: Any, n: int) -> None:
    end = time.monotonic() + 30
    while c.stats()["queued"] < n and time.monotonic() < end:
        time.sleep(0.05)
    assert c.stats()["queued"] == n


@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
def test_receive_many_max_bytes(lite_broker: Any, unique_topic: str, batching: bool) -> None:
    """With every message queued, each call takes exactly what fits: the first message always
    (also one larger than the limit), then each next one while the payload bytes stay within
    `max_bytes`; the first that does not fit opens the next call. Nothing is lost or
    reordered; the count limit still applies, and receive_arrow / Reader.read_many do the
    same."""
    values = [bytes([65 + i % 26]) * n for i, n in enumerate(SIZES)]
    with streamwire.Client(lite_broker.service_url) as client:
        with client.create_producer(unique_topic, batching=batching) as p:
            p.send_many(values)
            p.flush()
        c = client.subscribe(unique_topic, "bytes", initial_position="earliest")
        _wait_queued(c, len(values))
        calls: list[list[bytes]] = []
        while sum(len(x) for x in calls) < len(values):
            got = c.receive_many(1000, timeout=5, max_bytes=MAX_BYTES)
            assert got
            calls.append([m.data() for m in got])
            c.acknowledge(got)
        assert [v for call in calls for v in call] == values
        assert [len(call) for call in calls] == _greedy(SIZES, 1000, MAX_BYTES)
        assert all(sum(map(len, call)) <= MAX_BYTES or len(call) == 1 for call in calls)
        assert any(len(call) == 1 and len(call[0]) > MAX_BYTES for call in calls)
        c.close()

        # The count limit within the bytes, and the Arrow receive.
        c = client.subscribe(unique_topic, "arrow", initial_position="earliest")
        _wait_queued(c, len(values))
        rows: list[int] = []
        while sum(rows) < len(values):
            batch = c.receive_arrow(3, timeout=5, columns=["value"], max_bytes=MAX_BYTES)
            assert batch.num_rows
            rows.append(batch.num_rows)
        assert rows == _greedy(SIZES, 3, MAX_BYTES)
        c.close()

        r = client.create_reader(unique_topic, "earliest")
        counts: list[int] = []
        while sum(counts) < len(values):
            # Not everything may be queued yet: a call takes what fits of what is there.
            got = r.read_many(1000, timeout=5, max_bytes=MAX_BYTES)
            assert sum(len(m.data()) for m in got) <= MAX_BYTES or len(got) == 1
            counts.append(len(got))
        r.close()


def test_receive_many_max_bytes_aio(apache_broker: Any, unique_topic: str) -> None:
    """The same byte rule on the asyncio face, also for the messages a cancelled receive
    handed back (they are taken first, within the next receive's limit). On Apache: pulsar-lite
    under a loaded CI machine twice dispatched entries twice here (the sequence came shifted)."""
    values = [bytes([97 + i % 26]) * n for i, n in enumerate(SIZES)]

    async def main() -> tuple[int, list[list[bytes]]]:
        async with aio.Client(apache_broker.service_url) as client:
            c = await client.subscribe(unique_topic, "aio-bytes", initial_position="earliest")
            # Batches of 40: the first receive gets at least one whole batch.
            p = await client.create_producer(unique_topic, batching_max_messages=40)
            task = asyncio.ensure_future(c.receive_many(1000))
            while not c._waiters:
                await asyncio.sleep(0)
            waiting = c._waiters[0]
            sends = [p.send(v) for v in values]  # not awaited: nothing else may run the task
            while not waiting.done():
                await asyncio.sleep(0)
            # Resolved with the messages but not resumed: cancelling hands them back.
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            held = len(c._held)
            await asyncio.gather(*sends)
            calls: list[list[bytes]] = []
            end = time.monotonic() + 30
            while sum(map(len, calls)) < len(values) and time.monotonic() < end:
                got = await c.receive_many(1000, timeout=5, max_bytes=MAX_BYTES)
                calls.append([m.data() for m in got])
                await c.acknowledge(got)
            await c.close()
            await p.close()
            return held, calls

    held, calls = asyncio.run(main())
    assert held > 1, "the cancelled receive handed back several messages"
    assert [v for call in calls for v in call] == values
    assert all(sum(map(len, call)) <= MAX_BYTES or len(call) == 1 for call in calls)
    # The held messages came first, cut by the byte rule as the engine's would be.
    assert [len(c) for c in calls[: len(_greedy(SIZES[:held], 1000, MAX_BYTES))]] == _greedy(
        SIZES[:held], 1000, MAX_BYTES
    )


# -- dead_letter_policy initial_subscription_name ----------------------------------------------


@pytest.mark.parametrize("initial", [True, False], ids=["initial-sub", "no-initial-sub"])
def test_dead_letter_initial_subscription(
    apache_broker: Any, apache_admin: PulsarAdmin, unique_topic: str, initial: bool
) -> None:
    """The broker runs without retention (Apache's default): a topic keeps what a subscription
    has not consumed, nothing else. With `initial_subscription_name` the dead-letter producer
    has the broker create that subscription (at the earliest position) with the dead-letter
    topic, so a consumer that comes later, even one starting at "latest", gets every dead
    letter; without it, that later subscription starts after them."""
    dlq = f"{unique_topic}-work-DLQ"
    policy: dict[str, Any] = {"max_redeliver_count": 1}
    if initial:
        policy["initial_subscription_name"] = "keep"
    with streamwire.Client(apache_broker.service_url) as client:
        c = client.subscribe(
            unique_topic,
            "work",
            subscription_type="shared",
            negative_ack_redelivery_delay=0.05,
            ack_grouping_time=0,
            dead_letter_policy=policy,
        )
        with client.create_producer(unique_topic, batching=False) as p:
            for v in (b"a", b"b", b"c"):
                p.send(v)
        end = time.monotonic() + 60
        while c.stats()["dead_lettered"] < 3 and time.monotonic() < end:
            for m in c.receive_many(100, timeout=0.5):
                c.negative_acknowledge(m)
        assert c.stats()["dead_lettered"] == 3
        subs = apache_admin.topic_stats(dlq)["subscriptions"]
        if initial:
            assert subs["keep"]["msgBacklog"] == 3
        else:
            assert subs == {}
        later = client.subscribe(dlq, "keep", initial_position="latest")
        got = _collect(later, 2.0)
        if initial:
            assert sorted(m.data() for m in got) == [b"a", b"b", b"c"]
            assert {m.properties["REAL_TOPIC"] for m in got} == {unique_topic}
        else:
            assert got == []
        later.close()
        c.close()


# -- Message.has_null_value --------------------------------------------------------------------


@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
def test_null_value_from_the_official_client(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str, batching: bool
) -> None:
    """The official client's `send(None)` marks the message's metadata `null_value` (a
    compaction tombstone); ours reads it as `has_null_value()`, unlike an empty value."""
    with streamwire.Client(apache_broker.service_url) as client:
        c = client.subscribe(unique_topic, "nulls")
        official = official_pulsar.Client(apache_broker.service_url)
        try:
            p = official.create_producer(unique_topic, batching_enabled=batching)
            for value in (None, b"", b"x"):
                p.send_async(value, lambda res, mid: None, partition_key="k")
            p.flush()
            p.close()
        finally:
            official.close()
        got = _drain(c, 3, 30)
        assert [(m.has_null_value(), m.data(), m.key) for m in got] == [
            (True, b"", "k"),
            (False, b"", "k"),
            (False, b"x", "k"),
        ]
        c.close()
