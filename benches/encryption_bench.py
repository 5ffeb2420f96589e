"""End-to-end encryption: encrypted produce and consume, ours vs the official client, in one run
against one Apache Pulsar (started by the bench unless ``--url`` names one).

One RSA-2048 key pair (made with openssl). For each payload size (100 B and 16 KB):

- produce: N messages with ``send_async`` (batching on, both clients' defaults otherwise),
  encrypted for one key name, until every receipt is in;
- consume: a new subscription reads the N messages our producer wrote in that round (the same
  entries for both clients, so batch sizes do not differ), decrypting each, acknowledging every
  one (ours: ``receive_many`` + ``acknowledge`` of the list; official: ``receive`` +
  ``acknowledge``, its only receive call).

Each row reports the rate (N over the time) and the client process's CPU time per MB of payload
(milliseconds)
(``getrusage``, all threads; the broker is another process). Ours and theirs alternate within
each round; medians of the rounds are printed as a Markdown table.

Two more tables:

- EC keys: the 100 B produce and consume above with a P-521 key (explicit parameters, as
  Pulsar's documentation makes them; ECIES-wrapped data key) against ours with the RSA key --
  the official Python client reads RSA keys only, so it has no EC row;
- chunked and encrypted: CHUNKED_N messages of 12 MiB (random, so 3 chunks of the broker's
  5 MiB each), each chunk sealed on its own, produced with ``send`` one after the other and
  consumed by a new subscription; ours vs the official client (``chunking_enabled=True``,
  batching off), in MB/s.

Usage: .venv/bin/python benches/encryption_bench.py [--rounds R] [--url pulsar://...]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import os

import pulsar
import streamwire

SIZES = {100: 50_000, 16_384: 10_000}
EC_SIZE = 100
CHUNKED_SIZE = 12 * 1024 * 1024
CHUNKED_N = 6
BIG = os.urandom(CHUNKED_SIZE)


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def make_keys() -> tuple[str, str]:
    d = Path(tempfile.mkdtemp(prefix="sw-e2e-bench-"))
    priv, pub = d / "private.pem", d / "public.pem"
    subprocess.run(["openssl", "genrsa", "-out", priv, "2048"], check=True, capture_output=True)
    subprocess.run(
        ["openssl", "rsa", "-in", priv, "-pubout", "-out", pub], check=True, capture_output=True
    )
    return str(pub), str(priv)


EC_GEN = ["openssl", "ecparam", "-name", "secp521r1", "-genkey", "-param_enc", "explicit"]


def make_ec_keys() -> tuple[str, str]:
    d = Path(tempfile.mkdtemp(prefix="sw-e2e-bench-ec-"))
    priv, pub = d / "private.pem", d / "public.pem"
    subprocess.run(
        [*EC_GEN, "-out", str(priv)],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        ["openssl", "ec", "-in", priv, "-pubout", "-out", pub], check=True, capture_output=True
    )
    return str(pub), str(priv)


def ours_produce_chunked(url: str, topic: str, n: int, size: int, keys: tuple[str, str]) -> None:
    payload = BIG[:size]
    reader = streamwire.CryptoKeyReader(public_key_path=keys[0])
    with streamwire.Client(url) as client:
        with client.create_producer(
            topic, chunking=True, encryption_keys=["bench"], crypto_key_reader=reader
        ) as p:
            for _ in range(n):
                p.send(payload)


def theirs_produce_chunked(url: str, topic: str, n: int, size: int, keys: tuple[str, str]) -> None:
    payload = BIG[:size]
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        p = client.create_producer(
            topic,
            encryption_key="bench",
            crypto_key_reader=pulsar.CryptoKeyReader(*keys),
            chunking_enabled=True,
            batching_enabled=False,
        )
        for _ in range(n):
            p.send(payload)
        p.close()
    finally:
        client.close()


def ours_produce(url: str, topic: str, n: int, size: int, keys: tuple[str, str]) -> None:
    payload = b"x" * size
    reader = streamwire.CryptoKeyReader(public_key_path=keys[0])
    with streamwire.Client(url) as client:
        with client.create_producer(
            topic, encryption_keys=["bench"], crypto_key_reader=reader
        ) as p:
            futs = [p.send_async(payload) for _ in range(n)]
            for f in futs:
                f.result(120)


def theirs_produce(url: str, topic: str, n: int, size: int, keys: tuple[str, str]) -> None:
    payload = b"x" * size
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        p = client.create_producer(
            topic,
            encryption_key="bench",
            crypto_key_reader=pulsar.CryptoKeyReader(*keys),
            block_if_queue_full=True,
        )
        done = threading.Semaphore(0)
        errors: list[Any] = []

        def cb(res: Any, _mid: Any) -> None:
            if res != pulsar.Result.Ok:
                errors.append(res)
            done.release()

        for _ in range(n):
            p.send_async(payload, cb)
        for _ in range(n):
            done.acquire()
        if errors:
            raise RuntimeError(f"official produce: {errors[:3]}")
        p.close()
    finally:
        client.close()


def ours_consume(url: str, topic: str, n: int, size: int, keys: tuple[str, str]) -> None:
    reader = streamwire.CryptoKeyReader(private_key_path=keys[1])
    with streamwire.Client(url) as client:
        with client.subscribe(
            topic, uuid.uuid4().hex, initial_position="earliest", crypto_key_reader=reader
        ) as c:
            got = 0
            while got < n:
                msgs = c.receive_many(1000, timeout=60)
                if not msgs:
                    raise RuntimeError(f"ours: {got} of {n}")
                got += len(msgs)
                c.acknowledge(msgs)


def theirs_consume(url: str, topic: str, n: int, size: int, keys: tuple[str, str]) -> None:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        c = client.subscribe(
            topic,
            uuid.uuid4().hex,
            initial_position=pulsar.InitialPosition.Earliest,
            crypto_key_reader=pulsar.CryptoKeyReader(*keys),
        )
        for _ in range(n):
            m = c.receive(60_000)
            c.acknowledge(m)
        c.close()
    finally:
        client.close()


Fn = Callable[[str, str, int, int, tuple[str, str]], None]


def measure(
    fn: Fn, url: str, topic: str, n: int, size: int, keys: tuple[str, str]
) -> tuple[float, float]:
    c0, t0 = cpu_seconds(), time.perf_counter()
    fn(url, topic, n, size, keys)
    took, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    mb = n * size / 1e6
    return n / took, cpu * 1e3 / mb


def table_row(what: str, size: str, unit: str, ours: list[float], theirs: list[float]) -> str:
    o, t = statistics.median(ours), statistics.median(theirs)
    return f"| {what} | {size} | {unit} | {o:,.2f} | {t:,.2f} | {o / t:.2f} |"


def print_pair(
    what: str,
    size: str,
    units: tuple[str, str],
    ours: list[tuple[float, float]],
    theirs: list[tuple[float, float]],
    scale: float = 1.0,
) -> None:
    """Two table rows: the rate (times ``scale``) and the client CPU, ours vs theirs."""
    rate, cpu = units
    print(table_row(what, size, rate, [x[0] * scale for x in ours], [x[0] * scale for x in theirs]))
    print(table_row(what, size, cpu, [x[1] for x in ours], [x[1] for x in theirs]))


def both_sides(
    rows: dict[tuple[int, str, str], list[tuple[float, float]]],
    url: str,
    size: int,
    n: int,
    keys: Any,
    producers: tuple[Callable[..., Any], Callable[..., Any]],
    label: str,
) -> None:
    """One round of ``n`` messages of ``size`` bytes: each side's producer (ours, the
    official one) writes a topic of its own, then each side's consumer reads ours."""
    topics = {}
    for side, prod in zip(("ours", "official"), producers):
        topic = f"persistent://public/default/e2e-bench{label}-{uuid.uuid4().hex}"
        topics[side] = topic
        rows.setdefault((size, "produce", side), []).append(
            measure(prod, url, topic, n, size, keys)
        )
    for side, cons in (("ours", ours_consume), ("official", theirs_consume)):
        rows.setdefault((size, "consume", side), []).append(
            measure(cons, url, topics["ours"], n, size, keys)
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--url")
    args = ap.parse_args()
    keys = make_keys()
    ec_keys = make_ec_keys()
    broker = None
    url = args.url
    if url is None:
        from tests.peers.apache import ApachePulsar

        broker = ApachePulsar()
        broker.start()
        url = broker.service_url
    try:
        rows: dict[tuple[int, str, str], list[tuple[float, float]]] = {}
        for r in range(args.rounds):
            for size, n in SIZES.items():
                both_sides(rows, url, size, n, keys, (ours_produce, theirs_produce), "")
            # EC (ours) next to RSA (ours), 100 B.
            ec_topic = f"persistent://public/default/e2e-bench-ec-{uuid.uuid4().hex}"
            rows.setdefault((EC_SIZE, "produce", "ec"), []).append(
                measure(ours_produce, url, ec_topic, SIZES[EC_SIZE], EC_SIZE, ec_keys)
            )
            rows.setdefault((EC_SIZE, "consume", "ec"), []).append(
                measure(ours_consume, url, ec_topic, SIZES[EC_SIZE], EC_SIZE, ec_keys)
            )
            # Chunked and encrypted, ours vs official.
            chunked_producers = (ours_produce_chunked, theirs_produce_chunked)
            both_sides(rows, url, CHUNKED_SIZE, CHUNKED_N, keys, chunked_producers, "-chunked")
            print(f"round {r + 1} done", file=sys.stderr)
        print("| workload | size | unit | streamwire | official | ours / theirs |")
        print("|---|---:|---|---:|---:|---:|")
        for size in SIZES:
            for what in ("produce", "consume"):
                ours = rows[(size, what, "ours")]
                theirs = rows[(size, what, "official")]
                rate_o = statistics.median(x[0] for x in ours)
                rate_t = statistics.median(x[0] for x in theirs)
                cpu_o = statistics.median(x[1] for x in ours)
                cpu_t = statistics.median(x[1] for x in theirs)
                print(
                    f"| encrypted {what} | {size} B | msg/s | {rate_o:,.0f} | {rate_t:,.0f} "
                    f"| {rate_o / rate_t:.2f}x |"
                )
                print(
                    f"| encrypted {what} | {size} B | client CPU ms/MB (lower is better) "
                    f"| {cpu_o:.2f} | {cpu_t:.2f} | {cpu_o / cpu_t:.2f} |"
                )
        print()
        print("| EC key (P-521) vs RSA-2048, ours | size | unit | EC | RSA | EC / RSA |")
        print("|---|---:|---|---:|---:|---:|")
        for what in ("produce", "consume"):
            ec = rows[(EC_SIZE, what, "ec")]
            rsa = rows[(EC_SIZE, what, "ours")]
            print_pair(f"encrypted {what}", f"{EC_SIZE} B", ("msg/s", "client CPU ms/MB"), ec, rsa)
        print()
        print("| chunked + encrypted | size | unit | streamwire | official | ours / theirs |")
        print("|---|---:|---|---:|---:|---:|")
        for what in ("produce", "consume"):
            ours = rows[(CHUNKED_SIZE, what, "ours")]
            theirs = rows[(CHUNKED_SIZE, what, "official")]
            units = ("MB/s", "client CPU ms/MB (lower is better)")
            print_pair(what, "12 MiB", units, ours, theirs, CHUNKED_SIZE / 1e6)
    finally:
        if broker is not None:
            broker.close()


if __name__ == "__main__":
    main()
