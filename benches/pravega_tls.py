"""What TLS (and auth) cost on Pravega: ``write_many`` and ``read_arrow`` on a plain standalone
and on the secured one (TLS with the fixture's CA, password auth, delegation tokens checked by
the segment store), in the same run, rounds alternating between the two so that drift in the
machine's load falls on both alike. Issue 29's goal: at most 20% slower with TLS.

    .venv/bin/python benches/pravega_tls.py [--events 200000] [--size 100] [--rounds 5]

Each round writes ``--events`` events of ``--size`` bytes to a fresh 1-segment stream with one
``write_many`` call per 10,000 events (flush included), then reads them back from the head
with ``read_arrow``. Figures are the median of the rounds: events/s (wall clock), this
process's CPU time per event (``time.process_time``: every thread, the engine's included) and
the server's (the standalone JVM's utime + stime from ``/proc``, over the same span: its
background work included). CPU per event is what TLS adds and holds steady on a busy
machine where wall-clock rates do not. Both servers run at once (the plain one first) with
the same heap and cache.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streamwire import pravega

from tests.peers.pravega import ACCOUNTS, PravegaStandalone

CHUNK = 10_000
TICK = os.sysconf("SC_CLK_TCK")


def server_cpu(pid: int) -> float:
    """Seconds of CPU the process ``pid`` has used (user + system, every thread)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # After the command's ")": state is field 3, utime 14 and stime 15 (1-based, man proc).
    return (int(fields[11]) + int(fields[12])) / TICK


def one_round(
    client: pravega.Client, pid: int, events: int, size: int
) -> dict[str, tuple[float, float, float]]:
    """``{op: (events/s, our CPU µs per event, the server's CPU µs per event)}`` for
    ``write_many`` and ``read_arrow``; ``pid`` is the server's."""
    scope = "tlsb" + uuid.uuid4().hex[:8]
    client.create_scope(scope)
    client.create_stream(scope, "s")
    payload = [b"%08d:" % i + b"x" * (size - 9) for i in range(CHUNK)]
    started, cpu, scpu = time.perf_counter(), time.process_time(), server_cpu(pid)
    with client.create_writer(scope, "s") as writer:
        for _ in range(events // CHUNK):
            writer.write_many(payload)
        writer.flush()
    write = (
        events / (time.perf_counter() - started),
        (time.process_time() - cpu) * 1e6 / events,
        (server_cpu(pid) - scpu) * 1e6 / events,
    )
    got = 0
    started, cpu, scpu = time.perf_counter(), time.process_time(), server_cpu(pid)
    with client.create_reader(scope, "s", start="head") as reader:
        while got < events:
            batch = reader.read_arrow(100_000, timeout=10.0, columns=["value"])
            if batch.num_rows == 0:
                raise RuntimeError(f"read stalled after {got} of {events} events")
            got += batch.num_rows
    read = (
        events / (time.perf_counter() - started),
        (time.process_time() - cpu) * 1e6 / events,
        (server_cpu(pid) - scpu) * 1e6 / events,
    )
    client.seal_stream(scope, "s")
    client.delete_stream(scope, "s")
    return {"write_many": write, "read_arrow": read}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    plain = PravegaStandalone(heap="2g").start()
    secure = PravegaStandalone(heap="2g", tls=True, auth=True).start()
    assert secure.pki is not None
    ops = ("write_many", "read_arrow")
    rates: dict[str, dict[str, list[tuple[float, float, float]]]] = {
        name: {op: [] for op in ops} for name in ("plain", "tls+auth")
    }
    try:
        pids = {"plain": plain.pid, "tls+auth": secure.pid}
        assert None not in pids.values()
        clients = {
            "plain": pravega.Client(plain.controller_url),
            "tls+auth": pravega.Client(
                secure.controller_url,
                tls_trust_certs_file=str(secure.pki.ca),
                username="admin",
                password=ACCOUNTS["admin"],
            ),
        }
        for name, client in clients.items():  # a warm-up round each, not counted
            one_round(client, pids[name] or 0, min(args.events, 50_000), args.size)
        for r in range(args.rounds):
            for name, client in clients.items():
                got = one_round(client, pids[name] or 0, args.events, args.size)
                line = f"round {r + 1} {name:9s}"
                for op in ops:
                    rates[name][op].append(got[op])
                    rate, ours, server = got[op]
                    line += f"  {op} {rate:10,.0f}/s CPU µs {ours:.3f} + {server:.3f}"
                print(line, flush=True)
        for client in clients.values():
            client.close()
    finally:
        secure.close()
        plain.close()
    print(f"\n{args.events:,} events of {args.size} B, median of {args.rounds} rounds")
    print(f"{'':24s}{'plain':>12s}{'tls+auth':>12s}{'TLS costs':>10s}")
    for op in ops:
        p = statistics.median(r[0] for r in rates["plain"][op])
        t = statistics.median(r[0] for r in rates["tls+auth"][op])
        print(f"{op + ' events/s':24s}{p:12,.0f}{t:12,.0f}{(1 - t / p) * 100:9.1f}%")
        for i, whose in ((1, "ours"), (2, "server")):
            p = statistics.median(r[i] for r in rates["plain"][op])
            t = statistics.median(r[i] for r in rates["tls+auth"][op])
            print(f"{op + ' CPU µs, ' + whose:24s}{p:12.3f}{t:12.3f}{(t / p - 1) * 100:9.1f}%")


if __name__ == "__main__":
    main()
