"""Engine events reach Python ``logging`` under ``streamwire``; quiet by default."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from typing import Any

import pytest
import streamwire
from streamwire import _logging

from tests.peers.lite import PulsarLite


def _wait_for(caplog: pytest.LogCaptureFixture, text: str, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for r in caplog.records:
            if r.name.startswith("streamwire") and text in r.getMessage():
                return r
        time.sleep(0.02)
    seen = [(r.name, r.getMessage()) for r in caplog.records]
    raise AssertionError(f"no {text!r} record; saw {seen}")


def test_connect_open_close_events_with_fields(
    lite_broker: PulsarLite, unique_topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="streamwire")
    with streamwire.Client(lite_broker.service_url) as client:
        producer = client.create_producer(unique_topic)
        consumer = client.subscribe(unique_topic, "logged")
        producer.close()
        consumer.close()
    r = _wait_for(caplog, "connected to")
    assert r.name == "streamwire.pulsar.connection"
    assert r.levelno == logging.INFO
    assert r.broker
    opened = _wait_for(caplog, "producer opened")
    assert opened.topic == unique_topic and opened.producer
    assert _wait_for(caplog, "consumer opened").subscription == "logged"
    assert _wait_for(caplog, "producer closed").topic == unique_topic
    assert _wait_for(caplog, "consumer closed").topic == unique_topic


def test_reconnect_event_when_the_connection_is_cut(
    lite_broker: PulsarLite, unique_topic: str, fault_proxy: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="streamwire")
    proxy = fault_proxy(lite_broker)
    with streamwire.Client(proxy.url, operation_timeout=5) as client:
        producer = client.create_producer(unique_topic)
        producer.send(b"before")
        assert proxy.cut_all() >= 1
        r = _wait_for(caplog, "reconnecting")
        assert r.levelno == logging.WARNING and r.topic == unique_topic
        producer.send(b"after")
        producer.close()


def test_disabled_level_builds_nothing_and_level_changes_apply(
    lite_broker: PulsarLite, unique_topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    logger = logging.getLogger("streamwire")
    old = logger.level
    try:
        logger.setLevel(logging.ERROR)
        assert _logging._lowest_enabled() == logging.ERROR
        with streamwire.Client(lite_broker.service_url) as client:
            client.create_producer(unique_topic).close()
        time.sleep(0.2)
        assert not [r for r in caplog.records if r.name.startswith("streamwire")]
        logger.setLevel(logging.DEBUG)
        assert _logging._lowest_enabled() == logging.DEBUG
    finally:
        logger.setLevel(old)


def test_nothing_on_stderr_by_default(lite_broker: PulsarLite, unique_topic: str) -> None:
    code = (
        "import logging, streamwire\n"
        f"c = streamwire.Client({lite_broker.service_url!r})\n"
        f"p = c.create_producer({unique_topic!r}); p.send(b'x'); p.close()\n"
        "logging.getLogger('streamwire').warning('probe')\n"  # a WARNING is enabled by default
        "c.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stderr == ""
