"""Small process and socket helpers shared by the peer launchers."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def free_ports(n: int) -> list[int]:
    """Return ``n`` distinct free loopback ports (all sockets held open while choosing)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def tcp_accepts(host: str, port: int, timeout: float = 0.25) -> bool:
    """True when a TCP connection to ``host:port`` succeeds."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def tail(path: Path | None, lines: int = 60) -> str:
    """Return the last ``lines`` lines of a text file ('' when missing)."""
    if path is None or not path.exists():
        return ""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 256 * 1024))
        data = f.read().decode("utf-8", errors="replace")
    return "\n".join(data.splitlines()[-lines:])


_LIVE: set[subprocess.Popen[bytes]] = set()


def track(proc: subprocess.Popen[bytes]) -> None:
    """Remember a started broker so that it is stopped at interpreter exit if nobody did."""
    _LIVE.add(proc)


@atexit.register
def _stop_leftovers() -> None:
    for proc in list(_LIVE):
        with contextlib.suppress(Exception):
            stop_pid(proc, 5.0)


def stop_pid(proc: subprocess.Popen[bytes], term_timeout: float = 10.0) -> int | None:
    """Stop a child by PID: SIGTERM, then SIGKILL after ``term_timeout``. Returns its exit code."""
    _LIVE.discard(proc)
    if proc.poll() is not None:
        return proc.returncode
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        return proc.wait(timeout=term_timeout)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGKILL)
    return proc.wait(timeout=30)


def kill_pid(proc: subprocess.Popen[bytes]) -> int | None:
    """SIGKILL a child by PID and reap it."""
    _LIVE.discard(proc)
    if proc.poll() is not None:
        return proc.returncode
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGKILL)
    return proc.wait(timeout=30)


def listening_sockets(pid: int) -> list[tuple[str, int]]:
    """(address, port) of TCP sockets in LISTEN state owned by ``pid`` (reads /proc, no ``ss``)."""
    inodes: set[str] = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    out: list[tuple[str, int]] = []
    for table, v6 in (("tcp", False), ("tcp6", True)):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            parts = line.split()
            local, state, inode = parts[1], parts[3], parts[9]
            if state != "0A" or inode not in inodes:  # 0A == TCP_LISTEN
                continue
            addr_hex, port_hex = local.split(":")
            out.append((_decode_addr(addr_hex, v6), int(port_hex, 16)))
    return out


def _decode_addr(addr_hex: str, v6: bool) -> str:
    raw = bytes.fromhex(addr_hex)
    if not v6:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    # /proc stores IPv6 as four host-order 32-bit words.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)


def wait_until(predicate: Callable[[], object], timeout: float, interval: float = 0.05) -> bool:
    """Poll ``predicate()`` until it returns truthy or ``timeout`` elapses."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
