"""Helpers shared by the consumer / reader tests: the official client writes the data."""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any, Optional


def produce(
    official: ModuleType,
    url: str,
    topic: str,
    payloads: list[bytes],
    *,
    batching: bool = False,
    compression: str = "NONE",
    keys: Optional[list[Optional[str]]] = None,
    properties: Optional[list[dict[str, str]]] = None,
    event_times: Optional[list[Optional[int]]] = None,
    ordering_keys: Optional[list[Optional[str]]] = None,
    producer_name: Optional[str] = None,
) -> list[Any]:
    """Send with the official client; returns its MessageIds in send order."""
    client = official.Client(url)
    try:
        producer = client.create_producer(
            topic,
            producer_name=producer_name,
            batching_enabled=batching,
            batching_max_messages=100,
            batching_max_publish_delay_ms=5,
            compression_type=getattr(official.CompressionType, compression),
            max_pending_messages=10000,
            block_if_queue_full=True,
        )
        ids: list[Any] = [None] * len(payloads)
        errors: list[str] = []
        done = threading.Semaphore(0)

        def callback_for(i: int) -> Any:
            def cb(res: Any, msg_id: Any) -> None:
                if str(res) not in ("Ok", "Result.Ok"):
                    errors.append(str(res))
                ids[i] = msg_id
                done.release()

            return cb

        for i, p in enumerate(payloads):
            kwargs: dict[str, Any] = {}
            if keys is not None and keys[i] is not None:
                kwargs["partition_key"] = keys[i]
            if ordering_keys is not None and ordering_keys[i] is not None:
                kwargs["ordering_key"] = ordering_keys[i]
            if properties is not None:
                kwargs["properties"] = properties[i]
            if event_times is not None and event_times[i] is not None:
                kwargs["event_timestamp"] = event_times[i]
            producer.send_async(p, callback_for(i), **kwargs)
        producer.flush()
        for _ in payloads:
            assert done.acquire(timeout=60), "official producer did not confirm"
        assert not errors, errors
        producer.close()
        return ids
    finally:
        client.close()
