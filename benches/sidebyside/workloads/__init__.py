"""Workload modules. Adding one: create ``<name>.py`` here calling ``registry.register`` and add
its name to ``MODULES``."""

from __future__ import annotations

import importlib

MODULES = ("connect_lookup", "produce", "consume", "spark_write")


def load_all() -> None:
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}")
