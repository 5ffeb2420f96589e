"""A subscription or topic held by another exclusive party fails at once, on Apache Pulsar.

The official clients report ``ConsumerBusy`` (a second consumer on an Exclusive subscription,
or one of another type than the subscription's consumers)
and ``ProducerBusy``/``ProducerFenced`` (a second producer on a topic with an exclusive
producer) right away; ours raises its typed error as fast, not after retrying until the
operation timeout (30 s here, so a retry loop would fail the time bound). Through a partitioned
topic where one partition is held, the partitions that did subscribe are closed again: the
broker's topic stats show no consumer of ours left behind. Each test measures the time to the
error, ours and the official client's, and puts both in its assertion message.
"""

from __future__ import annotations

import asyncio
import time
from types import ModuleType
from typing import Any, Callable

import pytest
import streamwire
from streamwire import aio
from streamwire import exceptions as exc

from tests.peers.admin import PulsarAdmin

OPERATION_TIMEOUT = 30.0
# Generous (the machine is shared), far below the operation timeout a retry loop would use.
FAST = 5.0
PARTITIONS = 4


def _time_to_raise(errors: Any, call: Callable[[], object]) -> float:
    """Seconds until ``call`` raised one of ``errors`` (fails the test if it returned)."""
    start = time.monotonic()
    with pytest.raises(errors):
        call()
    return time.monotonic() - start


def _consumers_on(admin: PulsarAdmin, topic: str, subscription: str) -> list[str]:
    """The names of the consumers the broker has on ``subscription`` of ``topic``."""
    subs = admin.topic_stats(topic).get("subscriptions", {})
    return [c.get("consumerName", "") for c in subs.get(subscription, {}).get("consumers", [])]


def _both_refuse_fast(
    client: streamwire.Client,
    official: Any,
    pulsar: ModuleType,
    topic: str,
    subscription: str,
    ours_type: str,
    theirs_type: Any,
    what: str,
) -> None:
    """Subscribing with ``ours_type`` / ``theirs_type`` raises ConsumerBusy in both clients,
    each within FAST seconds (printed)."""
    ours = _time_to_raise(
        exc.ConsumerBusyError,
        lambda: client.subscribe(topic, subscription, subscription_type=ours_type),
    )
    theirs = _time_to_raise(
        pulsar.ConsumerBusy,
        lambda: official.subscribe(topic, subscription, consumer_type=theirs_type),
    )
    note = f"{what}time to ConsumerBusy: ours {ours:.3f} s, official {theirs:.3f} s"
    assert ours < FAST, note
    assert theirs < FAST, note
    print(note)


