"""Find the runnable examples of the documentation: every ```python fenced block of README.md
and docs/**/*.md, with the peers it needs and its documented addresses rewritten.

The convention (docs/getting-started.md#conventions-in-these-pages): examples use
``pulsar://localhost:6650`` (pulsar-lite, or Apache Pulsar when the block is preceded by
``<!-- docs-test: apache -->``), ``tank://localhost:11011``, ``tcp://localhost:9090`` (a Pravega
controller), ``tls://localhost:9443`` (a Pravega controller with TLS and password auth, whose CA
file the examples name ``pravega-ca.pem``: the secured standalone of ``tests/peers/pravega.py``,
accounts as in its ``ACCOUNTS``) and ``http://localhost:8080`` (the PIP-64 gateway);
``127.0.0.1`` works in place of ``localhost``. A block that names ``spark`` gets a SparkSession
first. Blocks of one page run in order in one namespace, as a reader would paste them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The peers an example may talk to, keyed by the address the documentation uses for each.
ADDRESSES: dict[str, str] = {
    "pulsar": r"pulsar://(?:localhost|127\.0\.0\.1):6650",
    "tank": r"tank://(?:localhost|127\.0\.0\.1):11011",
    "pravega": r"tcp://(?:localhost|127\.0\.0\.1):9090",
    "secure_pravega": r"tls://(?:localhost|127\.0\.0\.1):9443",
    # The secured standalone's CA file, as a string literal in the example.
    "secure_pravega_ca": r"(?<=[\"'])pravega-ca\.pem(?=[\"'])",
    "gateway": r"http://(?:localhost|127\.0\.0\.1):8080",
}

# A fence opens at the start of a line (after optional indentation, for blocks inside list
# items) and closes with the same indentation; the language is the first word after ```.
_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*(?P<words>[\w ,-]+?)\s*-->\s*$")
_SPARK = re.compile(r"(?<![.\w])spark(?![\w])")
KNOWN_DIRECTIVES = {"apache"}


@dataclass
class Example:
    """One ```python block: where it is, its code and what it needs."""

    page: str  # path relative to the repository root
    line: int  # 1-based line of the block's first code line
    code: str
    directives: set[str] = field(default_factory=set)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def peers(self) -> set[str]:
        found = {name for name, pattern in ADDRESSES.items() if re.search(pattern, self.code)}
        if _SPARK.search(self.code):
            found.add("spark")
        return found

    def rewritten(self, addresses: dict[str, str]) -> str:
        """The code with each documented address replaced by the running peer's."""
        code = self.code
        for name, url in addresses.items():
            code = re.sub(ADDRESSES[name], url, code)
        return code


def _dedent(body: str, indent: str) -> str:
    lines = body.splitlines(keepends=True)
    return "".join(line[len(indent) :] if line.startswith(indent) else line for line in lines)


def examples_of(path: Path) -> list[Example]:
    text = path.read_text()
    page = path.relative_to(ROOT).as_posix()
    found = []
    for match in _FENCE.finditer(text):
        if match.group("lang") != "python":
            continue
        start = text.count("\n", 0, match.start("body")) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        directive = _DIRECTIVE.search(before)
        words = set(re.split(r"[\s,]+", directive.group("words"))) if directive else set()
        unknown = words - KNOWN_DIRECTIVES
        if unknown:
            raise ValueError(f"{page}:{start}: unknown docs-test directive {sorted(unknown)}")
        body = _dedent(match.group("body"), match.group("indent"))
        found.append(Example(page, start, body, words))
    return found


def documentation_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def all_examples() -> list[Example]:
    return [example for page in documentation_pages() for example in examples_of(page)]
