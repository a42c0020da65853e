"""Client-side encryption in the legacy Python Table SDK's format (protocol ``1.0``,
``AES_CBC_256``), so that entities either client encrypts the other reads.

The format (from the legacy SDK's documentation and its stored entities): a random 32-byte
content-encryption key (CEK) and 16-byte entity IV per entity; each encrypted property (a
string, marked by ``EntityProperty(..., encrypt=True)`` or chosen by an
``encryption_resolver(pk, rk, name)``) is stored as ``Edm.Binary``: AES-256-CBC with PKCS7
padding under the CEK, with the IV ``SHA256(entity_iv + (RowKey + PartitionKey +
name).utf8)[:16]``. ``_ClientEncryptionMetadata2`` holds the JSON list of encrypted
property names, encrypted the same way (its IV from the name
``_ClientEncryptionMetadata2``); ``_ClientEncryptionMetadata1`` is a JSON string with the
CEK wrapped by the user's key-encryption key (KEK: ``wrap_key(key)``,
``unwrap_key(key, algorithm)``, ``get_kid()``, ``get_key_wrap_algorithm()``), the
protocol, algorithm, entity IV (base64) and ``KeyWrappingMetadata``. Entities written by
the Java v1 library (metadata naming ``Java``, or none) use ``PartitionKey + RowKey +
name`` for the IVs and a ``[a, b]`` property list; they are read too.

It needs the ``cryptography`` package: ``pip install "azt-tables[legacy-encryption]"``. Without
it, unencrypted use of ``azt.legacy`` is unaffected and setting a key raises
:class:`~azt.legacy.AzureException` naming the extra.

Example::

    service.key_encryption_key = MyKeyWrapper("key1")   # wrap_key, unwrap_key, get_kid, ...
    service.insert_entity("people", {"PartitionKey": "p", "RowKey": "r",
                                     "ssn": EntityProperty(EdmType.STRING, "123", True)})
    service.get_entity("people", "p", "r").ssn   # '123', decrypted
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from azt import __version__ as _azt_version
from azt.legacy._models import AzureException, EdmType, Entity, EntityProperty
from azt.legacy._wire import (
    PropertyResolver,
    check_entity,
    decode_base64,
    encode_base64,
    encode_entity,
    json_entity,
)

try:
    from cryptography.hazmat.primitives.ciphers import Cipher
    from cryptography.hazmat.primitives.ciphers.algorithms import AES
    from cryptography.hazmat.primitives.ciphers.modes import CBC
    from cryptography.hazmat.primitives.hashes import SHA256, Hash
    from cryptography.hazmat.primitives.padding import PKCS7

    HAVE_CRYPTOGRAPHY = True
except ImportError:  # pragma: no cover - the optional extra is not installed
    HAVE_CRYPTOGRAPHY = False

__all__ = [
    "ERROR_DECRYPTION_FAILURE",
    "ERROR_OBJECT_INVALID",
    "ERROR_UNSUPPORTED_TYPE_FOR_ENCRYPTION",
    "EncryptionData",
    "aes_cbc_cipher",
    "dict_to_encryption_data",
    "encrypt_entity",
    "read_entity",
    "write_body",
]

PROTOCOL_V1 = "1.0"
AES_CBC_256 = "AES_CBC_256"
METADATA_1 = "_ClientEncryptionMetadata1"
METADATA_2 = "_ClientEncryptionMetadata2"

#: The legacy SDK's messages, word for word.
ERROR_OBJECT_INVALID = (
    "{0} does not define a complete interface. Value of {1} is either missing or invalid."
)
ERROR_DECRYPTION_FAILURE = "Decryption failed"
ERROR_UNSUPPORTED_TYPE_FOR_ENCRYPTION = "Encryption is only supported for not None strings."
ERROR_ENCRYPTION_REQUIRED = "Encryption required but no key was provided."
ERROR_DECRYPTION_REQUIRED = (
    "Decryption required but neither key nor resolver was provided. If you do not want to "
    "decypt, please do not set the require encryption flag."
)
ERROR_UNSUPPORTED_METHOD_FOR_ENCRYPTION = (
    "The require_encryption flag is set, but encryption is not supported for this method."
)
ERROR_UNSUPPORTED_ENCRYPTION_VERSION = "Encryption version is not supported."
ERROR_UNSUPPORTED_ENCRYPTION_ALGORITHM = "Specified encryption algorithm is not supported."
ERROR_INVALID_KID = (
    "Provided or resolved key-encryption-key does not match the id of key used to encrypt."
)
ERROR_ENTITY_NOT_ENCRYPTED = "Entity was not encrypted."
_NEEDS_EXTRA = (
    "client-side encryption needs the cryptography package: "
    'pip install "azt-tables[legacy-encryption]"'
)

EncryptionResolver = Callable[[str, str, str], bool]
KeyResolver = Callable[[str], Any]


def _require_cryptography() -> None:
    if not HAVE_CRYPTOGRAPHY:  # pragma: no cover - the optional extra is not installed
        raise AzureException(_NEEDS_EXTRA)


def aes_cbc_cipher(key: bytes, iv: bytes) -> Cipher[CBC]:
    """An AES-CBC cipher (``cryptography``) for a 32-byte key and a 16-byte IV.

    Example::

        >>> data = aes_cbc_cipher(b"k" * 32, b"i" * 16).encryptor().update(b"x" * 16)
        >>> len(data)
        16
    """
    _require_cryptography()
    return Cipher(AES(key), CBC(iv))


def _property_iv(entity_iv: bytes, pk: str, rk: str, name: str, java_v1: bool) -> bytes:
    digest = Hash(SHA256())
    keys = pk + rk if java_v1 else rk + pk
    digest.update(entity_iv + (keys + name).encode("utf-8"))
    return digest.finalize()[:16]


def _encrypt(key: bytes, iv: bytes, data: bytes) -> bytes:
    padder = PKCS7(128).padder()
    padded = padder.update(data) + padder.finalize()
    encryptor = aes_cbc_cipher(key, iv).encryptor()
    return encryptor.update(padded) + encryptor.finalize()


def _decrypt(key: bytes, iv: bytes, data: bytes) -> bytes:
    decryptor = aes_cbc_cipher(key, iv).decryptor()
    padded = decryptor.update(data) + decryptor.finalize()
    unpadder = PKCS7(128).unpadder()
    return unpadder.update(padded) + unpadder.finalize()


def _check_kek(kek: object, methods: tuple[str, ...]) -> None:
    for method in methods:
        if not callable(getattr(kek, method, None)):
            raise AttributeError(ERROR_OBJECT_INVALID.format("key encryption key", method))


# --------------------------------------------------------------------------- metadata


class WrappedContentKey:
    """The wrapped CEK of an entity: ``algorithm``, ``encrypted_key`` (bytes), ``key_id``.

    Example::

        >>> WrappedContentKey("A256KW", b"...", "key1").key_id
        'key1'
    """

    def __init__(self, algorithm: str, encrypted_key: bytes, key_id: str) -> None:
        self.algorithm = algorithm
        self.encrypted_key = encrypted_key
        self.key_id = key_id


class EncryptionAgent:
    """``protocol`` and ``encryption_algorithm`` of an encrypted entity.

    Example::

        >>> EncryptionAgent("AES_CBC_256", "1.0").protocol
        '1.0'
    """

    def __init__(self, encryption_algorithm: str, protocol: str) -> None:
        self.encryption_algorithm = str(encryption_algorithm)
        self.protocol = protocol


class EncryptionData:
    """The decoded ``_ClientEncryptionMetadata1`` of an entity.

    Example::

        data = dict_to_encryption_data(json.loads(entity["_ClientEncryptionMetadata1"]))
        cek = kek.unwrap_key(data.wrapped_content_key.encrypted_key,
                             data.wrapped_content_key.algorithm)
    """

    def __init__(
        self,
        content_encryption_IV: bytes,
        encryption_agent: EncryptionAgent,
        wrapped_content_key: WrappedContentKey,
        key_wrapping_metadata: Mapping[str, Any] | None,
    ) -> None:
        self.content_encryption_IV = content_encryption_IV
        self.encryption_agent = encryption_agent
        self.wrapped_content_key = wrapped_content_key
        self.key_wrapping_metadata = key_wrapping_metadata


def dict_to_encryption_data(data: Mapping[str, Any]) -> EncryptionData:
    """:class:`EncryptionData` from the JSON of ``_ClientEncryptionMetadata1``
    (``ValueError`` for another protocol version).

    Example::

        >>> d = dict_to_encryption_data({"EncryptionAgent": {"Protocol": "1.0",
        ...     "EncryptionAlgorithm": "AES_CBC_256"}, "WrappedContentKey": {"KeyId": "k",
        ...     "EncryptedKey": "AA==", "Algorithm": "A256KW"}, "ContentEncryptionIV": "AA=="})
        >>> d.wrapped_content_key.encrypted_key, d.key_wrapping_metadata
        (b'\\x00', None)
    """
    try:
        if data["EncryptionAgent"]["Protocol"] != PROTOCOL_V1:
            raise ValueError(ERROR_UNSUPPORTED_ENCRYPTION_VERSION)
    except KeyError:
        raise ValueError(ERROR_UNSUPPORTED_ENCRYPTION_VERSION) from None
    wrapped = data["WrappedContentKey"]
    agent = data["EncryptionAgent"]
    return EncryptionData(
        decode_base64(data["ContentEncryptionIV"]),
        EncryptionAgent(agent["EncryptionAlgorithm"], agent["Protocol"]),
        WrappedContentKey(
            wrapped["Algorithm"], decode_base64(wrapped["EncryptedKey"]), wrapped["KeyId"]
        ),
        data.get("KeyWrappingMetadata"),
    )


# --------------------------------------------------------------------------- writing


def encrypt_entity(
    entity: Mapping[str, Any], kek: Any, resolver: EncryptionResolver | None
) -> Entity:
    """The entity with its marked string properties encrypted and the two metadata
    properties added (``ValueError`` for a marked non-string, ``AttributeError`` for an
    incomplete KEK).

    Example::

        stored = encrypt_entity(entity, kek, lambda pk, rk, name: name == "ssn")
    """
    _check_kek(kek, ("wrap_key", "get_kid", "get_key_wrap_algorithm"))
    _require_cryptography()
    cek, entity_iv = os.urandom(32), os.urandom(16)
    pk, rk = entity["PartitionKey"], entity["RowKey"]
    names: list[str] = []
    out = Entity()
    for name, value in entity.items():
        marked = isinstance(value, EntityProperty) and value.encrypt
        if marked or (resolver is not None and resolver(pk, rk, name)):
            if isinstance(value, EntityProperty):
                if value.type != EdmType.STRING:
                    raise ValueError(ERROR_UNSUPPORTED_TYPE_FOR_ENCRYPTION)
                value = value.value
            if not isinstance(value, str):
                raise ValueError(ERROR_UNSUPPORTED_TYPE_FOR_ENCRYPTION)
            names.append(name)
            iv = _property_iv(entity_iv, pk, rk, name, False)
            value = EntityProperty(EdmType.BINARY, _encrypt(cek, iv, value.encode("utf-8")))
        out[name] = value
    listing = json.dumps(names).encode("utf-8")
    iv = _property_iv(entity_iv, pk, rk, METADATA_2, False)
    out[METADATA_2] = EntityProperty(EdmType.BINARY, _encrypt(cek, iv, listing))
    metadata = {
        "WrappedContentKey": {
            "KeyId": kek.get_kid(),
            "EncryptedKey": encode_base64(kek.wrap_key(cek)),
            "Algorithm": kek.get_key_wrap_algorithm(),
        },
        "EncryptionAgent": {"Protocol": PROTOCOL_V1, "EncryptionAlgorithm": AES_CBC_256},
        "ContentEncryptionIV": encode_base64(entity_iv),
        "KeyWrappingMetadata": {"EncryptionLibrary": "Python azt " + _azt_version},
    }
    out[METADATA_1] = json.dumps(metadata)
    return out


def write_body(
    entity: Mapping[str, Any],
    *,
    encryptable: bool,
    require_encryption: bool,
    kek: Any,
    resolver: EncryptionResolver | None,
) -> bytes:
    """The JSON body of a write, checked and encrypted as the legacy SDK did: inserts and
    replaces (``encryptable``) encrypt with ``kek`` (``ValueError`` when
    ``require_encryption`` and no key); merges refuse any encryption setting.

    Example::

        body = write_body(entity, encryptable=True, require_encryption=False, kek=None,
                          resolver=None)
    """
    if encryptable:
        check_entity(entity, 253 if kek is not None else 255)
        if require_encryption and kek is None:
            raise ValueError(ERROR_ENCRYPTION_REQUIRED)
        if kek is not None:
            entity = encrypt_entity(entity, kek, resolver)
    else:
        check_entity(entity)
        if require_encryption or kek is not None:
            raise ValueError(ERROR_UNSUPPORTED_METHOD_FOR_ENCRYPTION)
    return encode_entity(entity)


# --------------------------------------------------------------------------- reading


def _unwrap(data: EncryptionData, kek: Any, key_resolver: KeyResolver | None) -> bytes:
    wrapped = data.wrapped_content_key
    if data.encryption_agent.protocol != PROTOCOL_V1:
        raise ValueError(ERROR_UNSUPPORTED_ENCRYPTION_VERSION)
    if key_resolver is not None:
        kek = key_resolver(wrapped.key_id)
    if kek is None:
        raise ValueError("key_encryption_key should not be None.")
    _check_kek(kek, ("get_kid", "unwrap_key"))
    if wrapped.key_id != kek.get_kid():
        raise ValueError(ERROR_INVALID_KID)
    cek = kek.unwrap_key(wrapped.encrypted_key, wrapped.algorithm)
    if cek is None:
        raise ValueError("content_encryption_key should not be None.")
    return bytes(cek)


def _metadata(
    row: Mapping[str, Any], require: bool, kek: Any, key_resolver: KeyResolver | None
) -> tuple[bytes, list[str], bytes, bool] | None:
    try:
        listing = decode_base64(row[METADATA_2])
        data = dict_to_encryption_data(json.loads(row[METADATA_1]))
    except Exception:
        if require:
            raise ValueError(ERROR_ENTITY_NOT_ENCRYPTED) from None
        return None
    if data.encryption_agent.encryption_algorithm != AES_CBC_256:
        raise ValueError(ERROR_UNSUPPORTED_ENCRYPTION_ALGORITHM)
    cek = _unwrap(data, kek, key_resolver)
    library = data.key_wrapping_metadata
    java_v1 = library is None or (
        data.encryption_agent.protocol == PROTOCOL_V1
        and "Java" in str(library.get("EncryptionLibrary", ""))
    )
    pk, rk = row["PartitionKey"], row["RowKey"]
    iv = _property_iv(data.content_encryption_IV, pk, rk, METADATA_2, java_v1)
    text = _decrypt(cek, iv, listing).decode("utf-8")
    names = text[1:-1].split(", ") if java_v1 else json.loads(text)
    return data.content_encryption_IV, list(names), cek, java_v1


def read_entity(
    row: Mapping[str, Any],
    property_resolver: PropertyResolver | None,
    require_encryption: bool,
    kek: Any,
    key_resolver: KeyResolver | None,
) -> Entity:
    """A JSON row as the legacy SDK returned it, decrypted when a key (or key resolver)
    is set; :class:`~azt.legacy.AzureException` ``"Decryption failed"`` when it cannot be
    (wrong key, tampered data, or ``require_encryption`` and the row is not encrypted).

    Example::

        entity = read_entity(row, None, False, kek, None)
    """
    found = None
    try:
        if require_encryption and kek is None and key_resolver is None:
            raise ValueError(ERROR_DECRYPTION_REQUIRED)
        if kek is not None or key_resolver is not None:
            _require_cryptography()
            found = _metadata(row, require_encryption, kek, key_resolver)
    except Exception as exc:
        raise AzureException(ERROR_DECRYPTION_FAILURE) from exc
    names = frozenset(found[1]) if found is not None else None
    entity = json_entity(row, property_resolver, names)
    if found is None:
        return entity
    entity_iv, encrypted, cek, java_v1 = found
    try:
        pk, rk = entity["PartitionKey"], entity["RowKey"]
        for name in [name for name in entity if name in encrypted]:  # a projection has fewer
            iv = _property_iv(entity_iv, pk, rk, name, java_v1)
            entity[name] = _decrypt(cek, iv, entity[name].value).decode("utf-8")
        del entity[METADATA_1]
        del entity[METADATA_2]
    except Exception as exc:
        raise AzureException(ERROR_DECRYPTION_FAILURE) from exc
    return entity
