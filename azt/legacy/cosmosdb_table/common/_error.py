"""Stands in for the legacy SDK's private ``azure.cosmosdb.table.common._error`` (its tests
compare messages with ``_ERROR_OBJECT_INVALID`` and ``_ERROR_DECRYPTION_FAILURE``).

Example::

    >>> _ERROR_DECRYPTION_FAILURE
    'Decryption failed'
"""

from azt.legacy._encryption import ERROR_DECRYPTION_FAILURE, ERROR_OBJECT_INVALID
from azt.legacy._models import AzureException

_ERROR_OBJECT_INVALID = ERROR_OBJECT_INVALID
_ERROR_DECRYPTION_FAILURE = ERROR_DECRYPTION_FAILURE

__all__ = ["_ERROR_DECRYPTION_FAILURE", "_ERROR_OBJECT_INVALID", "AzureException"]
