"""The complete programs of the documentation's first pages, with the output they print.

``docs/index.md`` and ``docs/getting-started.md`` show programs a reader saves as a file
and runs with ``python``, in two forms as content tabs: the async program (a
```` ```python test ```` block in the ``=== "async"`` tab) and the blocking one with
:mod:`azt.sync` (a ```` ```python test-sync ```` block in the ``=== "sync"`` tab), followed by
"It prints:" and a ```` ```text ```` block with the exact output of either. The tests run
both forms as scripts, from the checkout (``test_doc_programs``) and from the installed
wheel (``test_installed_wheel``).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = ("index.md", "getting-started.md")

_BLOCK = re.compile(r"^ *```python test(?:-sync)?\n", re.M)
_PROGRAM = re.compile(
    r'^=== "async"\n\n    ```python test\n(?P<source>.*?)^    ```\n\n'
    r'=== "sync"\n\n    ```python test-sync\n(?P<sync>.*?)^    ```\n\n'
    r"It prints:\n\n```text\n(?P<output>.*?)^```",
    re.S | re.M,
)
_PYTEST = re.compile(r"^```python pytest\n(.*?)^```", re.S | re.M)
_TOML = re.compile(r"^```toml\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Program:
    """One documented program in one form: where it is, its source, the output it prints.

    ``form`` is ``"async"`` (the ``azt`` program running its own event loop) or ``"sync"``
    (the blocking ``azt.sync`` program); both forms of a program print the same output.
    """

    page: str
    number: int
    form: str
    source: str
    output: str

    @property
    def name(self) -> str:
        """A file name for it, e.g. ``getting_started_2.py`` or ``getting_started_2_sync.py``."""
        suffix = "_sync" if self.form == "sync" else ""
        return f"{Path(self.page).stem.replace('-', '_')}_{self.number}{suffix}.py"


def programs() -> list[Program]:
    """Every program of :data:`PAGES`, in both forms; each pair of tabs must show its
    output, and every tested block of the pages must belong to such a pair."""
    found: list[Program] = []
    for page in PAGES:
        text = (DOCS / page).read_text(encoding="utf-8")
        matches = list(_PROGRAM.finditer(text))
        assert 2 * len(matches) == len(_BLOCK.findall(text)), (
            f"{page}: a tested block outside an async/sync pair of tabs with its output"
        )
        for number, m in enumerate(matches, 1):
            output = m["output"]
            found.append(Program(page, number, "async", textwrap.dedent(m["source"]), output))
            found.append(Program(page, number, "sync", textwrap.dedent(m["sync"]), output))
    return found


def user_test_files() -> list[str]:
    """The test files getting-started.md shows (```python pytest blocks)."""
    return _PYTEST.findall((DOCS / "getting-started.md").read_text(encoding="utf-8"))


def user_pytest_config() -> str:
    """The configuration getting-started.md tells a user to add: its one ```toml block."""
    blocks: list[str] = _TOML.findall((DOCS / "getting-started.md").read_text(encoding="utf-8"))
    assert len(blocks) == 1, blocks
    return blocks[0]
