"""``TableEntity``, the dict-shaped entity, and its service ``EntityMetadata``.

Decoded entities keep ``Timestamp`` out of the property dict: it is read-only and the
service overwrites it, so it lives in ``entity.metadata.timestamp`` next to the ETag.

Example::

    >>> from azt.edm import TableEntity
    >>> TableEntity(PartitionKey="p", RowKey="r", Count=5)["Count"]
    5
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from azt._edm.datetime import EdmDateTime
from azt._edm.types import EdmType

__all__ = ["EntityMetadata", "TableEntity"]


@attrs.frozen(slots=True)
class EntityMetadata:
    """Service metadata of an entity: its ETag and last-modified Timestamp.

    Example::

        >>> m = EntityMetadata(etag='W/"datetime\\'2020-01-01T00%3A00%3A00Z\\'"')
        >>> m.timestamp is None
        True
    """

    etag: str | None = None
    timestamp: EdmDateTime | None = None


_EMPTY_METADATA: Final = EntityMetadata()


class TableEntity(dict[str, Any]):
    """A dict-shaped entity: property name -> plain Python value.

    ``PartitionKey`` and ``RowKey`` are ordinary keys. ``metadata`` holds the ETag and
    Timestamp (``Timestamp`` is not a property of the dict). ``edm_types`` maps property
    names to an :class:`EdmType` where the Python type alone is ambiguous (Int64, or any
    property whose type the service annotated), so that a read-modify-write keeps the
    stored types. Values may also be :class:`Typed` when writing.

    Example::

        >>> e = TableEntity(PartitionKey="p", RowKey="r", Big=5)
        >>> e.edm_types["Big"] = EdmType.INT64
        >>> e.metadata.etag is None
        True
        >>> e2 = e.copy(); e2.edm_types
        {'Big': <EdmType.INT64: 'Edm.Int64'>}
    """

    # _etag / _ts are filled by the decoders; metadata is built from them on first use so
    # that a page decode does not parse 1,000 Timestamps nobody reads.
    __slots__ = ("_etag", "_meta", "_ts", "_types")
    _etag: str | None
    _ts: str | EdmDateTime | None
    _meta: EntityMetadata
    _types: dict[str, EdmType]

    @property
    def metadata(self) -> EntityMetadata:
        """ETag and Timestamp as last seen from the service (empty for new entities).

        Example::

            >>> TableEntity(PartitionKey="p").metadata
            EntityMetadata(etag=None, timestamp=None)
        """
        meta: EntityMetadata | None = getattr(self, "_meta", None)
        if meta is not None:
            return meta
        etag = getattr(self, "_etag", None)
        ts = getattr(self, "_ts", None)
        if etag is None and ts is None:
            return _EMPTY_METADATA
        if isinstance(ts, str):
            ts = EdmDateTime.parse(ts)
        meta = self._meta = EntityMetadata(etag, ts)
        return meta

    @metadata.setter
    def metadata(self, value: EntityMetadata) -> None:
        self._meta = value

    @property
    def edm_types(self) -> dict[str, EdmType]:
        """Explicit EDM types by property name (mutable; created on first use).

        Example::

            >>> e = TableEntity(N=1)
            >>> e.edm_types["N"] = EdmType.INT64
            >>> e.edm_types
            {'N': <EdmType.INT64: 'Edm.Int64'>}
        """
        t: dict[str, EdmType] | None = getattr(self, "_types", None)
        if t is None:
            t = self._types = {}
        return t

    @edm_types.setter
    def edm_types(self, value: dict[str, EdmType]) -> None:
        self._types = value

    def copy(self) -> TableEntity:
        """A shallow copy that keeps metadata and a copy of ``edm_types``.

        Example::

            >>> e = TableEntity(a=1)
            >>> e.metadata = EntityMetadata(etag="W/1")
            >>> e.copy().metadata.etag
            'W/1'
        """
        new = TableEntity(self)
        new._meta = self.metadata
        types = getattr(self, "_types", None)
        if types:
            new._types = dict(types)
        return new

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_entity, (dict(self), self.metadata, dict(self.edm_types)))

    def __repr__(self) -> str:
        return f"TableEntity({dict.__repr__(self)})"


def _restore_entity(
    props: dict[str, Any], meta: EntityMetadata, types: dict[str, EdmType]
) -> TableEntity:
    ent = TableEntity(props)
    ent._meta = meta
    if types:
        ent._types = types
    return ent
