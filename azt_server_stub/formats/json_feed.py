"""Entity JSON bodies written by msgspec: the hot path of query pages and point reads.

:class:`EntityLayout` builds, for each entity, the dict ``EntityWriter.entity`` builds (the
same members, in the same order, at every metadata level, in either flavour's form, with
or without ``$select``), except that the values msgspec writes exactly as ``json.dumps``
writes their text are left as they are: Guids (``uuid.UUID``: msgspec writes the canonical
text, ``str(uuid)``), Binary values (``bytes``: standard base64 with padding, as
``base64.b64encode``) and Doubles whose ``repr`` has no exponent (``1e-4 <= |x| < 1e16``
and zeros: msgspec writes the same shortest digits as ``repr``, but ``1e16`` where
``repr`` writes ``1e+16``; the others are written as ``repr``'s text, verbatim). One
``msgspec`` call then writes a whole page, in C.

msgspec writes the characters from U+007F up as themselves (UTF-8), where ``json.dumps``
(``ensure_ascii``) writes ``\\uXXXX`` escapes; every other character it writes exactly as
``json.dumps`` does (``tests/stub/test_json_render.py`` checks every ASCII one and the
escapes of every other). So a body that is ASCII with no byte 0x7F is ``json.dumps``'s
text as it is, and any other becomes it once those characters (found only inside strings)
are escaped. What msgspec cannot write (a lone surrogate, an integer beyond 64 bits), and
an entity whose values do not have their EDM type's Python type, are written by the
caller's ``fallback`` (the ``json.dumps`` reference).

Entity texts are remembered (:func:`entity_values`): a page of entities read before is
mostly copied. Only entities asked for a second time are remembered, so a scan of a table
larger than the memory of texts does not fill it with texts it never reads again.

Example::

    >>> from azt_server_stub.model import Edm, Entity
    >>> entity_texts([Entity("p", "r", 0, {"N": (Edm.INT64, 5)})], meta=False, fallback=str)
    ['{"PartitionKey":"p","RowKey":"r","Timestamp":"0001-01-01T00:00:00.0000000Z","N":"5"}']
"""

from __future__ import annotations

import datetime as _dt
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from json.encoder import encode_basestring_ascii
from typing import Any

import msgspec

from ..model import Edm, Entity, TypedValue, placed_items

__all__ = [
    "EntityLayout",
    "datetime_text",
    "entity_etag",
    "entity_path",
    "entity_texts",
    "entity_values",
    "forget_texts",
    "key_literal",
    "layout_for",
    "write_entity",
    "write_feed",
]

_STRING, _INT32, _INT64, _DOUBLE = Edm.STRING, Edm.INT32, Edm.INT64, Edm.DOUBLE
_BOOLEAN, _DATETIME, _GUID, _BINARY = Edm.BOOLEAN, Edm.DATETIME, Edm.GUID, Edm.BINARY
_UUID = uuid.UUID
_Raw = msgspec.Raw
_encode = msgspec.json.Encoder().encode

# --- DateTime text ------------------------------------------------------------------------

#: Days since 0001-01-01 -> ``YYYY-MM-DDT`` (bounded: emptied when full).
_DAYS: dict[int, str] = {}
#: Minutes of the day -> ``HH:MM:``; seconds -> ``SS``.
_HOUR_MINUTES: tuple[str, ...] = tuple(f"{h:02d}:{m:02d}:" for h in range(24) for m in range(60))
_SECONDS: tuple[str, ...] = tuple(f"{s:02d}" for s in range(60))


def _day(days: int) -> str:
    date = _dt.date.fromordinal(days + 1)
    text = f"{date.year:04d}-{date.month:02d}-{date.day:02d}T"
    if len(_DAYS) >= 1 << 14:
        _DAYS.clear()
    _DAYS[days] = text
    return text


