"""Key-range planner: which ``(PartitionKey, RowKey)`` ranges can hold matches.

The planner walks the filter tree with negations pushed to the leaves (De
Morgan) and computes a *key set*: a union of boxes ``pk-interval x
rk-intervals``. Key comparisons with a string literal are exact leaves (keys
are always strings, so ``not (PartitionKey lt 'b')`` is ``PartitionKey ge
'b'``); a key comparison with a literal of another type is constantly false;
anything on other properties is "unknown" and becomes the full key space
(negated or not). ``and`` intersects, ``or`` unions. The result is therefore a
superset of the matching keys, and exactly the matching keys when every leaf
was a key comparison and every box is expressible as a tuple range.

All interval arithmetic happens on :func:`~._utf16.to_units` forms, so that
Python's order is the service's UTF-16 order; the final bounds are converted
back (the backend converts them again for its UTF-16-ordered store).

Strings use half-open intervals ``[lo, hi)`` with ``hi = None`` for
"unbounded"; ``x > s`` is ``x >= s + "\\x00"`` because ``s + "\\x00"`` is the
least string greater than ``s``.

Boxes become half-open ranges over ``(pk, rk)`` tuples: a single partition with
row intervals gives one range per row interval; a partition interval with
unrestricted rows gives one range; a partition interval with restricted rows
cannot be expressed and is widened to the partition interval (a superset).
"""

from __future__ import annotations

from typing import TypeAlias

from ..model import Edm
from ._ast import NEGATED, And, BoolProp, Compare, Const, Node, Not, Or
from ._utf16 import from_units, to_units

Bound: TypeAlias = str | None  # an exclusive upper bound; None = unbounded
Interval: TypeAlias = tuple[str, Bound]
IntervalSet: TypeAlias = tuple[Interval, ...]
Piece: TypeAlias = tuple[str, Bound, IntervalSet]  # pk lo, pk hi, row intervals
KeyRange: TypeAlias = tuple[tuple[str, str], tuple[str, str] | None]

FULL_1D: IntervalSet = (("", None),)
_FULL: tuple[Piece, ...] = (("", None, FULL_1D),)
_EMPTY: tuple[Piece, ...] = ()
FULL_RANGE: KeyRange = (("", ""), None)

_KEYS = ("PartitionKey", "RowKey")


# --- one-dimensional interval sets over strings -----------------------------------


def _lt(a: Bound, b: Bound) -> bool:
    """``a < b`` for exclusive upper bounds (None is +infinity)."""
    if a is None:
        return False
    return b is None or a < b


def _min(a: Bound, b: Bound) -> Bound:
    return a if _lt(a, b) else b


def _max(a: Bound, b: Bound) -> Bound:
    return b if _lt(a, b) else a


def interval_for(op: str, s: str) -> IntervalSet:
    """The strings ``x`` with ``x OP s``.

    Example::

        >>> interval_for("gt", "a")
        (('a\\x00', None),)
    """
    succ = s + "\x00"
    if op == "eq":
        return ((s, succ),)
    if op == "ne":
        return ((succ, None),) if s == "" else (("", s), (succ, None))
    if op == "gt":
        return ((succ, None),)
    if op == "ge":
        return ((s, None),)
    if op == "lt":
        return () if s == "" else (("", s),)
    if op == "le":
        return (("", succ),)
    raise AssertionError(op)


def union_1d(a: IntervalSet, b: IntervalSet) -> IntervalSet:
    """Union of two normalised interval sets (sorted, disjoint, non-adjacent)."""
    if not a:
        return b
    if not b:
        return a
    items = sorted(a + b, key=lambda iv: iv[0])
    out: list[Interval] = []
    lo, hi = items[0]
    for nlo, nhi in items[1:]:
        if hi is None or nlo <= hi:
            hi = _max(hi, nhi)
        else:
            out.append((lo, hi))
            lo, hi = nlo, nhi
    out.append((lo, hi))
    return tuple(out)


def intersect_1d(a: IntervalSet, b: IntervalSet) -> IntervalSet:
    """Intersection of two normalised interval sets."""
    out: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = _min(a[i][1], b[j][1])
        if hi is None or lo < hi:
            out.append((lo, hi))
        if _lt(a[i][1], b[j][1]):
            i += 1
        else:
            j += 1
    return tuple(out)


# --- two-dimensional key sets ------------------------------------------------------


def _is_point(lo: str, hi: Bound) -> bool:
    return hi is not None and len(hi) == len(lo) + 1 and hi[-1] == "\x00" and hi.startswith(lo)


