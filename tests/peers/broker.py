"""The interface tests may rely on for any broker (PulsarLite or ApachePulsar)."""

from __future__ import annotations

from typing import Protocol


class Broker(Protocol):
    @property
    def service_url(self) -> str: ...

    @property
    def pid(self) -> int | None: ...

    def log_tail(self, lines: int = ...) -> str: ...
