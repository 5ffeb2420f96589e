"""``streamwire pravega``: administration of a Pravega cluster through its controller.

    streamwire pravega scopes        URL
    streamwire pravega create-scope  URL SCOPE
    streamwire pravega create-stream URL SCOPE/STREAM [--segments N] [--scaling KIND:RATE[:FACTOR]]
                                     [--retention-size BYTES[:MAX] | --retention-time SECONDS[:MAX]]
                                     [--tag TAG ...]
    streamwire pravega update-stream URL SCOPE/STREAM [--segments N] [--scaling ... | --fixed]
                                     [--retention-size ... | --retention-time ... | --no-retention]
                                     [--tag TAG ... | --no-tags]
    streamwire pravega describe      URL SCOPE/STREAM     (the configuration as JSON)
    streamwire pravega streams       URL SCOPE [--tag TAG]
    streamwire pravega truncate      URL SCOPE/STREAM CUT (a stream cut's text, or "tail")

URL is the controller's ``tcp://host:port``, or ``tls://host:port`` (TLS checked against
the system's CA certificates). Exit status as for the other commands: 0 done,
1 a streamwire error, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any, Optional

from streamwire.exceptions import InvalidArgumentError

__all__ = ["run"]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="streamwire pravega", description="Pravega administration (scopes and streams)."
    )
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("scopes", help="list the scopes")
    p.add_argument("url")
    p = sub.add_parser("create-scope", help="create a scope")
    p.add_argument("url")
    p.add_argument("scope")
    for name, what in (
        ("create-stream", "create a stream"),
        ("update-stream", "change a stream's configuration (what is not given is kept)"),
    ):
        p = sub.add_parser(name, help=what)
        p.add_argument("url")
        p.add_argument("stream", help="scope/stream")
        p.add_argument("--segments", type=int, help="segments (the minimum with --scaling)")
        p.add_argument("--scaling", help="auto-scaling: events:RATE[:FACTOR] or kbytes:...")
        retention = p.add_mutually_exclusive_group()
        retention.add_argument("--retention-size", help="keep BYTES[:MAX_BYTES]")
        retention.add_argument("--retention-time", help="keep SECONDS[:MAX_SECONDS]")
        p.add_argument("--tag", action="append", help="a tag (repeat)")
        if name == "update-stream":
            p.add_argument("--fixed", action="store_true", help="no auto-scaling")
            retention.add_argument("--no-retention", action="store_true")
            p.add_argument("--no-tags", action="store_true", help="remove every tag")
    p = sub.add_parser("describe", help="a stream's configuration and segments, as JSON")
    p.add_argument("url")
    p.add_argument("stream", help="scope/stream")
    p = sub.add_parser("streams", help="list a scope's streams")
    p.add_argument("url")
    p.add_argument("scope")
    p.add_argument("--tag", help="only the streams carrying this tag")
    p = sub.add_parser("truncate", help="drop a stream's events before a stream cut")
    p.add_argument("url")
    p.add_argument("stream", help="scope/stream")
    p.add_argument("cut", help="a stream cut (scope/stream:segment=offset,...) or 'tail'")
    return ap


def _scoped(text: str) -> tuple[str, str]:
    scope, sep, stream = text.partition("/")
    if not sep or not scope or not stream or "/" in stream:
        raise InvalidArgumentError(f"a Pravega stream is scope/stream, not {text!r}")
    return scope, stream


def _numbers(option: str, text: str) -> tuple[float, Optional[float]]:
    low, _, high = text.partition(":")
    try:
        return float(low), (float(high) if high else None)
    except ValueError:
        raise InvalidArgumentError(f"{option} is N or N:MAX, not {text!r}") from None


def _scaling(text: str) -> Any:
    from streamwire.pravega import Scaling

    kind, _, rest = text.partition(":")
    rate, _, factor = rest.partition(":")
    if kind not in ("events", "kbytes") or not rate.isdigit() or (factor and not factor.isdigit()):
        raise InvalidArgumentError(f"--scaling is events|kbytes:RATE[:FACTOR], not {text!r}")
    return Scaling(int(rate), int(factor) if factor else 2, by=kind)  # type: ignore[arg-type]


def _retention(args: argparse.Namespace) -> Any:
    from streamwire.pravega import Retention

    if args.retention_size is not None:
        low, high = _numbers("--retention-size", args.retention_size)
        return Retention.by_size(int(low), None if high is None else int(high))
    low, high = _numbers("--retention-time", args.retention_time)
    return Retention.by_time(low, high)


def _config_json(cfg: Any, segments: Optional[list[Any]] = None) -> str:
    obj = asdict(cfg)
    obj["tags"] = list(obj["tags"])
    if segments is not None:
        obj["open_segments"] = segments
    return json.dumps(obj)


def _change(args: argparse.Namespace) -> dict[str, Any]:
    """``update-stream``'s options as ``update_stream`` keyword arguments."""
    change: dict[str, Any] = {}
    if args.segments is not None:
        change["segments"] = args.segments
    if args.fixed and args.scaling:
        raise InvalidArgumentError("give --scaling or --fixed, not both")
    if args.scaling:
        change["scaling"] = _scaling(args.scaling)
    elif args.fixed:
        change["scaling"] = None
    if args.no_retention:
        change["retention"] = None
    elif args.retention_size is not None or args.retention_time is not None:
        change["retention"] = _retention(args)
    if args.tag and args.no_tags:
        raise InvalidArgumentError("give --tag or --no-tags, not both")
    if args.tag or args.no_tags:
        change["tags"] = list(args.tag or [])
    if not change:
        raise InvalidArgumentError("nothing to change: give an option to set")
    return change


