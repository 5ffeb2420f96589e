"""A payload corrupted on the wire is discarded and reported, never handed to the application.

Apache Pulsar's MESSAGE frames carry a CRC32C; the fault proxy flips one payload byte of the
first MESSAGE frame on its way to us. (pulsar-lite sends no checksum, so it cannot be caught
there: that is a property of the broker, documented in PEERS.md.)
"""

from __future__ import annotations

from typing import Any

import streamwire

from tests.peers.faultproxy import TO_CLIENT


def test_corrupted_message_is_discarded_and_counted(
    apache_broker: Any, official_pulsar: Any, fault_proxy: Any, unique_topic: str
) -> None:
    pulsar = official_pulsar
    oc = pulsar.Client(apache_broker.service_url)
    try:
        p = oc.create_producer(unique_topic, batching_enabled=False)
        for i in range(5):
            p.send(f"m{i}".encode())
        p.close()
    finally:
        oc.close()
    proxy = fault_proxy(apache_broker)
    proxy.corrupt_next_payload(TO_CLIENT, "MESSAGE")
    with streamwire.Client(proxy.url) as client:
        with client.subscribe(unique_topic, "crc", initial_position="earliest") as consumer:
            got = [m.data() for m in consumer.receive_many(10, timeout=3.0)]
            while len(got) < 4:
                more = consumer.receive_many(10, timeout=3.0)
                if not more:
                    break
                got.extend(m.data() for m in more)
            assert proxy.pending_faults(TO_CLIENT) == 0, "the fault was never applied"
            assert got == [b"m1", b"m2", b"m3", b"m4"]
            assert consumer.stats()["invalid"] == 1
