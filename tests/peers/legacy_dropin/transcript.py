"""The canonical transcript the drop-in scripts print: one JSON object per line.

Values are written so that two runs (the real legacy SDK, azt.legacy) can be compared
line by line: entities with their property types, whether an ETag or Timestamp is present
(never their values, which differ between runs), exception class names with status and
error codes, and continuation markers (their presence and keys; the opaque values differ
between tables). Imports nothing from either SDK.

Example::

    from transcript import attempt, out
    out("insert", service.insert_entity(table, entity))   # {"step": "insert", "value": "<etag>"}
    attempt("missing", lambda: service.get_entity(table, "a", "b"))
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

PREFIX = os.environ["AZT_DROPIN_PREFIX"]
CONN = os.environ["AZT_DROPIN_CONN"]


def table(name: str) -> str:
    """A table name unique to this run (the two runs share one stub)."""
    return PREFIX + name


def canon(value: Any) -> Any:
    """``value`` in a run-independent JSON shape."""
    if isinstance(value, BaseException):
        return {
            "error": type(value).__name__,
            "status": getattr(value, "status_code", None),
            "error_code": getattr(value, "error_code", None),
            "code": getattr(value, "code", None),
        }
    if isinstance(value, dict):
        out = {}
        for k, v in sorted(value.items()):
            if k == "etag":
                out[k] = "<etag>" if v else v
            elif k == "Timestamp":
                out[k] = "<timestamp>" if isinstance(v, datetime) and v.tzinfo else repr(v)
            elif k in ("nextpartitionkey", "nextrowkey") and isinstance(v, str):
                out[k] = "<marker>"
            else:
                out[str(k)] = canon(v)
        kind = "Entity" if type(value).__name__ == "Entity" else "dict"  # not private names
        return {"type": kind, "items": out}
    if isinstance(value, list | tuple):
        return [canon(v) for v in value]
    if hasattr(value, "type") and hasattr(value, "value") and hasattr(value, "encrypt"):
        return {"EntityProperty": value.type, "value": canon(value.value)}
    if isinstance(value, datetime):
        aware = value.tzinfo is not None
        when = value.astimezone(UTC) if aware else value
        return {"datetime": when.replace(tzinfo=None).isoformat(), "aware": aware}
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode()}
    if isinstance(value, str) and value.startswith('W/"datetime'):
        return "<etag>"
    if isinstance(value, bool | int | float | str) or value is None:
        if isinstance(value, float) and value != value:
            return "NaN"
        return {"type": type(value).__name__, "v": value} if not isinstance(value, str) else value
    return {"object": type(value).__name__}


def out(step: str, value: Any) -> None:
    """Print one transcript line."""
    sys.stdout.write(json.dumps({"step": step, "value": canon(value)}, sort_keys=True) + "\n")
    sys.stdout.flush()


def attempt(step: str, fn: Callable[[], Any]) -> Any:
    """Run ``fn``; print its result or the exception it raised."""
    try:
        result = fn()
    except Exception as exc:  # the class, status and codes are the transcript
        out(step, exc)
        return None
    out(step, result)
    return result