def _run(args: argparse.Namespace) -> int:
    from streamwire import pravega

    out = sys.stdout
    # Every argument is checked before anything connects.
    scope, stream = _scoped(args.stream) if hasattr(args, "stream") else ("", "")
    create: dict[str, Any] = {}
    if args.command == "create-stream":
        create = {
            "segments": args.segments or 1,
            "scaling": _scaling(args.scaling) if args.scaling else None,
            "retention": _retention(args)
            if args.retention_size is not None or args.retention_time is not None
            else None,
            "tags": args.tag,
        }
    change = _change(args) if args.command == "update-stream" else {}
    cut = None
    if args.command == "truncate" and args.cut != "tail":
        cut = pravega.StreamCut.parse(args.cut)
    with pravega.Client(args.url) as client:
        if args.command == "scopes":
            for name in sorted(client.scopes()):
                out.write(name + "\n")
        elif args.command == "create-scope":
            created = client.create_scope(args.scope)
            print(f"scope {args.scope} {'created' if created else 'exists'}", file=sys.stderr)
        elif args.command == "create-stream":
            created = client.create_stream(scope, stream, **create)
            print(f"stream {args.stream} {'created' if created else 'exists'}", file=sys.stderr)
        elif args.command == "update-stream":
            out.write(_config_json(client.update_stream(scope, stream, **change)) + "\n")
        elif args.command == "describe":
            segs = [s._asdict() for s in client.segments(scope, stream)]
            out.write(_config_json(client.stream_config(scope, stream), segs) + "\n")
        elif args.command == "streams":
            for name in sorted(client.streams(args.scope, tag=args.tag)):
                out.write(name + "\n")
        else:  # truncate
            at = cut if cut is not None else client.tail(scope, stream)
            client.truncate_stream(scope, stream, at)
            print(f"truncated {args.stream} at {at}", file=sys.stderr)
    return 0


def run(argv: list[str]) -> int:
    """``streamwire pravega ARGV...``; returns the exit status."""
    from streamwire.cli import exit_status

    # A TypeError here is a bad argument (an option of the wrong kind), so status 2 too.
    return exit_status(_parser(), argv, _run, usage=(TypeError,))
