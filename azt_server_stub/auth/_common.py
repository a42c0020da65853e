"""Shared pieces of stub authentication: signing, time parsing, account names."""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import hashlib
import hmac
import re
from collections.abc import Container, Sequence
from email.utils import parsedate_to_datetime

SECONDARY_SUFFIX = "-secondary"


def sign(key: bytes, string_to_sign: str) -> str:
    """Base64(HMAC-SHA256(key, UTF-8(string_to_sign))), the signature of every key scheme."""
    message = string_to_sign.encode("utf-8", "surrogateescape")
    digest = hmac.new(key, message, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


_SHA256_BLOCK = 64
_INNER_PAD = bytes(x ^ 0x36 for x in range(256))
_OUTER_PAD = bytes(x ^ 0x5C for x in range(256))


def _keyed_sha256(key: bytes) -> tuple[hashlib._Hash, hashlib._Hash]:
    """The inner and outer SHA-256 states of HMAC under ``key`` (RFC 2104), keyed once."""
    if len(key) > _SHA256_BLOCK:
        key = hashlib.sha256(key).digest()
    key = key.ljust(_SHA256_BLOCK, b"\0")
    return hashlib.sha256(key.translate(_INNER_PAD)), hashlib.sha256(key.translate(_OUTER_PAD))


class Signer:
    """HMAC-SHA256 with pre-keyed state per account key (saves the key schedule per request).

    The HMAC construction is spelled out over two pre-keyed SHA-256 states (what
    ``hmac.HMAC`` does inside, without its Python-level ``copy``/``update``/``digest``
    layers); :func:`sign` is the reference it equals.
    """

    __slots__ = ("_states",)

    def __init__(self, keys: Sequence[bytes]) -> None:
        self._states = [_keyed_sha256(key) for key in keys]

    def matches(self, string_to_sign: str, signature: str) -> bool:
        """Whether ``signature`` equals the signature of ``string_to_sign`` under any key.

        Every key is tried (no early exit on the comparison itself), and each comparison
        is constant-time. Query values that were not UTF-8 reach here as surrogate
        escapes (``handlers.parse_query``); they are signed as the bytes the client sent.
        """
        given = signature.encode("utf-8", "surrogateescape")
        message = string_to_sign.encode("utf-8", "surrogateescape")
        ok = False
        for inner, outer in self._states:
            state = inner.copy()
            state.update(message)
            final = outer.copy()
            final.update(state.digest())
            ok |= hmac.compare_digest(binascii.b2a_base64(final.digest(), newline=False), given)
        return ok


def primary_account(account: str, known: Container[str]) -> tuple[str, bool]:
    """``(primary name, is_secondary)`` for an addressed account name.

    ``known`` supports ``in``; ``name-secondary`` maps to ``name`` unless the full name
    is itself a known account.
    """
    if account.endswith(SECONDARY_SUFFIX) and account not in known:
        return account[: -len(SECONDARY_SUFFIX)], True
    return account, False


_MONTHS = {
    name: number
    for number, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}


_WEEKDAYS = frozenset({"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"})


#: The last date parsed and its moment: a client sends the same x-ms-date for a whole
#: second (a lone pair, replaced whole, so concurrent threads see a consistent entry).
_last_date: tuple[str, _dt.datetime | None] = ("", None)


def _parse_rfc1123(value: str) -> _dt.datetime | None:
    """The form every client sends, ``Mon, 27 Jun 2016 15:25:14 GMT``, read by slicing;
    None for anything else (then the general parser decides)."""
    if (
        len(value) != 29
        or value[3:5] != ", "
        or value[7] != " "
        or value[11] != " "
        or value[16] != " "
        or value[19] != ":"
        or value[22] != ":"
        or value[25:] != " GMT"
        or value[:3] not in _WEEKDAYS
    ):
        return None
    month = _MONTHS.get(value[8:11])
    digits = value[5:7] + value[12:16] + value[17:19] + value[20:22] + value[23:25]
    if month is None or not (digits.isascii() and digits.isdigit()):
        return None
    year = int(value[12:16])
    if year < 100:  # the general parser reads these as two-digit years (0099: 1999)
        return None
    try:
        return _dt.datetime(
            year,
            month,
            int(value[5:7]),
            int(value[17:19]),
            int(value[20:22]),
            int(value[23:25]),
            tzinfo=_dt.UTC,
        )
    except ValueError:
        return None


def _parse_http_date_general(value: str) -> _dt.datetime | None:
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    return moment


def parse_http_date(value: str) -> _dt.datetime | None:
    """Parse an RFC 1123 date (``Mon, 27 Jun 2016 15:25:14 GMT``); None when malformed.

    The exact RFC 1123 GMT form is read directly (and the last value is remembered);
    any other text goes to :func:`email.utils.parsedate_to_datetime`, which decides.
    """
    global _last_date
    last = _last_date
    if value == last[0]:
        return last[1]
    moment = _parse_rfc1123(value)
    if moment is None:
        moment = _parse_http_date_general(value)
    _last_date = (value, moment)
    return moment


_ISO_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})"
    r"(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,7}))?)?(Z|[+-]\d{2}:\d{2}))?$"
)


def parse_sas_time(value: str) -> _dt.datetime | None:
    """Parse a SAS ``st``/``se`` value; None when malformed.

    Accepted: ``YYYY-MM-DD`` (midnight UTC), ``YYYY-MM-DDThh:mmZ``,
    ``YYYY-MM-DDThh:mm:ssZ``, with up to seven fractional second digits, and a
    ``+hh:mm``/``-hh:mm`` offset instead of ``Z``.
    """
    m = _ISO_RE.match(value)
    if m is None:
        return None
    try:
        year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if m.group(4) is None:
            return _dt.datetime(year, month, day, tzinfo=_dt.UTC)
        frac = (m.group(7) or "").ljust(6, "0")[:6]
        moment = _dt.datetime(
            year,
            month,
            day,
            int(m.group(4)),
            int(m.group(5)),
            int(m.group(6) or 0),
            int(frac),
            tzinfo=_dt.UTC,
        )
    except ValueError:
        return None
    zone = m.group(8)
    if zone != "Z":
        sign_ = 1 if zone[0] == "+" else -1
        offset = _dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        moment -= sign_ * offset
    return moment


def http_date(moment: _dt.datetime) -> str:
    """Format a moment as an RFC 1123 GMT date (for error details)."""
    return moment.astimezone(_dt.UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")
