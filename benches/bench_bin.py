"""The benches' Rust tools (``benches/src/bin/*.rs``): built in release mode on first use."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def release_bin(name: str) -> Path:
    """Build ``name`` of the ``streamwire-benches`` crate (quietly, a no-op when it is up to
    date) and return its path."""
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "streamwire-benches", "--bin", name],
        cwd=ROOT,
        check=True,
    )
    return ROOT / "target" / "release" / name
