"""Instructions of a bench's child run counted by callgrind, shared by ``aio_cost.py`` and
``pulsar_bulk_cost.py``: the bench re-runs itself as ``<script> --child <args>`` under valgrind
(every thread of the process counted), and the total comes from the output's ``summary:`` line.
Instruction counts do not depend on the machine's load, unlike wall-clock rates.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def instructions(script: str, args: list[str], out: Path) -> int:
    """Run ``python <script> --child <args>`` under callgrind, writing its profile to ``out``;
    the instructions it executed."""
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            script,
            "--child",
            *args,
        ],
        check=True,
        capture_output=True,
    )
    m = re.search(rb"^summary: (\d+)", out.read_bytes(), re.M)
    assert m, "no summary line in the callgrind output"
    return int(m.group(1))