def datetime_text(ticks: int, fixed: bool = False) -> str:
    """The text of a DateTime of ``ticks`` (100 ns since 0001-01-01T00:00:00Z): the
    service's form (trailing zeros of the fraction trimmed, no fraction when zero), or with
    exactly seven fractional digits (``fixed``: the Cosmos DB Table API's form).

    Example::

        >>> datetime_text(15_000_000), datetime_text(15_000_000, fixed=True)
        ('0001-01-01T00:00:01.5Z', '0001-01-01T00:00:01.5000000Z')
        >>> datetime_text(864_000_000_000)
        '0001-01-02T00:00:00Z'
    """
    seconds, frac = divmod(ticks, 10_000_000)
    days, rem = divmod(seconds, 86_400)
    minutes, secs = divmod(rem, 60)
    day = _DAYS.get(days) or _day(days)
    if fixed:
        return f"{day}{_HOUR_MINUTES[minutes]}{_SECONDS[secs]}.{str(10_000_000 + frac)[1:]}Z"
    if frac:
        fraction = str(10_000_000 + frac)[1:].rstrip("0")
        return f"{day}{_HOUR_MINUTES[minutes]}{_SECONDS[secs]}.{fraction}Z"
    return f"{day}{_HOUR_MINUTES[minutes]}{_SECONDS[secs]}Z"


#: Timestamp ticks -> (the entity's ETag, its Timestamp text). Bounded (emptied when full).
_HEADS: dict[int, tuple[str, str]] = {}
_MAX_HEADS = 1 << 12


def _head(ticks: int) -> tuple[str, str]:
    text = datetime_text(ticks, True)
    got = ("W/\"datetime'" + text.replace(":", "%3A") + "'\"", text)
    if len(_HEADS) >= _MAX_HEADS:
        _HEADS.clear()
    _HEADS[ticks] = got
    return got


def entity_etag(ticks: int) -> str:
    """The ETag of an entity whose Timestamp is ``ticks`` (``model.etag_for``'s text),
    remembered with the Timestamp's text for the entity bodies.

    Example::

        >>> entity_etag(0)
        'W/"datetime\\'0001-01-01T00%3A00%3A00.0000000Z\\'"'
    """
    got = _HEADS.get(ticks)
    return (got if got is not None else _head(ticks))[0]


def key_literal(value: str) -> str:
    """An OData key literal: quotes doubled, otherwise verbatim (Azure's ``odata.id`` form).

    Example::

        >>> key_literal("O'Brien")
        "'O''Brien'"
    """
    return "'" + value.replace("'", "''") + "'"


def entity_path(table: str, pk: str, rk: str) -> str:
    """``table(PartitionKey='..',RowKey='..')`` as Azure writes it in ids and links.

    Example::

        >>> entity_path("t", "a", "b")
        "t(PartitionKey='a',RowKey='b')"
    """
    return f"{table}(PartitionKey={key_literal(pk)},RowKey={key_literal(rk)})"


# --- one entity's members -----------------------------------------------------------------

#: Property name -> its annotation member's name (``name@odata.type``). Bounded.
_ANNOTATIONS: dict[str, str] = {}


def _annotation(name: str) -> str:
    key = name + "@odata.type"
    if len(_ANNOTATIONS) < 4096:
        _ANNOTATIONS[name] = key
    return key


