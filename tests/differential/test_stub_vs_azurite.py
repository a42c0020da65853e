"""Differential test: the stub and Azurite, driven by the same random command sequences.

A Hypothesis state machine sends each command (entity writes with and without ETags,
deletes, point reads, filtered and paged queries, small transactions, table operations)
through the azt client to both the in-process stub and an Azurite instance, and asserts
that both give the same outcome: the same success, or the same error class, status and
service error code; the same entities, with the same property types, in the same order.
Azure is the oracle: where the two disagree, PROTOCOL.md decides who is wrong.
Disagreements found so far are pinned in ``tests/stub/test_differential_findings.py``.

Besides agreement, each target must be consistent with itself: the ETag a write returns
is the one its reads report and is accepted by the next conditional write.

What the generator leaves out, and why (Azurite differs from Azure there, or Azure's
behaviour is not known; PROTOCOL.md 7.3, 7.8 and 14):

* Each property name but ``z`` (never in a filter) has one EDM type across all
  entities (``s``/``t``/``S`` String,
  ``n``/``i`` Int32, ``d`` Double, ``b`` Boolean, ``l`` Int64, ``w`` DateTime, ``g``
  Guid, ``x`` Binary): Azurite compares filter values untyped (``'7' gt 5`` is true
  there, false on Azure).
* Filters compare a property with a literal of its own type only (plus Int32 literals
  on the Double property, which Azure promotes). No Int64, DateTime, Guid or Binary
  literals (Azurite compares Int64 as strings, DateTime at ms precision, Guid in a
  storage form), no Int32 property with a Double literal (unknown on Azure), no bare
  Boolean operands (unknown on Azure), no ``ne`` or ``not`` over a property an entity
  may lack (missing-property ``ne`` differs on Azurite; ``not`` over a missing property
  is unknown on Azure): ``s`` and ``n`` are in every entity written, so ``ne`` and
  ``not`` apply to them and the keys only.
* ``$select`` of a property an entity lacks: Azure returns null, Azurite omits it; nulls
  are dropped before comparing.
* No raw U+2028/U+2029 in transactions (Azurite fails them; see
  ``_no_js_line_separators``); Double filter literals have no exponent (Azurite reads
  ``1e+16`` wrongly; see ``FILTER_DOUBLES``).
* Transactions use one PartitionKey and distinct RowKeys (Azurite does not check
  either); no deletes without ``If-Match`` (the client always sends one).
* Entity operations through another casing of a table name (Azurite 3.35 answers
  ``404 TableNotFound``; Azure's table names are case-insensitive); only creating the
  other casing (409 on both) is compared.
* JSON only, at all three metadata levels: Azurite refuses AtomPub (415).
* Int64 literals: besides the above, Azurite 3.35 does not match ``l eq 7`` (an Int32
  literal) against an Int64 property holding 7, which Azure promotes (PROTOCOL.md 7.3).
* ETag and Timestamp values, continuation tokens, page boundaries, request ids and
  error message texts are not compared (they differ by design, PROTOCOL.md 14).

Runs only when ``AZT_DIFF_AZURITE_CONNECTION_STRING`` names an Azurite (or the Azurite
leg's ``AZT_TEST_CONNECTION_STRING`` is local): ``bash scripts/test-azurite.sh``.
``AZT_DIFF_EXAMPLES`` sets the number of sequences (default 40).
"""

from __future__ import annotations

import functools
import math
import os
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

import azt
from azt.edm import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, EdmType, Typed

from .support import JSON_FORMATS, Outcome, Targets, azurite_connection_string, typed_props

pytestmark = pytest.mark.live

# --------------------------------------------------------------------------- the pools

# Keys exercise URL escaping (quote, percent, plus, space, ampersand, non-ASCII) and
# ordinal UTF-16 ordering: U+1F600 (a surrogate pair, D83D..) sorts *before* U+E000 in
# UTF-16 but after it by code point.
PARTITIONS = ["p'q", "\u00e9"]
ROWS = ["", "a", "B", "a b", "5%&=x+y", "\U0001f600", "\ue000"]
KEY_CHARS = [*"aB '%+&=~\u00e9", "\U0001f600", "\ue000"]

