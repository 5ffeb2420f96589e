"""The ``streamwire`` command: every protocol the package speaks, chosen by the service URL.

    streamwire produce URL TOPIC [-m TEXT ...] [-f FILE] [-k KEY] [-p NAME=VALUE ...]
    streamwire consume URL TOPIC [-s SUBSCRIPTION] [--start earliest|latest] [-n N] [--idle S]
    streamwire read    URL TOPIC [--start earliest|latest|...] [-n N] [--idle S]
    streamwire lookup  URL TOPIC
    streamwire topics  URL [NAMESPACE | SCOPE]
    streamwire perf produce URL TOPIC [--size B] [--rate R] [-n N | --seconds S]
    streamwire perf consume URL TOPIC [-s SUBSCRIPTION] [-n N | --seconds S]
    streamwire gateway [--service-url URL] [--listen ADDR:PORT] [...]
    streamwire pravega COMMAND URL ...   (Pravega administration: streamwire pravega --help)
    streamwire --version

URL: ``pulsar://`` / ``pulsar+ssl://`` (Pulsar), ``tank://`` (TANK), ``tcp://`` (a Pravega
controller; TOPIC is ``scope/stream``). Output: one line per message (``--format text``, the
default), one JSON object per line (``json``), or the raw values one per line (``raw``).
Exit status: 0 done, 1 a streamwire error (printed as ``streamwire: <Error>: <message>``), 2 bad
arguments (a bad URL, topic or option, a missing file), 130 interrupted.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections.abc import Callable, Iterator
from typing import Optional, TextIO

import streamwire
from streamwire.cli.backends import Record, open_backend
from streamwire.exceptions import ConfigError, InvalidArgumentError, StreamwireError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="streamwire",
        description="Produce, consume, inspect and load-test Pulsar, TANK and Pravega.",
    )
    ap.add_argument("--version", action="version", version=f"streamwire {streamwire.__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def target(p: argparse.ArgumentParser) -> None:
        p.add_argument("url", help="pulsar://, pulsar+ssl://, tank:// or tcp:// (Pravega)")
        p.add_argument("topic", help="topic (Pravega: scope/stream)")

    def reading(p: argparse.ArgumentParser, start: str, idle: Optional[float]) -> None:
        p.add_argument("--start", default=start, help=f"earliest | latest (default {start})")
        p.add_argument("-n", "--count", type=int, help="stop after N messages")
        p.add_argument(
            "--idle",
            type=float,
            default=idle,
            help="stop after this many seconds without a message"
            + (f" (default {idle})" if idle else " (default: never)"),
        )

    def subscription(p: argparse.ArgumentParser) -> None:
        p.add_argument("-s", "--subscription", help="Pulsar subscription (acknowledges)")
        p.add_argument(
            "--subscription-type",
            default="exclusive",
            choices=["exclusive", "shared", "failover", "key_shared"],
        )

    p = sub.add_parser("produce", help="send messages (arguments, a file or stdin lines)")
    target(p)
    p.add_argument("-m", "--message", action="append", default=[], help="a message (repeat)")
    p.add_argument("-f", "--file", help="send each line of FILE (- for stdin)")
    p.add_argument("-k", "--key", help="key (Pravega: routing key) of every message")
    p.add_argument("-p", "--property", action="append", default=[], help="NAME=VALUE (Pulsar)")

    for name, start, idle, what in (
        ("consume", "latest", None, "follow a topic (Pulsar: with a subscription)"),
        ("read", "earliest", 1.0, "read a topic from a position, then stop when idle"),
    ):
        p = sub.add_parser(name, help=what)
        target(p)
        reading(p, start, idle)
        if name == "consume":
            subscription(p)
        p.add_argument("--format", default="text", choices=["text", "json", "raw"])

    p = sub.add_parser("lookup", help="where a topic lives: partitions, brokers or segments")
    target(p)

    p = sub.add_parser("topics", help="list topics (Pulsar: of a namespace; Pravega: a scope)")
    p.add_argument("url")
    p.add_argument("where", nargs="?", help="Pulsar namespace (public/default) or Pravega scope")

    perf = sub.add_parser("perf", help="load test with live progress and a latency histogram")
    psub = perf.add_subparsers(dest="perf_command", required=True, metavar="produce|consume")
    for name in ("produce", "consume"):
        p = psub.add_parser(name)
        target(p)
        p.add_argument("-n", "--count", type=int, help="messages (default: until --seconds)")
        p.add_argument("--seconds", type=float, help="run time (default 10 without --count)")
        p.add_argument("--json", action="store_true", help="print the summary as JSON")
        if name == "produce":
            p.add_argument("--size", type=int, default=100, help="payload bytes (default 100)")
            p.add_argument("--rate", type=float, default=0.0, help="msg/s (default: flat out)")
        else:
            p.add_argument("--start", default="latest", help="earliest | latest")
            p.add_argument("--idle", type=float, help="stop after this many idle seconds")
            subscription(p)

    sub.add_parser("gateway", help="the PIP-64 REST gateway (streamwire gateway --help)")
    sub.add_parser("pravega", help="Pravega administration (streamwire pravega --help)")
    return ap


def _props(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"a property is NAME=VALUE, not {item!r}")
        out[name] = value
    return out


def _values(args: argparse.Namespace) -> Iterator[bytes]:
    for m in args.message:
        yield m.encode()
    if args.file:
        fh = sys.stdin.buffer if args.file == "-" else open(args.file, "rb")
        with fh:
            for line in fh:
                yield line.rstrip(b"\r\n")


def _print(r: Record, fmt: str, out: TextIO) -> None:
    if fmt == "raw":
        out.flush()
        sys.stdout.buffer.write(r.value + b"\n")
        sys.stdout.buffer.flush()
        return
    try:
        text: Optional[str] = r.value.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if fmt == "json":
        obj = {
            "position": r.position,
            "key": r.key,
            "partition": r.partition,
            "time_ms": r.time_ms,
            "properties": r.properties,
        }
        if text is None:
            obj["value_base64"] = base64.b64encode(r.value).decode()
        else:
            obj["value"] = text
        out.write(json.dumps(obj) + "\n")
        return
    shown = text if text is not None else repr(r.value)
    key = f" key={r.key}" if r.key is not None else ""
    out.write(f"[{r.position}]{key} {shown}\n")


def _run(args: argparse.Namespace) -> int:
    from streamwire.cli import perf

    out = sys.stdout
    backend = open_backend(args.url, getattr(args, "topic", None))
    try:
        if args.command == "produce":
            if not args.message and not args.file:
                raise ValueError("nothing to send: give -m TEXT (repeat) or -f FILE (- for stdin)")
            props = _props(args.property)
            values = list(_values(args))  # a missing file fails before anything is sent
            n = backend.produce(args.topic, values, args.key, props)
            print(f"produced {n} message(s) to {args.topic}", file=sys.stderr)
        elif args.command in ("consume", "read"):
            sub = getattr(args, "subscription", None)
            kind = getattr(args, "subscription_type", "exclusive")
            n = 0
            for r in backend.records(args.topic, args.start, sub, kind, args.idle):
                _print(r, args.format, out)
                r.handled()
                n += 1
                if args.count is not None and n >= args.count:
                    break
            out.flush()
            print(f"{n} message(s)", file=sys.stderr)
        elif args.command == "lookup":
            for row in backend.lookup(args.topic):
                out.write(json.dumps(row) + "\n")
        elif args.command == "topics":
            for name in backend.topics(args.where):
                out.write(name + "\n")
        elif args.perf_command == "produce":
            seconds = args.seconds if args.seconds or args.count else 10.0
            perf.perf_produce(
                backend,
                args.topic,
                size=args.size,
                count=args.count,
                seconds=seconds,
                rate=args.rate,
                as_json=args.json,
            )
        else:
            seconds = args.seconds if args.seconds or args.count or args.idle else 10.0
            perf.perf_consume(
                backend,
                args.topic,
                start=args.start,
                subscription=args.subscription,
                subscription_type=args.subscription_type,
                count=args.count,
                seconds=seconds,
                idle=args.idle,
                as_json=args.json,
            )
    finally:
        backend.close()
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "gateway":
        from streamwire.cli import gateway

        return gateway.run(args_list[1:])
    if args_list and args_list[0] == "pravega":
        from streamwire.cli import pravega_admin

        return pravega_admin.run(args_list[1:])
    return exit_status(_parser(), args_list, _run)


def exit_status(
    parser: argparse.ArgumentParser,
    argv: list[str],
    run: Callable[[argparse.Namespace], int],
    usage: tuple[type[Exception], ...] = (),
) -> int:
    """Parse ``argv`` and ``run`` the command; the exit status of the module doc (``usage``:
    more exception types that mean bad arguments, 2). Shared by every subcommand family."""
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return int(e.code) if isinstance(e.code, int) else 2
    caught: tuple[type[Exception], ...] = (StreamwireError, ValueError, OSError, *usage)
    try:
        return run(args)
    except KeyboardInterrupt:
        return 130
    except caught as e:
        print(f"streamwire: {type(e).__name__}: {e}", file=sys.stderr)
        bad_args = isinstance(e, (InvalidArgumentError, ConfigError, *usage))
        return 2 if bad_args or not isinstance(e, StreamwireError) else 1


if __name__ == "__main__":
    sys.exit(main())
