"""The fault proxy in a process of its own, driven over its stdin/stdout.

Why a process: a client library that blocks while holding the interpreter lock (the official
Pravega client does) would freeze an in-process proxy thread, and with it its own traffic.
The child runs :class:`~tests.peers.faultproxy.FaultProxy` byte-transparently and answers each
command line with one line once the command took effect.

    proxy = ProxyProcess("127.0.0.1", upstream_port)
    proxy.port            # where clients connect
    proxy.cut_all()       # every open connection closes now; returns how many
    proxy.stall(True)     # accept, forward nothing
    proxy.refuse(2.0)     # close new connections at once for 2 s
    proxy.set_latency(0.3)  # each chunk delivered 300 ms after it was read (both ways)
    proxy.bytes_forwarded  # bytes delivered so far, per direction
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class ProxyProcess:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._lock = threading.Lock()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.peers.proxy_process", upstream_host, str(upstream_port)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line.startswith("port "):
            self._proc.kill()
            raise RuntimeError(f"fault proxy process did not start: {line!r}")
        self.port = int(line.split()[1])

    def _command(self, line: str) -> str:
        with self._lock:
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
            answer = self._proc.stdout.readline().strip()
        if not answer.startswith("ok"):
            raise RuntimeError(f"fault proxy: {line!r} -> {answer!r}")
        return answer[2:].strip()

    def cut_all(self) -> int:
        return int(self._command("cut"))

    def stall(self, on: bool = True) -> None:
        self._command("stall 1" if on else "stall 0")

    def refuse(self, seconds: float) -> None:
        self._command(f"refuse {seconds}")

    def set_latency(self, seconds: float) -> None:
        self._command(f"latency {seconds}")

    @property
    def connection_count(self) -> int:
        return int(self._command("count"))

    @property
    def bytes_forwarded(self) -> dict[str, int]:
        """Bytes delivered so far, per direction (``TO_BROKER``, ``TO_CLIENT``)."""
        from tests.peers.faultproxy import DIRECTIONS

        return dict(zip(DIRECTIONS, map(int, self._command("bytes").split())))

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self._command("quit")
            except Exception:
                pass
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


def _serve(upstream_host: str, upstream_port: int) -> None:
    from tests.peers.faultproxy import DIRECTIONS, FaultProxy

    proxy = FaultProxy(upstream_host, upstream_port, rewrite_lookup=False)
    print(f"port {proxy.port}", flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        try:
            if cmd == "cut":
                print(f"ok {proxy.cut_all()}", flush=True)
            elif cmd == "stall":
                proxy.stall(arg == "1")
                print("ok", flush=True)
            elif cmd == "refuse":
                proxy.refuse(float(arg))
                print("ok", flush=True)
            elif cmd == "latency":
                proxy.set_latency(float(arg))
                print("ok", flush=True)
            elif cmd == "count":
                print(f"ok {proxy.connection_count}", flush=True)
            elif cmd == "bytes":
                counts = proxy.bytes_forwarded
                print("ok " + " ".join(str(counts[d]) for d in DIRECTIONS), flush=True)
            elif cmd == "quit":
                print("ok", flush=True)
                break
            else:
                print(f"error unknown command {cmd!r}", flush=True)
        except Exception as exc:  # reported to the test, which raises
            print(f"error {exc!r}", flush=True)
    proxy.close()


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]))