class EntityLayout:
    """How a writer lays out each entity: its metadata level (``meta``: minimal or full;
    ``full``), its flavour's form (``fixed``: DateTimes with seven fractional digits;
    ``cosmos_order``: ``Timestamp`` after the properties and the Cosmos order of the full
    metadata members; ``key_places``: the keys where the client sent them), its
    ``projection`` (the ``$select`` names in the order written, or None) and, for full
    metadata, the table's ``type_name``, ``endpoint`` and ``table``.

    Example::

        >>> from azt_server_stub.model import Edm, Entity
        >>> layout = EntityLayout(meta=True)
        >>> layout.members(Entity("p", "r", 0, {"N": (Edm.INT64, 5)}))["N@odata.type"]
        'Edm.Int64'
    """

    __slots__ = (
        "cosmos_order",
        "endpoint",
        "fixed",
        "full",
        "key_places",
        "meta",
        "projection",
        "slot",
        "table",
        "type_name",
    )

    def __init__(
        self,
        *,
        meta: bool,
        full: bool = False,
        fixed: bool = False,
        cosmos_order: bool = False,
        key_places: bool = False,
        projection: Sequence[str] | None = None,
        type_name: str = "",
        endpoint: str = "",
        table: str = "",
    ) -> None:
        self.meta = meta or full
        self.full = full
        self.fixed = fixed
        self.cosmos_order = cosmos_order
        self.key_places = key_places
        self.projection = list(projection) if projection is not None else None
        self.type_name = type_name
        self.endpoint = endpoint
        self.table = table
        #: where this layout's entity texts are remembered (None: not remembered): minimal
        #: and no metadata without ``$select`` (what does not depend on the request's
        #: endpoint or table)
        self.slot: int | None = None
        if projection is None and not full:
            self.slot = meta + 2 * fixed + 4 * cosmos_order + 8 * key_places

    def members(self, e: Entity) -> dict[str, Any] | None:
        """The entity's members for msgspec (see the module's docstring), or None when a
        value's Python type is not its EDM type's (the caller's ``fallback`` writes it).

        Example::

            >>> from azt_server_stub.model import Edm, Entity
            >>> plain = EntityLayout(meta=False)
            >>> plain.members(Entity("p", "r", 0, {"N": (Edm.INT64, 5)}))["N"]
            '5'
            >>> plain.members(Entity("p", "r", 0, {"N": (Edm.INT64, "five")})) is None
            True
        """
        ts = e.timestamp
        etag, ts_text = _HEADS.get(ts) or _head(ts)
        full = self.full
        cosmos = self.cosmos_order
        d: dict[str, Any]
        if full:
            path = entity_path(self.table, e.pk, e.rk)
            d = {"odata.type": self.type_name, "odata.id": self.endpoint + "/" + path}
            if cosmos:
                d["odata.editLink"] = path
                d["odata.etag"] = etag
            else:
                d["odata.etag"] = etag
                d["odata.editLink"] = path
        elif self.meta:
            d = {"odata.etag": etag}
        else:
            d = {}
        projection = self.projection
        items: Iterable[tuple[str, TypedValue | None]]
        if projection is not None:
            get = e.get
            items = [(name, get(name)) for name in projection]
        elif e.keys_at and self.key_places:
            items = placed_items(e)  # the keys where the client sent them (Cosmos)
        else:
            d["PartitionKey"] = e.pk
            d["RowKey"] = e.rk
            if not cosmos:
                if full:
                    d["Timestamp@odata.type"] = _DATETIME
                d["Timestamp"] = ts_text
            items = e.props.items()
        if not self._put(d, items, ts_text):
            return None
        if cosmos and projection is None:
            if full:
                d["Timestamp@odata.type"] = _DATETIME
            d["Timestamp"] = ts_text
        return d

    def _put(self, d: dict[str, Any], items: Iterable[tuple[str, Any]], ts_text: str) -> bool:
        """Add the properties ``items`` to ``d`` (False: a value to leave to ``fallback``).

        Dispatched on the value's Python type first (one test finds a string), then on its
        EDM type, which must be the one that Python type stands for."""
        meta = self.meta
        fixed = self.fixed
        annotations = _ANNOTATIONS
        days_text = _DAYS
        try:
            for name, typed in items:
                if typed is None:
                    d[name] = None  # a $select name the entity lacks
                    continue
                edm, value = typed
                t = type(value)
                if t is str:
                    if edm is not _STRING:
                        return False
                    d[name] = value
                    continue
                if t is int:
                    if edm is _INT32:
                        d[name] = value
                        continue
                    if edm is _INT64:
                        text: Any = str(value)
                    elif edm is not _DATETIME:
                        return False
                    elif name == "Timestamp":  # a $select of the system property
                        if not self.full:
                            d[name] = ts_text
                            continue
                        text = ts_text
                    else:  # datetime_text(value, fixed), inline
                        seconds, frac = divmod(value, 10_000_000)
                        days, rem = divmod(seconds, 86_400)
                        minutes, secs = divmod(rem, 60)
                        day = days_text.get(days) or _day(days)
                        if fixed:
                            fraction = str(10_000_000 + frac)[1:]
                            text = f"{day}{_HOUR_MINUTES[minutes]}{_SECONDS[secs]}.{fraction}Z"
                        elif frac:
                            fraction = str(10_000_000 + frac)[1:].rstrip("0")
                            text = f"{day}{_HOUR_MINUTES[minutes]}{_SECONDS[secs]}.{fraction}Z"
                        else:
                            text = f"{day}{_HOUR_MINUTES[minutes]}{_SECONDS[secs]}Z"
                elif t is float:
                    if edm is not _DOUBLE:
                        return False
                    if 1e-4 <= abs(value) < 1e16 or value == 0.0:
                        d[name] = value  # msgspec writes repr's text
                        continue
                    if value - value == 0.0:  # finite, written with an exponent
                        d[name] = _Raw(float.__repr__(value))
                        continue
                    text = "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
                elif t is bool:
                    if edm is not _BOOLEAN:
                        return False
                    d[name] = value
                    continue
                elif t is _UUID:
                    if edm is not _GUID:
                        return False
                    text = value  # msgspec writes str(value)
                elif t is bytes:
                    if edm is not _BINARY:
                        return False
                    text = value  # msgspec writes base64.b64encode(value)
                else:
                    return False
                if meta:
                    d[annotations.get(name) or _annotation(name)] = edm
                d[name] = text
        except (TypeError, ValueError):
            return False  # not a (type, value) pair: the reference decides
        return True