KEY_TEXT = st.one_of(
    st.sampled_from(PARTITIONS + ROWS), st.text(alphabet=st.sampled_from(KEY_CHARS), max_size=3)
)
VALUE_CHARS = [*KEY_CHARS, '"', "\\", "/", "#", "?", "\t", "\n", "\x01", "\x85", "\u2028"]
"""Property values may hold what keys may not (PROTOCOL.md 5.4), and JSON escapes."""
STRINGS = st.one_of(
    st.sampled_from(["", "a", "b", "O'Brien"]),
    st.text(alphabet=st.sampled_from(VALUE_CHARS), max_size=4),
)
INT32S = st.one_of(st.integers(-3, 3), st.integers(INT32_MIN, INT32_MAX))
FILTER_DOUBLES = st.one_of(
    st.sampled_from([0.0, 2.0, -1.5, 3.25]),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: "e" not in repr(v)),
)
"""Double literals without an exponent: Azurite 3.35 misreads ``1e+16`` in a filter
(``d lt 1e+16`` does not match ``d = 0.0``); the grammar (PROTOCOL.md 7.2) allows it."""
DOUBLES = st.one_of(FILTER_DOUBLES, st.floats(), st.sampled_from([math.nan, math.inf, -math.inf]))
"""Stored doubles: any, including NaN and the infinities (never used as filter literals)."""
DATETIMES = st.builds(
    lambda dt, hns: azt.EdmDateTime(
        dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, dt.microsecond, nanosecond=hns
    ),
    st.datetimes(min_value=datetime(1601, 1, 2), timezones=st.just(UTC)),
    st.sampled_from(range(0, 1000, 100)),
)
"""DateTime values with all seven fractional digits (100 ns ticks)."""
INT64S = st.integers(INT64_MIN, INT64_MAX).map(lambda v: Typed(v, EdmType.INT64))

ALWAYS = {"s": STRINGS, "n": INT32S}
"""In every entity body written, so ``ne`` and ``not`` over them never meet a missing
property."""

OPTIONAL = {
    "t": STRINGS,
    "S": STRINGS,  # not "s": property names are case-sensitive
    "i": INT32S,
    "d": DOUBLES,
    "b": st.booleans(),
    "l": INT64S,
    "w": DATETIMES,
    "g": st.uuids(),
    "x": st.binary(max_size=8),
    # never filtered on, so it may change type from one write to the next (a merge
    # replaces a property's value and type, PROTOCOL.md 4.14)
    "z": st.one_of(STRINGS, INT32S, INT64S, DOUBLES, st.booleans(), DATETIMES, st.uuids()),
}
SELECTABLE = ["PartitionKey", "RowKey", *ALWAYS, *OPTIONAL]


@st.composite
def property_sets(draw: st.DrawFn) -> dict[str, Any]:
    """The non-key properties of an entity body: ``s`` and ``n`` plus some optional ones."""
    props = {name: draw(strategy) for name, strategy in ALWAYS.items()}
    for name in draw(st.lists(st.sampled_from(sorted(OPTIONAL)), unique=True, max_size=4)):
        props[name] = draw(OPTIONAL[name])
    return props


# --------------------------------------------------------------------------- filters

CMP = ["eq", "ne", "gt", "ge", "lt", "le"]
CMP_NO_NE = ["eq", "gt", "ge", "lt", "le"]


@dataclass
class Filter:
    """A filter under construction: text with ``@pN`` placeholders and their values."""

    text: str
    params: dict[str, Any] = field(default_factory=dict)
    total: bool = True  # refers only to properties every entity has
    comparisons: int = 1


def _renumber(f: Filter, offset: int) -> Filter:
    text = f.text
    params = {}
    # highest index first so @p1 does not clobber @p10
    for old in sorted(f.params, key=lambda k: -int(k[1:])):
        new = f"p{int(old[1:]) + offset}"
        text = text.replace(f"@{old}", f"@{new}")
        params[new] = f.params[old]
    return Filter(text, params, f.total, f.comparisons)


