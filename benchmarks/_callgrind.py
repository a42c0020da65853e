"""Instructions a child Python process executes, counted by callgrind (private helper).

``benchmarks/query_instructions.py`` and ``benchmarks/batch_build_bench.py --instructions``
run a contender in a child under ``valgrind --tool=callgrind`` and read the total from
its summary line; instruction counts do not move with the machine's load, as CPU time
does.

Example::

    total = child_instructions([sys.executable, "bench.py", "--one", "typed", "3"])
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

#: callgrind's summary on standard error: ``==PID== Collected : 123456``
_COLLECTED = re.compile(r"Collected\s*:\s*([0-9]+)")


def child_instructions(command: list[str]) -> int:
    """The instructions callgrind counts in the child ``command`` (its whole run).

    Example::

        base = child_instructions([sys.executable, __file__, "--only", "typed"])
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command],
            capture_output=True,
            text=True,
            check=True,
        )
    found = _COLLECTED.search(run.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count from callgrind: {run.stderr[-500:]}")
    return int(found.group(1))
