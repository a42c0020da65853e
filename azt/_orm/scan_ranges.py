"""The key ranges of a parallel scan: split points in the service's key order (UTF-16 code
units), the ``$filter`` of one range, and the resumable scan token.

A range is ``[lo, hi)`` over PartitionKey (``lo == ""``: the table's start, ``hi is None``:
its end). Splitting needs a string strictly between two keys: :func:`between` finds one,
biased towards printable ASCII (where most keys live) so that a probe lands near real keys
in few steps; any string works for correctness, since ranges only have to cover the key
space without overlap.

Example::

    >>> between("p003", "p020")
    'p01'
    >>> range_filter("Rating ge 4", "a", "m")
    "(Rating ge 4) and PartitionKey ge 'a' and PartitionKey lt 'm'"
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import attrs

from azt._core.pagination import ContinuationToken
from azt._edm.types import format_literal
from azt._errors import ValidationError
from azt._orm.pages import decode_token, encode_token
from azt._orm.planner import ordinal

__all__ = [
    "RangeState",
    "ScanToken",
    "between",
    "decode_scan_token",
    "encode_scan_token",
    "range_filter",
    "scan_fingerprint",
]

_TOP = 0x10000  # one past the last code unit: "no upper bound" at a digit
_ASCII_END = 0x7F  # first split digits are tried below DEL, where most keys live
_LOWEST = 0x20  # no control characters: keys cannot hold them, filters should not either
_HIGH_SURROGATES = range(0xD800, 0xDC00)
_LOW_SURROGATES = range(0xDC00, 0xE000)


def _units(s: str) -> list[int]:
    return [ord(c) for c in ordinal(s)]


def _text(units: list[int]) -> str | None:
    """The string of UTF-16 code units ``units``; ``None`` if they hold a lone surrogate."""
    raw = b"".join(u.to_bytes(2, "big") for u in units)
    try:
        return raw.decode("utf-16-be")
    except UnicodeDecodeError:
        return None


def between(low: str, high: str | None) -> str | None:
    """A string strictly between ``low`` and ``high`` in the service's key order (``high``
    ``None``: no upper bound), short, without control characters or lone surrogates;
    ``None`` when there is no such string worth probing (``high`` right after ``low``).

    Example::

        >>> between("", None), between("a", "c"), between("a", "b")
        ('O', 'b', 'aO')
        >>> between("p", "q") < "q" and between("p", "q") > "p"
        True
    """
    a = _units(low)
    b = _units(high) if high is not None else None
    if b is not None and a >= b:
        return None
    prefix: list[int] = []
    bounded = b is not None
    i = 0
    while i < 1024:
        x = a[i] if i < len(a) else -1
        y = (b[i] if b is not None and i < len(b) else -1) if bounded else _TOP
        if prefix and prefix[-1] in _HIGH_SURROGATES:
            # the digit after a high surrogate must be a low one
            floor = max(x, _LOW_SURROGATES.start - 1)
            top = min(y, _LOW_SURROGATES.stop)
        else:
            floor = max(x, _LOWEST - 1)
            top = y
            if floor < _ASCII_END - 1 and top > _ASCII_END:
                top = _ASCII_END  # try the printable ASCII part first
        if top - floor >= 2:
            d = (floor + top) // 2
            units = [*prefix, *_digit(d, floor, y)]
            text = _text(units)
            if text is None:
                return None
            return _checked(text, low, high)
        if x < 0 or (bounded and x > y):
            return None  # no room: high comes right after low
        prefix.append(x)
        if bounded and x < y:
            bounded = False  # prefix + x + anything stays below high
        i += 1
    return None


def _digit(d: int, floor: int, limit: int) -> list[int]:
    """Code units for digit ``d`` (``floor < d < limit``) that form whole characters."""
    if d in _HIGH_SURROGATES:
        return [d, _LOW_SURROGATES.start]
    if d in _LOW_SURROGATES and floor < _LOW_SURROGATES.start - 1:
        return [_HIGH_SURROGATES.stop - 1, _LOW_SURROGATES.start]  # the last astral block
    if d in _LOW_SURROGATES and _LOW_SURROGATES.stop < limit:
        return [_LOW_SURROGATES.stop]
    return [d]


def _checked(text: str, low: str, high: str | None) -> str | None:
    key = ordinal(text)
    if key <= ordinal(low) or (high is not None and key >= ordinal(high)):
        return None
    return text


def range_filter(user: str | None, lo: str, hi: str | None) -> str | None:
    """The ``$filter`` reading the range ``[lo, hi)`` of PartitionKey, within the user's
    filter (``None``: no filter at all).

    Example::

        >>> range_filter(None, "", None) is None, range_filter(None, "", "k")
        (True, "PartitionKey lt 'k'")
    """
    parts = []
    if lo:
        parts.append(f"PartitionKey ge {format_literal(lo)}")
    if hi is not None:
        parts.append(f"PartitionKey lt {format_literal(hi)}")
    keys = " and ".join(parts)
    if user and keys:
        return f"({user}) and {keys}"
    return user or keys or None


def scan_fingerprint(
    filter: str | None, select: Sequence[str] | None, start: str, stop: str | None
) -> str:
    """What a scan token is bound to: the filter, the projection and the key range.

    Example::

        >>> scan_fingerprint(None, None, "", None) == scan_fingerprint(None, None, "", None)
        True
    """
    raw = json.dumps(["scan", filter, list(select) if select else None, start, stop])
    return hashlib.sha256(raw.encode()).hexdigest()[:20]


@attrs.frozen
class RangeState:
    """The unfinished part of one range as a token stores it: the bounds the range's query
    was sent with (``lo``, ``query_hi``), where its results stop (``hi``, lowered when the
    range was split), the service continuation to fetch next (``None``: the start), and
    the last key already returned from that page (``after``; ``None``: nothing yet).

    Example::

        >>> RangeState("a", None, "m", None, None).hi
        'm'
    """

    lo: str
    query_hi: str | None
    hi: str | None
    cont: str | None
    after: tuple[str, str] | None


@attrs.frozen
class ScanToken:
    """A decoded scan token: the entities returned so far and the unfinished ranges in key
    order (finished ranges are not listed: a resumed scan never reads them again).

    Example::

        >>> ScanToken(0, (RangeState("", None, None, None, None),)).ranges[0].lo
        ''
    """

    returned: int
    ranges: tuple[RangeState, ...]


def encode_scan_token(fingerprint: str, token: ScanToken) -> str:
    """The string form of ``token`` for the scan with ``fingerprint``.

    Example::

        >>> t = ScanToken(3, (RangeState("b", None, None, None, ("b", "r")),))
        >>> decode_scan_token(encode_scan_token("f", t), "f", "", None) == t
        True
    """
    ranges = [
        [r.lo, r.query_hi, r.hi, r.cont, list(r.after) if r.after else None] for r in token.ranges
    ]
    return encode_token({"v": 1, "q": fingerprint, "n": token.returned, "k": "scan", "r": ranges})


def decode_scan_token(text: str, fingerprint: str, start: str, stop: str | None) -> ScanToken:
    """Read a scan token of the scan with ``fingerprint`` over ``[start, stop)``; anything
    else (another scan's token, a query's, an edited one) raises :class:`azt.ValidationError`.

    Example::

        >>> decode_scan_token("bm9wZQ", "f", "", None)
        Traceback (most recent call last):
        ...
        azt._errors.ValidationError: malformed scan token
    """
    if not isinstance(text, str):
        raise ValidationError(f"a scan token is a str, got {type(text).__name__}")
    try:
        data = decode_token(text, fingerprint)
    except ValidationError as exc:
        if "different query" in str(exc):
            raise ValidationError(
                "this scan token belongs to a different scan (filter, select or key range changed)"
            ) from None
        raise ValidationError("malformed scan token") from None
    raw = data.get("r")
    if data.get("k") != "scan" or not isinstance(raw, list):
        raise ValidationError("malformed scan token (not a scan's token)")
    ranges = tuple(_range_state(item) for item in raw)
    _check_order(ranges, start, stop)
    return ScanToken(int(data["n"]), ranges)


def _range_state(item: Any) -> RangeState:
    bad = ValidationError("malformed scan token (edited?)")
    if not isinstance(item, list) or len(item) != 5:
        raise bad
    lo, qhi, hi, cont, after = item
    if not isinstance(lo, str) or not all(v is None or isinstance(v, str) for v in (qhi, hi)):
        raise bad
    if cont is not None:
        if not isinstance(cont, str):
            raise bad
        ContinuationToken.from_string(cont)  # raises ValidationError when corrupt
    if after is not None and not (
        isinstance(after, list) and len(after) == 2 and all(type(k) is str for k in after)
    ):
        raise bad
    return RangeState(lo, qhi, hi, cont, (after[0], after[1]) if after else None)


def _check_order(ranges: tuple[RangeState, ...], start: str, stop: str | None) -> None:
    """Ranges must lie in ``[start, stop)``, each non-empty, in order without overlap."""
    floor = ordinal(start)
    for r in ranges:
        lo = ordinal(r.lo)
        ok = lo >= floor
        for bound in (r.hi, r.query_hi):
            ok = ok and (bound is None or ordinal(bound) > lo)
        if r.hi is not None and r.query_hi is not None:
            ok = ok and ordinal(r.hi) <= ordinal(r.query_hi)
        if r.hi is None:
            ok = ok and r.query_hi is None and stop is None
        elif stop is not None:
            ok = ok and ordinal(r.hi) <= ordinal(stop)
        if r.after is not None:
            ok = ok and ordinal(r.after[0]) >= lo
        if not ok:
            raise ValidationError("malformed scan token (its key ranges are out of order)")
        floor = ordinal(r.hi) if r.hi is not None else "\U0010ffff" * 2
