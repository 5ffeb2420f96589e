"""Latency histogram for ``streamwire perf`` (pure: no I/O, tested on its own).

Log-linear buckets (5 % wide) in microseconds, so memory stays constant however many samples
arrive and any percentile is within 5 % of the exact one; ``render`` draws the ASCII chart the
command prints at the end, as ``pulsar-perf`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

_GROWTH = 1.05
_LOG_GROWTH = math.log(_GROWTH)


@dataclass
class Histogram:
    """Latencies in microseconds."""

    buckets: dict[int, int] = field(default_factory=dict)
    count: int = 0
    total: float = 0.0
    min: float = math.inf
    max: float = 0.0

    def record(self, micros: float) -> None:
        micros = max(micros, 1.0)
        i = int(math.log(micros) / _LOG_GROWTH)
        self.buckets[i] = self.buckets.get(i, 0) + 1
        self.count += 1
        self.total += micros
        self.min = min(self.min, micros)
        self.max = max(self.max, micros)

    @staticmethod
    def _upper(i: int) -> float:
        return float(_GROWTH ** (i + 1))

    def percentile(self, p: float) -> float:
        """The latency at or below which ``p`` percent of samples fall (0 when empty)."""
        if not self.count:
            return 0.0
        if not 0.0 <= p <= 100.0:
            raise ValueError(f"a percentile is between 0 and 100, not {p}")
        rank = math.ceil(self.count * p / 100.0)
        seen = 0
        for i in sorted(self.buckets):
            seen += self.buckets[i]
            if seen >= max(rank, 1):
                return min(self._upper(i), self.max)
        return self.max

    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    def summary(self) -> dict[str, float]:
        """Milliseconds: the figures ``perf`` prints (and ``--json`` emits)."""
        out = {"count": float(self.count), "mean_ms": self.mean() / 1000.0}
        for p in (50.0, 90.0, 99.0, 99.9):
            out[f"p{p:g}_ms"] = self.percentile(p) / 1000.0
        out["max_ms"] = self.max / 1000.0 if self.count else 0.0
        return out

    def render(self, width: int = 40, rows: int = 12) -> list[str]:
        """An ASCII chart: ``rows`` ranges between min and max on a log scale, a bar each."""
        if not self.count:
            return ["  (no samples)"]
        lo, hi = math.log(self.min), math.log(self.max * 1.000001)
        step = (hi - lo) / rows or 1.0
        counts = [0] * rows
        for i, n in self.buckets.items():
            mid = (i + 0.5) * _LOG_GROWTH
            r = min(rows - 1, max(0, int((mid - lo) / step)))
            counts[r] += n
        top = max(counts) or 1
        lines = []
        for r, n in enumerate(counts):
            upto = math.exp(lo + (r + 1) * step) / 1000.0
            bar = "#" * max(1 if n else 0, round(width * n / top))
            lines.append(f"  <= {upto:10.3f} ms | {bar:<{width}} {n:,}")
        return lines
