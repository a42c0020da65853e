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

from ..model import SECONDS_TEXT, Edm, Entity, seconds_text

__all__ = ["entity_texts"]

_STRING, _INT32, _INT64, _DOUBLE = Edm.STRING, Edm.INT32, Edm.INT64, Edm.DOUBLE
_BOOLEAN, _DATETIME, _GUID, _BINARY = Edm.BOOLEAN, Edm.DATETIME, Edm.GUID, Edm.BINARY
_SYSTEM = frozenset({"PartitionKey", "RowKey", "Timestamp"})

#: Property name -> what precedes its value: ``,"name":`` for the plain JSON types, and for
#: the annotated ones, by EDM type, ``,"name@odata.type":"Edm.X","name":"`` (minimal
#: metadata) and ``,"name":"`` (none); None for a name this writer leaves to the dict
#: path. Bounded.
_NAMES: dict[str, tuple[str, dict[Edm, str], dict[Edm, str]] | None] = {}
_ANNOTATED = (_INT64, _DOUBLE, _DATETIME, _GUID, _BINARY)


def _name(name: str) -> tuple[str, dict[Edm, str], dict[Edm, str]] | None:
    if not isinstance(name, str) or not name.isidentifier() or name in _SYSTEM:
        return None
    key = "," + encode_basestring_ascii(name) + ":"
    annotation = "," + encode_basestring_ascii(name + "@odata.type") + ':"'
    info = (
        key,
        {edm: annotation + edm.value + '"' + key + '"' for edm in _ANNOTATED},
        dict.fromkeys(_ANNOTATED, key + '"'),
    )
    if len(_NAMES) < 4096:
        _NAMES[name] = info
    return info


def _timestamp_text(ticks: int) -> str:
    seconds, frac = divmod(ticks, 10_000_000)
    return f"{SECONDS_TEXT.get(seconds) or seconds_text(seconds)}.{frac:07d}Z"


def entity_texts(
    entities: Sequence[Entity], *, meta: bool, fallback: Callable[[Entity], str]
) -> list[str]:
    """Each entity's JSON object text, minimal metadata (``meta``) or none.

    Example::

        >>> from azt_server_stub.model import Entity
        >>> entity_texts([Entity("p", "r", 0, {"1x": (Edm.INT32, 1)})], meta=True,
        ...              fallback=lambda e: "dict path")
        ['dict path']
    """
    out: list[str] = []
    tails: dict[int, str] = {}  # Timestamp -> ',"Timestamp":"..."'
    heads: dict[int, str] = {}  # Timestamp -> '{"odata.etag":"...","PartitionKey":'
    names = _NAMES
    encode = encode_basestring_ascii
    for e in entities:
        pk, rk = e.pk, e.rk
        if type(pk) is not str or type(rk) is not str:
            out.append(fallback(e))
            continue
        tail = tails.get(e.timestamp)
        if tail is None:
            ts = _timestamp_text(e.timestamp)
            tail = tails[e.timestamp] = ',"Timestamp":"' + ts + '"'
            etag = "W/\"datetime'" + ts.replace(":", "%3A") + "'\""
            heads[e.timestamp] = '{"odata.etag":' + encode(etag) + ',"PartitionKey":'
        head = heads[e.timestamp] if meta else '{"PartitionKey":'
        pieces = [head, encode(pk), ',"RowKey":', encode(rk), tail]
        add = pieces.append
        for name, typed in e.props.items():
            info = names.get(name) or _name(name)
            if info is None or type(typed) is not tuple or len(typed) != 2:
                break
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
                text = f"{head_text}.{frac:07d}".rstrip("0") + "Z" if frac else head_text + "Z"
            elif edm is _GUID and t is uuid.UUID:
                text = str(value)
            elif edm is _BINARY and t is bytes:
                text = base64.b64encode(value).decode("ascii")
            else:
                break
            add((info[1] if meta else info[2])[edm])
            add(text)
            add('"')
        else:
            add("}")
            out.append("".join(pieces))
            continue
        out.append(fallback(e))
    return out
