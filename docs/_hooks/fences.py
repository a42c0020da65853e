"""MkDocs hook: code fences marked for the test suite render as ordinary code.

Every block of the pages says how the tests treat it (tests/docs/test_every_block.py):
```` ```python test ```` (run against the stub; ```` ```python test-sync ```` is the
blocking form, in a tab), ```` ```python pytest ```` (run as a user's test file),
```` ```bash test ```` (run by bash), or ```` ```LANG norun: REASON ```` (not run, and why).
Markdown fences take one language name, so the marker is removed before rendering.

Example::

    >>> strip_markers("```python test\\nx = 1\\n```")
    '```python\\nx = 1\\n```'
    >>> strip_markers("```bash norun: needs an Azure account\\naz login\\n```")
    '```bash\\naz login\\n```'
"""

from __future__ import annotations

import re
from typing import Any

_MARKED = re.compile(r"^(\s*```[\w+-]+)[ \t]+(?:test-sync|test|pytest|norun:[^\n]*?)[ \t]*$", re.M)


def strip_markers(markdown: str) -> str:
    """The page with test markers removed from its fences."""
    return _MARKED.sub(r"\1", markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """MkDocs ``on_page_markdown`` event."""
    return strip_markers(markdown)