#: The layouts of entity texts without ``$select`` at minimal or no metadata, by slot.
_LAYOUTS: dict[int, EntityLayout] = {}


def layout_for(
    *, meta: bool, fixed: bool = False, cosmos_order: bool = False, key_places: bool = False
) -> EntityLayout:
    """The (shared) layout of minimal (``meta``) or no metadata without ``$select``.

    Example::

        >>> layout_for(meta=True) is layout_for(meta=True)
        True
    """
    slot = meta + 2 * fixed + 4 * cosmos_order + 8 * key_places
    layout = _LAYOUTS.get(slot)
    if layout is None:
        layout = _LAYOUTS[slot] = EntityLayout(
            meta=meta, fixed=fixed, cosmos_order=cosmos_order, key_places=key_places
        )
    return layout


# --- remembered entity texts --------------------------------------------------------------

#: Entity texts written before, by the entity's ``id``, one dict per layout slot (the
#: whole JSON object, as ``msgspec.Raw``). Entries hold their entity (:data:`_HELD`), so
#: an id is never reused while its text is remembered, and a text serves only the very
#: object it was written from: the backend never changes a stored entity in place (a write
#: stores a new one), so an object's text does not change either. Bounded in entities and
#: in bytes (all forgotten at once when full). The durable store hands back the same
#: entity object for a stored version its row cache still holds (``_rowcache``), so its
#: pages reuse texts too.
_TEXTS: tuple[dict[int, msgspec.Raw], ...] = tuple({} for _ in range(16))
_HELD: dict[int, Entity] = {}
_MAX_REMEMBERED = 1 << 14
_MAX_REMEMBERED_BYTES = 1 << 24
_remembered_bytes = 0
#: Ids of the entities written lately and not remembered, in two generations: the newer
#: (``_SEEN[0]``) takes each id until it holds :data:`_MAX_SEEN`, then becomes the older
#: (the older one forgotten). An entity asked for again while its id is in either is
#: remembered: one asked for again within the last ``_MAX_SEEN`` entities written, or
#: sooner (half the memory of texts, so what is remembered fits it). A pass over more
#: entities than the memory holds (a scan) finds none of its ids here the next time,
#: so it writes texts without remembering any (which would only push one another out).
#: Ids hold nothing: an id reused by another object only lets that object's text be
#: remembered one read early.
_SEEN: list[set[int]] = [set(), set()]
_MAX_SEEN = _MAX_REMEMBERED // 2


