"""A plain change-set part's JSON entity converted and checked in one loop (private).

:func:`plain_entity` is what :func:`~azt_server_stub.formats.json.entity_from_members`
returns, with the verdict of :func:`~azt_server_stub.validation.validate_entity` worked
out in the same loop over the members: True only when that validation would accept the
entity (so the backend may skip it); False leaves validation, and its error, to the
backend. Anything unusual (an annotation other than the common ones, a value the
converter would refuse, a key that is not a string) answers None: the caller then takes
the general path, which decides the answer.

Example::

    >>> plain_entity({"PartitionKey": "p", "RowKey": "r", "N": 1}, None, None)[:3]
    ('p', 'r', {'N': ('Edm.Int32', 1)})
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, cast

from ..errors import StubError
from ..formats.json import _CONVERTERS, _INT64_RE, _KEY, _MEMBERS, _PROPERTY, _member
from ..model import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    MAX_DATETIME_TICKS,
    MIN_DATETIME_TICKS,
    Edm,
    EdmName,
    TypedValue,
    parse_datetime,
)
from ..validation import (
    _KEY_FORBIDDEN,
    _NAME_COSTS,
    MAX_BINARY_BYTES,
    MAX_ENTITY_BYTES,
    MAX_KEY_UNITS,
    MAX_PROPERTIES,
    MAX_STRING_UNITS,
)

_STRING, _INT32, _INT64, _DOUBLE = Edm.STRING, Edm.INT32, Edm.INT64, Edm.DOUBLE
_BOOLEAN, _DATETIME, _GUID, _BINARY = Edm.BOOLEAN, Edm.DATETIME, Edm.GUID, Edm.BINARY


def _value_cost(edm: EdmName, value: Any) -> int:
    """What an annotated value adds to the accounted size beyond its name, or -1 when
    validation would not accept it at once (the checks of ``validation._entity_passes``)."""
    t = type(value)
    if edm is _STRING:
        if t is not str or not value.isascii() or len(value) > MAX_STRING_UNITS:
            return -1
        return 2 * len(value) + 4
    if edm is _INT32:
        return 4 if t is int and INT32_MIN <= value <= INT32_MAX else -1
    if edm is _DOUBLE:
        return 8 if t is float else -1
    if edm is _BOOLEAN:
        return 1 if t is bool else -1
    if edm is _INT64:
        return 8 if t is int and INT64_MIN <= value <= INT64_MAX else -1
    if edm is _DATETIME:
        ok = t is int and MIN_DATETIME_TICKS <= value <= MAX_DATETIME_TICKS
        return 8 if ok else -1
    if edm is _GUID:
        return 16 if t is uuid.UUID else -1
    if edm is _BINARY:
        return len(value) + 4 if t is bytes and len(value) <= MAX_BINARY_BYTES else -1
    return -1


def plain_entity(
    members: dict[str, Any], url_pk: str | None, url_rk: str | None
) -> tuple[str, str, dict[str, TypedValue], bool] | None:
    """``(PartitionKey, RowKey, properties, checked)`` of a decoded JSON entity, or None.

    ``url_pk``/``url_rk`` None: an insert, whose keys are the body's (both strings, not
    annotated otherwise than Edm.String); else the keys of the URL, the body's ignored
    (update, merge). ``checked``: validation would accept the entity as it stands.
    None: something :func:`entity_from_members` would refuse, or unusual.

    The members' names (the body's shape) are planned once (:func:`_plan`): the entities
    of a change set share theirs, and a planned entity is converted without working out
    each member's role again (:func:`_planned_entity`); the others by
    :func:`_general_entity`. Both give the same answer.

    Example::

        >>> plain_entity({"PartitionKey": 1, "RowKey": "r"}, None, None) is None
        True
    """
    names = tuple(members)
    plan = _SHAPES.get(names)
    if plan is None:
        if names in _SHAPES:
            return _general_entity(members, url_pk, url_rk)
        plan = _plan(names)
        if plan is None:
            return _general_entity(members, url_pk, url_rk)
    compiled = _COMPILED.get(names)
    if compiled is None:
        compiled = _COMPILED[names] = _compile(plan, members)
    got = compiled(members, url_pk, url_rk)
    if got is _UNSURE:
        return _planned_entity(members, plan, url_pk, url_rk)
    return cast(_Plain, got)


#: A shape's plan: for each property member in order, (name, the name of its annotation
#: member when the body has one, the name's cost).
_Plan = tuple[tuple[str, str | None, int], ...]

#: Member-name tuples seen before -> their plan; None: a shape left to the general loop (a
#: key with an annotation member). A shape with a name whose cost is not known yet is not
#: remembered (planned again when next seen, once validation knows the name). Bounded.
_SHAPES: dict[tuple[str, ...], _Plan | None] = {}


#: What :func:`_annotated` answers for a null value (the property is left out).
_ABSENT: tuple[TypedValue, int] = ((_STRING, None), 0)  # compared by identity


def _annotated(annotation: Any, raw: Any, t: type) -> tuple[TypedValue, int] | None:
    """One annotated member's typed value and cost (negative: the size or range is to be
    checked by the general rules), :data:`_ABSENT` for a null, or None: the general path.

    The common annotations first (what their converters do, without the calls); the
    others through the converters.
    """
    if annotation == "Edm.Int64":
        if t is str and _INT64_RE.match(raw):
            number = int(raw)
        elif t is int:
            number = raw
        elif raw is None:
            return _ABSENT
        else:
            return None
        return (_INT64, number), (8 if INT64_MIN <= number <= INT64_MAX else -8)
    if annotation == "Edm.Double" and t is float and raw - raw == 0.0:
        return (_DOUBLE, raw), 8
    if annotation == "Edm.DateTime" and t is str:
        try:
            ticks = parse_datetime(raw)
        except (ValueError, OverflowError):
            return None
        return (_DATETIME, ticks), (8 if MIN_DATETIME_TICKS <= ticks <= MAX_DATETIME_TICKS else -8)
    if type(annotation) is not str:
        return None
    if raw is None:
        return _ABSENT
    convert = _CONVERTERS.get(annotation)
    if convert is None:
        return None
    try:
        typed = convert(raw)
    except StubError:
        return None
    return typed, _value_cost(typed[0], typed[1])


def _plan(names: tuple[str, ...]) -> _Plan | None:
    """The plan of a shape (remembered), or None to leave it to :func:`_general_entity`."""
    present = set(names)
    steps: list[tuple[str, str | None, int]] = []
    plan: _Plan | None = None
    for name in names:
        kind, annotation_key = _MEMBERS.get(name) or _member(name)
        if kind == _PROPERTY:
            cost = _NAME_COSTS.get(name)
            if cost is None:
                return None  # not remembered: the cost may be known next time
            steps.append((name, annotation_key if annotation_key in present else None, cost))
        elif kind == _KEY and annotation_key in present:
            break  # an annotated key: the general loop's checks
    else:
        plan = tuple(steps)
    if len(_SHAPES) < 1024 and len(names) <= 256:
        _SHAPES[names] = plan
    return plan


_Plain = tuple[str, str, dict[str, TypedValue], bool]

#: A compiled plan's answer when the entity is not like the one it was compiled from.
_UNSURE: Any = object()

_Compiled = Callable[[dict[str, Any], "str | None", "str | None"], Any]

#: Member-name tuples with a plan -> the plan compiled for the types and annotations of
#: the first entity of that shape (the entities of a change set share them). Only shapes
#: :data:`_SHAPES` holds a plan for: bounded as it is.
_COMPILED: dict[tuple[str, ...], _Compiled] = {}


def _compile(plan: _Plan, sample: dict[str, Any]) -> _Compiled:
    """:func:`_planned_entity` as straight-line code for entities like ``sample``: each
    member's JSON type and annotation as in ``sample``, checked first (any other entity
    answers :data:`_UNSURE`, and the loop decides). The same conversions, costs and
    verdict, in the same order, without the loop's per-member dispatch."""
    namespace: dict[str, Any] = {
        "UNSURE": _UNSURE,
        "annotated": _annotated,
        "ABSENT": _ABSENT,
        "parse_datetime": parse_datetime,
        "INT64_RE": _INT64_RE,
        "KEY_FORBIDDEN": _KEY_FORBIDDEN,
        "STRING": _STRING,
        "INT32": _INT32,
        "INT64": _INT64,
        "DOUBLE": _DOUBLE,
        "BOOLEAN": _BOOLEAN,
        "DATETIME": _DATETIME,
    }
    body: list[str] = []
    items: list[str] = []
    fixed = 0  # the costs known now: names and fixed-size values
    for i, (name, annotation_key, cost) in enumerate(plan):
        raw = sample[name]
        t = type(raw)
        r = f"r{i}"
        body.append(f"{r} = m[{name!r}]")
        annotation = None if annotation_key is None else sample[annotation_key]
        if annotation_key is not None:
            if type(annotation) is not str:
                return _planned_unsure
            body.append(f"if m[{annotation_key!r}] != {annotation!r}: return UNSURE")
        if annotation is None and annotation_key is not None:
            return _planned_unsure  # (a null annotation: the loop)
        if annotation is None:
            if t is str:
                body.append(f"if type({r}) is not str: return UNSURE")
                body.append(
                    f"if not {r}.isascii() or len({r}) > {MAX_STRING_UNITS}: checked = False"
                )
                body.append(f"size += 2 * len({r})")
                fixed += cost + 4
                items.append(f"{name!r}: (STRING, {r})")
            elif t is int and INT32_MIN <= raw <= INT32_MAX:
                body.append(
                    f"if type({r}) is not int or not {INT32_MIN} <= {r} <= {INT32_MAX}: "
                    "return UNSURE"
                )
                fixed += cost + 4
                items.append(f"{name!r}: (INT32, {r})")
            elif t is bool:
                body.append(f"if type({r}) is not bool: return UNSURE")
                fixed += cost + 1
                items.append(f"{name!r}: (BOOLEAN, {r})")
            elif t is float and raw - raw == 0.0:
                body.append(f"if type({r}) is not float or {r} - {r} != 0.0: return UNSURE")
                fixed += cost + 8
                items.append(f"{name!r}: (DOUBLE, {r})")
            else:
                return _planned_unsure  # a null, a long integer...: the loop
            continue
        if annotation == "Edm.Int64" and t is str:
            body.append(f"if type({r}) is not str: return UNSURE")
            # INT64_RE's digits-only texts without the regex (a sign: the regex decides)
            body.append(
                f"if not ({r}.isdigit() and {r}.isascii() and len({r}) <= 20)"
                f" and not INT64_RE.match({r}): return UNSURE"
            )
            body.append(f"{r} = int({r})")
            body.append(f"if not {INT64_MIN} <= {r} <= {INT64_MAX}: checked = False")
            fixed += cost + 8
            items.append(f"{name!r}: (INT64, {r})")
        elif annotation == "Edm.Double" and t is float:
            body.append(f"if type({r}) is not float or {r} - {r} != 0.0: return UNSURE")
            fixed += cost + 8
            items.append(f"{name!r}: (DOUBLE, {r})")
        elif annotation == "Edm.DateTime" and t is str:
            body += [
                f"if type({r}) is not str: return UNSURE",
                "try:",
                f"    {r} = parse_datetime({r})",
                "except (ValueError, OverflowError):",
                "    return UNSURE",
                f"if not {MIN_DATETIME_TICKS} <= {r} <= {MAX_DATETIME_TICKS}: checked = False",
            ]
            fixed += cost + 8
            items.append(f"{name!r}: (DATETIME, {r})")
        else:
            if raw is None:
                return _planned_unsure
            body += [
                f"c = annotated({annotation!r}, {r}, type({r}))",
                "if c is None or c is ABSENT: return UNSURE",
                f"{r}, v = c",
                "if v < 0: checked = False",
                "size += abs(v)",
            ]
            fixed += cost
            items.append(f"{name!r}: {r}")
    source = [
        "def planned(m, pk, rk):",
        "    if pk is None:",
        '        pk = m.get("PartitionKey")',
        "        if type(pk) is not str: return UNSURE",
        '        if "RowKey" in m:',
        '            rk = m["RowKey"]',
        "            if type(rk) is not str: return UNSURE",
        "    if pk is None or rk is None: return UNSURE",
        "    checked = True",
        "    size = 0",
        *(f"    {line}" for line in body),
        f"    props = {{{', '.join(items)}}}",
        "    if checked:",
        "        checked = (",
        f"            len(props) <= {MAX_PROPERTIES}",
        "            and pk.isascii() and rk.isascii()",
        f"            and len(pk) <= {MAX_KEY_UNITS} and len(rk) <= {MAX_KEY_UNITS}",
        "            and KEY_FORBIDDEN.search(pk) is None and KEY_FORBIDDEN.search(rk) is None",
        f"            and {fixed} + size + 4 + 2 * (len(pk) + len(rk)) <= {MAX_ENTITY_BYTES}",
        "        )",
        "    return pk, rk, props, checked",
    ]
    exec(compile("\n".join(source) + "\n", "<azt-stub planned entity>", "exec"), namespace)
    compiled: _Compiled = namespace["planned"]
    return compiled


