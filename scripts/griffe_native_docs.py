"""A griffe extension for the API reference (mkdocs.yml, mkdocstrings' `extensions`): the
build stops when the engine's docstrings are missing, instead of leaving its classes out.

The engine's classes are documented in the Rust sources (PyO3 doc comments, compiled into
`streamwire._native`; tests/test_docstrings.py checks that each names its parameters) and typed
in `python/streamwire/_native.pyi`. griffe reads both when the compiled module sits beside the
stub: the stub's signatures, the module's docstrings. Without a built module it finds only the
stub, whose classes have no docstring, and mkdocstrings silently drops undocumented objects --
so the reference would lose `Client`, `Producer`, ... with no warning. `make docs` builds the
module first (its `setup` prerequisite).
"""

from __future__ import annotations

from typing import Any

import griffe


class NativeDocstrings(griffe.Extension):
    """Fail the load of `streamwire` when `streamwire._native` came without docstrings."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != "streamwire":
            return
        client = pkg["_native"]["Client"]
        if client.docstring is None:
            raise RuntimeError(
                "streamwire._native has no docstrings: the compiled extension is not beside "
                "python/streamwire/_native.pyi (run `make setup`, or copy a built "
                "_native*.so there) -- the API reference would miss every engine class"
            )
