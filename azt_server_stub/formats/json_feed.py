"""Query pages as JSON text written directly: the hot path of ``EntityWriter.feed``.

:func:`entity_texts` writes each entity of a page as the text ``json.dumps`` gives for
the dict :meth:`~azt_server_stub.formats.json.EntityWriter.entity` builds (minimal or no
metadata, no ``$select``), without building the dict: names are encoded once, values by
their EDM type, the Timestamp and ETag once per distinct Timestamp. An entity it cannot
write that way (a property name that is not an identifier or is a system name, a value
whose Python type is not its EDM type's) is written by the caller's ``fallback``, the
dict path, so every entity reads exactly as before.

Example::

    >>> from azt_server_stub.model import Edm, Entity
    >>> entity_texts([Entity("p", "r", 0, {"N": (Edm.INT64, 5)})], meta=False, fallback=str)
    ['{"PartitionKey":"p","RowKey":"r","Timestamp":"0001-01-01T00:00:00.0000000Z","N":"5"}']
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring_ascii

from ..model import SECONDS_TEXT, Edm, EdmName, Entity, seconds_text

__all__ = ["entity_etag", "entity_texts"]

_STRING, _INT32, _INT64, _DOUBLE = Edm.STRING, Edm.INT32, Edm.INT64, Edm.DOUBLE
_BOOLEAN, _DATETIME, _GUID, _BINARY = Edm.BOOLEAN, Edm.DATETIME, Edm.GUID, Edm.BINARY
_SYSTEM = frozenset({"PartitionKey", "RowKey", "Timestamp"})

#: Property name -> what precedes its value: ``,"name":`` for the plain JSON types, and for
#: the annotated ones, by EDM type, ``,"name@odata.type":"Edm.X","name":"`` (minimal
#: metadata) and ``,"name":"`` (none); None for a name this writer leaves to the dict
#: path. Bounded.
_NAMES: dict[str, tuple[str, dict[EdmName, str], dict[EdmName, str]] | None] = {}
_ANNOTATED: tuple[EdmName, ...] = (_INT64, _DOUBLE, _DATETIME, _GUID, _BINARY)


def _name(name: str) -> tuple[str, dict[EdmName, str], dict[EdmName, str]] | None:
    if not isinstance(name, str) or not name.isidentifier() or name in _SYSTEM:
        return None
    key = "," + encode_basestring_ascii(name) + ":"
    annotation = "," + encode_basestring_ascii(name + "@odata.type") + ':"'
    info = (
        key,
        {edm: annotation + edm + '"' + key + '"' for edm in _ANNOTATED},
        dict[EdmName, str].fromkeys(_ANNOTATED, key + '"'),
    )
    if len(_NAMES) < 4096:
        _NAMES[name] = info
    return info


def _timestamp_text(ticks: int) -> str:
    seconds, frac = divmod(ticks, 10_000_000)
    return f"{SECONDS_TEXT.get(seconds) or seconds_text(seconds)}.{frac:07d}Z"


#: Timestamp ticks -> (the ETag of an entity with that Timestamp, the head of its minimal
#: metadata text: ``{"odata.etag":"...","PartitionKey":``). Bounded (emptied when full).
_HEADS: dict[int, tuple[str, str]] = {}
_MAX_HEADS = 1 << 12


def _head(ticks: int) -> tuple[str, str]:
    got = _HEADS.get(ticks)
    if got is None:
        etag = "W/\"datetime'" + _timestamp_text(ticks).replace(":", "%3A") + "'\""
        got = (etag, '{"odata.etag":' + encode_basestring_ascii(etag) + ',"PartitionKey":')
        if len(_HEADS) >= _MAX_HEADS:
            _HEADS.clear()
        _HEADS[ticks] = got
    return got


def entity_etag(ticks: int) -> str:
    """The ETag of an entity whose Timestamp is ``ticks`` (``model.etag_for``'s text),
    remembered with the head :func:`entity_texts` writes for it.

    Example::

        >>> entity_etag(0)
        'W/"datetime\\'0001-01-01T00%3A00%3A00.0000000Z\\'"'
    """
    got = _HEADS.get(ticks)
    return (got if got is not None else _head(ticks))[0]


#: Entity texts written before, by the entity's ``id``, minimal metadata (odd slots) or
#: none (even), DateTimes as the service writes them or with seven fractional digits
#: always (slot bit 2), ``Timestamp`` after ``RowKey`` or last (slot bit 4; the last
#: two: the Cosmos DB Table API's form): everything
#: after the head (the ETag member and the ``"PartitionKey":`` name), so a stored entity
#: is encoded once and a page of entities read before is mostly a join.
#: Entries hold their entity (:data:`_HELD`), so an id is never reused while its text is
#: remembered, and a text serves only the very object it was written from: the backend
#: never changes a stored entity in place (a write stores a new one), so an object's text
#: does not change either. Bounded in entities and in characters (all forgotten at once
#: when full). The durable store hands back the same entity object for a stored version
#: its row cache still holds (``_rowcache``), so its pages reuse texts too; the bounds are
#: what the stub keeps alive beyond that cache.
_TEXTS: tuple[dict[int, str], ...] = tuple({} for _ in range(8))
_HELD: dict[int, Entity] = {}
_MAX_REMEMBERED = 1 << 14
_MAX_REMEMBERED_CHARS = 1 << 24
_remembered_chars = 0


def _remember(e: Entity, slot: int, text: str) -> None:
    global _remembered_chars
    if len(_HELD) >= _MAX_REMEMBERED or _remembered_chars + len(text) > _MAX_REMEMBERED_CHARS:
        forget_texts()
        if len(text) > _MAX_REMEMBERED_CHARS:
            return
    i = id(e)
    _HELD[i] = e
    _TEXTS[slot][i] = text
    _remembered_chars += len(text)


def forget_texts() -> None:
    """Forget every remembered entity text (each is written again when next asked for).

    Example::

        >>> forget_texts()
        >>> len(_HELD)
        0
    """
    global _remembered_chars
    for texts in _TEXTS:
        texts.clear()
    _HELD.clear()
    _remembered_chars = 0


def _entity_body(e: Entity, meta: bool, fixed: bool, timestamp_last: bool) -> str | None:
    """An entity's JSON object text after its head (``"<pk>","RowKey":...}``), or None
    when this writer leaves the entity to the dict path (``fixed``: DateTimes with seven
    fractional digits; ``timestamp_last``: ``Timestamp`` after the properties)."""
    pk, rk = e.pk, e.rk
    if type(pk) is not str or type(rk) is not str:
        return None
    encode = encode_basestring_ascii
    names = _NAMES
    pieces = [encode(pk), ',"RowKey":', encode(rk)]
    add = pieces.append
    if not timestamp_last:
        add(',"Timestamp":"')
        add(_timestamp_text(e.timestamp))
        add('"')
    for name, typed in e.props.items():
        info = names.get(name) or _name(name)
        if info is None or type(typed) is not tuple or len(typed) != 2:
            return None
        edm, value = typed
        t = type(value)
        if edm is _STRING and t is str:
            add(info[0])
            add(encode(value))
            continue
        if edm is _INT32 and t is int:
            add(info[0])
            add(str(value))
            continue
        if edm is _BOOLEAN and t is bool:
            add(info[0])
            add("true" if value else "false")
            continue
        if edm is _DOUBLE and t is float:
            if value - value == 0.0:  # finite
                add(info[0])
                add(float.__repr__(value))
                continue
            text = "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
        elif edm is _INT64 and t is int:
            text = str(value)
        elif edm is _DATETIME and t is int:
            seconds, frac = divmod(value, 10_000_000)
            head_text = SECONDS_TEXT.get(seconds) or seconds_text(seconds)
            if fixed:
                text = f"{head_text}.{frac:07d}Z"
            else:
                text = f"{head_text}.{frac:07d}".rstrip("0") + "Z" if frac else head_text + "Z"
        elif edm is _GUID and t is uuid.UUID:
            text = str(value)
        elif edm is _BINARY and t is bytes:
            text = base64.b64encode(value).decode("ascii")
        else:
            return None
        add((info[1] if meta else info[2])[edm])
        add(text)
        add('"')
    if timestamp_last:
        add(',"Timestamp":"')
        add(_timestamp_text(e.timestamp))
        add('"')
    add("}")
    return "".join(pieces)


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
    ``key_places``: an entity whose keys were sent among its properties
    (``Entity.keys_at``) is written by ``fallback``, which places them there (Cosmos).

    Example::

        >>> from azt_server_stub.model import Entity
        >>> entity_texts([Entity("p", "r", 0, {"1x": (Edm.INT32, 1)})], meta=True,
        ...              fallback=lambda e: "dict path")
        ['dict path']
    """
    out: list[str] = []
    heads = _HEADS
    held = _HELD
    slot = meta + 2 * fixed + 4 * timestamp_last
    texts = _TEXTS[slot]
    for e in entities:
        if key_places and e.keys_at:
            out.append(fallback(e))
            continue
        i = id(e)
        if held.get(i) is e:
            body = texts.get(i)
            if body is None:
                body = _entity_body(e, meta, fixed, timestamp_last)
                if body is None:
                    out.append(fallback(e))
                    continue
                _remember(e, slot, body)
        else:
            body = _entity_body(e, meta, fixed, timestamp_last)
            if body is None:
                out.append(fallback(e))
                continue
            _remember(e, slot, body)
        if meta:
            ts = e.timestamp
            head = heads.get(ts) or _head(ts)
            out.append(head[1] + body)
        else:
            out.append('{"PartitionKey":' + body)
    return out