def _planned_unsure(members: dict[str, Any], url_pk: str | None, url_rk: str | None) -> Any:
    """The compiled plan of a shape whose first entity was unusual: the loop decides."""
    return _UNSURE


def _planned_entity(
    members: dict[str, Any], plan: _Plan, url_pk: str | None, url_rk: str | None
) -> tuple[str, str, dict[str, TypedValue], bool] | None:
    """:func:`_general_entity` of an entity whose shape has a plan."""
    pk, rk = url_pk, url_rk
    if url_pk is None:  # the body's keys (the plan has none annotated)
        pk = members.get("PartitionKey")
        if type(pk) is not str:
            return None  # absent, or not a string
        if "RowKey" in members:
            rk = members["RowKey"]
            if type(rk) is not str:
                return None
    if pk is None or rk is None:
        return None
    props: dict[str, TypedValue] = {}
    size = 0
    checked = True
    for name, annotation_key, cost in plan:
        raw = members[name]
        t = type(raw)
        annotation = None if annotation_key is None else members[annotation_key]
        if annotation is None:
            if t is str:
                props[name] = (_STRING, raw)
                if not raw.isascii() or len(raw) > MAX_STRING_UNITS:
                    checked = False
                size += cost + 2 * len(raw) + 4
            elif t is int and INT32_MIN <= raw <= INT32_MAX:
                props[name] = (_INT32, raw)
                size += cost + 4
            elif t is bool:
                props[name] = (_BOOLEAN, raw)
                size += cost + 1
            elif t is float and raw - raw == 0.0:
                props[name] = (_DOUBLE, raw)
                size += cost + 8
            elif raw is not None:
                return None  # a long integer, an object, an array: the general path
            continue
        converted = _annotated(annotation, raw, t)
        if converted is None:
            return None
        if converted is _ABSENT:
            continue
        typed, value_cost = converted
        props[name] = typed
        if value_cost < 0:
            checked = False
        size += cost + abs(value_cost)
    if checked:
        checked = (
            len(props) <= MAX_PROPERTIES
            and pk.isascii()
            and rk.isascii()
            and len(pk) <= MAX_KEY_UNITS
            and len(rk) <= MAX_KEY_UNITS
            and _KEY_FORBIDDEN.search(pk) is None
            and _KEY_FORBIDDEN.search(rk) is None
            and size + 4 + 2 * (len(pk) + len(rk)) <= MAX_ENTITY_BYTES
        )
    return pk, rk, props, checked


