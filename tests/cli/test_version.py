"""One version everywhere: the Cargo workspace's ``[workspace.package] version`` is the source.

maturin writes it into the package metadata (pyproject declares the version dynamic), the
engine compiles it in (``env!("CARGO_PKG_VERSION")``), and ``streamwire.__version__``,
``streamwire --version`` and the gateway's OpenAPI document all say the same. No broker needed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import streamwire
import tomllib
from streamwire import _native

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "streamwire"


def _cargo_version() -> str:
    version: str = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"][
        "version"
    ]
    return version


def test_pyproject_takes_the_version_from_cargo() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project, "a static version would be a second source of truth"
    assert "version" in project["dynamic"]


def test_package_version_is_the_cargo_version() -> None:
    version = _cargo_version()
    assert streamwire.__version__ == version
    assert _native.__version__ == version
    from streamwire import __version__

    assert __version__ == version


def test_installed_metadata_is_the_cargo_version() -> None:
    # `make test` installs the package (maturin develop), so its metadata exists and is read.
    assert metadata.version("streamwire") == _cargo_version()


def test_cli_version() -> None:
    r = subprocess.run(
        [str(SCRIPT), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"streamwire {_cargo_version()}"


def test_gateway_openapi_document_has_the_same_version() -> None:
    doc = json.loads((ROOT / "rust" / "streamwire-gateway" / "openapi.json").read_text())
    assert doc["info"]["version"] == _cargo_version()


def test_unknown_attribute_still_raises() -> None:
    # The module's __getattr__ serves only __version__.
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = streamwire.no_such_name
