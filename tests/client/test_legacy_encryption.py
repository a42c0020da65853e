"""Client-side encryption of ``azt.legacy`` (the ``legacy-encryption`` extra) in the
retired Python SDK's format: round trips, the stored form checked by hand against the
format, the legacy refusals, and interoperation both ways with the real
azure-cosmosdb-table 1.0.6 (``tests/peers/legacy_encryption/real_sdk.py``, run with the
legacy venv's interpreter: ``$LEGACY_VENV``, default ``.cache/legacy-venv``, which
``scripts/test-legacy-peer.sh`` creates; in CI a missing venv fails the test).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher
from cryptography.hazmat.primitives.ciphers.algorithms import AES
from cryptography.hazmat.primitives.ciphers.modes import CBC
from cryptography.hazmat.primitives.hashes import SHA256, Hash
from cryptography.hazmat.primitives.keywrap import aes_key_unwrap, aes_key_wrap
from cryptography.hazmat.primitives.padding import PKCS7

from azt.legacy import AzureException, EdmType, EntityProperty, TableBatch, TableService
from azt.legacy.cosmosdb_table.common.retry import no_retry
from azt_server_stub import ThreadedStubServer

REAL_SDK = Path(__file__).resolve().parents[1] / "peers" / "legacy_encryption" / "real_sdk.py"
_ROOT = Path(__file__).resolve().parents[2]
#: scripts/test.sh makes the legacy venv in .cache/legacy-venv and exports LEGACY_VENV.
LEGACY_PYTHON = (
    Path(os.environ.get("LEGACY_VENV", str(_ROOT / ".cache" / "legacy-venv"))) / "bin" / "python"
)
KEK_BYTES = bytes(range(32))  # the same key as real_sdk.py


class KeyWrapper:
    """A256KW under ``KEK_BYTES`` (the legacy SDK's key-encryption-key interface)."""

    def __init__(self, kid: str = "key1") -> None:
        self.kid = kid

    def wrap_key(self, key: bytes, algorithm: str = "A256KW") -> bytes:
        return aes_key_wrap(KEK_BYTES, key)

    def unwrap_key(self, key: bytes, algorithm: str) -> bytes:
        return aes_key_unwrap(KEK_BYTES, key)

    def get_key_wrap_algorithm(self) -> str:
        return "A256KW"

    def get_kid(self) -> str:
        return self.kid


@pytest.fixture(scope="module")
def stub() -> Iterator[ThreadedStubServer]:
    with ThreadedStubServer() as server:
        yield server


@pytest.fixture
def service(stub: ThreadedStubServer) -> Iterator[TableService]:
    with TableService(connection_string=stub.connection_string) as svc:
        svc.retry = no_retry
        yield svc


@pytest.fixture
def table(service: TableService) -> str:
    name = "enc" + uuid.uuid4().hex[:12]
    service.create_table(name)
    return name


def _person(rk: str) -> dict[str, object]:
    return {
        "PartitionKey": "enc",
        "RowKey": rk,
        "sex": EntityProperty(EdmType.STRING, "male", True),
        "name": "John Doe",
        "age": 39,
    }


def test_round_trip_insert_replace_batch_and_query(service: TableService, table: str) -> None:
    service.key_encryption_key = KeyWrapper()
    service.encryption_resolver_function = lambda pk, rk, name: name == "name"
    service.insert_entity(table, _person("a"))
    with service.batch(table) as batch:
        batch.insert_entity(_person("b"))
    service.update_entity(table, {**_person("a"), "sex": EntityProperty(EdmType.STRING, "x", True)})
    got = service.get_entity(table, "enc", "a")
    assert (got.sex, got.name, got.age) == ("x", "John Doe", 39)
    assert "_ClientEncryptionMetadata1" not in got
    rows = list(service.query_entities(table, select="PartitionKey,RowKey,sex"))
    assert [(r.RowKey, r.sex) for r in rows] == [("a", "x"), ("b", "male")]
    assert all("_ClientEncryptionMetadata2" not in r for r in rows)


def test_the_stored_form_is_the_legacy_format(service: TableService, table: str) -> None:
    service.key_encryption_key = KeyWrapper()
    service.insert_entity(table, _person("r"))
    service.key_encryption_key = None
    stored = service.get_entity(table, "enc", "r")  # read without decrypting
    assert stored.sex.type == EdmType.BINARY
    assert stored.name == "John Doe"
    meta = json.loads(stored["_ClientEncryptionMetadata1"])
    assert meta["EncryptionAgent"] == {"Protocol": "1.0", "EncryptionAlgorithm": "AES_CBC_256"}
    assert (meta["WrappedContentKey"]["KeyId"], meta["WrappedContentKey"]["Algorithm"]) == (
        "key1",
        "A256KW",
    )
    cek = aes_key_unwrap(KEK_BYTES, _b64(meta["WrappedContentKey"]["EncryptedKey"]))
    entity_iv = _b64(meta["ContentEncryptionIV"])

    def decrypt(name: str, data: bytes) -> str:
        digest = Hash(SHA256())
        digest.update(entity_iv + ("r" + "enc" + name).encode("utf-8"))
        decryptor = Cipher(AES(cek), CBC(digest.finalize()[:16])).decryptor()
        unpadder = PKCS7(128).unpadder()
        padded = decryptor.update(data) + decryptor.finalize()
        return (unpadder.update(padded) + unpadder.finalize()).decode("utf-8")

    listing = stored["_ClientEncryptionMetadata2"].value
    assert json.loads(decrypt("_ClientEncryptionMetadata2", listing)) == ["sex"]
    assert decrypt("sex", stored.sex.value) == "male"


def _b64(text: str) -> bytes:
    return base64.b64decode(text)


def test_the_legacy_refusals(service: TableService, table: str) -> None:
    service.key_encryption_key = KeyWrapper()
    service.insert_entity(table, _person("r"))
    with pytest.raises(ValueError, match="not supported for this method"):
        service.merge_entity(table, _person("r"))
    with pytest.raises(ValueError, match="only supported for not None strings"):
        service.insert_entity(table, {**_person("s"), "n": EntityProperty(EdmType.INT32, 1, True)})
    with pytest.raises(ValueError, match="Encryption required"):
        TableBatch(require_encryption=True).insert_entity(_person("t"))
    service.key_encryption_key = KeyWrapper("another")
    with pytest.raises(AzureException, match="Decryption failed"):
        service.get_entity(table, "enc", "r")
    service.key_encryption_key = None
    service.require_encryption = True
    with pytest.raises(AzureException, match="Decryption failed"):
        service.get_entity(table, "enc", "r")
    incomplete = KeyWrapper()
    incomplete.wrap_key = None  # type: ignore[assignment,method-assign]
    service.key_encryption_key = incomplete
    with pytest.raises(AttributeError, match="wrap_key"):
        service.insert_entity(table, _person("u"))


def _real_sdk(action: str, conn: str, table: str) -> str:
    if not LEGACY_PYTHON.exists():
        if os.environ.get("CI") == "true" and os.environ.get("AZT_SKIP_LEGACY_PEERS") != "1":
            pytest.fail(f"CI: no legacy venv at {LEGACY_PYTHON}: the interop check must run")
        pytest.skip(f"no legacy venv at {LEGACY_PYTHON} (scripts/test-legacy-peer.sh makes it)")
    done = subprocess.run(
        [str(LEGACY_PYTHON), str(REAL_SDK), action, conn, table],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_azt_reads_what_the_real_sdk_encrypted(
    stub: ThreadedStubServer, service: TableService, table: str
) -> None:
    _real_sdk("write", stub.connection_string, table)
    service.key_encryption_key = KeyWrapper()
    service.require_encryption = True
    one = service.get_entity(table, "enc", "real-1")
    assert (one.sex, one.name, one.age, one.note) == ("female", "Ada Lovelace", 36, "plain")
    two = service.get_entity(table, "enc", "real-2")
    assert (two.name, two.age) == ("Grace Hopper", 85)
    service.key_encryption_key = None
    service.require_encryption = False
    assert service.get_entity(table, "enc", "real-1").name.type == EdmType.BINARY


def test_the_real_sdk_reads_what_azt_encrypted(
    stub: ThreadedStubServer, service: TableService, table: str
) -> None:
    service.key_encryption_key = KeyWrapper()
    service.encryption_resolver_function = lambda pk, rk, name: name == "name"
    service.insert_entity(table, _person("azt-1"))
    with service.batch(table) as batch:
        batch.insert_or_replace_entity({**_person("azt-2"), "name": "Jane Roe"})
    lines = _real_sdk("read", stub.connection_string, table).splitlines()
    rows = [json.loads(line) for line in lines]
    assert [(r["RowKey"], r["sex"], r["name"], r["age"]) for r in rows] == [
        ("azt-1", "male", "John Doe", 39),
        ("azt-2", "male", "Jane Roe", 39),
    ]
