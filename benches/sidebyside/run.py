"""Run side-by-side benchmarks: ours (streamwire) vs theirs (official pulsar-client).

    python benches/sidebyside/run.py [--rounds N] [--workload NAME ...]
                                     [--broker lite|apache|proxy|proxy-tls|cluster|URL]
                                     [--rust]
    python -m benches.sidebyside.run ...            (same thing, from the repository root)

Both implementations run the same workload against the same broker in the same process, in
alternating order (A/B, then B/A, ...) for ``--rounds`` rounds. The table shows the median of the
rounds for each side and the ratio ours/theirs; the unit says whether higher or lower is better.
One machine-readable line follows, prefixed ``BENCH_JSON ``. When ``streamwire`` cannot be
imported, its column reads ``n/a`` (no number is made up). ``--broker proxy-tls`` runs both
clients through the Pulsar proxy of a secured two-broker cluster: ``pulsar+ssl://`` with the
test CA and a token whose role is authorized by the brokers (the proxy forwards it).
``--rust`` also runs ``cargo bench -p streamwire-benches --bench codec`` and reports its
throughput lines.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benches.sidebyside.registry import (  # noqa: E402
    WORKLOADS,
    Context,
    Unavailable,
    Workload,
)
from benches.sidebyside.workloads import load_all  # noqa: E402

SIDES = ("ours", "theirs")


@dataclass
class SideResult:
    samples: list[float] = field(default_factory=list)
    status: str = "ok"  # ok | unavailable | error
    detail: str = ""

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples and self.status == "ok" else None


@dataclass(frozen=True)
class Target:
    """Where the workloads run: a service URL and, for a secured cluster, a token and CA."""

    url: str
    auth_token: str | None = None
    tls_ca: str | None = None


@contextlib.contextmanager
def broker_target(spec: str) -> Iterator[Target]:
    """A :class:`Target` for ``spec`` (see :func:`broker_url`), secured for ``proxy-tls``."""
    if spec == "proxy-tls":
        from tests.peers.apache_cluster import ApacheCluster

        with ApacheCluster(secured=True) as cluster:
            assert cluster.security is not None
            # A role of its own with a namespace grant: the brokers authorize it per producer
            # and consumer, as they would a production client's (not a super-user).
            cluster.admin().grant_namespace_permission("bench", ["produce", "consume"])
            token = cluster.security.token("bench")
            yield Target(cluster.proxy_tls_url, token, str(cluster.security.pki.ca))
        return
    with broker_url(spec) as url:
        yield Target(url)


@contextlib.contextmanager
def broker_url(spec: str) -> Iterator[str]:
    """Yield a service URL: start pulsar-lite / Apache Pulsar, or use the given URL as is."""
    if spec.startswith("pulsar://"):
        yield spec
        return
    if spec == "lite":
        from tests.peers.lite import PulsarLite

        with PulsarLite() as lite:
            yield lite.service_url
        return
    if spec == "apache":
        from tests.peers.apache import ApachePulsar

        with ApachePulsar() as apache:
            yield apache.service_url
        return
    if spec in ("proxy", "cluster"):
        # The two-broker Apache cluster: through its Pulsar proxy, or directly with both
        # brokers in the service URL (lookups answered by whichever broker is asked).
        from tests.peers.apache_cluster import ApacheCluster

        with ApacheCluster() as cluster:
            if spec == "proxy":
                yield cluster.proxy_url
            else:
                hosts = ",".join(f"127.0.0.1:{b.internal_port}" for b in cluster.brokers)
                yield f"pulsar://{hosts}"
        return
    raise SystemExit(
        f"--broker must be lite, apache, proxy, proxy-tls, cluster or a pulsar:// URL, not {spec!r}"
    )


def run_workload(
    wl: Workload, target: Target | str, rounds: int, iterations: int | None
) -> dict[str, Any]:
    if isinstance(target, str):  # a bare service URL
        target = Target(target)
    ctx = Context(
        service_url=target.url,
        iterations=iterations or wl.default_iterations,
        auth_token=target.auth_token,
        tls_ca=target.tls_ca,
    )
    if wl.setup is not None:
        wl.setup(ctx)
    results = {side: SideResult() for side in SIDES}
    fns = {"ours": wl.ours, "theirs": wl.theirs}
    for r in range(rounds):
        order = SIDES if r % 2 == 0 else SIDES[::-1]
        for side in order:
            res = results[side]
            if res.status != "ok":
                continue
            try:
                res.samples.append(float(fns[side](ctx)))
            except Unavailable as exc:
                res.status, res.detail = "unavailable", str(exc)
            except Exception as exc:
                res.status = "error"
                res.detail = f"{type(exc).__name__}: {exc}"
                traceback.print_exc(file=sys.stderr)
    ours, theirs = results["ours"].median, results["theirs"].median
    ratio = ours / theirs if ours is not None and theirs else None
    return {
        "workload": wl.name,
        "unit": wl.unit,
        "higher_is_better": wl.higher_is_better,
        "rounds": rounds,
        "iterations": ctx.iterations,
        "ours": ours,
        "theirs": theirs,
        "ratio_ours_over_theirs": ratio,
        "ours_samples": results["ours"].samples,
        "theirs_samples": results["theirs"].samples,
        "ours_status": results["ours"].status,
        "theirs_status": results["theirs"].status,
        "ours_detail": results["ours"].detail,
        "theirs_detail": results["theirs"].detail,
    }


THROUGHPUT_RE = re.compile(r"thrpt:\s*\[([^\]]+)\]")


def run_rust_benches(timeout: float) -> dict[str, Any]:
    """Run the criterion codec bench; return its status and (benchmark, throughput) lines."""
    if shutil.which("cargo") is None:
        return {"status": "unavailable", "detail": "cargo not found", "lines": []}
    cmd = ["cargo", "bench", "-p", "streamwire-benches", "--bench", "codec"]
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return {"status": "error", "detail": f"timed out after {timeout:.0f}s", "lines": []}
    out = proc.stdout + "\n" + proc.stderr
    if proc.returncode != 0:
        last = [ln for ln in out.strip().splitlines() if ln.strip()][-5:]
        status = "unavailable" if "did not match any packages" in out else "error"
        return {"status": status, "detail": " | ".join(last), "lines": []}
    lines: list[str] = []
    name = ""
    for line in proc.stdout.splitlines():
        if line and not line[0].isspace():  # "group/bench   time: [...]" or a long name alone
            name = line.split("time:")[0].strip()
        m = THROUGHPUT_RE.search(line)
        if m:
            lines.append(f"{name}: thrpt [{m.group(1).strip()}]")
    return {"status": "ok", "detail": "", "lines": lines}


def fmt(value: float | None, status: str) -> str:
    if value is None:
        return "n/a" if status != "error" else "error"
    return f"{value:,.3f}" if value < 100 else f"{value:,.0f}"


def print_table(rows: list[dict[str, Any]]) -> None:
    header = f"{'workload':<20} {'unit':<26} {'ours':>12} {'theirs':>12} {'ours/theirs':>12}"
    print(header)
    print("-" * len(header))
    for row in rows:
        better = "higher is better" if row["higher_is_better"] else "lower is better"
        ratio = row["ratio_ours_over_theirs"]
        print(
            f"{row['workload']:<20} {row['unit'] + ' (' + better + ')':<26} "
            f"{fmt(row['ours'], row['ours_status']):>12} "
            f"{fmt(row['theirs'], row['theirs_status']):>12} "
            f"{(f'{ratio:.2f}' if ratio is not None else 'n/a'):>12}"
        )
        for side in SIDES:
            if row[f"{side}_status"] != "ok":
                print(f"    {side}: {row[f'{side}_status']}: {row[f'{side}_detail']}")


def main(argv: list[str] | None = None) -> int:
    load_all()
    parser = argparse.ArgumentParser(prog="benches/sidebyside/run.py", description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--iterations", type=int, default=None, help="per round (default: per workload)"
    )
    parser.add_argument(
        "--workload", nargs="+", choices=sorted(WORKLOADS), default=None, help="default: all"
    )
    parser.add_argument(
        "--broker",
        default="lite",
        help="lite | apache | proxy | proxy-tls | cluster | pulsar://HOST:PORT",
    )
    parser.add_argument("--rust", action="store_true", help="also run the criterion codec bench")
    parser.add_argument("--rust-timeout", type=float, default=1800.0)
    parser.add_argument("--list", action="store_true", help="list workloads and exit")
    args = parser.parse_args(argv)
    if args.list:
        for wl in WORKLOADS.values():
            print(f"{wl.name:<20} {wl.unit:<8} {wl.description}")
        return 0
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    names = args.workload or list(WORKLOADS)
    rows: list[dict[str, Any]] = []
    t0 = time.monotonic()
    with broker_target(args.broker) as target:
        for name in names:
            rows.append(run_workload(WORKLOADS[name], target, args.rounds, args.iterations))
    print()
    print(f"broker: {args.broker}  rounds: {args.rounds}  (A/B order alternates per round)")
    print_table(rows)
    rust: dict[str, Any] | None = None
    if args.rust:
        rust = run_rust_benches(args.rust_timeout)
        print()
        detail = f" ({rust['detail']})" if rust["detail"] else ""
        print(f"rust codec bench: {rust['status']}{detail}")
        for line in rust["lines"]:
            print(f"    {line}")
    record = {
        "broker": args.broker,
        "rounds": args.rounds,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "seconds": round(time.monotonic() - t0, 2),
        "workloads": rows,
        "rust": rust,
    }
    print("BENCH_JSON " + json.dumps(record, separators=(",", ":")))
    failed = any(r["theirs_status"] == "error" or r["ours_status"] == "error" for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
