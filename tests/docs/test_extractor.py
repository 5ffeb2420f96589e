"""The example extractor itself (tests/docs/examples.py): which fences count, where a block
starts, directives and address rewriting. No peer needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs import examples
from tests.docs.examples import Example, examples_of

PAGE = """# A page

Inline ```python stays prose.

```python
import streamwire
client = streamwire.Client("pulsar://localhost:6650")
```

```sh
streamwire --version
```

- a list item with a block inside:

    ```python
    print("indented")
    ```

<!-- docs-test: apache -->
```python
spark.range(1).count()
url = "tank://127.0.0.1:11011"
```
"""


@pytest.fixture
def page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(examples, "ROOT", tmp_path)
    path = tmp_path / "page.md"
    path.write_text(PAGE)
    return path


def test_only_python_fences_at_line_start_are_examples(page: Path) -> None:
    found = examples_of(page)
    assert [e.line for e in found] == [6, 17, 22]
    assert found[0].code.startswith("import streamwire\n")
    assert found[1].code == 'print("indented")\n'  # the list item's indentation removed
    assert [e.directives for e in found] == [set(), set(), {"apache"}]


def test_peers_and_rewriting(page: Path) -> None:
    first, _, last = examples_of(page)
    assert first.peers == {"pulsar"}
    assert last.peers == {"spark", "tank"}
    assert first.rewritten({"pulsar": "pulsar://127.0.0.1:40001"}) == (
        'import streamwire\nclient = streamwire.Client("pulsar://127.0.0.1:40001")\n'
    )
    assert "tank://127.0.0.1:40002" in last.rewritten({"tank": "tank://127.0.0.1:40002"})


def test_streamwire_spark_alone_does_not_ask_for_a_session() -> None:
    assert Example("p.md", 1, "import streamwire.spark\n").peers == set()


def test_an_unknown_directive_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(examples, "ROOT", tmp_path)
    path = tmp_path / "bad.md"
    path.write_text("<!-- docs-test: skip -->\n```python\npass\n```\n")
    with pytest.raises(ValueError, match="unknown docs-test directive"):
        examples_of(path)
