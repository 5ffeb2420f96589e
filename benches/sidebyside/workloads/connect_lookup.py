"""connect_lookup: latency of creating a client and looking up a topic's partitions."""

from __future__ import annotations

import statistics
import time
import uuid

from ..registry import (
    Context,
    Workload,
    ours_client,
    register,
    theirs_client,
)


def setup(ctx: Context) -> None:
    topic = f"persistent://public/default/bench-lookup-{uuid.uuid4().hex[:12]}"
    client = theirs_client(ctx)
    try:
        client.create_producer(topic).close()  # make sure the topic exists
    finally:
        client.close()
    ctx.state["topic"] = topic


def theirs(ctx: Context) -> float:
    topic = ctx.state["topic"]
    samples = []
    for _ in range(ctx.iterations):
        t0 = time.perf_counter()
        client = theirs_client(ctx)
        try:
            partitions = client.get_topic_partitions(topic)
            samples.append(time.perf_counter() - t0)
        finally:
            client.close()
        assert partitions, "lookup returned nothing"
    return statistics.median(samples) * 1000.0


def ours(ctx: Context) -> float:
    topic = ctx.state["topic"]
    samples = []
    for _ in range(ctx.iterations):
        t0 = time.perf_counter()
        with ours_client(ctx) as client:
            client.lookup().partitions(topic)
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1000.0


register(
    Workload(
        name="connect_lookup",
        description="new client + partitions lookup of an existing topic (median per round)",
        unit="ms",
        higher_is_better=False,
        ours=ours,
        theirs=theirs,
        setup=setup,
        default_iterations=20,
    )
)
