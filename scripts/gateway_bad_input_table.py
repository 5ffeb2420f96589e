"""Write docs/gateway-bad-input.md from the case list in tests/gateway/bad_cases.py.

.venv/bin/python scripts/gateway_bad_input_table.py          # write the file
.venv/bin/python scripts/gateway_bad_input_table.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.gateway.bad_cases import DOC, render_table  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the file is current")
    args = parser.parse_args(argv)
    text = render_table()
    if args.check:
        if (DOC.read_text() if DOC.exists() else "") != text:
            print(f"{DOC} is out of date; run scripts/gateway_bad_input_table.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
