"""``$batch`` envelopes (PROTOCOL.md 9.2-9.5): multipart/mixed parsing and building.

The parser is tolerant as the service's clients need it to be: CRLF or bare LF,
any RFC 2046 boundary, Content-ID in the MIME part headers or in the inner HTTP
headers, absolute URLs or paths, inner bodies with or without Content-Length.
A malformed envelope raises ``400 InvalidInput``. The builder always writes CRLF
with ``batchresponse_``/``changesetresponse_`` boundaries.

Example::

    >>> body = (b"--b\\r\\nContent-Type: application/http\\r\\n\\r\\n"
    ...         b"GET http://h/a/t(PartitionKey='p',RowKey='r') HTTP/1.1\\r\\n"
    ...         b"Accept: application/json\\r\\n\\r\\n\\r\\n--b--\\r\\n")
    >>> batch = parse_batch(body, "multipart/mixed; boundary=b")
    >>> (batch.changeset, batch.parts[0].method)
    (False, 'GET')
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from http import HTTPStatus

from multidict import CIMultiDict, CIMultiDictProxy

from .. import errors
from ..model import new_guid

_CRLF = b"\r\n"


@dataclass(slots=True)
class BatchPart:
    """One inner HTTP request of a batch.

    Example::

        >>> BatchPart("GET", "/t()", CIMultiDict(), b"").method
        'GET'
    """

    method: str
    target: str
    #: Read only: the parts read from one remembered header block share one (read-only)
    #: ``CIMultiDictProxy``.
    headers: CIMultiDict[str] | CIMultiDictProxy[str]
    body: bytes
    content_id: str | None = None
    #: The (name, value) pairs ``headers`` was made from when the part was read from a
    #: remembered header block: one object per distinct block, so parts with the same
    #: headers share it (a handler may key what it works out from headers on its
    #: identity); None otherwise. Takes no part in comparisons.
    block: tuple[tuple[str, str], ...] | None = field(default=None, compare=False, repr=False)


@dataclass(slots=True)
class ParsedBatch:
    """A parsed batch: ``changeset`` is False for the query-only form (one GET part).

    Example::

        >>> ParsedBatch().changeset
        True
    """

    parts: list[BatchPart] = field(default_factory=list)
    changeset: bool = True


def _malformed(detail: str = "") -> errors.StubError:
    err = errors.invalid_input()
    if detail:
        err.details["ExceptionMessage"] = detail
    return err


#: The longest boundary the service's OData batch reader takes (RFC 2046's limit too).
MAX_BOUNDARY = 70


def boundary_of(content_type: str | None) -> str:
    """The boundary parameter of a ``multipart/mixed`` Content-Type (400 InvalidInput).

    As the service's OData reader: exactly one ``boundary`` parameter, of 1 to 70
    characters once unquoted (``boundary=""`` is refused, not skipped).

    Example::

        >>> boundary_of('multipart/mixed; boundary="batch_1"')
        'batch_1'
    """
    if not content_type:
        raise _malformed("missing Content-Type")
    pieces = [p.strip() for p in content_type.split(";")]
    if pieces[0].lower() != "multipart/mixed":
        raise _malformed("not multipart/mixed")
    found: str | None = None
    for p in pieces[1:]:
        name, _, value = p.partition("=")
        if name.strip().lower() != "boundary":
            continue
        if found is not None:
            raise _malformed("more than one boundary")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        if not 0 < len(value) <= MAX_BOUNDARY:
            raise _malformed(f"a boundary has 1 to {MAX_BOUNDARY} characters")
        found = value
    if found is None:
        raise _malformed("missing boundary")
    return found


def _split(body: bytes, boundary: str) -> list[bytes]:
    """The encapsulated parts between ``--boundary`` delimiter lines (RFC 2046).

    A delimiter counts only at the start of a line and when followed by optional
    ``--`` (the close delimiter), optional blanks and a line end; the line break that
    precedes a delimiter belongs to it. Text after the close delimiter is ignored.
    """
    delim = b"--" + boundary.encode("latin-1")
    parts = _split_strict(body, delim)
    return parts if parts is not None else _split_general(body, delim)


def _split_strict(body: bytes, delim: bytes) -> list[bytes] | None:
    """:func:`_split` of a body in the form clients send, by one ``bytes.split`` on the
    delimiter text: the body starts with it, every other occurrence of it is preceded by
    CRLF, each is followed by CRLF (a part follows) but the last, which is the close
    (``--`` then CRLF or the end). None for any other body (the general reading decides).

    The text has no line break (a header value's), so an occurrence the split passed
    over (one overlapping a delimiter it took) cannot follow a CRLF: the count of the
    text between CRLFs is the count of the delimiters the split took with a CRLF on
    either side (non-overlapping: each part holds something or its two CRLFs). That one
    count shows all the middle delimiters are lines (a split on ``CRLF--boundary`` then
    a count of the bare text over the body cost a sixth more on a 100-part change set;
    checking each part's two ends instead of the count, an eighth more).
    """
    chunks = body.split(delim)
    last = len(chunks) - 1
    if last < 1 or chunks[0]:
        return None
    close = chunks[last]
    if not (close == b"--" or close.startswith(b"--\r\n")):
        return None
    if last == 1:
        return []
    first, end = chunks[1], chunks[last - 1]  # (the first and last part, CRLFs included)
    if len(first) < 4 or len(end) < 4 or first[:2] != b"\r\n" or end[-2:] != b"\r\n":
        return None
    if last > 2 and body.count(b"\r\n" + delim + b"\r\n") != last - 2:
        return None
    return [chunk[2:-2] for chunk in chunks[1:last]]


def _split_general(body: bytes, delim: bytes) -> list[bytes]:
    """:func:`_split` of any body."""
    parts: list[bytes] = []
    start: int | None = None
    pos = 0
    n = len(body)
    while True:
        at = body.find(delim, pos)
        if at < 0:
            raise _malformed("missing closing boundary")
        pos = at + len(delim)
        if at > 0 and body[at - 1] != 0x0A:  # not at the start of a line
            continue
        end = pos
        closing = body.startswith(b"--", end)
        if closing:
            end += 2
        while end < n and body[end] in (0x20, 0x09):
            end += 1
        if end < n and body[end] == 0x0D:
            end += 1
        if end < n and body[end] != 0x0A:
            continue  # the boundary text continues: not a delimiter
        if start is not None:
            stop = at
            if stop > 0 and body[stop - 1] == 0x0A:
                stop -= 1
                if stop > start and body[stop - 1] == 0x0D:
                    stop -= 1
            parts.append(body[start : max(stop, start)])
        if closing:
            return parts
        start = end + 1 if end < n else n


#: Content-Length texts accepted before -> their value (bounded).
_LENGTHS: dict[str, int] = {}

#: A part's Content-Length: ASCII digits (``str.isdigit`` also accepts other scripts'
#: digits and superscripts), few enough for ``int`` (longer is past any body anyway).
_LENGTH_RE = re.compile(r"[0-9]{1,15}")


def _header_end(blob: bytes) -> tuple[int, int] | None:
    """``(start, end)`` of the first empty line ending a header block, or None.

    The first match of ``\\r?\\n\\r?\\n`` found with two ``bytes.find`` calls (a
    regex search with an optional first character is tried at every offset: slow). The
    CRLF form is looked for first; the LF form then only before it (a CRLF block's
    ``\n\n`` search would otherwise read the whole part, its body included).
    """
    lf_crlf = blob.find(b"\n\r\n")
    lf_lf = blob.find(b"\n\n", 0, lf_crlf + 1) if lf_crlf >= 0 else blob.find(b"\n\n")
    if lf_lf < 0 and lf_crlf < 0:
        return None
    if lf_crlf < 0 or 0 <= lf_lf < lf_crlf:
        at, end = lf_lf, lf_lf + 2
    else:
        at, end = lf_crlf, lf_crlf + 3
    if at > 0 and blob[at - 1] == 0x0D:
        at -= 1
    return at, end


def _request_line(blob: bytes) -> tuple[bytes, int] | None:
    """The first line (without its CRLF or LF) and where the rest starts; None when the
    line holds a bare CR or does not end (the regex ``([^\\r\\n]*)\\r?\\n``)."""
    end = blob.find(b"\n")
    if end < 0:
        return None
    line = blob[:end]
    if line.endswith(b"\r"):
        line = line[:-1]
    if b"\r" in line:
        return None
    return line, end + 1


#: What ``bytes.strip()`` strips (ASCII whitespace); ``str.strip()`` would strip more.
_WS = " \t\n\r\x0b\x0c"


def _header_pairs(head: bytes) -> list[tuple[str, str]]:
    """Header lines one by one: blank lines skipped, names ASCII, values UTF-8, trimmed."""
    pairs: list[tuple[str, str]] = []
    for line in head.split(b"\n"):
        line = line.rstrip(b"\r")
        if not line:
            continue
        name, sep, value = line.partition(b":")
        if not sep or not name.strip():
            raise _malformed("bad header line")
        try:
            pairs.append((name.strip().decode("ascii"), value.strip().decode("utf-8")))
        except UnicodeDecodeError:
            raise _malformed("bad header encoding") from None
    return pairs


def _headers_and_rest(blob: bytes) -> tuple[CIMultiDict[str], bytes]:
    """Split a header block from what follows the first empty line.

    Hot (two blocks per batch part): an ASCII block, the usual case, is decoded once
    and split as text, with the same result as :func:`_header_pairs`.
    """
    if blob.startswith(b"\r\n"):
        return CIMultiDict(), blob[2:]
    if blob.startswith(b"\n"):
        return CIMultiDict(), blob[1:]
    bounds = _header_end(blob)
    if bounds is None:
        head, rest = blob, b""
    else:
        head, rest = blob[: bounds[0]], blob[bounds[1] :]
    return _header_block(head), rest


def _header_block(head: bytes) -> CIMultiDict[str]:
    """The headers of a header block (without the empty line that ends it)."""
    block = _HEADER_BLOCKS.get(head)
    if block is not None:
        return CIMultiDict(block)
    if not head.isascii():
        return CIMultiDict(_header_pairs(head))
    pairs: list[tuple[str, str]] = []
    known = _HEADER_LINES
    for line in head.decode("ascii").split("\n"):
        pair = known.get(line)
        if pair is None:
            pair = _header_line(line)
            if pair is None:
                continue
        pairs.append(pair)
    if len(head) <= 1024 and len(_HEADER_BLOCKS) < 1024:
        _HEADER_BLOCKS[head] = tuple(pairs)
    return CIMultiDict(pairs)


#: ASCII header blocks seen before -> their (name, value) pairs: the inner requests of a
#: change set often repeat one block (all but the Content-ID of the MIME headers).
#: Bounded in count and size.
_HEADER_BLOCKS: dict[bytes, tuple[tuple[str, str], ...]] = {}


#: ASCII header lines seen before (as split at LF) -> (name, value): the parts of a
#: batch repeat the same lines. Bounded in count and line length.
_HEADER_LINES: dict[str, tuple[str, str]] = {}


def _header_line(line: str) -> tuple[str, str] | None:
    """One ASCII header line (a trailing CR dropped): its (name, value) trimmed, or None
    for a blank line; remembered in :data:`_HEADER_LINES`."""
    text = line.rstrip("\r")
    if not text:
        return None
    name, sep, value = text.partition(":")
    name = name.strip(_WS)
    if not sep or not name:
        raise _malformed("bad header line")
    pair = (name, value.strip(_WS))
    if len(line) <= 256 and len(_HEADER_LINES) < 4096:
        _HEADER_LINES[line] = pair
    return pair


def _content_type(headers: CIMultiDict[str]) -> str:
    value = headers.get("Content-Type", "")
    media = _MEDIA_TYPES.get(value)
    if media is None:
        media = value.split(";")[0].strip().lower()
        if len(_MEDIA_TYPES) < 256 and len(value) <= 256:
            _MEDIA_TYPES[value] = media
    return media


#: Content-Type values seen before -> their media type, lower case (bounded).
_MEDIA_TYPES: dict[str, str] = {}


def _mime_head(blob: bytes) -> tuple[str, str | None, bytes]:
    """``(media type, Content-ID or None, rest)`` of a part's MIME header block and what
    follows it: what :func:`_headers_and_rest` and :func:`_content_type` make of it, the
    pair remembered per header block (a change set's parts repeat theirs but for the
    Content-ID), so that no header dictionary is built for a block seen before."""
    head = b""
    rest_at = -1
    if not blob.startswith((b"\r\n", b"\n")):
        bounds = _header_end(blob)
        if bounds is not None:
            head, rest_at = blob[: bounds[0]], bounds[1]
            known = _MIME_HEADS.get(head)
            if known is not None:
                return known[0], known[1], blob[rest_at:]
    headers, rest = _headers_and_rest(blob)
    media, content_id = _content_type(headers), headers.get("Content-ID")
    if rest_at >= 0 and len(head) <= 1024 and len(_MIME_HEADS) < 1024:
        _MIME_HEADS[head] = (media, content_id)
    return media, content_id, rest


#: MIME header blocks seen before -> (media type, Content-ID or None) (bounded).
_MIME_HEADS: dict[bytes, tuple[str, str | None]] = {}


def _http_part(mime_headers: CIMultiDict[str], blob: bytes) -> BatchPart:
    return _http_request(_content_type(mime_headers), mime_headers.get("Content-ID"), blob)


def _strict_block(block: bytes) -> bool:
    """Whether a header block (without its final CRLF) is lines ended by CRLF that hold no
    other CR or LF, the first not empty: where the general reading finds the block's end
    exactly at the first CRLF CRLF."""
    return (
        bool(block)
        and block[:1] not in (b"\r", b"\n")
        and block.count(b"\r") == block.count(b"\n") == block.count(b"\r\n")
    )


#: A remembered inner header block: its (name, value) pairs and the read-only headers
#: made of them once, which every part read from the block shares.
_Block = tuple[tuple[tuple[str, str], ...], CIMultiDictProxy[str]]

#: Strict MIME header blocks seen before (see :func:`_strict_block`) -> (media type,
#: Content-ID or None); strict inner header blocks -> their (name, value) pairs; request
#: lines -> (method, target). Only what read without error is remembered. Bounded.
_STRICT_MIME: dict[bytes, tuple[str, str | None]] = {}
_STRICT_BLOCKS: dict[bytes, _Block] = {}
_REQUEST_LINES: dict[bytes, tuple[str, str]] = {}


def _change_set_part(blob: bytes) -> BatchPart:
    """One part of a change set: what ``_http_request(*_mime_head(blob))`` returns (or
    raises). A part whose header blocks are strict (:func:`_strict_block`) and seen before,
    and whose request line was read before, is read with a few ``find`` calls and lookups;
    any other by the general reading."""
    at = blob.find(b"\r\n\r\n")
    known = _STRICT_MIME.get(blob[:at]) if at > 0 else None
    if known is None:
        return _learn_part(blob)
    line_at = at + 4
    line_end = blob.find(b"\r\n", line_at)
    request = _REQUEST_LINES.get(blob[line_at:line_end]) if line_end >= 0 else None
    if request is None:
        return _learn_part(blob)
    start = line_end + 2
    if blob.startswith(b"\r\n", start):
        pairs, headers = _NO_HEADERS
        start += 2
    else:
        end = blob.find(b"\r\n\r\n", start)
        known_block = _STRICT_BLOCKS.get(blob[start:end]) if end >= 0 else None
        if known_block is None:
            return _learn_part(blob)
        pairs, headers = known_block
        start = end + 4
    length_text = headers.get("Content-Length")
    if length_text is not None:
        length = _LENGTHS.get(length_text, -1)
        if length < 0:
            length = _content_length(length_text)
        if length > len(blob) - start:
            raise _malformed("Content-Length beyond the part")
        body = blob[start : start + length]
    else:
        body = blob[start:]
        if not body.strip():
            body = b""
    content_id = known[1] or headers.get("Content-ID")
    return BatchPart(request[0], request[1], headers, body, content_id, pairs)


#: An empty inner header block.
_NO_HEADERS: _Block = ((), CIMultiDictProxy(CIMultiDict()))


def _learn_part(blob: bytes) -> BatchPart:
    """A part read the general way; its strict blocks and request line then remembered."""
    part = _http_request(*_mime_head(blob))
    at = blob.find(b"\r\n\r\n")
    mime = blob[:at]
    if at <= 0 or not _strict_block(mime) or len(_STRICT_MIME) >= 1024 or len(mime) > 1024:
        return part
    line_at = at + 4
    line_end = blob.find(b"\r\n", line_at)
    line = blob[line_at:line_end]
    if line_end < 0 or b"\n" in line or b"\r" in line:
        return part
    start = line_end + 2
    block = None
    if not blob.startswith(b"\r\n", start):
        end = blob.find(b"\r\n\r\n", start)
        block = blob[start:end]
        if end < 0 or not _strict_block(block) or len(block) > 1024:
            return part
    # The general reading succeeded on these very blocks and line: remember what it read.
    media, content_id = _mime_head(blob)[:2]
    _STRICT_MIME[mime] = (media, content_id)
    if len(line) <= 1024 and len(_REQUEST_LINES) < 1024:
        _REQUEST_LINES[line] = (part.method, part.target)
    if block is not None and len(_STRICT_BLOCKS) < 1024:
        pairs = tuple(part.headers.items())
        _STRICT_BLOCKS[block] = (pairs, CIMultiDictProxy(CIMultiDict(pairs)))
    return part


def _content_length(text: str) -> int:
    """A part's Content-Length value (400 when malformed), remembered in :data:`_LENGTHS`."""
    if not _LENGTH_RE.fullmatch(text.strip()):
        raise _malformed("bad Content-Length")
    length = int(text.strip())
    if len(_LENGTHS) < 4096 and len(text) <= 24:
        _LENGTHS[text] = length
    return length


def _http_request(media: str, mime_content_id: str | None, blob: bytes) -> BatchPart:
    """The inner request of a part whose MIME headers gave ``media`` and
    ``mime_content_id`` (the part's Content-ID when not empty, else the inner one's)."""
    if media != "application/http":
        raise _malformed("part is not application/http")
    # the request line
    found = _request_line(blob)
    if found is None:
        raise _malformed("missing request line")
    try:
        line = found[0].decode("utf-8").strip()
    except UnicodeDecodeError:
        raise _malformed("bad request line") from None
    pieces = line.split(" ")
    if len(pieces) != 3 or not pieces[2].startswith("HTTP/"):
        raise _malformed("bad request line")
    method, target = pieces[0].upper(), pieces[1]
    headers, rest = _headers_and_rest(blob[found[1] :])
    length_text = headers.get("Content-Length")
    if length_text is not None:
        length = _LENGTHS.get(length_text, -1)
        if length < 0:
            length = _content_length(length_text)
        if length > len(rest):
            raise _malformed("Content-Length beyond the part")
        body = rest[:length]
    else:
        body = rest if rest.strip() else b""
    content_id = mime_content_id or headers.get("Content-ID")
    return BatchPart(method, target, headers, body, content_id)


def parse_batch(body: bytes, content_type: str | None) -> ParsedBatch:
    """Parse a ``$batch`` request body (400 InvalidInput when malformed).

    One change set (any number of operations, none included) or one query part; a
    second change set or a query beside a change set is refused.

    Example::

        >>> parse_batch(b"--b\\n--b--\\n", "multipart/mixed; boundary=b")
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 InvalidInput: One of the request inputs is not valid.
    """
    outer = _split(body, boundary_of(content_type))
    if len(outer) != 1:
        raise _malformed("a batch must hold exactly one change set or one query")
    mime_headers, rest = _headers_and_rest(outer[0])
    ctype = mime_headers.get("Content-Type")
    if _content_type(mime_headers) == "multipart/mixed":
        inner = _split(rest, boundary_of(ctype))
        parts = []
        for blob in inner:
            parts.append(_change_set_part(blob))
        # An empty change set is no error: the service answers it with an empty
        # change-set answer (recorded 2017; docs/stub.md "Fidelity decisions").
        for p in parts:
            if p.method == "GET":
                raise _malformed("a query cannot be part of a change set")
        return ParsedBatch(parts, changeset=True)
    part = _http_part(mime_headers, rest)
    if part.method != "GET":
        raise _malformed("write operations must be inside a change set")
    return ParsedBatch([part], changeset=False)


# --- building ---------------------------------------------------------------------


@dataclass(slots=True)
class PartResponse:
    """One inner HTTP response of a batch response.

    Example::

        >>> PartResponse(204, []).body
        b''
    """

    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""


def _status_line(status: int) -> bytes:
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Unknown"
    return f"HTTP/1.1 {status} {reason}".encode("ascii")


#: What every part of a batch response starts with, by status (the line is looked up once).
_PART_HEADS: dict[int, str] = {}


def _part_head(status: int) -> str:
    head = _PART_HEADS.get(status)
    if head is None:
        head = (
            "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
            + _status_line(status).decode("ascii")
            + "\r\n"
        )
        if len(_PART_HEADS) < 1024:
            _PART_HEADS[status] = head
    return head


def _part_bytes(resp: PartResponse) -> bytes:
    text = [_part_head(resp.status)]
    for name, value in resp.headers:
        text += (name, ": ", value, "\r\n")
    text.append("\r\n")
    return "".join(text).encode() + resp.body + _CRLF


def part_head(status: int, headers: Sequence[tuple[str, str]]) -> str:
    """The text an encoded part starts with: its MIME headers, its status line and
    ``headers``, each line ended (more header lines, a blank line and the body follow).

    Example::

        >>> part_head(204, [("ETag", "x")]).splitlines()[-2:]
        ['HTTP/1.1 204 No Content', 'ETag: x']
    """
    return _part_head(status) + "".join(f"{name}: {value}\r\n" for name, value in headers)


def build_response(
    responses: Sequence[PartResponse | bytes | str], *, changeset: bool
) -> tuple[str, bytes]:
    """The ``(Content-Type, body)`` of a batch response.

    ``changeset``: wrap the parts in a ``changesetresponse_`` (write batches); a query
    batch's single part sits directly in the ``batchresponse_``. A part given as bytes
    is already encoded (as a :class:`PartResponse` encodes: :func:`part_head`, the
    remaining header lines, a blank line, the body, CRLF); a part given as text is those
    bytes' UTF-8 text (a change set of text parts is encoded at once).

    Example::

        >>> ctype, body = build_response([PartResponse(204, [])], changeset=True)
        >>> ctype.startswith("multipart/mixed; boundary=batchresponse_")
        True
    """
    batch_b = f"batchresponse_{new_guid()}".encode("ascii")
    if changeset and all(type(resp) is str for resp in responses):
        return _text_change_set(batch_b.decode("ascii"), responses)  # type: ignore[arg-type]
    out = bytearray()
    if changeset:
        cs_b = f"changesetresponse_{new_guid()}".encode("ascii")
        out += b"--" + batch_b + _CRLF
        out += b"Content-Type: multipart/mixed; boundary=" + cs_b + _CRLF + _CRLF
        for resp in responses:
            out += b"--" + cs_b + _CRLF
            out += _encoded(resp)
        out += b"--" + cs_b + b"--" + _CRLF
    else:
        for resp in responses:
            out += b"--" + batch_b + _CRLF
            out += _encoded(resp)
    out += b"--" + batch_b + b"--" + _CRLF
    return f"multipart/mixed; boundary={batch_b.decode('ascii')}", bytes(out)


def _encoded(resp: PartResponse | bytes | str) -> bytes:
    if isinstance(resp, bytes):
        return resp
    if isinstance(resp, str):
        return resp.encode()
    return _part_bytes(resp)


def _text_change_set(batch_b: str, texts: Sequence[str]) -> tuple[str, bytes]:
    """:func:`build_response` of a change set whose parts are all text: one join, one
    encode (the same bytes as encoding part by part)."""
    cs_b = f"changesetresponse_{new_guid()}"
    delimiter = "--" + cs_b + "\r\n"
    pieces = ["--" + batch_b + "\r\nContent-Type: multipart/mixed; boundary=" + cs_b + "\r\n\r\n"]
    for text in texts:
        pieces.append(delimiter)
        pieces.append(text)
    pieces.append("--" + cs_b + "--\r\n--" + batch_b + "--\r\n")
    return "multipart/mixed; boundary=" + batch_b, "".join(pieces).encode()
