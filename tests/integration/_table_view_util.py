"""Helpers of the TableView tests (tests/integration and tests/interop): a history of keyed
updates and deletions, the map it should give, publishing it, and the official client's view."""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any, Optional

import streamwire

History = list[tuple[str, Optional[bytes]]]


def history(keys: int, rounds: int, tag: str) -> History:
    """Every key updated once per round; some keys deleted in some rounds (alternately with
    an empty payload and with a null value) and set again later."""
    out: History = []
    for r in range(rounds):
        for i in range(keys):
            k = f"k{i:03d}"
            if (i + r) % 7 == 3:
                out.append((k, None if r % 2 else b""))
            else:
                out.append((k, f"{tag}-{k}-{r}".encode()))
    return out


def expected(hist: History) -> dict[str, bytes]:
    d: dict[str, bytes] = {}
    for k, v in hist:
        if v:
            d[k] = v
        else:
            d.pop(k, None)
    return d


def publish(url: str, topic: str, hist: History, *, batching: bool = True) -> None:
    """Send ``hist`` in order with keys (None: a null value)."""
    with streamwire.Client(url) as client:
        with client.create_producer(topic, batching=batching) as p:
            p.send_many([v for _, v in hist], keys=[k for k, _ in hist])
            p.flush()


def official_map(official: ModuleType, url: str, topic: str) -> dict[str, bytes]:
    """The official Python client's TableView of ``topic``, as a dict."""
    client = official.Client(url)
    try:
        view = client.create_table_view(topic)
        got: dict[str, bytes] = {}
        view.for_each(lambda k, v: got.__setitem__(k, v))
        assert len(view) == len(got)
        view.close()
        return got
    finally:
        client.close()


def wait_for(cond: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
