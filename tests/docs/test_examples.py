"""Every ```python block of README.md and docs/**/*.md runs, against the suite's own peers.

Each block is one test (id ``page:line``). Its documented addresses are rewritten to the
session fixtures' (see tests/docs/examples.py for the convention), the peers it names are
started (session fixtures, shared with the rest of the suite), and the blocks of one page run
in order in one namespace, so a later block may use what an earlier one defined -- the way a
reader pastes them. A block that raises fails its test with the traceback pointing at the
page's own line numbers; the blocks after it on that page fail as well, naming it.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any

import pytest

from tests.docs.examples import Example, all_examples
from tests.peers.broker import Broker
from tests.peers.gateway import Gateway
from tests.spark.conftest import spark  # noqa: F401  (the suite's SparkSession, for `spark` blocks)

EXAMPLES = all_examples()

# One namespace per page, filled as its blocks run in order; a page's first failure is kept
# so that its later blocks say why they cannot run.
_namespaces: dict[str, dict[str, Any]] = {}
_failed: dict[str, str] = {}


@pytest.fixture(scope="session")
def docs_gateways() -> Iterator[dict[str, Gateway]]:
    """One gateway per broker the examples use, started on first need."""
    started: dict[str, Gateway] = {}
    try:
        yield started
    finally:
        for gateway in started.values():
            gateway.close()


def _addresses(
    example: Example, request: pytest.FixtureRequest, gateways: dict[str, Gateway]
) -> dict[str, str]:
    peers = example.peers
    broker_fixture = "apache_broker" if "apache" in example.directives else "lite_broker"
    addresses: dict[str, str] = {}
    if "pulsar" in peers or "gateway" in peers:
        broker: Broker = request.getfixturevalue(broker_fixture)
        addresses["pulsar"] = broker.service_url
        if "gateway" in peers:
            if broker.service_url not in gateways:
                gateways[broker.service_url] = Gateway(broker.service_url).start()
            addresses["gateway"] = gateways[broker.service_url].url
    if "tank" in peers:
        addresses["tank"] = request.getfixturevalue("tank_broker").url
    if "pravega" in peers:
        addresses["pravega"] = request.getfixturevalue("pravega").controller_url
    if "spark" in peers:
        request.getfixturevalue("spark")  # the session exists before the block's getOrCreate()
    return addresses


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_example_runs(
    example: Example, request: pytest.FixtureRequest, docs_gateways: dict[str, Gateway]
) -> None:
    if example.page in _failed:
        pytest.fail(f"an earlier block of {example.page} failed: {_failed[example.page]}")
    code = example.rewritten(_addresses(example, request, docs_gateways))
    # Leading newlines put the block's lines at the page's line numbers in tracebacks.
    compiled = compile("\n" * (example.line - 1) + code, example.page, "exec")
    namespace = _namespaces.setdefault(example.page, {"__name__": "__docs_example__"})
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compiled, namespace)
    except BaseException as exc:
        _failed[example.page] = f"{example.id}: {type(exc).__name__}: {exc}"
        raise
    finally:
        # What the example printed, for the reader of a failure (pytest shows captured output).
        print(out.getvalue(), end="")


def test_examples_are_found() -> None:
    """The extractor sees the pages' examples: each guide has at least one, and every page
    named here is among them (a fence typo would silently drop a guide's examples)."""
    pages = {e.page for e in EXAMPLES}
    for page in (
        "README.md",
        "docs/getting-started.md",
        "docs/pulsar.md",
        "docs/schemas.md",
        "docs/transactions.md",
        "docs/tank.md",
        "docs/pravega.md",
        "docs/gateway.md",
        "docs/spark-guide.md",
        "docs/observability.md",
    ):
        assert page in pages, f"no ```python example found in {page}"