def forget_texts() -> None:
    """Forget every remembered entity text (each is written again when next asked for).

    Example::

        >>> forget_texts()
        >>> len(_HELD)
        0
    """
    global _remembered_bytes
    for texts in _TEXTS:
        texts.clear()
    _HELD.clear()
    for seen in _SEEN:
        seen.clear()
    _remembered_bytes = 0


#: A run of the characters msgspec writes as themselves and ``json.dumps`` escapes.
_NOT_ASCII = re.compile("[\x7f-\U0010ffff]+")


def _escape_run(match: re.Match[str]) -> str:
    out = []
    for char in match.group():
        code = ord(char)
        if code >= 0x10000:  # a surrogate pair, as json.dumps writes it
            code -= 0x10000
            out.append(f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out)


def _ascii(body: bytes) -> bytes:
    """msgspec's ``body`` as ``json.dumps`` writes it: each character from U+007F up
    (msgspec writes them as UTF-8; they occur only inside strings) as its ``\\uXXXX``
    escape (a surrogate pair beyond U+FFFF), as ``ensure_ascii`` does."""
    if body.isascii() and b"\x7f" not in body:
        return body
    return _NOT_ASCII.sub(_escape_run, body.decode("utf-8")).encode("ascii")


def _remember(e: Entity, layout: EntityLayout, fallback: Callable[[Entity], str]) -> msgspec.Raw:
    """The entity's text in ``layout``, written now and remembered (``fallback``'s text,
    for what msgspec cannot write, is not remembered)."""
    global _remembered_bytes
    members = layout.members(e)
    if members is None:
        return _Raw(fallback(e).encode("ascii"))
    try:
        body = _ascii(_encode(members))
    except (TypeError, ValueError, OverflowError):  # a lone surrogate, an int beyond 64 bits
        return _Raw(fallback(e).encode("ascii"))
    size = len(body)
    if len(_HELD) >= _MAX_REMEMBERED or _remembered_bytes + size > _MAX_REMEMBERED_BYTES:
        for texts in _TEXTS:
            texts.clear()
        _HELD.clear()
        _remembered_bytes = 0
    raw = _Raw(body)
    slot = layout.slot
    if slot is not None and size <= _MAX_REMEMBERED_BYTES:
        i = id(e)
        _HELD[i] = e
        _TEXTS[slot][i] = raw
        _remembered_bytes += size
    return raw


def entity_values(entities: Sequence[Entity], layout: EntityLayout) -> list[Any]:
    """Each entity as msgspec writes it in ``layout``: its remembered text (``msgspec.Raw``),
    its members (a dict), or None (a value :meth:`EntityLayout.members` leaves to the
    fallback). Entities asked for before are remembered (the layout's ``slot``).

    Example::

        >>> from azt_server_stub.model import Entity
        >>> forget_texts()  # (ids are remembered: start from none)
        >>> e, layout = Entity("p", "r", 0), layout_for(meta=False)
        >>> entity_values([e], layout)[0]["RowKey"]  # first asked for: its members
        'r'
        >>> entity_values([e], layout)[0] is _REMEMBER  # again: to write and remember
        True
    """
    members = layout.members
    slot = layout.slot
    if slot is None:
        return [members(e) for e in entities]
    out: list[Any] = []
    add = out.append
    held = _HELD
    texts = _TEXTS[slot]
    newer, older = _SEEN
    for e in entities:
        i = id(e)
        if held.get(i) is e:
            raw = texts.get(i)
            if raw is not None:
                add(raw)
                continue
        elif i not in newer and i not in older:
            if len(newer) >= _MAX_SEEN:
                older = newer
                newer = set()
                _SEEN[:] = newer, older
            newer.add(i)
            add(members(e))
            continue
        add(_REMEMBER)  # asked for again: written and remembered by write_feed
    return out


