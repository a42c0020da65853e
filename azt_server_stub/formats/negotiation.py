"""Content negotiation for OData operations (PROTOCOL.md 3.3, 3.4, 13).

Decides the response payload format from ``$format`` and ``Accept``, and the
request payload format from ``Content-Type``, with the version gates of ``versions``:
AtomPub only before ``2015-12-11``, JSON only from ``2013-08-15`` on.

Example::

    >>> negotiate_response(
    ...     "application/json;odata=nometadata", None, "2019-02-02"
    ... ).fmt is Fmt.NOMETADATA
    True
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass

from .. import errors
from ..versions import supports_atom, supports_json, supports_prefer


class Fmt(enum.Enum):
    """A response (or request) payload format for OData operations.

    Example::

        >>> Fmt.MINIMAL.is_json
        True
    """

    NOMETADATA = "nometadata"
    MINIMAL = "minimalmetadata"
    FULL = "fullmetadata"
    ATOM = "atom"

    @property
    def is_json(self) -> bool:
        """Whether this is one of the three JSON levels.

        Example::

            >>> Fmt.NOMETADATA.is_json, Fmt.ATOM.is_json
            (True, False)
        """
        return self is not Fmt.ATOM

    @property
    def content_type(self) -> str:
        """The ``Content-Type`` of a response body in this format.

        Example::

            >>> Fmt.MINIMAL.content_type
            'application/json;odata=minimalmetadata;streaming=true;charset=utf-8'
            >>> Fmt.ATOM.content_type
            'application/atom+xml;type=entry;charset=utf-8'
        """
        if self is Fmt.ATOM:
            return "application/atom+xml;type=entry;charset=utf-8"
        return f"application/json;odata={self.value};streaming=true;charset=utf-8"


@dataclass(frozen=True, slots=True)
class Negotiated:
    """The outcome of response negotiation.

    ``implicit`` is True when neither ``Accept`` nor ``$format`` chose the format;
    ``wildcard`` when a wildcard range (``*/*``, ``application/*``) did. Storage renders
    errors as OData XML in both cases (recorded: ``Accept: */*`` gets a JSON success but
    an ``application/xml`` error; docs/stub.md, "Fidelity decisions").

    Example::

        >>> Negotiated(Fmt.ATOM, implicit=True).implicit
        True
    """

    fmt: Fmt
    implicit: bool = False
    wildcard: bool = False


@functools.lru_cache(maxsize=512)
def _media_ranges(header: str) -> tuple[tuple[float, int, str, dict[str, str]], ...]:
    """Split an Accept header into (q, position, type, params), best first (cached:
    clients send the same few headers over and over; callers must not mutate)."""
    ranges: list[tuple[float, int, str, dict[str, str]]] = []
    for pos, item in enumerate(header.split(",")):
        parts = [p.strip() for p in item.split(";")]
        mtype = parts[0].lower()
        if not mtype:
            continue
        params: dict[str, str] = {}
        q = 1.0
        for p in parts[1:]:
            name, sep, value = p.partition("=")
            name = name.strip().lower()
            value = value.strip().strip('"').lower()
            if not sep:
                continue
            if name == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
            else:
                params[name] = value
        if q > 0:
            ranges.append((-q, pos, mtype, params))
    ranges.sort(key=lambda r: (r[0], r[1]))
    return tuple(ranges)


def _json_level(params: dict[str, str]) -> Fmt:
    level = params.get("odata", "minimalmetadata")
    if level == "nometadata":
        return Fmt.NOMETADATA
    if level == "fullmetadata":
        return Fmt.FULL
    if level == "minimalmetadata":
        return Fmt.MINIMAL
    if level == "verbose":
        raise errors.json_verbose_format_not_supported()
    raise errors.media_type_not_supported()


_WILDCARDS = ("*/*", "application/*")


def _from_media_type(mtype: str, params: dict[str, str], version: str) -> Fmt | None:
    if mtype == "application/json":
        fmt = _json_level(params)
        if not supports_json(version):
            raise errors.json_format_not_supported()
        return fmt
    if mtype in ("application/atom+xml", "application/xml", "text/xml"):
        if not supports_atom(version):
            raise errors.atom_format_not_supported()
        return Fmt.ATOM
    if mtype in _WILDCARDS:
        return Fmt.ATOM if supports_atom(version) else Fmt.MINIMAL
    return None


_FORMAT_SHORTHANDS = {
    "json": "application/json",
    "atom": "application/atom+xml",
    "xml": "application/xml",
}


@functools.lru_cache(maxsize=512)
def negotiate_response(accept: str | None, format_param: str | None, version: str) -> Negotiated:
    """Choose the response format of an OData operation.

    Cached: clients send the same few combinations over and over, the outcome is
    immutable, and a refusal is raised afresh each time (errors are never cached).

    ``$format`` wins over ``Accept``; ``application/json`` without ``odata=`` means
    minimal metadata; no ``Accept`` and no ``$format`` means AtomPub before 2015-12-11
    and minimal-metadata JSON from then on. Raises 415 errors for unsupported types.

    Example::

        >>> negotiate_response(None, "application/json;odata=fullmetadata", "2019-02-02").fmt
        <Fmt.FULL: 'fullmetadata'>
    """
    if format_param:
        text = _FORMAT_SHORTHANDS.get(format_param.strip().lower(), format_param)
        for _, _, mtype, params in _media_ranges(text):
            fmt = _from_media_type(mtype, params, version)
            if fmt is not None:
                return Negotiated(fmt)
        raise errors.media_type_not_supported()
    if accept is None or not accept.strip():
        return Negotiated(Fmt.ATOM if supports_atom(version) else Fmt.MINIMAL, implicit=True)
    for _, _, mtype, params in _media_ranges(accept):
        fmt = _from_media_type(mtype, params, version)
        if fmt is not None:
            return Negotiated(fmt, wildcard=mtype in _WILDCARDS)
    raise errors.media_type_not_supported()


def cosmos_error_format(accept: str | None, format_param: str | None) -> Fmt:
    """The JSON level of a Cosmos DB Table API error body.

    Recorded from the service (docs/cosmos.md, "Fidelity decisions"): an ``odata=`` level
    the client named is kept (``application/json;odata=minimalmetadata`` gets a
    minimal-metadata error); ``application/json`` without one, ``*/*`` and no
    ``Accept`` get full metadata.

    Example::

        >>> cosmos_error_format("*/*", None), cosmos_error_format("application/json", None)
        (<Fmt.FULL: 'fullmetadata'>, <Fmt.FULL: 'fullmetadata'>)
        >>> cosmos_error_format("application/json;odata=minimalmetadata", None)
        <Fmt.MINIMAL: 'minimalmetadata'>
    """
    for text in (format_param, accept):
        if not text:
            continue
        text = _FORMAT_SHORTHANDS.get(text.strip().lower(), text)
        for _, _, mtype, params in _media_ranges(text):
            if mtype == "application/json":
                level = params.get("odata")
                if level == "nometadata":
                    return Fmt.NOMETADATA
                if level == "minimalmetadata":
                    return Fmt.MINIMAL
                return Fmt.FULL
    return Fmt.FULL


def error_format_guess(accept: str | None, format_param: str | None) -> Fmt | None:
    """Best-effort format for an error body when negotiation itself failed or never ran.

    Returns None when the error should be OData XML: the best range the stub knows is
    XML or a wildcard (as :func:`negotiate_response` decides, ``Negotiated.wildcard``).

    Example::

        >>> error_format_guess("application/json;odata=verbose", None)
        <Fmt.MINIMAL: 'minimalmetadata'>
        >>> error_format_guess("*/*, application/json", None) is None
        True
    """
    for text in (format_param, accept):
        if not text:
            continue
        text = _FORMAT_SHORTHANDS.get(text.strip().lower(), text)
        for _, _, mtype, params in _media_ranges(text):
            if mtype == "application/json":
                level = params.get("odata", "minimalmetadata")
                if level == "nometadata":
                    return Fmt.NOMETADATA
                if level == "fullmetadata":
                    return Fmt.FULL
                return Fmt.MINIMAL
            if mtype in ("application/atom+xml", "application/xml", "text/xml", *_WILDCARDS):
                return None
    return None


@functools.lru_cache(maxsize=512)
def request_format(content_type: str | None, version: str) -> Fmt:
    """The payload format of a request body from its ``Content-Type``.

    JSON request bodies need 2013-08-15 or later, Atom bodies a version before
    2015-12-11 (415 otherwise); a missing type is ``400 MissingRequiredHeader``.

    Example::

        >>> request_format("application/json;odata=nometadata", "2019-02-02")
        <Fmt.NOMETADATA: 'nometadata'>
    """
    if content_type is None or not content_type.strip():
        raise errors.missing_required_header(
            "An HTTP header that's mandatory for this request is not specified.\n"
            "HeaderName:Content-Type"
        )
    ranges = _media_ranges(content_type)
    if not ranges:
        raise errors.media_type_not_supported()
    _, _, mtype, params = ranges[0]
    fmt = None if mtype in _WILDCARDS else _from_media_type(mtype, params, version)
    if fmt is None:
        raise errors.media_type_not_supported()
    return fmt


@functools.lru_cache(maxsize=512)
def parse_prefer(header: str | None, version: str) -> bool | None:
    """``Prefer``: True for return-content, False for return-no-content, None otherwise.

    Honoured only from 2013-08-15 on.

    Example::

        >>> parse_prefer("return-no-content", "2019-02-02")
        False
    """
    if not header or not supports_prefer(version):
        return None
    for item in header.split(","):
        token = item.strip().lower()
        if token == "return-no-content":
            return False
        if token == "return-content":
            return True
    return None
