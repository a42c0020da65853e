"""Stands in for the legacy SDK's private ``azure.cosmosdb.table.common._encryption``
(its tests import ``_dict_to_encryption_data`` and ``_generate_AES_CBC_cipher``).

Example::

    data = _dict_to_encryption_data(json.loads(entity["_ClientEncryptionMetadata1"]))
"""

from azt.legacy._encryption import aes_cbc_cipher, dict_to_encryption_data

_dict_to_encryption_data = dict_to_encryption_data
_generate_AES_CBC_cipher = aes_cbc_cipher

__all__ = ["_dict_to_encryption_data", "_generate_AES_CBC_cipher"]