#: The value :func:`entity_values` gives an entity to write and remember.
_REMEMBER: Any = object()


def write_feed(
    entities: Sequence[Entity],
    layout: EntityLayout,
    fallback: Callable[[Entity], str],
    url: str | None = None,
    url_last: bool = False,
) -> bytes:
    """A Query Entities page body: ``{"value":[...]}`` with the feed's ``odata.metadata``
    ``url`` first, or last (``url_last``: the Cosmos DB order), or none (no metadata);
    ``fallback``: an entity's ``json.dumps`` text (ASCII), for what msgspec cannot write
    as ``json.dumps`` does.

    Example::

        >>> from azt_server_stub.model import Entity
        >>> write_feed([Entity("p", "r", 0)], layout_for(meta=False), str)[:39]
        b'{"value":[{"PartitionKey":"p","RowKey":'
    """
    values = entity_values(entities, layout)
    for k, value in enumerate(values):
        if value is None:
            values[k] = _Raw(fallback(entities[k]).encode("ascii"))
        elif value is _REMEMBER:
            values[k] = _remember(entities[k], layout, fallback)
    page: dict[str, Any]
    if url is None:
        page = {"value": values}
    elif url_last:
        page = {"value": values, "odata.metadata": _Raw(encode_basestring_ascii(url))}
    else:
        page = {"odata.metadata": _Raw(encode_basestring_ascii(url)), "value": values}
    try:
        return _ascii(_encode(page))
    except (TypeError, ValueError, OverflowError):
        pass
    # what msgspec cannot write (a lone surrogate, an int beyond 64 bits): the reference
    # texts of the entities not remembered (remembered texts were written already)
    for k, value in enumerate(values):
        if type(value) is not _Raw:
            values[k] = _Raw(fallback(entities[k]).encode("ascii"))
    return _encode(page)


def write_entity(e: Entity, layout: EntityLayout, fallback: Callable[[Entity], str]) -> bytes:
    """One entity's JSON text in ``layout`` (remembered as :func:`write_feed` does).

    Example::

        >>> from azt_server_stub.model import Entity
        >>> write_entity(Entity("p", "r", 0), layout_for(meta=False), str)[:30]
        b'{"PartitionKey":"p","RowKey":"'
    """
    (value,) = entity_values((e,), layout)
    if value is _REMEMBER:
        value = _remember(e, layout, fallback)
    elif value is not None:
        try:
            return _ascii(_encode(value))
        except (TypeError, ValueError, OverflowError):
            value = None
    if value is None:
        return fallback(e).encode("ascii")
    return bytes(value)


def entity_texts(
    entities: Sequence[Entity],
    *,
    meta: bool,
    fallback: Callable[[Entity], str],
    fixed: bool = False,
    timestamp_last: bool = False,
    key_places: bool = False,
) -> list[str]:
    """Each entity's JSON object text, minimal metadata (``meta``) or none; ``fixed``:
    DateTime values with exactly seven fractional digits (the Cosmos DB Table API's form)
    instead of the service's trimmed fraction; ``timestamp_last``: ``Timestamp`` after
    the properties (the Cosmos DB Table API's member order) instead of after ``RowKey``;
    ``key_places``: an entity's keys where they were sent among its properties
    (``Entity.keys_at``, Cosmos). ``fallback``: an entity's ``json.dumps`` text.

    Example::

        >>> from azt_server_stub.model import Entity
        >>> entity_texts([Entity("p", "r", 0, {"x": (Edm.INT32, "1")})], meta=True,
        ...              fallback=lambda e: "the reference")
        ['the reference']
    """
    layout = layout_for(meta=meta, fixed=fixed, cosmos_order=timestamp_last, key_places=key_places)
    return [write_entity(e, layout, fallback).decode("ascii") for e in entities]
