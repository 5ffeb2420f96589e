"""Tests of the side-by-side benchmark harness (no broker needed)."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest

from benches.sidebyside import run as bench
from benches.sidebyside.registry import WORKLOADS, Context, Unavailable, Workload
from benches.sidebyside.workloads import load_all


def test_connect_lookup_is_registered() -> None:
    load_all()
    wl = WORKLOADS["connect_lookup"]
    assert wl.unit == "ms" and not wl.higher_is_better


def test_rounds_alternate_and_ratio_is_ours_over_theirs() -> None:
    calls: list[str] = []

    def ours(ctx: Context) -> float:
        calls.append("ours")
        return 2.0

    def theirs(ctx: Context) -> float:
        calls.append("theirs")
        return 4.0 + len(calls)  # varies, median of the three rounds is used

    wl = Workload("fake", "fake", "msg/s", True, ours, theirs)
    row = bench.run_workload(wl, "pulsar://127.0.0.1:1", rounds=3, iterations=1)
    assert calls == ["ours", "theirs", "theirs", "ours", "ours", "theirs"]
    assert row["theirs_samples"] == [6.0, 7.0, 10.0]
    assert row["theirs"] == 7.0 and row["ours"] == 2.0
    assert row["ratio_ours_over_theirs"] == pytest.approx(2.0 / 7.0)


def test_unavailable_ours_reports_na_and_still_runs_theirs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def ours(ctx: Context) -> float:
        raise Unavailable("streamwire not importable")

    wl = Workload("fake2", "fake", "ms", False, ours, lambda ctx: 1.5)
    row = bench.run_workload(wl, "pulsar://127.0.0.1:1", rounds=2, iterations=1)
    assert row["ours"] is None and row["ours_status"] == "unavailable"
    assert row["theirs"] == 1.5 and row["ratio_ours_over_theirs"] is None
    bench.print_table([row])
    out = capsys.readouterr().out
    assert "n/a" in out and "streamwire not importable" in out


CRITERION = """\
encode_send/100         time:   [240.11 ns 243.55 ns 247.32 ns]
                        thrpt:  [392.49 MiB/s 402.64 MiB/s 412.84 MiB/s]
Found 3 outliers among 100 measurements (3.00%)
decode_message_stream/frames/a_very_long_benchmark_name
                        time:   [61.71 µs 63.10 µs 64.57 µs]
                        thrpt:  [1.5649 Melem/s 1.6204 Melem/s 1.6702 Melem/s]
"""


def test_rust_bench_lines_are_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert cmd[:2] == ["cargo", "bench"]
        return subprocess.CompletedProcess(cmd, 0, CRITERION, "")

    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/cargo")
    monkeypatch.setattr(subprocess, "run", fake_run)
    result = bench.run_rust_benches(10)
    assert result["status"] == "ok"
    assert result["lines"] == [
        "encode_send/100: thrpt [392.49 MiB/s 402.64 MiB/s 412.84 MiB/s]",
        "decode_message_stream/frames/a_very_long_benchmark_name: "
        "thrpt [1.5649 Melem/s 1.6204 Melem/s 1.6702 Melem/s]",
    ]


def test_rust_bench_absent_crate_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        err = "error: package ID specification `streamwire-benches` did not match any packages"
        return subprocess.CompletedProcess(cmd, 101, "", err)

    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/cargo")
    monkeypatch.setattr(subprocess, "run", fake_run)
    result = bench.run_rust_benches(10)
    assert result["status"] == "unavailable" and result["lines"] == []