def test_second_exclusive_consumer_fails_fast_as_the_official_client(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    pulsar = official_pulsar
    official = pulsar.Client(
        apache_broker.service_url, operation_timeout_seconds=int(OPERATION_TIMEOUT)
    )
    try:
        with streamwire.Client(
            apache_broker.service_url, operation_timeout=OPERATION_TIMEOUT
        ) as client:
            holder = client.subscribe(unique_topic, "held", subscription_type="exclusive")
            both = (client, official, pulsar, unique_topic)
            _both_refuse_fast(*both, "held", "exclusive", pulsar.ConsumerType.Exclusive, "")
            # The error is the broker's answer, typed and not retriable for this call.
            with pytest.raises(exc.ConsumerBusyError) as ei:
                client.subscribe(unique_topic, "held")
            assert isinstance(ei.value, exc.ServerError)
            # The holder still works, and once it is gone the subscription is free again.
            assert holder.is_connected()
            holder.close()
            client.subscribe(unique_topic, "held").close()

            # A subscription held with another type refuses the same way ("Subscription is
            # of different type"), while a second failover consumer joins.
            failover = client.subscribe(unique_topic, "fo", subscription_type="failover")
            _both_refuse_fast(*both, "fo", "exclusive", pulsar.ConsumerType.Shared, "other type, ")
            second = client.subscribe(unique_topic, "fo", subscription_type="failover")
            second.close()
            failover.close()
    finally:
        official.close()


def test_second_exclusive_consumer_fails_fast_on_the_asyncio_face(
    apache_broker: Any, unique_topic: str
) -> None:
    async def main() -> float:
        async with aio.Client(
            apache_broker.service_url, operation_timeout=OPERATION_TIMEOUT
        ) as client:
            holder = await client.subscribe(unique_topic, "held")
            start = time.monotonic()
            with pytest.raises(exc.ConsumerBusyError):
                await client.subscribe(unique_topic, "held")
            took = time.monotonic() - start
            await holder.close()
            return took

    took = asyncio.run(main())
    assert took < FAST, f"asyncio time to ConsumerBusy: {took:.3f} s"


def test_partitioned_subscribe_with_one_partition_held_leaves_nothing_behind(
    apache_broker: Any,
    apache_admin: PulsarAdmin,
    official_pulsar: ModuleType,
    unique_topic: str,
) -> None:
    """The official client holds partition 2's exclusive subscription; subscribing to the whole
    topic fails fast with ConsumerBusy, and partitions 0, 1, 3 (which did subscribe) have no
    consumer left; the official client's own attempt is timed alongside."""
    pulsar = official_pulsar
    apache_admin.create_partitioned_topic(unique_topic, PARTITIONS)
    official = pulsar.Client(
        apache_broker.service_url, operation_timeout_seconds=int(OPERATION_TIMEOUT)
    )
    try:
        held = official.subscribe(f"{unique_topic}-partition-2", "sub", consumer_name="holder")
        with streamwire.Client(
            apache_broker.service_url, operation_timeout=OPERATION_TIMEOUT
        ) as client:
            ours = _time_to_raise(
                exc.ConsumerBusyError,
                lambda: client.subscribe(unique_topic, "sub", consumer_name="ours"),
            )
            theirs = _time_to_raise(
                pulsar.ConsumerBusy,
                lambda: official.subscribe(unique_topic, "sub", consumer_name="theirs"),
            )
            note = f"partitioned time to ConsumerBusy: ours {ours:.3f} s, official {theirs:.3f} s"
            assert ours < FAST, note
            assert theirs < FAST, note
            print(note)
            left = {
                i: _consumers_on(apache_admin, f"{unique_topic}-partition-{i}", "sub")
                for i in range(PARTITIONS)
            }
            assert left == {0: [], 1: [], 2: ["holder"], 3: []}, left
            held.close()
            # Nothing half-subscribed blocks the next attempt.
            whole = client.subscribe(unique_topic, "sub", consumer_name="ours")
            seen = {
                i: _consumers_on(apache_admin, f"{unique_topic}-partition-{i}", "sub")
                for i in range(PARTITIONS)
            }
            assert seen == {i: ["ours"] for i in range(PARTITIONS)}, seen
            whole.close()
    finally:
        official.close()


def test_second_exclusive_producer_fails_fast_as_the_official_client(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    pulsar = official_pulsar
    busy = (exc.ProducerBusyError, exc.ProducerFencedError)
    official = pulsar.Client(
        apache_broker.service_url, operation_timeout_seconds=int(OPERATION_TIMEOUT)
    )
    try:
        with streamwire.Client(
            apache_broker.service_url, operation_timeout=OPERATION_TIMEOUT
        ) as client:
            holder = client.create_producer(unique_topic, access_mode="exclusive")
            ours = _time_to_raise(
                busy, lambda: client.create_producer(unique_topic, access_mode="exclusive")
            )
            theirs = _time_to_raise(
                (pulsar.ProducerBusy, pulsar.ProducerFenced),
                lambda: official.create_producer(
                    unique_topic, access_mode=pulsar.ProducerAccessMode.Exclusive
                ),
            )
            note = f"time to ProducerBusy/Fenced: ours {ours:.3f} s, official {theirs:.3f} s"
            assert ours < FAST, note
            assert theirs < FAST, note
            print(note)
            holder.send(b"still mine")
            holder.close()
    finally:
        official.close()
