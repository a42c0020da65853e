"""Schema evolution declared on an entity class (``Meta.evolution``): earlier names of a
property, conversions on read (widening, parsing, a function), defaults for rows written
before a property existed, and a shape marker (a stored version property) where one is
needed to tell old rows from new.

A class with an evolution reads rows of both shapes, typed: the codec upgrades each row
before decoding it (:meth:`BoundEvolution.upgrade_json` / :meth:`~BoundEvolution.upgrade_value`),
and writes the current shape (with the marker, if it has one). Queries built from the
class are rewritten to see old rows where the service can (:meth:`BoundEvolution.rewrite`:
a renamed property is tested under each of its names, a widened number under both EDM
types) and ``explain()`` names the filters that cannot (:meth:`BoundEvolution.blind_spots`).
A class without ``Meta.evolution`` is untouched: its codec is the plain generated one.

Example::

    >>> class Customer(Entity):
    ...     full_name: Prop[str] = prop(name="FullName", default="")
    ...     class Meta:
    ...         evolution = Evolution(renamed("full_name", "Name"))
    >>> Customer.from_entity({"PartitionKey": "p", "RowKey": "r", "Name": "Ada"}).full_name
    'Ada'
    >>> str(Query(Customer).where(Customer.full_name == "Ada").compile().filter)
    "FullName eq 'Ada' or Name eq 'Ada'"
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from azt._edm.datetime import EdmDateTime
from azt._edm.entity import TableEntity
from azt._edm.types import INT32_MAX, INT32_MIN, EdmType, format_literal, infer_edm_type
from azt._orm.expr import And, Comparison, Condition, Not, Or
from azt._orm.values import Column

__all__ = [
    "BoundEvolution",
    "Change",
    "Evolution",
    "converted",
    "defaulted",
    "dropped",
    "parsed",
    "renamed",
    "stored_type",
    "widened",
]

_ANN = "@odata.type"
#: JSON values without an annotation: their stored type by Python class
_JSON_TYPES: dict[type, EdmType] = {
    str: EdmType.STRING,
    bool: EdmType.BOOLEAN,
    int: EdmType.INT32,
    float: EdmType.DOUBLE,
}
#: the widenings a class may declare (the codec reads them losslessly)
_WIDENS = {EdmType.INT64: EdmType.INT32, EdmType.DOUBLE: EdmType.INT32}


@attrs.frozen
class Change:
    """One change of a property's stored form, declared with :func:`renamed`,
    :func:`widened`, :func:`parsed`, :func:`converted` or :func:`defaulted`.

    Example::

        >>> renamed("full_name", "Name").kind
        'renamed'
    """

    kind: str
    attr: str
    old_names: tuple[str, ...] = ()
    stored: EdmType | None = None
    function: Callable[[Any], Any] | None = attrs.field(default=None, eq=False)
    value: Any = None


def renamed(attr: str, *old_names: str) -> Change:
    """``attr`` was stored under ``old_names`` before: rows holding an old name read it
    (the current name wins when a row holds both), writes use the current name, and a
    filter on ``attr`` tests every name (``(new eq x) or (old eq x)``).

    Example::

        >>> renamed("full_name", "Name", "CustomerName").old_names
        ('Name', 'CustomerName')
    """
    if not old_names:
        raise TypeError(f"renamed({attr!r}) needs at least one earlier name")
    return Change("renamed", attr, old_names=tuple(old_names))


def widened(attr: str) -> Change:
    """``attr`` (now ``Prop[Int64]`` or ``Prop[float]``) was an Int32: old rows read as the
    wider type, writes store the wider one, and a filter on ``attr`` compares under both
    EDM types (the service compares only values of one type).

    Example::

        >>> widened("visits").stored
        <EdmType.INT32: 'Edm.Int32'>
    """
    return Change("widened", attr, stored=EdmType.INT32)


def parsed(attr: str) -> Change:
    """``attr`` (now a ``datetime``) was stored as an ISO 8601 string: such values are
    parsed on read (a string without a time zone is taken as UTC; an empty one is
    ``None``). A filter on ``attr``
    cannot see them (``explain()`` says so).

    Example::

        >>> parsed("joined").stored
        <EdmType.STRING: 'Edm.String'>
    """
    return Change("parsed", attr, stored=EdmType.STRING, function=_parse_iso)


def converted(attr: str, function: Callable[[Any], Any], *, stored: EdmType | None) -> Change:
    """Values of ``attr`` stored as ``stored`` are read through ``function`` (the stored
    Python value in, the property's value out). ``stored=None`` converts every old row's
    value, which needs the class's shape marker (``Evolution(marker=..., version=...)``)
    to tell old rows from new. A filter on ``attr`` cannot see converted rows.

    Example::

        >>> cents = converted("price", lambda d: round(d * 100), stored=EdmType.DOUBLE)
        >>> cents.kind
        'converted'
    """
    return Change("converted", attr, stored=stored, function=function)


def defaulted(attr: str, value: Any) -> Change:
    """Rows without ``attr`` (written before it existed) read it as ``value``, even when
    the class gives new objects no default. A filter on ``attr`` does not match them.

    Example::

        >>> defaulted("tier", "basic").value
        'basic'
    """
    return Change("defaulted", attr, value=value)


def dropped(*names: str) -> Change:
    """Stored properties the class no longer has and means to lose: rows holding them
    read without them (no ``azt.PropertyLossError`` on a replace), writes do not carry
    them. ``attr`` of the change is empty: it names stored names, not a property.

    Example::

        >>> dropped("Legacy", "Fax").old_names
        ('Legacy', 'Fax')
    """
    if not names:
        raise TypeError("dropped() needs at least one stored name")
    return Change("dropped", "", old_names=tuple(names))


def _parse_iso(text: str) -> datetime | None:
    if not text.strip():
        return None  # an empty string held no date
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


@attrs.frozen(init=False)
class Evolution:
    """The evolution of an entity class, declared as ``Meta.evolution``: its
    :class:`Change` list and, optionally, a shape marker: every write stores ``marker =
    version`` (an Int32), and rows whose marker is absent or lower are old rows.

    Example::

        >>> ev = Evolution(renamed("full_name", "Name"), marker="SchemaVersion", version=2)
        >>> (ev.marker, ev.version, len(ev.changes))
        ('SchemaVersion', 2, 1)
    """

    changes: tuple[Change, ...]
    marker: str | None
    version: int | None

    def __init__(self, *changes: Change, marker: str | None = None, version: int | None = None):
        if (marker is None) != (version is None):
            raise TypeError("Evolution takes marker= and version= together")
        if version is not None and not (isinstance(version, int) and 0 < version <= INT32_MAX):
            raise TypeError(f"Evolution version must be a positive Int32, got {version!r}")
        for c in changes:
            if not isinstance(c, Change):
                raise TypeError(f"Evolution takes changes (renamed(), ...), got {c!r}")
        self.__attrs_init__(tuple(changes), marker, version)


def stored_type(row: Mapping[str, Any], name: str, json: bool) -> EdmType:
    """The EDM type a row stores ``name`` as: its annotation (JSON) or recorded type
    (a ``TableEntity``), else what its value says.

    Example::

        >>> stored_type({"A": 1}, "A", json=True), stored_type({"A@odata.type": "Edm.Int64",
        ...     "A": "1"}, "A", json=True)
        (<EdmType.INT32: 'Edm.Int32'>, <EdmType.INT64: 'Edm.Int64'>)
    """
    value = row[name]
    if json:
        ann = row.get(name + _ANN)
        if ann is not None:
            return EdmType(ann)
        return _JSON_TYPES.get(value.__class__, EdmType.STRING)
    types = getattr(row, "_types", None)
    if types:
        t = types.get(name)
        if t is not None:
            return EdmType(t)
    return infer_edm_type(value)


@attrs.define
class _Bound:
    change: Change
    prop: Any  # a Prop (azt._orm.columns imports this module)
    #: the property's value to JSON (the codec's unstructure hook) and its annotation
    to_json: Callable[[Any], Any]
    annotation: str | None


class BoundEvolution:
    """An :class:`Evolution` bound to its class's columns: the row upgrades the codec
    runs, the query rewrite and the blind spots ``explain()`` reports.

    Example::

        >>> evolution = entity_info(Evolving).evolution
        >>> evolution.upgrade_json({"PartitionKey": "p", "RowKey": "r", "Name": "x"})
        {'PartitionKey': 'p', 'RowKey': 'r', 'name': 'x'}
    """

    def __init__(
        self,
        owner: str,
        evolution: Evolution,
        props: Mapping[str, Any],
        to_json: Callable[[Any], Callable[[Any], Any]],
        annotated: frozenset[EdmType],
    ) -> None:
        self.evolution = evolution
        self.marker = evolution.marker
        self.version = evolution.version
        self.changes: list[_Bound] = []
        wires = {p.wire for p in props.values()}
        self.dropped: tuple[str, ...] = ()
        for c in evolution.changes:
            if c.kind == "dropped":
                for old in c.old_names:
                    if old in wires or old == self.marker:
                        raise TypeError(
                            f"{owner}.Meta.evolution: dropped({old!r}) is a stored name of "
                            "the class"
                        )
                self.dropped += c.old_names
                continue
            p = props.get(c.attr)
            where = f"{owner}.Meta.evolution: {c.kind}({c.attr!r})"
            if p is None or p.attr in ("Timestamp", "ETag"):
                raise TypeError(f"{where}: {owner} has no property {c.attr!r}")
            if p.is_key:
                raise TypeError(f"{where}: keys change with a migration's rekey step, not here")
            for old in c.old_names:
                if old in wires or old == self.marker:
                    raise TypeError(f"{where}: {old!r} is a stored name of the class already")
            if c.kind == "widened" and _WIDENS.get(p.edm) is not EdmType.INT32:
                raise TypeError(
                    f"{where}: only Int32 widens (to Int64 or Double); {p.edm} does not"
                )
            if c.kind == "parsed" and p.edm is not EdmType.DATETIME:
                raise TypeError(f"{where}: parsed() reads a string into a datetime property")
            if c.kind == "converted" and c.stored is None and self.marker is None:
                raise TypeError(
                    f"{where}: stored=None converts every old row, which needs "
                    "Evolution(marker=..., version=...) to tell old rows from new"
                )
            if c.kind == "defaulted":
                c = attrs.evolve(c, value=p.check(c.value))
            ann = p.edm.value if p.edm in annotated else None
            self.changes.append(_Bound(c, p, to_json(p), ann))
        if self.marker is not None and self.marker in wires:
            raise TypeError(f"{owner}.Meta.evolution: marker {self.marker!r} is a property")
        self._renames = [b for b in self.changes if b.change.kind == "renamed"]
        self._others = [b for b in self.changes if b.change.kind != "renamed"]
        self._by_attr: dict[str, list[Change]] = {}
        for b in self.changes:
            self._by_attr.setdefault(b.prop.attr, []).append(b.change)
        #: the stored names of earlier shapes (renamed and dropped properties)
        self.old_names = tuple(
            n for c in evolution.changes if c.kind in ("renamed", "dropped") for n in c.old_names
        )
        #: stored names the codec accepts besides the declared ones: the marker, and the
        #: earlier names a MERGE may leave beside the current ones (dropped on replace, as
        #: the class declares)
        self.extra_names = frozenset(
            ({self.marker} if self.marker else set()) | set(self.old_names)
        )

    # -- reading ----------------------------------------------------------------------------

    def is_old(self, row: Mapping[str, Any]) -> bool:
        """Whether a row (of either form) has an old shape: with a marker, a marker absent or
        below the version; without, any change that applies to it.

        Example::

            >>> ev = entity_info(Evolving).evolution
            >>> ev.is_old({"PartitionKey": "p", "RowKey": "r", "Name": "x"})
            True
        """
        if self.marker is not None:
            m = row.get(self.marker)
            if not (m.__class__ is int and m >= self.version):  # type: ignore[operator]
                return True
            return any(n in row for n in self.old_names)  # left by a MERGE
        return self._upgrade(row, json=not isinstance(row, TableEntity)) is not row

    def upgrade_json(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        """A JSON row in the current shape (the row itself when it has it).

        Example::

            >>> ev = entity_info(Evolving).evolution
            >>> ev.upgrade_json({"PartitionKey": "p", "RowKey": "r", "name": "y"})["name"]
            'y'
        """
        return self._upgrade(row, json=True)

    def upgrade_value(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        """A ``TableEntity`` (or mapping of Python values) in the current shape.

        Example::

            >>> ev = entity_info(Evolving).evolution
            >>> ev.upgrade_value(TableEntity(PartitionKey="p", RowKey="r", Name="x"))["name"]
            'x'
        """
        return self._upgrade(row, json=False)

    def _upgrade(self, row: Mapping[str, Any], *, json: bool) -> Mapping[str, Any]:
        old_row = False
        if self.marker is not None:
            m = row.get(self.marker)
            if m.__class__ is int and m >= self.version:  # type: ignore[operator]
                for n in self.old_names:
                    if n in row:
                        break  # a current row with an earlier name a MERGE left: drop it
                else:
                    return row
            else:
                old_row = True
        out: dict[str, Any] | None = None
        types: dict[str, EdmType] | None = None

        def own() -> dict[str, Any]:
            nonlocal out, types
            if out is None:
                out = dict(row)
                if not json:
                    types = dict(getattr(row, "_types", None) or {})
            return out

        for name in self.dropped:
            if name in row:
                d = own()
                d.pop(name, None)
                if json:
                    d.pop(name + _ANN, None)
                if types is not None:
                    types.pop(name, None)
        for b in self._renames:
            wire = b.prop.wire
            for old in b.change.old_names:
                if old not in row:
                    continue
                d = own()
                value = d.pop(old)
                ann = d.pop(old + _ANN, None) if json else None
                t = types.pop(old, None) if types is not None else None
                if wire not in d:
                    d[wire] = value
                    if ann is not None:
                        d[wire + _ANN] = ann
                    if t is not None and types is not None:
                        types[wire] = t
        for b in self._others:
            c = b.change
            wire = b.prop.wire
            cur = out if out is not None else row
            if c.kind == "defaulted":
                if wire not in cur or cur[wire] is None:
                    d = own()
                    self._put(d, types, b, c.value, json)
                continue
            if c.kind == "widened" or wire not in cur or cur[wire] is None:
                continue  # widenings: the codec reads an Int32 as the wider type
            if c.stored is None:
                if not old_row:
                    continue
            elif (
                stored_type(cur if out is None or json else _typed(out, types), wire, json)
                is not c.stored
            ):
                continue
            d = own()
            raw = d[wire]
            if json and c.stored is not None:
                raw = _json_value(raw, c.stored)
            assert c.function is not None
            self._put(d, types, b, c.function(raw), json)
        if out is None:
            return row
        if self.marker is not None:
            out.pop(self.marker, None)
            out.pop(self.marker + _ANN, None)
            if types is not None:
                types.pop(self.marker, None)
        if json:
            return out
        ent = TableEntity(out)
        if isinstance(row, TableEntity):
            ent.metadata = row.metadata
        if types:
            ent.edm_types = types
        return ent

    @staticmethod
    def _put(
        d: dict[str, Any], types: dict[str, EdmType] | None, b: _Bound, value: Any, json: bool
    ) -> None:
        wire = b.prop.wire
        value = b.prop.check(value)
        if json:
            d.pop(wire + _ANN, None)
            if value is None:
                d.pop(wire, None)
                return
            d[wire] = b.to_json(value)
            if b.annotation is not None:
                d[wire + _ANN] = b.annotation
            return
        if value is None:
            d.pop(wire, None)
        else:
            d[wire] = value
        if types is not None:
            types.pop(wire, None)
            if value is not None and b.prop.edm is EdmType.INT64:
                types[wire] = EdmType.INT64

    # -- queries ----------------------------------------------------------------------------

    def rewrite(self, cond: Condition) -> Condition:
        """``cond`` rewritten to see old rows where the service can: a comparison on a
        renamed property is joined with ``or`` to the same comparison under each old name;
        one on a widened property to the same under Int32 (a value outside Int32's range
        becomes the test that matches every Int32, or none).

        Example::

            >>> str(entity_info(Evolving).evolution.rewrite(Evolving.name == "x"))
            "name eq 'x' or Name eq 'x'"
        """
        if isinstance(cond, Comparison):
            return self._rewrite_comparison(cond)
        if isinstance(cond, And):
            return And.of(*(self.rewrite(c) for c in cond.items))
        if isinstance(cond, Or):
            return Or.of(*(self.rewrite(c) for c in cond.items))
        if isinstance(cond, Not):
            return Not(self.rewrite(cond.item))
        return cond

    def _rewrite_comparison(self, cmp: Comparison) -> Condition:
        changes = self._by_attr.get(cmp.prop.attr)
        if not changes:
            return cmp
        branches: list[Condition] = [cmp]
        if any(c.kind == "widened" for c in changes):
            # The service widens an Int32 literal to the property's type (Int64, Double)
            # but never narrows a property: an Int32 literal alone sees both shapes when
            # the value is one; otherwise the Int32 rows get a test of their own.
            extra = _int32_branch(cmp)
            if extra is not None and _exact_int32(cmp.value):
                branches = [extra]
            elif extra is not None:
                branches.append(extra)
        for c in changes:
            if c.kind == "renamed":
                for old in c.old_names:
                    branches.extend([_renamed_branch(b, old) for b in branches])
        if len(branches) == 1:
            return branches[0]
        # a missing property makes every comparison false, ne included: or is right
        return Or.of(*branches)

    def blind_spots(self, cond: Condition | None) -> tuple[str, ...]:
        """What a filter cannot see of old rows, one sentence per property (for
        ``explain()``).

        Example::

            >>> entity_info(Evolving).evolution.blind_spots(Evolving.name == "x")
            ()
        """
        if cond is None:
            return ()
        notes: dict[str, str] = {}
        for cmp in _comparisons(cond):
            for c in self._by_attr.get(cmp.prop.attr, ()):
                where = f"{cmp.prop.owner.__name__}.{cmp.prop.attr} ({cmp.prop.wire})"
                if c.kind in ("parsed", "converted"):
                    how = f"stored as {c.stored}" if c.stored is not None else "of old rows"
                    notes[cmp.prop.attr] = (
                        f"the filter on {where} cannot see values {how}: they are converted "
                        "on read; migrate the table (azt migrate) to query them"
                    )
                elif c.kind == "defaulted":
                    notes.setdefault(
                        cmp.prop.attr,
                        f"the filter on {where} does not match rows without it (read as "
                        f"{c.value!r}); migrate the table (azt migrate) to store it",
                    )
        return tuple(notes.values())


def _comparisons(cond: Condition) -> Iterator[Comparison]:
    if isinstance(cond, Comparison):
        yield cond
    elif isinstance(cond, And | Or):
        for c in cond.items:
            yield from _comparisons(c)
    elif isinstance(cond, Not):
        yield from _comparisons(cond.item)


def _shadow(prop: Column[Any], wire: str | None = None, edm: EdmType | None = None) -> Any:
    """A copy of a column under another stored name or EDM type (for a rewritten filter)."""
    q = type(prop)()
    for name in Column.__slots__:
        setattr(q, name, getattr(prop, name))
    if wire is not None:
        q.wire = wire
    if edm is not None:
        q.edm = edm
    return q


def _renamed_branch(cond: Condition, old: str) -> Condition:
    if isinstance(cond, Comparison):
        return Comparison(_shadow(cond.prop, wire=old), cond.op, cond.value, cond.literal)
    assert isinstance(cond, And | Or)
    return type(cond).of(*(_renamed_branch(c, old) for c in cond.items))


def _int32_branch(cmp: Comparison) -> Condition | None:
    """A test that Int32 stored values pass exactly when they pass ``cmp`` on the wider
    type (``None``: no Int32 does). The service widens an Int32 literal to the property's
    type, so the test also sees values of the wider type: it is built so that those it
    lets through pass ``cmp`` too (``gt 4.5`` becomes ``ge 5``, never ``gt 4``)."""
    v = cmp.value
    op = cmp.op
    if isinstance(v, float):
        if not math.isfinite(v):
            return None
        if v != int(v):  # a fraction: the integers on the right side of it
            if op == "eq":
                return None
            low, high = math.floor(v), math.ceil(v)
            if op == "ne":
                return _or_present(_int32_cmp(cmp, "le", low), _int32_cmp(cmp, "ge", high))
            op, v = ("ge", high) if op in ("gt", "ge") else ("le", low)
        else:
            v = int(v)
    return _int32_cmp(cmp, op, v)


def _int32_cmp(cmp: Comparison, op: str, v: int) -> Condition | None:
    """``op v`` for Int32 values; a ``v`` outside Int32's range becomes the test every
    Int32 passes (``ge MIN and le MAX``: a wider value it lets through passes ``op v``
    too), or ``None``."""
    if v > INT32_MAX:
        return _all_int32(cmp) if op in ("lt", "le", "ne") else None
    if v < INT32_MIN:
        return _all_int32(cmp) if op in ("gt", "ge", "ne") else None
    shadow = _shadow(cmp.prop, edm=EdmType.INT32)
    return Comparison(shadow, op, v, format_literal(v, EdmType.INT32))


def _or_present(*items: Condition | None) -> Condition | None:
    present = [c for c in items if c is not None]
    return Or.of(*present) if present else None


def _exact_int32(v: Any) -> bool:
    if isinstance(v, float):
        return math.isfinite(v) and v == int(v) and INT32_MIN <= int(v) <= INT32_MAX
    return isinstance(v, int) and INT32_MIN <= v <= INT32_MAX


def _all_int32(cmp: Comparison) -> Condition:
    shadow = _shadow(cmp.prop, edm=EdmType.INT32)
    return And.of(
        Comparison(shadow, "ge", INT32_MIN, format_literal(INT32_MIN, EdmType.INT32)),
        Comparison(shadow, "le", INT32_MAX, format_literal(INT32_MAX, EdmType.INT32)),
    )


def _json_value(raw: Any, stored: EdmType) -> Any:
    """A JSON value of a known stored type as its Python value (for a conversion)."""
    if stored is EdmType.INT64 and isinstance(raw, str):
        return int(raw)
    if stored is EdmType.DOUBLE and not isinstance(raw, float):
        return float(raw)
    if stored is EdmType.DATETIME:
        return EdmDateTime.parse(raw)
    return raw


def _typed(out: dict[str, Any], types: dict[str, EdmType] | None) -> TableEntity:
    ent = TableEntity(out)
    if types:
        ent.edm_types = types
    return ent
