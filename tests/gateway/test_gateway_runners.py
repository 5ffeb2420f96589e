"""The gateway's other two ways to run: the ``streamwire gateway`` console script and
``streamwire.gateway.serve()`` from Python; both serve, write one access record per request
through ``logging`` (``streamwire.gateway.access``), take the same options, and stop cleanly
on SIGINT/SIGTERM."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.peers.lite import PulsarLite
from tests.peers.util import free_port

SCRIPT = Path(sys.executable).parent / "streamwire"


def wait_healthy(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError("the gateway never became healthy")


@pytest.mark.parametrize("how", ["script", "serve"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_serves_and_stops_cleanly(lite_broker: PulsarLite, how: str, sig: int) -> None:
    port = free_port()
    listen = f"127.0.0.1:{port}"
    if how == "script":
        cmd = [str(SCRIPT), "gateway", "--service-url", lite_broker.service_url, "--listen", listen]
        cmd += ["--node-id", "scriptnode"]
    else:
        code = (
            "import logging, signal, streamwire.gateway as g\n"
            "logging.basicConfig(level=logging.INFO, format='%(name)s %(message)s')\n"
            "signal.signal(signal.SIGTERM, signal.default_int_handler)\n"
            f"g.serve({lite_broker.service_url!r}, {listen!r}, max_messages=100,\n"
            "        node_id='pynode', consumer_idle=30.5)\n"
        )
        cmd = [sys.executable, "-c", code]
    env = {**os.environ}
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, env=env)
    try:
        url = f"http://{listen}"
        wait_healthy(url, proc)
        r = httpx.post(
            f"{url}/topics/public/default/runner-{how}-{sig}",
            json={"messages": [{"value": base64.b64encode(b"x").decode()}]},
            timeout=30,
        )
        assert r.status_code == 200 and r.json()["messageIds"][0]["error_code"] is None
        c = httpx.post(f"{url}/topics/public/default/runner-{how}-{sig}/subscription/s", timeout=30)
        node = "scriptnode" if how == "script" else "pynode"
        assert c.status_code == 200 and f"~{node}~" in c.json()["id"], c.text
        proc.send_signal(sig)
        assert proc.wait(timeout=20) == 0
        err = proc.stderr.read().decode() if proc.stderr else ""
        access = [x for x in err.splitlines() if "streamwire.gateway.access" in x]
        assert any(
            f"method=POST path=/topics/public/default/runner-{how}-{sig} route=produce status=200"
            in x
            for x in access
        ), err[-2000:]
        if how == "script":
            assert all(x.startswith("ts=") and "level=INFO" in x for x in access), access
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bad_arguments_exit_2_with_the_reason() -> None:
    out = subprocess.run(
        [str(SCRIPT), "gateway", "--listen", "nowhere"], capture_output=True, timeout=30
    )
    assert out.returncode == 2
    assert b"--listen must be ADDR:PORT" in out.stderr
    out = subprocess.run([str(SCRIPT), "nope"], capture_output=True, timeout=30)
    assert out.returncode == 2 and b"invalid choice" in out.stderr
