"""Stands in for the legacy SDK's private ``azure.cosmosdb.table.common._common_conversion``
(its tests import ``_encode_base64`` from it).

Example::

    >>> _encode_base64(b"binary")
    'YmluYXJ5'
"""

from azt.legacy._wire import decode_base64, encode_base64

_encode_base64 = encode_base64
_decode_base64_to_bytes = decode_base64

__all__ = ["_decode_base64_to_bytes", "_encode_base64"]
