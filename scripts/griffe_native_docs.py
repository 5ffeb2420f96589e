"""A griffe extension for the API reference (mkdocs.yml, mkdocstrings' `extensions`): the
engine's classes get their docstrings from the compiled module.

griffe reads `python/streamwire/_native.pyi` statically, which gives every signature and type
but no docstring: the docstrings live in the Rust sources (PyO3 doc comments), compiled into
`streamwire._native`, where tests/test_docstrings.py checks that each names its parameters.
This copies each one onto the stub's object, so the reference shows the stub's types with the
engine's text. The build fails if the compiled module cannot be imported (build it first:
`make docs` runs the set-up).
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import griffe

_MODULE = "streamwire._native"


def _copy(obj: griffe.Object | griffe.Alias, live: Any) -> int:
    """Give `obj` (and its members, for a class) the runtime object's docstrings."""
    copied = 0
    doc = inspect.getdoc(live) if live is not None else None
    if doc and obj.docstring is None:
        obj.docstring = griffe.Docstring(doc, parent=obj)  # type: ignore[arg-type]
        copied += 1
    if isinstance(obj, griffe.Class):
        for name, member in obj.members.items():
            if isinstance(member, griffe.Alias):
                continue
            copied += _copy(member, inspect.getattr_static(live, name, None))
    return copied


class NativeDocstrings(griffe.Extension):
    """Fill the stubbed `streamwire._native` module's docstrings from the compiled module."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != "streamwire":
            return
        native = importlib.import_module(_MODULE)
        stub = pkg["_native"]
        copied = 0
        for name, member in stub.members.items():
            if isinstance(member, griffe.Alias):
                continue
            copied += _copy(member, getattr(native, name, None))
        if copied == 0:
            raise RuntimeError(f"no docstring found in {_MODULE}: is it the compiled engine?")
