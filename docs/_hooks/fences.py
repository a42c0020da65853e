"""MkDocs hook: code fences marked for the test suite render as ordinary Python.

Some pages mark Python blocks that the test suite runs: ```` ```python test ```` (run
against the stub; ```` ```python test-sync ```` is the blocking form, in a tab) and
```` ```python pytest ```` (run as a user's test file). Markdown fences take one language
name, so the marker is removed before rendering.

Example::

    >>> strip_markers("```python test\\nx = 1\\n```")
    '```python\\nx = 1\\n```'
"""

from __future__ import annotations

import re
from typing import Any

_MARKED = re.compile(r"^(\s*```python)[ \t]+(?:test-sync|test|pytest)[ \t]*$", re.M)


def strip_markers(markdown: str) -> str:
    """The page with test markers removed from its fences."""
    return _MARKED.sub(r"\1", markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """MkDocs ``on_page_markdown`` event."""
    return strip_markers(markdown)
