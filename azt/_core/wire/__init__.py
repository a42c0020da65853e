"""Client-side wire formats: sans-I/O encoders and decoders (values to bytes and back).

One module per format: ``urls`` (paths and query strings), ``json`` (OData JSON),
``atom`` (AtomPub), ``batch`` (multipart transactions) and ``xml`` (storage XML: access
policies, service properties and stats). Encoders raise :class:`azt.ValidationError` for
input the service would refuse; decoders raise :class:`WireDecodeError` for a body that
does not parse. This package also holds the strict Binary and Guid readers they share.
"""

from __future__ import annotations

import binascii
import uuid

from azt._errors import AztError

__all__ = ["WireDecodeError", "decode_base64", "decode_guid"]


def decode_base64(text: str) -> bytes:
    """An ``Edm.Binary`` wire value: standard base64 with padding, read strictly (a lenient
    decoder skips characters outside the alphabet and would read a Guid or a DateTime text
    as bytes). Every decoder of binary values (JSON, AtomPub, the entity codecs) uses it,
    so that all paths accept and refuse the same texts. Raises ``binascii.Error``.

    Example::

        >>> decode_base64("AAEC/w==")
        b'\\x00\\x01\\x02\\xff'
        >>> decode_base64("AA E=")
        Traceback (most recent call last):
        ...
        binascii.Error: Only base64 data is allowed
    """
    return _a2b_base64(text, strict_mode=True)


_a2b_base64 = binascii.a2b_base64


def decode_guid(text: str) -> uuid.UUID:
    """An ``Edm.Guid`` wire value: exactly the canonical 8-4-4-4-12 hex form (``uuid.UUID``
    also takes braces, ``urn:uuid:`` and bare hex, and ``int`` would take a sign or ``_``
    inside a group), built without ``uuid.UUID``'s parsing. Every decoder of Guid values
    uses it. Raises ``ValueError``.

    Example::

        >>> decode_guid("c9da6455-213d-42c9-9a79-3e9149a57833")
        UUID('c9da6455-213d-42c9-9a79-3e9149a57833')
        >>> decode_guid("c9da_455-213d-42c9-9a79-3e9149a57833")
        Traceback (most recent call last):
        ...
        ValueError: not an 8-4-4-4-12 GUID: 'c9da_455-213d-42c9-9a79-3e9149a57833'
    """
    # text[8:24:5]: the characters at 8, 13, 18 and 23. a2b_hex reads hex digits only (no
    # sign, "_", space or "0x", unlike int(_, 16)), and ASCII only.
    if len(text) == 36 and text[8:24:5] == "----":
        digits = text.replace("-", "")
        if len(digits) == 32:
            try:
                n = _from_bytes(_a2b_hex(digits))
            except ValueError:  # (binascii.Error is one)
                pass
            else:
                u = _new_uuid(_UUID)
                _set_uuid_int(u, n)
                _set_uuid_safe(u, _SAFE_UNKNOWN)
                return u
    raise ValueError(f"not an 8-4-4-4-12 GUID: {text!r}")


_a2b_hex = binascii.a2b_hex
_from_bytes = int.from_bytes  # big-endian by default
_UUID = uuid.UUID
_new_uuid = object.__new__
_set_uuid_int = _UUID.__dict__["int"].__set__
_set_uuid_safe = _UUID.__dict__["is_safe"].__set__
_SAFE_UNKNOWN = uuid.SafeUUID.unknown


class WireDecodeError(AztError, ValueError):
    """A response body did not have the shape the protocol promises.

    Example::

        >>> from azt._core.wire.json import decode_feed
        >>> try:
        ...     decode_feed(b"not json")
        ... except WireDecodeError as exc:
        ...     print(type(exc).__name__)
        WireDecodeError
    """