@st.composite
def comparisons(draw: st.DrawFn) -> Filter:
    """One typed comparison (see the module docstring for what is left out)."""
    kind = draw(st.sampled_from(["key", "key", "s", "n", "t", "S", "i", "d", "d_int", "b"]))
    if kind == "key":
        prop = draw(st.sampled_from(["PartitionKey", "RowKey"]))
        value: Any = draw(KEY_TEXT)
        ops, total = CMP, True
    elif kind in ALWAYS:
        prop, value, ops, total = kind, draw(ALWAYS[kind]), CMP, True
    elif kind == "d":
        prop, value, ops, total = "d", draw(FILTER_DOUBLES), CMP_NO_NE, False
    elif kind == "d_int":  # Int32 literal against a Double property: Azure promotes it
        prop, value, ops, total = "d", draw(INT32S), CMP_NO_NE, False
    else:
        prop, value, ops, total = kind, draw(OPTIONAL[kind]), CMP_NO_NE, False
    op = draw(st.sampled_from(ops))
    if draw(st.booleans()) and kind in ("key", "s", "n"):
        mirrored = {"eq": "eq", "ne": "ne", "gt": "lt", "ge": "le", "lt": "gt", "le": "ge"}
        # '@p0 lt RowKey' means RowKey gt @p0 (a literal on the left works on Azure)
        text = f"@p0 {mirrored[op]} {prop}"
    else:
        text = f"{prop} {op} @p0"
    return Filter(text, {"p0": value}, total)


def filters(max_leaves: int = 5) -> st.SearchStrategy[Filter]:
    """Comparisons combined with and/or/not (``not`` only over total subexpressions)."""

    def extend(children: st.SearchStrategy[Filter]) -> st.SearchStrategy[Filter]:
        @st.composite
        def combined(draw: st.DrawFn) -> Filter:
            left = draw(children)
            if draw(st.integers(0, 3)) == 0:
                if left.total:
                    return Filter(f"not ({left.text})", left.params, True, left.comparisons)
                return left
            right = _renumber(draw(children), len(left.params))
            op = draw(st.sampled_from(["and", "or"]))
            return Filter(
                f"({left.text}) {op} ({right.text})",
                {**left.params, **right.params},
                left.total and right.total,
                left.comparisons + right.comparisons,
            )

        return combined()

    return st.recursive(comparisons(), extend, max_leaves=max_leaves)


# --------------------------------------------------------------------------- the machine

ETAG_KINDS = ["*", "current", "stale", "bogus"]
BOGUS_ETAG = "W/\"datetime'2001-02-03T04%3A05%3A06.0000000Z'\""
Key = tuple[str, str]


@dataclass(frozen=True)
class KeyChoice:
    """A key from the pools, or (``existing``) one of the entities known to exist, so that
    reads and conditional writes hit something often enough."""

    pk: str
    rk: str
    existing: bool
    index: int


KEYS = st.builds(
    KeyChoice,
    st.sampled_from(PARTITIONS),
    st.sampled_from(ROWS),
    st.booleans(),
    st.integers(0, len(PARTITIONS) * len(ROWS)),
)


@dataclass
class Side:
    """What the machine knows about one target: current and superseded ETags per entity."""

    etags: dict[Key, str] = field(default_factory=dict)
    stale: dict[Key, list[str]] = field(default_factory=dict)

    def wrote(self, key: Key, etag: str | None) -> None:
        assert etag, f"a successful write of {key} returned no ETag"
        self.forget(key)
        self.etags[key] = etag

    def forget(self, key: Key) -> None:
        old = self.etags.pop(key, None)
        if old is not None:
            self.stale.setdefault(key, []).append(old)

    def etag_for(self, key: Key, kind: str) -> str:
        if kind == "*":
            return "*"
        if kind == "current" and key in self.etags:
            return self.etags[key]
        if kind in ("current", "stale") and self.stale.get(key):
            return self.stale[key][-1]
        return BOGUS_ETAG


@dataclass(frozen=True)
class Op:
    """One batch operation, target-independent (its ETag is resolved per target)."""

    kind: str  # create | upsert | update | delete
    rk: str
    props: dict[str, Any] = field(default_factory=dict)
    mode: azt.UpdateMode | None = None
    etag_kind: str = "*"


