"""The complete programs of the documentation's first pages, with the output they print.

``docs/index.md`` and ``docs/getting-started.md`` show programs a reader saves as a file
and runs with ``python``: each ```` ```python test ```` block there is followed by
"It prints:" and a ```` ```text ```` block with its exact output. The tests run them as
scripts, from the checkout (``test_doc_programs``) and from the installed wheel
(``test_installed_wheel``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = ("index.md", "getting-started.md")

_BLOCK = re.compile(r"^```python test\n", re.M)
_PROGRAM = re.compile(
    r"^```python test\n(?P<source>.*?)^```\n\nIt prints:\n\n```text\n(?P<output>.*?)^```",
    re.S | re.M,
)
_PYTEST = re.compile(r"^```python pytest\n(.*?)^```", re.S | re.M)
_TOML = re.compile(r"^```toml\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Program:
    """One documented program: where it is, its source, the output it prints."""

    page: str
    number: int
    source: str
    output: str

    @property
    def name(self) -> str:
        """A file name for it, e.g. ``getting_started_2.py``."""
        return f"{Path(self.page).stem.replace('-', '_')}_{self.number}.py"


def programs() -> list[Program]:
    """Every program of :data:`PAGES`; each tested block must show its output."""
    found: list[Program] = []
    for page in PAGES:
        text = (DOCS / page).read_text(encoding="utf-8")
        matches = list(_PROGRAM.finditer(text))
        assert len(matches) == len(_BLOCK.findall(text)), f"{page}: a block without its output"
        found += [
            Program(page, number, m["source"], m["output"]) for number, m in enumerate(matches, 1)
        ]
    return found


def user_test_files() -> list[str]:
    """The test files getting-started.md shows (```python pytest blocks)."""
    return _PYTEST.findall((DOCS / "getting-started.md").read_text(encoding="utf-8"))


def user_pytest_config() -> str:
    """The configuration getting-started.md tells a user to add: its one ```toml block."""
    blocks: list[str] = _TOML.findall((DOCS / "getting-started.md").read_text(encoding="utf-8"))
    assert len(blocks) == 1, blocks
    return blocks[0]
