"""Griffe extension for the API reference: the docstrings are written in reStructuredText
conventions (``Example::`` literal blocks, ``:class:`X``` roles, simple tables); this turns
them into the Markdown that mkdocstrings renders, before the docstrings are parsed. The
modules themselves are not touched.

* ``Example::`` (or any paragraph ending in ``::``) followed by an indented block becomes
  an *Example:* line and a fenced code block (``pycon`` when it holds ``>>>`` prompts,
  ``console`` for ``$`` prompts, Python otherwise);
* ``:class:`~a.b.C```, ``:func:``, ``:meth:``, ``:attr:``, ``:mod:``, ``:data:``,
  ``:exc:`` become inline code linked to the object's reference page when it has one
  (an optional cross-reference: no warning when it has none);
* simple tables (``=====  =====`` borders, continuation lines) become Markdown tables.

Example::

    >>> print(rst_to_markdown("Use it.\\n\\nExample::\\n\\n    x = 1\\n"))
    Use it.
    <BLANKLINE>
    Example:
    <BLANKLINE>
    ```python
    x = 1
    ```
    <BLANKLINE>
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

try:
    import griffe
except ImportError:  # pragma: no cover - only the converter is used without griffe
    griffe = None  # type: ignore[assignment]

_ROLE = re.compile(r":(?:class|func|meth|attr|mod|data|exc|obj|const):`(~?)([^`]+)`")
_BORDER = re.compile(r"^(\s*)(=+)((?:\s+=+)+)\s*$")


def _role(match: re.Match[str], module: str | None) -> str:
    short, target = match.group(1) == "~", match.group(2).strip()
    title = target.rsplit(".", 1)[-1] if short else target
    if module is not None and (target.startswith(".") or "." not in target):
        target = f"{module}.{target.lstrip('.')}"  # a name of the docstring's own module
    target = target.lstrip(".")
    if target.endswith("()"):
        target = target[:-2]
    return f'<autoref identifier="{target}" optional><code>{title}</code></autoref>'


def _table(lines: list[str], indent: int) -> list[str]:
    """A simple reStructuredText table (its border lines included) as a Markdown table."""
    border = lines[0][indent:]
    starts = [m.start() for m in re.finditer(r"=+", border)]
    rows: list[list[str]] = []
    header: list[str] | None = None
    for raw in lines[1:]:
        line = raw[indent:] if len(raw) >= indent else ""
        if _BORDER.match(raw):
            if header is None and rows and raw is not lines[-1]:
                header, rows = rows[0], []
            continue
        if not line.strip():
            continue
        cells = [
            line[start : (starts[k + 1] if k + 1 < len(starts) else None)].strip()
            for k, start in enumerate(starts)
        ]
        if rows and not cells[0]:  # a continuation line: extend the row above
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
        else:
            rows.append(cells)
    if header is None:
        header = [""] * len(starts)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(starts)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return out


_DIRECTIVE = re.compile(r"\s*#\s*doctest:.*$")


def _fence(block: list[str]) -> list[str]:
    code = textwrap.dedent("\n".join(block)).strip("\n")
    first = code.lstrip().split("\n", 1)[0]
    lang = "pycon" if first.startswith(">>>") else "console" if first.startswith("$ ") else "python"
    lines = code.split("\n")
    if lang == "pycon":  # doctest directives are for the test runner, not the reader
        lines = [
            _DIRECTIVE.sub("", t)
            for t in lines
            if not (t.startswith("...") and _DIRECTIVE.sub("", t).strip() == "...")
        ]
    return [f"```{lang}", *lines, "```"]


def rst_to_markdown(text: str, module: str | None = None) -> str:
    """The docstring ``text`` with its reStructuredText conventions turned into Markdown.

    Example::

        >>> rst_to_markdown("See :class:`~azt.TableClient`.")
        'See <autoref identifier="azt.TableClient" optional><code>TableClient</code></autoref>.'
    """
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    in_fence = False
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
        if in_fence:
            out.append(line)
            i += 1
            continue
        border = _BORDER.match(line)
        if border:  # a simple table: up to its closing border (the third, or the second)
            indent = len(border.group(1))
            end, borders = i + 1, 1
            while end < len(lines):
                if _BORDER.match(lines[end]):
                    borders += 1
                    nxt = lines[end + 1] if end + 1 < len(lines) else ""
                    if borders == 3 or not nxt.strip():
                        break
                end += 1
            out += [
                " " * indent + _ROLE.sub(lambda m: _role(m, module), t)
                for t in _table(lines[i : end + 1], indent)
            ]
            i = end + 1
            continue
        if stripped.endswith("::") and not stripped.startswith(".."):
            indent = len(line) - len(line.lstrip())
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            block_end = j
            while block_end < len(lines) and (
                not lines[block_end].strip()
                or len(lines[block_end]) - len(lines[block_end].lstrip()) > indent
            ):
                block_end += 1
            block = lines[j:block_end]
            while block and not block[-1].strip():
                block.pop()
            if block:
                head = stripped[:-2].rstrip()
                lead = " " * indent
                if head:
                    out.append(lead + _ROLE.sub(lambda m: _role(m, module), head) + ":")
                    out.append("")
                out += [lead + t if t else "" for t in _fence(block)]
                out.append("")
                i = block_end
                continue
        out.append(_ROLE.sub(lambda m: _role(m, module), line))
        i += 1
    return "\n".join(out)


if griffe is not None:

    class RstDocstrings(griffe.Extension):
        """Rewrites every docstring with :func:`rst_to_markdown` once the tree is loaded."""

        def on_object(self, *, obj: Any, **kwargs: Any) -> None:
            """griffe event: every object, once its module is loaded."""
            _convert(obj)

        def on_package(self, *, pkg: Any, **kwargs: Any) -> None:
            """griffe event: a top-level package (not seen by ``on_object``)."""
            _convert(pkg)

    def _convert(obj: Any) -> None:
        if not getattr(obj, "_azt_rst_done", False):
            obj._azt_rst_done = True
            docstring = getattr(obj, "docstring", None)
            if docstring is not None:
                module = getattr(getattr(obj, "module", None), "path", None)
                docstring.value = rst_to_markdown(docstring.value, module)