def _no_js_line_separators(props: dict[str, Any]) -> dict[str, Any]:
    """Azurite 3.35 fails a transaction whose JSON carries a raw U+2028 or U+2029 (JavaScript
    line terminators; the client sends non-ASCII unescaped) with ``400 InvalidInput``,
    though the same entity is fine outside a transaction and the JSON is valid."""
    return {
        k: v.replace("\u2028", "\u2027").replace("\u2029", "\u2027") if isinstance(v, str) else v
        for k, v in props.items()
    }


batch_ops = st.builds(
    lambda kind, rk, props, mode, etag_kind: Op(
        kind,
        rk,
        props if kind != "delete" else {},
        mode if kind in ("upsert", "update") else None,
        etag_kind if kind in ("update", "delete") else "*",
    ),
    st.sampled_from(["create", "upsert", "update", "delete"]),
    st.sampled_from(ROWS),
    property_sets().map(_no_js_line_separators),
    st.sampled_from(list(azt.UpdateMode)),
    st.sampled_from(ETAG_KINDS),
)


class DifferentialMachine(RuleBasedStateMachine):
    """Every rule runs one command on both targets and compares the outcomes."""

    targets: Targets  # set by the test before the machine runs

    def __init__(self) -> None:
        super().__init__()
        base = "diff" + uuid.uuid4().hex[:12]
        self.table = base + "main"
        self.extra = [f"{base}x{i}" for i in range(2)]
        self.sides = {name: Side() for name in Targets.NAMES}
        self.wire_format = azt.WireFormat.JSON_MINIMAL

    # -- plumbing ---------------------------------------------------------------------------

    def both(
        self, label: str, make: Callable[[str, azt.TableServiceClient], Awaitable[Any]]
    ) -> dict[str, tuple[Outcome | None, Any]]:
        """Run ``make(target, service)`` on each target; fail unless the outcome classes
        agree. Returns (error outcome or None, result) per target."""
        got = {
            name: self.targets.call(name, functools.partial(make, name)) for name in Targets.NAMES
        }
        errors = {name: err for name, (err, _) in got.items()}
        assert errors["stub"] == errors["azurite"], (
            f"{label}: outcomes differ\n  stub:    {errors['stub']}\n  azurite: {errors['azurite']}"
        )
        return got

    def agree(self, label: str, values: dict[str, Any]) -> None:
        assert values["stub"] == values["azurite"], (
            f"{label}: results differ\n  stub:    {values['stub']!r}\n"
            f"  azurite: {values['azurite']!r}"
        )

    def pick(self, choice: KeyChoice) -> Key:
        known = sorted(self.sides["stub"].etags)
        if choice.existing and known:
            return known[choice.index % len(known)]
        return choice.pk, choice.rk

    def table_client(self, svc: azt.TableServiceClient, name: str | None = None) -> azt.TableClient:
        return svc.get_table_client(name or self.table)

    def check_etags(self, target: str, entities: list[azt.TableEntity], label: str) -> None:
        """Each entity read from ``target`` carries the ETag its last write returned."""
        side = self.sides[target]
        for e in entities:
            key = (e.get("PartitionKey"), e.get("RowKey"))
            if key in side.etags:
                assert e.metadata.etag == side.etags[key], (
                    f"{label} on {target}: {key} reads ETag {e.metadata.etag!r}, its last "
                    f"write returned {side.etags[key]!r}"
                )

    # -- setup and teardown -----------------------------------------------------------------

    @initialize(
        seed=st.lists(
            st.tuples(st.sampled_from(PARTITIONS), st.sampled_from(ROWS), property_sets()),
            max_size=10,
            unique_by=lambda t: (t[0], t[1]),
        ),
        wire_format=st.sampled_from(JSON_FORMATS),
    )
    def create_main_table(
        self, seed: list[tuple[str, str, dict[str, Any]]], wire_format: azt.WireFormat
    ) -> None:
        """Choose the payload format of this run, create the table and fill it with a few
        entities, so that queries have something to find."""
        self.wire_format = wire_format
        got = self.both("create_table", lambda _t, svc: svc.create_table(self.table))
        assert got["stub"][0] is None, f"could not create the table: {got['stub'][0]}"
        for pk, rk, props in seed:
            entity = {"PartitionKey": pk, "RowKey": rk, **props}
            written = self.both(f"seed {entity}", functools.partial(self._upsert, entity))
            self._record_write((pk, rk), written)

    def _upsert(
        self, entity: dict[str, Any], _target: str, svc: azt.TableServiceClient
    ) -> Awaitable[azt.WriteResult]:
        return self.table_client(svc).upsert_entity(entity)

    def teardown(self) -> None:
        for name in Targets.NAMES:
            for table in [self.table, *self.extra]:
                self.targets.call(name, functools.partial(_drop_table, table))

    # -- entity writes ----------------------------------------------------------------------

    def _record_write(self, key: Key, got: dict[str, tuple[Outcome | None, Any]]) -> None:
        """Remember the ETag each target's successful write returned; the HTTP statuses
        (201 or 204) must agree."""
        if got["stub"][0] is None:
            self.agree(f"write {key} status", {n: r.status for n, (_, r) in got.items()})
        for name, (err, result) in got.items():
            if err is None:
                self.sides[name].wrote(key, result.etag)

    @rule(
        key=KEYS,
        props=property_sets(),
        echo=st.booleans(),
    )
    def insert(self, key: KeyChoice, props: dict[str, Any], echo: bool) -> None:
        pk, rk = self.pick(key)
        entity = {"PartitionKey": pk, "RowKey": rk, **props}
        got = self.both(
            f"insert {entity}",
            lambda _t, svc: self.table_client(svc).insert_entity(entity, return_content=echo),
        )
        self._record_write((pk, rk), got)
        if echo and got["stub"][0] is None:
            echoed = {n: got[n][1].entity for n in Targets.NAMES}
            for name, e in echoed.items():
                assert e is not None, f"insert with return_content: {name} echoed nothing"
                assert e.metadata.etag == got[name][1].etag, (
                    f"{name}: echoed ETag differs from the ETag header"
                )
            self.agree(f"insert echo {entity}", {n: typed_props(e) for n, e in echoed.items()})

    @rule(
        key=KEYS,
        props=property_sets(),
        mode=st.sampled_from(list(azt.UpdateMode)),
    )
    def upsert(self, key: KeyChoice, props: dict[str, Any], mode: azt.UpdateMode) -> None:
        pk, rk = self.pick(key)
        entity = {"PartitionKey": pk, "RowKey": rk, **props}
        got = self.both(
            f"upsert {mode.value} {entity}",
            lambda _t, svc: self.table_client(svc).upsert_entity(entity, mode),
        )
        self._record_write((pk, rk), got)

    @rule(
        key=KEYS,
        props=property_sets(),
        mode=st.sampled_from(list(azt.UpdateMode)),
        etag_kind=st.sampled_from(ETAG_KINDS),
    )
    def update(
        self, key: KeyChoice, props: dict[str, Any], mode: azt.UpdateMode, etag_kind: str
    ) -> None:
        pk, rk = where = self.pick(key)
        entity = {"PartitionKey": pk, "RowKey": rk, **props}
        got = self.both(
            f"update {mode.value} etag={etag_kind} {entity}",
            lambda t, svc: self.table_client(svc).update_entity(
                entity, mode, etag=self.sides[t].etag_for(where, etag_kind)
            ),
        )
        self._expect_current_accepted(where, etag_kind, got, "update")
        self._record_write(where, got)

    def _expect_current_accepted(
        self, key: Key, etag_kind: str, got: dict[str, tuple[Outcome | None, Any]], what: str
    ) -> None:
        if etag_kind != "current":
            return
        for name, (err, _) in got.items():
            if key in self.sides[name].etags:
                assert err is None, (
                    f"{what} {key} on {name} with the ETag its last write returned "
                    f"({self.sides[name].etags[key]!r}) failed: {err}"
                )

    @rule(
        key=KEYS,
        etag_kind=st.sampled_from(ETAG_KINDS),
    )
    def delete(self, key: KeyChoice, etag_kind: str) -> None:
        pk, rk = where = self.pick(key)
        got = self.both(
            f"delete etag={etag_kind} {where}",
            lambda t, svc: self.table_client(svc).delete_entity(
                pk, rk, etag=self.sides[t].etag_for(where, etag_kind)
            ),
        )
        self._expect_current_accepted(where, etag_kind, got, "delete")
        if got["stub"][0] is None:
            self.agree(f"delete {where} status", {n: r.status for n, (_, r) in got.items()})
        for name, (err, _) in got.items():
            if err is None:
                self.sides[name].forget(where)

    # -- reads ------------------------------------------------------------------------------

    @rule(
        key=KEYS,
        select=st.none() | st.lists(st.sampled_from(SELECTABLE), min_size=1, unique=True),
    )
    def get(self, key: KeyChoice, select: list[str] | None) -> None:
        pk, rk = self.pick(key)
        got = self.both(
            f"get {(pk, rk)} select={select}",
            lambda _t, svc: self.table_client(svc).get_entity(pk, rk, select=select),
        )
        if got["stub"][0] is not None:
            return
        for name, (_, e) in got.items():
            self.check_etags(name, [e] if select is None else [], "get")
            if select is None:
                assert e.metadata.etag is not None, f"get on {name}: no ETag"
        self.agree(
            f"get {(pk, rk)} select={select}",
            {n: typed_props(r, drop_null=select is not None) for n, (_, r) in got.items()},
        )

    @rule(
        where=st.none() | filters(),
        select=st.none() | st.lists(st.sampled_from(SELECTABLE), min_size=1, unique=True),
        per_page=st.sampled_from([None, 1, 2, 3, 7]),
        resume=st.booleans(),
    )
    def query(
        self, where: Filter | None, select: list[str] | None, per_page: int | None, resume: bool
    ) -> None:
        """A query, all pages concatenated (page boundaries and tokens differ by design).
        ``resume``: read the first page, then resume from its continuation token's string
        form in a new query, as an application that saved its place would."""
        text = where.text if where else None
        params = where.params if where else None
        label = f"query {text!r} {params} select={select} per_page={per_page} resume={resume}"

        async def run(target: str, svc: azt.TableServiceClient) -> list[azt.TableEntity]:
            def pager(token: str | None = None) -> azt.AsyncPager[azt.TableEntity]:
                return self.table_client(svc).query_entities(
                    text,
                    parameters=params,
                    select=select,
                    results_per_page=per_page,
                    continuation=token,
                )

            if not resume:
                return await pager().to_list()
            first = await pager().first_page()
            if per_page is not None:
                assert len(first) <= per_page, f"{label}: {target} sent {len(first)} rows"
            if first.continuation is None:
                return first.items
            return first.items + await pager(str(first.continuation)).to_list()

        got = self.both(label, run)
        if got["stub"][0] is not None:
            return
        if select is None:
            for name, (_, rows) in got.items():
                self.check_etags(name, rows, label)
        self.agree(
            label,
            {
                n: [typed_props(r, drop_null=select is not None) for r in rows]
                for n, (_, rows) in got.items()
            },
        )

    # -- transactions -----------------------------------------------------------------------

    @rule(
        key=KEYS,
        ops=st.lists(batch_ops, min_size=1, max_size=5, unique_by=lambda op: op.rk),
    )
    def transaction(self, key: KeyChoice, ops: list[Op]) -> None:
        pk = self.pick(key)[0]

        def build(target: str) -> azt.TableBatch:
            batch = azt.TableBatch(self.table)
            side = self.sides[target]
            for op in ops:
                entity = {"PartitionKey": pk, "RowKey": op.rk, **op.props}
                if op.kind == "create":
                    batch.create(entity)
                elif op.kind == "upsert":
                    assert op.mode is not None
                    batch.upsert(entity, op.mode)
                elif op.kind == "update":
                    assert op.mode is not None
                    batch.update(entity, op.mode, etag=side.etag_for((pk, op.rk), op.etag_kind))
                else:
                    batch.delete(pk, op.rk, etag=side.etag_for((pk, op.rk), op.etag_kind))
            return batch

        label = f"transaction {pk!r} {ops}"
        got = self.both(label, lambda t, svc: self.table_client(svc).submit_transaction(build(t)))
        if got["stub"][0] is not None:
            return
        self.agree(label + " statuses", {n: [r.status for r in res] for n, (_, res) in got.items()})
        for name, (_, results) in got.items():
            assert len(results) == len(ops), f"{label}: {name} answered {len(results)} parts"
            for op, result in zip(ops, results, strict=True):
                if op.kind == "delete":
                    self.sides[name].forget((pk, op.rk))
                else:
                    self.sides[name].wrote((pk, op.rk), result.etag)

    # -- tables -----------------------------------------------------------------------------

    @rule(
        i=st.integers(0, 1),
        action=st.sampled_from(
            [
                *("create", "delete", "get", "query", "list"),
                *("upsert", "update", "remove", "batch", "recase"),
            ]
        ),
        rk=st.sampled_from(ROWS),
        per_page=st.sampled_from([None, 1, 2]),
    )
    def tables(self, i: int, action: str, rk: str, per_page: int | None) -> None:
        """Create or delete a second table, write to or read it while it exists or is
        missing (TableNotFound vs ResourceNotFound), or list this machine's tables."""
        name = self.extra[i]
        if action == "list":
            prefix = self.table[:16]
            got = self.both(
                "query_tables",
                lambda _t, svc: svc.query_tables(
                    "TableName ge @lo and TableName lt @hi",
                    parameters={"lo": prefix, "hi": prefix + "~"},
                    results_per_page=per_page,
                ).to_list(),
            )
            self.agree("query_tables", {n: r for n, (_, r) in got.items()})
        elif action == "create":
            self.both(f"create_table {name}", lambda _t, svc: svc.create_table(name))
        elif action == "recase":
            # Table names are case-insensitive (PROTOCOL.md 5.5): another casing of the
            # (existing) main table is taken. Entity operations through another casing
            # are left out: Azurite 3.35 answers them 404 TableNotFound (its create and
            # delete are case-insensitive, its entity lookups are not).
            other = self.table.upper()
            self.both(f"create_table {other}", lambda _t, svc: svc.create_table(other))
        elif action == "delete":
            self.both(f"delete_table {name}", lambda _t, svc: svc.delete_table(name))
        elif action == "get":
            self.both(
                f"get on {name}", lambda _t, svc: self.table_client(svc, name).get_entity("p", rk)
            )
        elif action in ("upsert", "update"):
            entity = {"PartitionKey": "p", "RowKey": rk, "n": 1}
            self.both(
                f"{action} on {name}",
                lambda _t, svc: (
                    self.table_client(svc, name).upsert_entity(entity)
                    if action == "upsert"
                    else self.table_client(svc, name).update_entity(entity)
                ),
            )
        elif action == "remove":
            self.both(
                f"delete on {name}",
                lambda _t, svc: self.table_client(svc, name).delete_entity("p", rk),
            )
        elif action == "batch":
            batch = azt.TableBatch(name)
            batch.upsert({"PartitionKey": "p", "RowKey": rk + "1", "n": 2})
            batch.create({"PartitionKey": "p", "RowKey": rk + "2", "n": 3})
            self.both(
                f"transaction on {name}",
                lambda _t, svc: self.table_client(svc, name).submit_transaction(batch),
            )
        else:
            got = self.both(
                f"query on {name}",
                lambda _t, svc: (
                    self.table_client(svc, name)
                    .query_entities("RowKey ge @rk", parameters={"rk": rk})
                    .to_list()
                ),
            )
            if got["stub"][0] is None:
                self.agree(
                    f"query on {name}",
                    {n: [typed_props(e) for e in r] for n, (_, r) in got.items()},
                )

    @invariant()
    def same_entities_known(self) -> None:
        """Both targets agree on which entities exist (every write outcome was compared)."""
        assert set(self.sides["stub"].etags) == set(self.sides["azurite"].etags)


async def _drop_table(table: str, svc: azt.TableServiceClient) -> bool:
    return await svc.delete_table_if_exists(table)


def test_stub_agrees_with_azurite() -> None:
    """Random command sequences give the same outcomes on the stub and on Azurite."""
    conn = azurite_connection_string()
    if conn is None:
        pytest.skip(
            "differential test: set AZT_DIFF_AZURITE_CONNECTION_STRING to an Azurite table "
            "endpoint (scripts/test-azurite.sh does, via AZT_TEST_CONNECTION_STRING)"
        )
    examples = int(os.environ.get("AZT_DIFF_EXAMPLES", "40"))
    with Targets(conn) as targets:
        DifferentialMachine.targets = targets
        run_state_machine_as_test(
            DifferentialMachine,
            settings=settings(max_examples=examples, stateful_step_count=40, deadline=None),
        )