def _general_entity(
    members: dict[str, Any], url_pk: str | None, url_rk: str | None
) -> tuple[str, str, dict[str, TypedValue], bool] | None:
    """:func:`plain_entity` member by member (any shape)."""
    props: dict[str, TypedValue] = {}
    pk = url_pk
    rk = url_rk
    keys_required = url_pk is None
    known = _MEMBERS
    costs = _NAME_COSTS
    size = 0
    checked = True
    for name, raw in members.items():
        kind, annotation_key = known.get(name) or _member(name)
        if kind == _PROPERTY:
            cost = costs.get(name)
            if cost is None:
                checked = False
                cost = 0
            annotation = members.get(annotation_key)
            t = type(raw)
            if annotation is None:
                if t is str:
                    props[name] = (_STRING, raw)
                    if not raw.isascii() or len(raw) > MAX_STRING_UNITS:
                        checked = False
                    size += cost + 2 * len(raw) + 4
                elif t is int and INT32_MIN <= raw <= INT32_MAX:
                    props[name] = (_INT32, raw)
                    size += cost + 4
                elif t is bool:
                    props[name] = (_BOOLEAN, raw)
                    size += cost + 1
                elif t is float and raw - raw == 0.0:
                    props[name] = (_DOUBLE, raw)
                    size += cost + 8
                elif raw is None:
                    continue
                else:
                    return None  # a long integer, an object, an array: the general path
                continue
            converted = _annotated(annotation, raw, t)
            if converted is None:
                return None
            if converted is _ABSENT:
                continue
            typed, value_cost = converted
            props[name] = typed
            if value_cost < 0:
                checked = False
            size += cost + abs(value_cost)
        elif kind == _KEY and keys_required:
            if type(raw) is not str or members.get(annotation_key) not in (None, "Edm.String"):
                return None
            if name == "PartitionKey":
                pk = raw
            else:
                rk = raw
    if pk is None or rk is None:
        return None
    if checked:
        checked = (
            len(props) <= MAX_PROPERTIES
            and pk.isascii()
            and rk.isascii()
            and len(pk) <= MAX_KEY_UNITS
            and len(rk) <= MAX_KEY_UNITS
            and _KEY_FORBIDDEN.search(pk) is None
            and _KEY_FORBIDDEN.search(rk) is None
            and size + 4 + 2 * (len(pk) + len(rk)) <= MAX_ENTITY_BYTES
        )
    return pk, rk, props, checked
