"""UTF-16 code-unit order for strings (the service's ordinal order).

Python compares ``str`` by code point; the service compares UTF-16 code units.
The two orders differ only between characters above U+FFFF and characters in
U+E000..U+FFFF. :func:`to_units` rewrites every astral character as its
surrogate pair, so that code-point order on the result is the service's order;
:func:`from_units` undoes it. The backend sorts keys the same way.
"""

from __future__ import annotations

import re

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _split(match: re.Match[str]) -> str:
    code = ord(match.group()) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def _join(match: re.Match[str]) -> str:
    pair = match.group()
    return chr(0x10000 + ((ord(pair[0]) - 0xD800) << 10) + (ord(pair[1]) - 0xDC00))


def to_units(text: str) -> str:
    """``text`` with astral characters as surrogate pairs (code-point order = UTF-16 order).

    Example::

        >>> to_units("a\\U0001F600") == "a\\ud83d\\ude00"
        True
    """
    if text.isascii():
        return text
    return _ASTRAL.sub(_split, text)


def from_units(text: str) -> str:
    """Inverse of :func:`to_units`: join surrogate pairs into characters.

    Example::

        >>> from_units(to_units("x\\U0001F600y")) == "x\\U0001F600y"
        True
    """
    if text.isascii():
        return text
    return _PAIR.sub(_join, text)