def _combine(a: tuple[Piece, ...], b: tuple[Piece, ...], union: bool) -> tuple[Piece, ...]:
    """Union or intersection of two key sets by sweeping the partition-key boundaries."""
    bounds = sorted({""} | {p for piece in a + b for p in piece[:2] if p is not None})
    out: list[Piece] = []
    ia = ib = 0
    for k, lo in enumerate(bounds):
        hi = bounds[k + 1] if k + 1 < len(bounds) else None
        while ia < len(a) and not _lt(lo, a[ia][1]):
            ia += 1
        while ib < len(b) and not _lt(lo, b[ib][1]):
            ib += 1
        rows_a = a[ia][2] if ia < len(a) and a[ia][0] <= lo else ()
        rows_b = b[ib][2] if ib < len(b) and b[ib][0] <= lo else ()
        rows = union_1d(rows_a, rows_b) if union else intersect_1d(rows_a, rows_b)
        if not rows:
            continue
        if out:
            plo, phi, prows = out[-1]
            mergeable = prows == rows and (
                rows == FULL_1D or not (_is_point(plo, phi) or _is_point(lo, hi))
            )
            if phi == lo and mergeable:
                out[-1] = (plo, hi, rows)
                continue
        out.append((lo, hi, rows))
    return tuple(out)


class _Plan:
    __slots__ = ("exact", "pieces")

    def __init__(self, pieces: tuple[Piece, ...], exact: bool) -> None:
        self.pieces = pieces
        self.exact = exact


def _plan(node: Node, negated: bool) -> _Plan:
    if isinstance(node, Compare):
        if node.prop not in _KEYS:
            return _Plan(_FULL, False)
        if node.lit.edm is not Edm.STRING:
            # A key compared with a non-string literal is always false.
            return _Plan(_FULL if negated else _EMPTY, True)
        op = NEGATED[node.op] if negated else node.op
        ivs = interval_for(op, to_units(node.lit.value))
        if node.prop == "PartitionKey":
            return _Plan(tuple((lo, hi, FULL_1D) for lo, hi in ivs), True)
        return _Plan((("", None, ivs),) if ivs else _EMPTY, True)
    if isinstance(node, BoolProp):
        if node.prop in _KEYS or node.prop == "Timestamp":
            return _Plan(_FULL if negated else _EMPTY, True)  # never Boolean: always false
        return _Plan(_FULL, False)
    if isinstance(node, Const):
        return _Plan(_FULL if node.value != negated else _EMPTY, True)
    if isinstance(node, Not):
        return _plan(node.operand, not negated)
    # and / or, with De Morgan under negation
    union = isinstance(node, Or) != negated
    assert isinstance(node, And | Or)
    plans = [_plan(item, negated) for item in node.items]
    pieces = plans[0].pieces
    exact = all(p.exact for p in plans)
    for p in plans[1:]:
        pieces = _combine(pieces, p.pieces, union)
    if not pieces:
        exact = True  # nothing can match: the empty plan is exact
    return _Plan(pieces, exact)


def _to_ranges(pieces: tuple[Piece, ...]) -> tuple[list[KeyRange], bool]:
    ranges: list[KeyRange] = []
    exact = True
    for lo, hi, rows in pieces:
        if hi is not None and _is_point(lo, hi):
            for rlo, rhi in rows:
                ranges.append(((lo, rlo), (lo, rhi) if rhi is not None else (hi, "")))
        else:
            end = (hi, "") if hi is not None else None
            if rows == FULL_1D:
                ranges.append(((lo, ""), end))
            else:
                exact = False  # rows restricted across several partitions: widen
                ranges.append(((lo, rows[0][0]), end))
    ranges.sort(key=lambda r: r[0])
    merged: list[KeyRange] = []
    for lo_key, hi_key in ranges:
        if merged:
            plo, phi = merged[-1]
            if phi is None or lo_key <= phi:
                if phi is not None and (hi_key is None or hi_key > phi):
                    merged[-1] = (plo, hi_key)
                continue
        merged.append((lo_key, hi_key))
    return merged, exact


def _key_from_units(key: tuple[str, str]) -> tuple[str, str]:
    return (from_units(key[0]), from_units(key[1]))


def plan_ranges(root: Node) -> tuple[list[KeyRange], bool]:
    """Plan a filter tree: (sorted disjoint key ranges, whether they are exactly the matches).

    Example::

        >>> from ._parser import parse_filter
        >>> plan_ranges(parse_filter("PartitionKey eq 'p' and RowKey ge 'b'"))
        ([(('p', 'b'), ('p\\x00', ''))], True)
    """
    plan = _plan(root, False)
    ranges, exact = _to_ranges(plan.pieces)
    ranges = [
        (_key_from_units(lo), None if hi is None else _key_from_units(hi)) for lo, hi in ranges
    ]
    return ranges, exact and plan.exact


def classify(ranges: list[KeyRange]) -> str:
    """The query kind of a range list (see the package docstring).

    Example::

        >>> classify([(("p", "r"), ("p", "r\\x00"))])
        'point'
    """
    if not ranges:
        return "empty"
    if len(ranges) > 1:
        return "multi"
    (pk, rk), hi = ranges[0]
    if hi is None:
        return "scan" if (pk, rk) == ("", "") else "partition-range"
    hpk, hrk = hi
    if hpk == pk:
        return "point" if hrk == rk + "\x00" else "row-range"
    if hrk == "" and hpk == pk + "\x00":
        return "partition" if rk == "" else "row-range"
    return "partition-range"
