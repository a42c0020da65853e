"""What a client reads from an answer, reduced to comparable aspects, and their comparison.

An answer (the real service's recorded one or the stub's live one) becomes a :class:`View`:
status, error code, content type (media type and ``odata=`` level), which of the headers a
client reads are present (ETag, ``x-ms-version``, Location, DataServiceId, continuation
headers) or their value
where it is a fixed word (Preference-Applied), and the body reduced to what is not per-run:
entity properties with their EDM types and values (DateTime values as instants, binary as
bytes), table names, row order and counts, ``odata.metadata`` past the service root, the
order of the JSON members (a client that streams or compares the text sees it), and the
signed identifiers of an ACL. Per-run values are left out: Timestamp, ETag values, dates,
request ids, messages. A change-set answer becomes one view per part.

:func:`differences` lists every aspect on which two views differ as ``(kind, recorded, live)``.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree

from .cassettes import SERVICE_HOST

#: A difference: the aspect's kind, the recorded value and the live value (as text).
Difference = tuple[str, str, str]

_DATETIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,7}))?Z$")
_INDEX_PREFIX = re.compile(r"^(\d+):")
_HTTP_STATUS = re.compile(rb"^HTTP/1\.[01] (\d{3})")


@dataclass
class View:
    """The comparable aspects of one answer (or of one change-set answer part)."""

    status: int
    error_code: str | None = None
    content_type: str | None = None
    etag: bool = False
    version: bool = False
    location: bool = False
    data_service_id: bool = False
    preference_applied: str | None = None
    continuation: tuple[str, ...] = ()
    content_id: str | None = None
    error_index: str | None = None
    body: Any = None
    metadata: str | None = None
    datetime_form: tuple[tuple[str, int], ...] = ()
    member_order: tuple[tuple[str, ...], ...] = ()  # the body's members, then each row's
    parts: list[View] | None = None
    etags: dict[str, str] = field(default_factory=dict)  # row key -> ETag value (not compared)
    continuation_values: dict[str, str] = field(default_factory=dict)  # not compared


def strip_root(text: str, live_root: str) -> str:
    """``text`` with the service root (recorded host or the stub's account URL) as ``{root}``."""
    text = SERVICE_HOST.sub("{root}", text)
    return text.replace(live_root, "{root}")


def media(content_type: str | None) -> str | None:
    """``type/subtype`` and the ``odata=`` level of a Content-Type.

    ``application/json;odata=minimalmetadata;streaming=true`` gives
    ``application/json;odata=minimalmetadata``.
    """
    if not content_type:
        return None
    parts = [p.strip().lower() for p in content_type.split(";")]
    odata = [p for p in parts[1:] if p.startswith("odata=")]
    return ";".join([parts[0], *odata])


def _datetime(value: str) -> str:
    match = _DATETIME.match(value)
    if match is None:
        return value
    return f"{match.group(1)}.{(match.group(2) or '').ljust(7, '0')}Z"


def _property(value: Any, edm: str | None) -> tuple[str, Any]:
    """A property's EDM type (explicit, else the JSON kind) and its comparable value."""
    if edm == "Edm.DateTime" and isinstance(value, str):
        return edm, _datetime(value)
    if edm == "Edm.Binary" and isinstance(value, str):
        try:
            return edm, base64.b64decode(value)
        except ValueError:
            return edm, value
    if edm is not None:
        return edm, value
    if isinstance(value, bool):
        return "json:bool", value
    if isinstance(value, int):
        return "json:int", value
    if isinstance(value, float):
        return "json:float", value
    return "json:" + type(value).__name__, value


def entity(row: dict[str, Any], live_root: str) -> dict[str, Any]:
    """A JSON entity or table row: properties with types and values, metadata past the root."""
    out: dict[str, Any] = {}
    for name, value in row.items():
        if name.endswith("@odata.type") or name == "Timestamp":
            continue
        if name == "odata.etag":
            out[name] = "present"
        elif name == "odata.type":  # "{account}.{table}"
            out[name] = str(value).split(".", 1)[-1]
        elif name.startswith("odata."):
            out[name] = strip_root(str(value), live_root)
        else:
            out[name] = _property(value, row.get(name + "@odata.type"))
    return out


def _datetime_form(row: dict[str, Any]) -> list[tuple[str, int]]:
    forms: list[tuple[str, int]] = []
    for name, value in row.items():
        if row.get(name + "@odata.type") == "Edm.DateTime" and isinstance(value, str):
            match = _DATETIME.match(value)
            if match:
                forms.append((name, len(match.group(2) or "")))
    return forms


def _member_order(data: dict[str, Any], *, ordered: bool) -> tuple[tuple[str, ...], ...]:
    """The body's member names in order, then each row's (a listing's rows sorted when the
    rows themselves are compared as a set)."""
    value = data.get("value")
    rows = [tuple(r) for r in value if isinstance(r, dict)] if isinstance(value, list) else []
    return (tuple(data), *(rows if ordered else sorted(rows)))


def _error_of_json(data: Any) -> tuple[str | None, str | None]:
    error = data.get("odata.error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None, None
    message = error.get("message")
    text = message.get("value", "") if isinstance(message, dict) else str(message or "")
    prefix = _INDEX_PREFIX.match(text)
    return error.get("code"), prefix.group(1) if prefix else None


def _xml(body: bytes) -> ElementTree.Element | None:
    try:
        return ElementTree.fromstring(body)
    except ElementTree.ParseError:
        return None


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _acl(root: ElementTree.Element) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for identifier in root:
        fields = {_local(child.tag): child for child in identifier}
        policy = fields.get("AccessPolicy")
        values: dict[str, str] = {}
        if policy is not None:
            values = {_local(c.tag): _datetime((c.text or "").strip()) for c in policy}
        ident = fields.get("Id")
        rows.append(
            (
                (ident.text or "") if ident is not None else None,
                policy is not None,
                tuple(sorted(values.items())),
            )
        )
    return rows


def _read_body(
    view: View, body: bytes, live_root: str, *, compare_body: bool, ordered: bool
) -> None:
    """Fill the error code, error index and body aspects from a JSON or XML body."""
    kind = (view.content_type or "").split(";")[0]
    if not body.strip():
        return
    if kind.endswith("json"):
        try:
            data = json.loads(body)
        except ValueError:
            view.body = "unparsable JSON"
            return
        code, index = _error_of_json(data)
        if code is not None:
            view.error_code = view.error_code or code
            view.error_index = index
            return
        if not compare_body or not isinstance(data, dict):
            return
        view.member_order = _member_order(data, ordered=ordered)
        if isinstance(data.get("value"), list):
            rows = [r for r in data["value"] if isinstance(r, dict)]
            view.metadata = strip_root(str(data.get("odata.metadata", "")), live_root)
            found = [entity(r, live_root) for r in rows]
            view.body = {"rows": found if ordered else sorted(found, key=repr)}
            view.datetime_form = tuple(sorted(f for r in rows for f in _datetime_form(r)))
            for r in rows:
                if "odata.etag" in r:
                    view.etags[f"{r.get('PartitionKey')}\n{r.get('RowKey')}"] = r["odata.etag"]
        else:
            view.body = entity(data, live_root)
            view.metadata = view.body.pop("odata.metadata", None)
            view.datetime_form = tuple(sorted(_datetime_form(data)))
            if "odata.etag" in data:
                view.etags["entity"] = data["odata.etag"]
    elif kind.endswith("xml"):
        root = _xml(body)
        if root is None:
            view.body = "unparsable XML"
            return
        if _local(root.tag) == "error":
            code = next((c.text for c in root if _local(c.tag) == "code"), None)
            view.error_code = view.error_code or code
            message = next((c.text or "" for c in root if _local(c.tag) == "message"), "")
            prefix = _INDEX_PREFIX.match(message)
            view.error_index = prefix.group(1) if prefix else None
        elif compare_body and _local(root.tag) == "SignedIdentifiers":
            view.body = {"acl": _acl(root)}


def _header(headers: dict[str, str], name: str) -> str | None:
    return headers.get(name)


def view_of(
    status: int,
    headers: dict[str, str],
    body: bytes,
    live_root: str,
    *,
    compare_body: bool = True,
    ordered: bool = True,
) -> View:
    """The view of an answer (``headers`` with lower-case names).

    ``ordered=False`` compares the rows of a listing as a set (where the real order is
    neither by key nor by creation, and so cannot be reproduced).
    """
    view = View(status=status)
    view.content_type = media(_header(headers, "content-type"))
    view.error_code = _header(headers, "x-ms-error-code")
    etag = _header(headers, "etag")
    view.etag = etag is not None
    if etag is not None:
        view.etags["header"] = etag
    view.version = _header(headers, "x-ms-version") is not None
    view.location = _header(headers, "location") is not None
    view.data_service_id = _header(headers, "dataserviceid") is not None
    view.preference_applied = _header(headers, "preference-applied")
    view.continuation = tuple(sorted(h for h in headers if h.startswith("x-ms-continuation-")))
    view.continuation_values = {
        h.removeprefix("x-ms-continuation-"): v
        for h, v in headers.items()
        if h.startswith("x-ms-continuation-")
    }
    view.content_id = _header(headers, "content-id")
    kind = view.content_type or ""
    if kind.startswith("multipart/mixed"):
        boundary = _boundary(_header(headers, "content-type") or "")
        view.parts = [
            view_of(s, h, b, live_root, compare_body=compare_body, ordered=ordered)
            for s, h, b in batch_parts(body, boundary)
        ]
        return view
    _read_body(view, body, live_root, compare_body=compare_body and status < 300, ordered=ordered)
    return view


def _boundary(content_type: str) -> str:
    for piece in content_type.split(";"):
        name, _, value = piece.strip().partition("=")
        if name.lower() == "boundary":
            return value.strip('"')
    return ""


def _split(body: bytes, boundary: str) -> list[bytes]:
    """The parts between ``--boundary`` lines (headers and content of each)."""
    marker = b"--" + boundary.encode()
    pieces = body.split(marker)[1:]
    parts = []
    for piece in pieces:
        if piece.startswith(b"--"):
            break
        parts.append(piece.lstrip(b"\r\n"))
    return parts


def _head(block: bytes) -> tuple[dict[str, str], bytes]:
    head, _, rest = block.replace(b"\r\n", b"\n").partition(b"\n\n")
    headers: dict[str, str] = {}
    for line in head.split(b"\n"):
        name, sep, value = line.decode("utf-8", "replace").partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return headers, rest


def batch_parts(body: bytes, boundary: str) -> list[tuple[int, dict[str, str], bytes]]:
    """The answered operations of a batch answer: (status, headers, body) per part.

    The outer boundary holds change-set answers (each with its own boundary) or single
    answers; every ``application/http`` part holds ``HTTP/1.1 status``, headers and a body.
    The MIME part's own ``Content-ID`` is carried into the part's headers.
    """
    answers: list[tuple[int, dict[str, str], bytes]] = []
    for part in _split(body, boundary):
        headers, rest = _head(part)
        inner = headers.get("content-type", "")
        if inner.lower().startswith("multipart/mixed"):
            answers.extend(batch_parts(rest, _boundary(inner)))
            continue
        status_match = _HTTP_STATUS.match(rest)
        if status_match is None:
            continue
        http_headers, http_body = _head(rest.split(b"\n", 1)[1] if b"\n" in rest else b"")
        if "content-id" in headers and "content-id" not in http_headers:
            http_headers["content-id"] = headers["content-id"]
        answers.append((int(status_match.group(1)), http_headers, http_body.rstrip(b"\r\n")))
    return answers


_ASPECTS = (
    ("status", "status"),
    ("error-code", "error_code"),
    ("content-type", "content_type"),
    ("etag", "etag"),
    ("x-ms-version", "version"),
    ("location", "location"),
    ("dataserviceid", "data_service_id"),
    ("preference-applied", "preference_applied"),
    ("continuation", "continuation"),
    ("error-index", "error_index"),
    ("body", "body"),
    ("metadata", "metadata"),
    ("datetime-form", "datetime_form"),
    ("member-order", "member_order"),
)


def differences(recorded: View, live: View, *, prefix: str = "") -> list[Difference]:
    """Every aspect on which ``live`` differs from ``recorded``.

    Inside a change-set answer (``prefix="batch:"``) ``Content-ID`` is compared too.
    ``content-type`` is compared where the recorded answer has a body or a content type.
    """
    found: list[Difference] = []
    for kind, attribute in _ASPECTS:
        want, got = getattr(recorded, attribute), getattr(live, attribute)
        if want != got:
            found.append((prefix + kind, repr(want), repr(got)))
    if prefix and recorded.content_id != live.content_id:
        found.append((prefix + "content-id", repr(recorded.content_id), repr(live.content_id)))
    if recorded.parts is not None or live.parts is not None:
        want_parts, got_parts = recorded.parts or [], live.parts or []
        if len(want_parts) != len(got_parts):
            found.append(("batch:part-count", str(len(want_parts)), str(len(got_parts))))
        for want_part, got_part in zip(want_parts, got_parts, strict=False):
            found.extend(differences(want_part, got_part, prefix="batch:"))
    return found
