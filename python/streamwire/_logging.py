"""Engine events reach ``logging`` under the ``streamwire`` logger (``streamwire.pulsar.*``).

Quiet by default: a ``NullHandler`` keeps Python's last-resort handler from printing them.
The engine builds a record only for levels some ``streamwire`` logger has enabled: that
level is handed to the engine now and again whenever any logger's level changes (the
logging manager's cache reset, which ``setLevel``, ``basicConfig`` and ``disable`` trigger).
Records carry ``topic``, ``producer``, ``subscription``, ``broker`` as ``extra`` fields.
"""

from __future__ import annotations

import logging
from typing import Any

from streamwire import _native

ROOT = "streamwire"

logging.getLogger(ROOT).addHandler(logging.NullHandler())


def _lowest_enabled() -> int | None:
    manager = logging.Logger.manager
    loggers = [logging.getLogger(ROOT)] + [
        lg
        for name, lg in list(manager.loggerDict.items())
        if name.startswith(ROOT + ".") and isinstance(lg, logging.Logger)
    ]
    levels = []
    for logger in loggers:
        if not logger.disabled:
            levels.append(logger.getEffectiveLevel())
    level = max(min(levels), manager.disable + 1)
    return level if level <= logging.CRITICAL else None


def refresh() -> None:
    """Hand the engine the lowest level a ``streamwire`` logger passes."""
    level = _lowest_enabled()
    _native._set_log_level(None if level is None else max(1, min(level, 255)))


def _emit_many(records: list[tuple[int, str, str, dict[str, Any]]]) -> None:
    for level, target, message, fields in records:
        logger = logging.getLogger(f"{ROOT}.{target}")
        if logger.isEnabledFor(level):
            logger.log(level, message, extra=fields)


def _hook_level_changes() -> None:
    manager: Any = logging.Logger.manager
    original = manager._clear_cache
    if getattr(original, "_streamwire", False):
        return

    def clear_cache() -> None:
        original()
        refresh()

    clear_cache._streamwire = True  # type: ignore[attr-defined]
    manager._clear_cache = clear_cache


_hook_level_changes()
refresh()
