"""The usual answer to an entity group transaction that succeeded, read fast:
:func:`change_set_outcome` gives each operation's status and ETag, or ``None`` for
anything else, which :func:`azt._core.wire.batch.decode_batch_response` reads.

Example::

    outcome = change_set_outcome(resp.headers["Content-Type"], resp.body)
    if outcome is None:
        parts = decode_batch_response(resp.headers["Content-Type"], resp.body)
"""

from __future__ import annotations

from typing import Final

from azt._core.wire import WireDecodeError
from azt._core.wire.batch import (
    _boundary,
    _head_lines,
    _parse_headers,
    _split_head,
    _split_multipart,
)

__all__ = ["change_set_outcome"]


# The usual answer to a change set that succeeded: one change set part holding one
# ``application/http`` part per operation, CRLF line ends, no folded headers. Reading only
# each part's status and ETag, in a few C-level scans per part, is ten times cheaper than
# building every part's headers; anything else (a failed operation, another layout,
# anything unusual in a head) is left to decode_batch_response.
def change_set_outcome(content_type: str, body: bytes) -> list[tuple[int, str | None]] | None:
    """``(status, ETag)`` of every part of a change set answer in which every operation
    succeeded (2xx), when it has the service's usual form; ``None`` otherwise (read it
    with :func:`~azt._core.wire.batch.decode_batch_response`). Whenever it is not ``None`` it equals
    ``[(p.status, p.headers.get("ETag")) for p in decode_batch_response(...)]``.

    Example::

        >>> body = (b"--batchresponse_1\\r\\nContent-Type: multipart/mixed; "
        ...         b"boundary=changesetresponse_2\\r\\n\\r\\n--changesetresponse_2\\r\\n"
        ...         b"Content-Type: application/http\\r\\nContent-Transfer-Encoding: binary"
        ...         b"\\r\\n\\r\\nHTTP/1.1 204 No Content\\r\\nETag: W/\\"1\\"\\r\\n\\r\\n\\r\\n"
        ...         b"--changesetresponse_2--\\r\\n--batchresponse_1--\\r\\n")
        >>> change_set_outcome("multipart/mixed; boundary=batchresponse_1", body)
        [(204, 'W/"1"')]
    """
    try:
        outer = _split_multipart(body, _boundary(content_type))
        if len(outer) != 1:
            return None
        head, rest = _split_head(outer[0])
        ctype = _parse_headers(_head_lines(head)).get("Content-Type", "")
        if not ctype.lower().startswith("multipart/"):
            return None
        marker = b"--" + _boundary(ctype).encode("latin-1")
    except (WireDecodeError, UnicodeEncodeError):
        return None  # decode_batch_response raises it
    # The change set split on its delimiter: accepted only as "--cs CRLF part CRLF" pieces
    # ending in the close delimiter "--cs--", where _split_multipart finds the same parts.
    pieces = rest.split(marker)
    last = pieces[-1]
    if pieces[0] or len(pieces) < 3 or not (last == b"--" or last.startswith(b"--\r\n")):
        return None
    out: list[tuple[int, str | None]] = []
    append = out.append
    heads = _PLAIN_PART_HEADS
    signatures = _PLAIN_SIGNATURES
    table = _SIGNATURE_BYTES
    statuses = _STATUS_2XX
    # The previous part's CRLF, MIME head and the blank line after it: a plain head holds
    # no blank line and ends in no line break, so a piece starting with it has its head end
    # there (where the search for the first CRLF CRLF would find it).
    last_head = b""
    # the previous part's raw ETag value and its text (the parts of one answer mostly
    # carry the same ETag: one Timestamp per transaction)
    last_raw = b""
    last_etag = ""
    for k in range(1, len(pieces) - 1):
        piece = pieces[k]
        # piece: CRLF, MIME head, CRLF CRLF, status line and headers, CRLF CRLF, body, CRLF
        if last_head and piece.startswith(last_head):
            i = len(last_head)
        else:
            if not piece.startswith(b"\r\n"):
                return None
            i = piece.find(b"\r\n\r\n", 2)
            if i <= 2 or (piece[2:i] not in heads and not _plain_part_head(piece[2:i])):
                return None
            i += 4
            last_head = piece[:i]
        if piece.endswith(b"\r\n\r\n\r\n") and len(piece) - 6 >= i:
            # No body: the HTTP head ends where the piece's last six bytes begin (were an
            # earlier CRLF CRLF the head's end, the head taken here would end in a line
            # break or hold an empty line, and its signature would not be found plain).
            http = piece[i:-6]
        else:
            if not piece.endswith(b"\r\n"):
                return None
            j = piece.find(b"\r\n\r\n", i)
            if j < 0 or j + 4 > len(piece) - 2:
                return None
            http = piece[i:j]
        status = statuses.get(http[:13])
        if status is None:
            return None  # not 2xx (or not a status line the general parser reads the same)
        signature = http.translate(None, table)
        if signature not in signatures and not _plain_signature(signature):
            return None
        # "etag" in any case exactly once in a head with an ETag line (the last one, looked
        # for from the end), never in one without: anything else is the general parser's.
        start = http.rfind(b"\r\nETag:")
        if start < 0:
            if b"etag" in http.lower():
                return None
            append((status, None))
            continue
        if http.lower().count(b"etag") != 1:
            return None
        end = http.find(b"\r\n", start + 7)
        raw = http[start + 7 : end] if end >= 0 else http[start + 7 :]
        if raw != last_raw:
            last_raw = raw
            last_etag = raw.decode("utf-8", "replace").strip()
        append((status, last_etag))
    return out


