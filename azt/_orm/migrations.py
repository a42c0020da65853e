"""Migrations as code: a :class:`Migration` is an ordered list of named steps over the
stored rows of one table (rename, retype, backfill, drop, rekey, or upgrade to an entity
class's current shape), like an Alembic revision for a schemaless store.

Each step looks at one stored row (a ``TableEntity``, all its properties and their EDM
types) and changes it only when the row still has the old shape, so a step applied twice
changes nothing the second time: that, and writes conditional on the ETag read, is what
makes a migration exactly-once per row and safe to run again (the runner is
:mod:`azt._orm.migration_runner`).

Example::

    >>> m = Migration("0002_rename_name", "customers", [rename("Name", "FullName")])
    >>> plan = m.plan_row(TableEntity(PartitionKey="p", RowKey="r", Name="Ada"))
    >>> dict(plan.entity)
    {'PartitionKey': 'p', 'RowKey': 'r', 'FullName': 'Ada'}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from azt._core.base import validate_table_name
from azt._edm.entity import TableEntity
from azt._edm.types import EdmType, infer_edm_type
from azt._orm.columns import entity_info
from azt._orm.evolution import stored_type

__all__ = [
    "Migration",
    "RowPlan",
    "Step",
    "backfill",
    "drop",
    "rekey",
    "rename",
    "retype",
    "upgrade",
]


@attrs.frozen
class Step:
    """One step of a migration; build it with :func:`rename`, :func:`retype`,
    :func:`backfill`, :func:`drop`, :func:`rekey` or :func:`upgrade`. ``describe`` says
    what it does, for ``plan`` and dry runs.

    Example::

        >>> drop("Legacy").describe
        "drop 'Legacy'"
    """

    kind: str
    describe: str
    #: (row being rewritten, its EDM types) -> whether it changed the row
    apply: Callable[[dict[str, Any], dict[str, EdmType]], bool] = attrs.field(eq=False)
    #: the entity class of an upgrade step
    entity: type | None = None


def rename(old: str, new: str) -> Step:
    """Move property ``old`` to ``new`` (a row holding both keeps ``new``'s value: the
    application wrote it).

    Example::

        >>> rename("Name", "FullName").describe
        "rename 'Name' to 'FullName'"
    """

    def apply(row: dict[str, Any], types: dict[str, EdmType]) -> bool:
        if old not in row:
            return False
        value = row.pop(old)
        t = types.pop(old, None)
        if new not in row:
            row[new] = value
            if t is not None:
                types[new] = t
        return True

    return Step("rename", f"rename {old!r} to {new!r}", apply)


def retype(
    name: str, function: Callable[[Any], Any], *, stored: EdmType, to: EdmType | None = None
) -> Step:
    """Convert ``name`` where it is stored as ``stored`` (its value through ``function``);
    ``to`` gives the new EDM type where the value does not say it (``EdmType.INT64`` for
    an ``int``). A value already of another type is left alone.

    Example::

        >>> retype("Visits", int, stored=EdmType.INT32, to=EdmType.INT64).describe
        "retype 'Visits' from Edm.Int32 to Edm.Int64"
    """
    if to is stored:
        raise ValueError("retype() from a type to itself would apply forever")

    def apply(row: dict[str, Any], types: dict[str, EdmType]) -> bool:
        if name not in row or _stored(row, types, name) is not stored:
            return False
        value = function(row[name])
        row[name] = value
        types.pop(name, None)
        target = to or infer_edm_type(value)
        if target is stored:
            raise ValueError(f"retype({name!r}) returned another {stored} value")
        if target is not _natural(value):
            types[name] = target
        return True

    to_text = to.value if to is not None else "what the function returns"
    return Step("retype", f"retype {name!r} from {stored.value} to {to_text}", apply)


def backfill(name: str, function: Callable[[Mapping[str, Any]], Any]) -> Step:
    """Set ``name`` where a row lacks it, to ``function(row)`` (the row as stored, after
    the steps before; ``None``: leave it absent). Two properties merge into one this way.

    Example::

        >>> backfill("Tier", lambda row: "basic").describe
        "backfill 'Tier'"
    """

    def apply(row: dict[str, Any], types: dict[str, EdmType]) -> bool:
        if name in row:
            return False
        value = function(row)
        if value is None:
            return False
        row[name] = value
        if isinstance(value, int) and infer_edm_type(value) is EdmType.INT64:
            types[name] = EdmType.INT64
        return True

    return Step("backfill", f"backfill {name!r}", apply)


def drop(name: str) -> Step:
    """Remove property ``name``.

    Example::

        >>> drop("Legacy").kind
        'drop'
    """

    def apply(row: dict[str, Any], types: dict[str, EdmType]) -> bool:
        if name not in row:
            return False
        del row[name]
        types.pop(name, None)
        return True

    return Step("drop", f"drop {name!r}", apply)


def rekey(function: Callable[[Mapping[str, Any]], tuple[str, str]], describe: str = "") -> Step:
    """Move each row to the keys ``function(row)`` gives ``(PartitionKey, RowKey)``; a
    row whose keys it gives back unchanged stays (the function must give a moved row's
    new keys back unchanged: that is how a run again knows it is done). Within one
    partition the new row is inserted and the old one deleted in one transaction; across
    partitions the new row is inserted first (kept if it exists: the application may have
    written it), then the old one deleted conditional on its ETag.

    Example::

        >>> rekey(lambda row: ("b-" + row["PartitionKey"], row["RowKey"])).kind
        'rekey'
    """

    def apply(row: dict[str, Any], types: dict[str, EdmType]) -> bool:
        pk, rk = function(row)
        if (pk, rk) == (row["PartitionKey"], row["RowKey"]):
            return False
        if not (isinstance(pk, str) and isinstance(rk, str)):
            raise TypeError("a rekey function returns (PartitionKey, RowKey) strings")
        row["PartitionKey"], row["RowKey"] = pk, rk
        return True

    return Step("rekey", describe or "rekey", apply)


def upgrade(entity: type) -> Step:
    """Rewrite old rows in ``entity``'s current shape: its ``Meta.evolution`` read (earlier
    names, conversions, defaults), every value in its declared EDM type, its shape marker
    set. Properties the class does not declare are kept.

    Example::

        >>> class Note(Entity):
        ...     text: Prop[str] = prop(default="")
        >>> upgrade(Note).describe
        'upgrade to the shape of Note'
    """
    info = entity_info(entity)
    evolution = info.evolution
    declared = {p.wire for p in info.data_props}

    def apply(row: dict[str, Any], types: dict[str, EdmType]) -> bool:
        current = TableEntity(row)
        current.edm_types = dict(types)
        if evolution is not None and not evolution.is_old(current):
            return False
        obj = entity.from_entity(current)  # type: ignore[attr-defined]
        new = obj.to_entity()
        if evolution is None and _same(current, new):
            return False
        kept = {k: v for k, v in row.items() if k not in declared and k not in new}
        if evolution is not None:  # earlier and dropped names go
            for old in (c.old_names for c in evolution.evolution.changes):
                for name in old:
                    kept.pop(name, None)
        kept_types = {k: t for k, t in types.items() if k in kept}
        row.clear()
        row.update(kept)
        row.update(new)
        types.clear()
        types.update(kept_types)
        types.update(new.edm_types)
        return True

    return Step("upgrade", f"upgrade to the shape of {entity.__name__}", apply, entity)


def _natural(value: Any) -> EdmType:
    return infer_edm_type(value)


def _stored(row: Mapping[str, Any], types: Mapping[str, EdmType], name: str) -> EdmType:
    t = types.get(name)
    return EdmType(t) if t is not None else infer_edm_type(row[name])


def _same(a: TableEntity, b: TableEntity) -> bool:
    """Whether ``b`` (an encoded object) stores what ``a`` holds: same values and types."""
    for k, v in b.items():
        if k not in a or a[k] != v:
            return False
        if stored_type(a, k, json=False) is not stored_type(b, k, json=False):
            return False
    return True


@attrs.frozen
class RowPlan:
    """What a migration does to one stored row: ``entity`` is the row after the steps;
    ``moved`` when its keys change (a rekey).

    Example::

        >>> RowPlan(TableEntity(PartitionKey="p", RowKey="r"), ("p", "r"), False).moved
        False
    """

    entity: TableEntity
    old_keys: tuple[str, str]
    moved: bool


@attrs.frozen(init=False)
class Migration:
    """A named, ordered list of steps over table ``table``. Migrations run in the order
    of their names (``0001_...``, ``0002_...``) and each is recorded in the table of
    applied migrations once done. ``entity``: the class whose secondary indexes the
    rewritten rows carry (default: the class of an :func:`upgrade` step).

    Example::

        >>> m = Migration("0003_drop_legacy", "customers", [drop("Legacy")])
        >>> m.plan_row(TableEntity(PartitionKey="p", RowKey="r")) is None
        True
    """

    name: str
    table: str
    steps: tuple[Step, ...]
    entity: type | None
    description: str

    def __init__(
        self,
        name: str,
        table: str,
        steps: Sequence[Step],
        *,
        entity: type | None = None,
        description: str = "",
    ) -> None:
        if not name or not isinstance(name, str) or len(name) > 200:
            raise ValueError("a migration needs a name (at most 200 characters)")
        if any(ch in name for ch in "/\\#?") or not name.isprintable():
            raise ValueError(f"migration name {name!r}: no / \\ # ? or control characters")
        if not steps:
            raise ValueError(f"migration {name!r} has no steps")
        if entity is None:
            entity = next((s.entity for s in steps if s.entity is not None), None)
        if entity is not None:
            entity_info(entity).key_props()
        validate_table_name(table)
        self.__attrs_init__(name, table, tuple(steps), entity, description)

    def plan_row(self, row: Mapping[str, Any]) -> RowPlan | None:
        """The row after every step, or ``None`` when no step changes it (it is migrated).

        Example::

            >>> m = Migration("m", "things", [rename("A", "B")])
            >>> m.plan_row(TableEntity(PartitionKey="p", RowKey="r", B=1)) is None
            True
        """
        work = TableEntity(row)  # the copy the steps change, and the plan's entity
        types = dict(getattr(row, "_types", None) or {})
        changed = False
        for step in self.steps:
            changed = step.apply(work, types) or changed
        if not changed:
            return None
        out = work
        if types:
            kept = {k: t for k, t in types.items() if k in work}
            if kept:
                out.edm_types = kept
        old = (str(row["PartitionKey"]), str(row["RowKey"]))
        moved = (out["PartitionKey"], out["RowKey"]) != old
        return RowPlan(out, old, moved)
