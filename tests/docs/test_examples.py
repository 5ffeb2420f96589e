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
import dataclasses
import io
import re
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any, Optional

import pytest
import streamwire
from streamwire.schema import AvroSchema, Int32, JsonSchema, KeyValueSchema, StringSchema

from tests.docs.examples import ROOT, Example, all_examples
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


def _module(name: str, contents: dict[str, Any]) -> dict[str, Any]:
    """A fresh module's namespace for examples to run in. It is registered in sys.modules as
    a pasted script's ``__main__`` would be: dataclasses and schema classes look their
    defining module up there."""
    module = types.ModuleType("docs_example_" + re.sub(r"\W", "_", name))
    module.__dict__.update(contents)
    sys.modules[module.__name__] = module
    return module.__dict__


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
    if "secure_pravega" in peers or "secure_pravega_ca" in peers:
        secure = request.getfixturevalue("secure_pravega")
        addresses["secure_pravega"] = secure.controller_url
        addresses["secure_pravega_ca"] = str(secure.pki.ca)
    if "spark" in peers:
        request.getfixturevalue("spark")  # the session exists before the block's getOrCreate()
    return addresses


# The records docs/spark.md's prose reads (module level: their annotations are resolved in
# this module's globals).
@dataclasses.dataclass
class Inner:
    unit: str


@dataclasses.dataclass
class Reading:
    name: str
    count: Optional[Int32]
    inner: Inner


@dataclasses.dataclass
class Sensor:
    sensor: str
    count: Int32


def _spark_page(request: pytest.FixtureRequest) -> dict[str, Any]:
    """docs/spark.md is an options reference whose snippets continue its prose: they use
    ``spark``, ``url``, ``admin_url``, ``df`` (rows with a ``value``) and ``topic``, and read
    the topics the prose describes -- ``readings`` (a record schema with ``name``, ``count``
    and a nested ``inner``) and ``kv`` / ``kv-copy`` (KEY_VALUE<STRING, JSON record>). Typed
    Spark columns need the schema registry, so this page runs on Apache Pulsar."""
    apache = request.getfixturevalue("apache_broker")
    url = apache.service_url
    spark_session = request.getfixturevalue("spark")
    kv = KeyValueSchema(StringSchema(), JsonSchema(Sensor))
    with streamwire.Client(url) as client:
        with client.create_producer("readings", schema=AvroSchema(Reading)) as producer:
            producer.send(Reading("r1", 3, Inner("C")))
        with client.create_producer("kv", schema=kv) as producer:
            producer.send(("k1", Sensor("s1", 3)))
        client.create_producer("kv-copy", schema=kv).close()  # registers the schema
    return {
        "spark": spark_session,
        "url": url,
        "admin_url": apache.admin_url,  # the long-backlog example's admin.url
        "topic": "spark-helpers",
        "df": spark_session.createDataFrame([(b"a",), (b"b",)], "value binary"),
        "streamwire": streamwire,
    }


def _cluster_page(request: pytest.FixtureRequest) -> dict[str, Any]:
    """docs/cluster.md's block runs on the suite's session cluster (five JVMs: one per run)."""
    return {"cluster": request.getfixturevalue("apache_cluster")}


# Pages whose blocks are snippets continuing the prose rather than a sequence: each block runs
# alone, in a fresh copy of what the page's setup returns.
PAGE_SETUP: dict[str, Callable[[pytest.FixtureRequest], dict[str, Any]]] = {
    "docs/spark.md": _spark_page,
    "docs/cluster.md": _cluster_page,
}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_example_runs(
    example: Example, request: pytest.FixtureRequest, docs_gateways: dict[str, Gateway]
) -> None:
    setup = PAGE_SETUP.get(example.page)
    if setup is None and example.page in _failed:
        pytest.fail(f"an earlier block of {example.page} failed: {_failed[example.page]}")
    code = example.rewritten(_addresses(example, request, docs_gateways))
    # Leading newlines put the block's lines at the page's line numbers in tracebacks.
    compiled = compile("\n" * (example.line - 1) + code, example.page, "exec")
    if setup is not None:
        # A reference page's snippets each stand alone on the page's setup.
        if example.page not in _namespaces:
            _namespaces[example.page] = setup(request)
        namespace = _module(example.id, _namespaces[example.page])
    else:
        if example.page not in _namespaces:
            _namespaces[example.page] = _module(example.page, {})
        namespace = _namespaces[example.page]
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
        "docs/spark.md",
        "docs/migration.md",
    ):
        assert page in pages, f"no ```python example found in {page}"


def test_readme_links_resolve() -> None:
    """README.md is read on the repository's web view, outside the site's strict build: each
    of its relative links names a file that exists, and a `#fragment` into a docs page names a
    heading of that page (GitHub's anchors, which the site's build uses too)."""
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    relative = [link for link in links if "://" not in link and not link.startswith("mailto:")]
    assert relative, "README.md has no relative links"
    for link in relative:
        path, _, fragment = link.partition("#")
        target = ROOT / path
        assert target.is_file(), f"README.md links to {link}: no file {target}"
        if fragment and target.suffix == ".md":
            assert fragment in _anchors(target.read_text()), f"README.md: no #{fragment} in {path}"


def _anchors(markdown: str) -> set[str]:
    from pymdownx.slugs import slugify

    slug = slugify(case="lower")
    return {slug(m, "-") for m in re.findall(r"^#+\s+(.+?)\s*$", markdown, re.MULTILINE)}