#: the status lines' starts this reader takes, and their codes: "HTTP/1.1 2", two ASCII
#: digits and a space
_STATUS_2XX: Final = {b"HTTP/1.1 %d " % code: code for code in range(200, 300)}
#: MIME heads of parts found plain (not multipart, every line a header): a service writes
#: the same one or few heads in every part of every answer
_PLAIN_PART_HEADS: set[bytes] = set()
#: every byte but the colon, CR, LF, space and tab: what stays of a part's HTTP head (its
#: "signature") shows its line structure in a few bytes, the same in every part
_SIGNATURE_BYTES: Final = bytes(b for b in range(256) if b not in b":\r\n \t")
#: signatures found plain (see _plain_signature)
_PLAIN_SIGNATURES: set[bytes] = set()


def _plain_part_head(head: bytes) -> bool:
    """Whether ``head`` is the MIME head of an ``application/http`` part (not a nested
    multipart), every line break a CRLF, every line a header (not folded); remembered."""
    lines = head.split(b"\r\n")
    if (
        head.count(b"\n") != len(lines) - 1
        or head.count(b"\r") != len(lines) - 1
        or any(b":" not in line or line[:1] in (b" ", b"\t") for line in lines)
    ):
        return False
    ctype = _parse_headers(_head_lines(head)).get("Content-Type", "")
    if ctype.lower().startswith("multipart/"):
        return False
    if len(_PLAIN_PART_HEADS) >= 64:
        _PLAIN_PART_HEADS.clear()
    _PLAIN_PART_HEADS.add(head)
    return True


def _plain_signature(signature: bytes) -> bool:
    """Whether the HTTP head a signature comes from is plain: every line break a CRLF (no
    bare CR or LF anywhere), at least one header line, and every header line holding a
    colon and not folded (so the general parser reads the same lines, refuses none and
    joins none); remembered."""
    lines = signature.split(b"\r\n")
    if (
        len(lines) < 2
        or signature.count(b"\n") != len(lines) - 1
        or signature.count(b"\r") != len(lines) - 1
        or any(b":" not in line or line[:1] in (b" ", b"\t") for line in lines[1:])
    ):
        return False
    if len(_PLAIN_SIGNATURES) >= 64:
        _PLAIN_SIGNATURES.clear()
    _PLAIN_SIGNATURES.add(signature)
    return True
