"""Stands in for the legacy SDK's private ``azure.cosmosdb.table._error`` (its tests compare
a message with ``_ERROR_UNSUPPORTED_TYPE_FOR_ENCRYPTION``).

Example::

    >>> _ERROR_UNSUPPORTED_TYPE_FOR_ENCRYPTION
    'Encryption is only supported for not None strings.'
"""

from azt.legacy._encryption import ERROR_UNSUPPORTED_TYPE_FOR_ENCRYPTION

_ERROR_UNSUPPORTED_TYPE_FOR_ENCRYPTION = ERROR_UNSUPPORTED_TYPE_FOR_ENCRYPTION

__all__ = ["_ERROR_UNSUPPORTED_TYPE_FOR_ENCRYPTION"]
