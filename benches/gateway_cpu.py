"""Gateway CPU per request for single-message POSTs (and optionally a perf profile), one run.

    .venv/bin/python benches/gateway_cpu.py [--seconds 8] [--perf FILE] [-- gateway flags...]

Starts pulsar-lite and the gateway binary (``STREAMWIRE_GATEWAY_BIN`` picks another build, for
before/after comparisons), drives it with ``wrk -t2 -c8`` (keep-alive) POSTing one 100 B
binary message per request, and prints wrk's rate and latency percentiles with the gateway
process's CPU time (utime + stime from ``/proc``) divided by the requests answered. With
``--perf FILE`` it also records ``perf record -g`` of the gateway meanwhile.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.peers.gateway import Gateway  # noqa: E402
from tests.peers.lite import PulsarLite  # noqa: E402

LUA = 'wrk.method = "POST"\nwrk.body = io.open("{body}", "rb"):read("*a")\n' + (
    'wrk.headers["Content-Type"] = "application/octet-stream"\n'
)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--perf", help="also record a perf profile of the gateway to this file")
    ap.add_argument("flags", nargs="*", help="extra gateway flags")
    args = ap.parse_args()
    broker = PulsarLite(log_level="warn")
    broker.start()
    gw = Gateway(broker.service_url, *args.flags).start()
    try:
        proc = gw.process._proc
        assert proc is not None
        pid = proc.pid
        url = f"{gw.url}/topics/public/default/gwcpu-{uuid.uuid4().hex[:8]}"
        httpx.post(url, content=b"x", headers={"Content-Type": "application/octet-stream"})
        perf = None
        if args.perf:
            perf = subprocess.Popen(
                ["perf", "record", "-F", "999", "-g", "-o", args.perf, "-p", str(pid)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(0.5)
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "body").write_bytes(b"x" * 100)
            script = Path(d) / "post.lua"
            script.write_text(LUA.replace("{body}", str(Path(d) / "body")))
            c0 = cpu_seconds(pid)
            out = subprocess.run(
                ["wrk", "-t2", "-c8", f"-d{args.seconds}s", "--latency", "-s", str(script), url],
                capture_output=True,
                text=True,
                timeout=args.seconds + 60,
            ).stdout
            used = cpu_seconds(pid) - c0
        if perf is not None:
            perf.send_signal(2)
            perf.wait()
        m = re.search(r"(\d+) requests in", out)
        if not m:
            raise RuntimeError(f"wrk said: {out}")
        n = int(m.group(1))
        rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
        p50 = re.search(r"^\s+50%\s+(\S+)", out, re.MULTILINE)
        p99 = re.search(r"^\s+99%\s+(\S+)", out, re.MULTILINE)
        print(
            f"single POSTs: {float(rate.group(1)) if rate else 0:,.0f} req/s, "
            f"p50 {p50.group(1) if p50 else '?'}, p99 {p99.group(1) if p99 else '?'}, "
            f"gateway CPU {used / n * 1e6:.1f} us per request ({n} requests)"
        )
    finally:
        gw.close()
        broker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
