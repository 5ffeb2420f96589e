"""Back-pressure, never a silent drop: with ``--max-pending-messages`` small, a large body gets
its first messages written and the rest answered ``error_code`` 2 (retriable) with a
``Retry-After`` header; every message answered with an id is stored (read back by the
official client) and retrying the refused ones writes them."""

from __future__ import annotations

import base64
import time
import uuid
from types import ModuleType

import httpx

from tests.peers.gateway import Gateway
from tests.peers.lite import PulsarLite


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def test_a_full_producer_queue_answers_retriable_errors_with_retry_after(
    lite_broker: PulsarLite, official_pulsar: ModuleType
) -> None:
    name = "gwbp-" + uuid.uuid4().hex[:12]
    topic, path = f"persistent://public/default/{name}", f"/topics/public/default/{name}"
    g = Gateway(lite_broker.service_url, "--max-pending-messages", "5").start()
    try:
        values = [b"v%d" % i for i in range(300)]
        r = httpx.post(
            f"{g.url}{path}", json={"messages": [{"value": b64(v)} for v in values]}, timeout=30
        )
        assert r.status_code == 200, r.text
        results = r.json()["messageIds"]
        refused = [i for i, x in enumerate(results) if x["error_code"] is not None]
        assert refused, "the queue of 5 never filled"
        assert all(results[i]["error_code"] == 2 for i in refused), results
        assert r.headers["retry-after"] == "1"
        stored = {i for i, x in enumerate(results) if x["messageId"]}
        assert len(stored) >= 5 and stored.isdisjoint(refused)
        # The client retries what was refused (a few at a time, within the budget).
        for k in range(0, len(refused), 5):
            batch = refused[k : k + 5]
            body = {"messages": [{"value": b64(values[i])} for i in batch]}
            for _ in range(50):
                a = httpx.post(f"{g.url}{path}", json=body, timeout=30)
                ids = a.json().get("messageIds", []) if a.status_code == 200 else []
                if a.status_code == 200 and all(x["messageId"] for x in ids):
                    break
                assert a.status_code in (200, 429), a.text
                assert a.headers["retry-after"] == "1"
                time.sleep(0.05)
            else:
                raise AssertionError(f"{batch} never written")
    finally:
        g.close()
    client = official_pulsar.Client(
        lite_broker.service_url,
        logger=official_pulsar.ConsoleLogger(official_pulsar.LoggerLevel.Error),
    )
    try:
        reader = client.create_reader(topic, official_pulsar.MessageId.earliest)
        got = set()
        while True:
            try:
                got.add(reader.read_next(timeout_millis=3000).data())
            except Exception:  # the official client's Timeout: nothing more
                break
    finally:
        client.close()
    assert got == set(values)
