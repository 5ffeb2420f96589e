"""Write the generated bad-input tables: docs/bad-input.md (the Python API, from the case lists
in tests/test_bad_input.py) and docs/gateway-bad-input.md (the gateway's HTTP API, from
tests/gateway/bad_cases.py).

.venv/bin/python scripts/bad_input_table.py          # write both files
.venv/bin/python scripts/bad_input_table.py --check  # exit 1 if either is out of date
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.gateway import bad_cases as gateway_cases  # noqa: E402
from tests.test_bad_input import DOC, render_table  # noqa: E402

TABLES: list[tuple[Path, Callable[[], str]]] = [
    (DOC, render_table),
    (gateway_cases.DOC, gateway_cases.render_table),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the files")
    args = parser.parse_args(argv)
    stale = 0
    for doc, render in TABLES:
        text = render()
        if args.check:
            if (doc.read_text() if doc.exists() else "") != text:
                print(f"{doc} is out of date; run scripts/bad_input_table.py", file=sys.stderr)
                stale += 1
            continue
        doc.parent.mkdir(parents=True, exist_ok=True)
        doc.write_text(text)
        print(f"wrote {doc} ({text.count(chr(10))} lines)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
