"""Bad input to the ``streamwire`` console script: each case exits with its documented status
and says what was wrong on stderr (no traceback). Run by ``tests/cli/test_cli.py`` and rendered
into ``docs/bad-input.md`` by ``tests/test_bad_input.py``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CliCase:
    args: tuple[str, ...]
    input: str
    code: int
    says: str


CLI_CASES: list[CliCase] = [
    CliCase(
        ("produce", "kafka://x:1", "t", "-m", "a"), "unknown URL scheme", 2, "unknown service URL"
    ),
    CliCase(
        ("produce", "tcp://127.0.0.1:1", "noscope", "-m", "a"),
        "Pravega topic without a scope",
        2,
        "scope/stream",
    ),
    CliCase(
        ("produce", "pulsar://127.0.0.1:1", "t", "-m", "a", "-p", "novalue"),
        "property without `=`",
        2,
        "NAME=VALUE",
    ),
    CliCase(
        ("produce", "pulsar://127.0.0.1:1", "t", "-f", "/nonexistent/file"),
        "missing input file",
        2,
        "FileNotFoundError",
    ),
    CliCase(
        ("perf", "produce", "pulsar://127.0.0.1:1", "t", "--size", "x"),
        "non-numeric option",
        2,
        "invalid int",
    ),
    CliCase(
        ("perf", "produce", "pulsar://127.0.0.1:1", "t", "--size", "4"),
        "perf payload under 8 bytes",
        2,
        "at least 8",
    ),
    CliCase(("produce", "pulsar://127.0.0.1:1", "t"), "nothing to send", 2, "nothing to send"),
    CliCase(("nosuchcommand",), "unknown command", 2, "invalid choice"),
    CliCase(("read", "pulsar://127.0.0.1:1", "t"), "unreachable broker", 1, "ConnectError"),
]
