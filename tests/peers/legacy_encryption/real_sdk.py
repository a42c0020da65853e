"""The real azure-cosmosdb-table 1.0.6 half of the client-side encryption interop test
(``tests/client/test_legacy_encryption.py`` runs it with the legacy venv's interpreter).

    real_sdk.py write CONN TABLE   encrypt entities "real-1" (insert) and "real-2" (batch)
    real_sdk.py read CONN TABLE    print, one JSON line each, every "azt-*" entity decrypted

The key-encryption key is AES key wrap (A256KW) under a fixed 32-byte key, id ``key1``,
the same on both sides.
"""

from __future__ import annotations

import json
import sys

from azure.cosmosdb.table import EdmType, EntityProperty, TableService
from cryptography.hazmat.primitives.keywrap import aes_key_unwrap, aes_key_wrap

KEK_BYTES = bytes(range(32))


class KeyWrapper:
    """A256KW under ``KEK_BYTES``."""

    def __init__(self, kid: str = "key1") -> None:
        self.kid = kid

    def wrap_key(self, key: bytes, algorithm: str = "A256KW") -> bytes:
        return aes_key_wrap(KEK_BYTES, key)

    def unwrap_key(self, key: bytes, algorithm: str) -> bytes:
        assert algorithm == "A256KW", algorithm
        return aes_key_unwrap(KEK_BYTES, key)

    def get_key_wrap_algorithm(self) -> str:
        return "A256KW"

    def get_kid(self) -> str:
        return self.kid


def main() -> None:
    action, conn, table = sys.argv[1:4]
    service = TableService(connection_string=conn)
    service.key_encryption_key = KeyWrapper()
    service.encryption_resolver_function = lambda pk, rk, name: name == "name"
    if action == "write":
        service.insert_entity(
            table,
            {
                "PartitionKey": "enc",
                "RowKey": "real-1",
                "sex": EntityProperty(EdmType.STRING, "female", True),
                "name": "Ada Lovelace",
                "age": 36,
                "note": "plain",
            },
        )
        with service.batch(table) as batch:
            batch.insert_entity(
                {"PartitionKey": "enc", "RowKey": "real-2", "name": "Grace Hopper", "age": 85}
            )
    elif action == "read":
        service.require_encryption = True
        for entity in service.query_entities(table, filter="RowKey ge 'azt-'"):
            out = {
                key: (value.value if hasattr(value, "value") else value)
                for key, value in entity.items()
                if key not in ("Timestamp", "etag")
            }
            print(json.dumps(out, sort_keys=True))
    else:
        raise SystemExit(f"unknown action {action!r}")


if __name__ == "__main__":
    main()
