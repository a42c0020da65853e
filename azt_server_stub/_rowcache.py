"""A bounded cache of the durable store's decoded rows (private).

Decoding a stored row (its JSON properties, then the typed values) costs far more than
reading it from SQLite, so :class:`~azt_server_stub._store.SqliteStore` keeps the
entities it has decoded, keyed by ``(tid, pk blob, rk blob)``, within a byte budget
(estimated; the oldest entries go first), so memory stays bounded whatever the store
holds.

The cache never decides what a read sees: every read still reads its rows from SQLite
(the last committed state, or its snapshot's), and a row's cached entity is used only
when the row's Timestamp equals the cached entity's. Timestamps strictly increase across
the whole store (each write request gets a new one, a change set's entities share theirs
but differ in key) and a table id is never reused, so ``(tid, key, Timestamp)`` names
exactly one stored version: the entity decoded from it earlier is the entity decoding it
again would give. Writes therefore need not touch the cache; an entry of an overwritten
or deleted version is merely never used again, until it is evicted.

One exception, for point reads: the store counts its write transactions (odd while one
is open), and a point read outside a read transaction that found a row with no write
open or begun meanwhile stamps the entry with that count (:meth:`RowCache.verify`). The
store also notes, for each partition a write changes, the count at which that write
began (before it changes anything). While no write is open and none has begun to change
the entry's partition since its stamp, the row is still the stored one and a point read
takes it from the cache (:meth:`RowCache.current`, given the oldest stamp still good).
Writes to other partitions leave it be; a write the store does not track by partition
(table-level ones) ends every entry's stamp at once.

Example::

    >>> from azt_server_stub.model import Entity
    >>> cache = RowCache(1 << 20)
    >>> cache.put((1, b"\\x00p", b"\\x00r"), Entity("p", "r", 7), 300)
    >>> cache.get((1, b"\\x00p", b"\\x00r"), 7).rk, cache.get((1, b"\\x00p", b"\\x00r"), 8)
    ('r', None)
    >>> cache.current((1, b"\\x00p", b"\\x00r"), 0) is None  # not verified
    True
"""

from __future__ import annotations

from .model import Entity

__all__ = ["DEFAULT_CACHE_BYTES", "RowCache", "RowKey", "entry_size"]

RowKey = tuple[int, bytes, bytes]
"""A stored row's key: table id, PartitionKey and RowKey as stored (UTF-16-BE BLOBs)."""

#: The default budget of decoded rows kept (estimated bytes of their Python objects).
DEFAULT_CACHE_BYTES = 64 << 20

#: Estimated Python size of an entity beyond what its stored text explains.
_BASE_SIZE = 256


def entry_size(key: RowKey, props_len: int) -> int:
    """Estimated bytes of a decoded entity kept under ``key`` whose stored properties are
    ``props_len`` characters of JSON (about five bytes of objects per character, measured
    on typical entities with tracemalloc).

    Example::

        >>> entry_size((1, b"\\x00p", b"\\x00r"), 100)
        764
    """
    return _BASE_SIZE + 5 * props_len + 2 * (len(key[1]) + len(key[2]))


class RowCache:
    """Decoded entities by stored key and Timestamp, within ``budget`` estimated bytes.

    Not thread-safe: the store calls it with its read lock held.

    Example::

        >>> RowCache(0).get((1, b"p", b"r"), 5) is None
        True
    """

    __slots__ = ("_bytes", "_entries", "budget", "entry_of")

    def __init__(self, budget: int = DEFAULT_CACHE_BYTES) -> None:
        self.budget = budget
        #: key -> (entity, estimated size, write count it was verified at, or -1)
        self._entries: dict[RowKey, tuple[Entity, int, int]] = {}
        self._bytes = 0
        #: The entry at a key (``(entity, size, stamp)``) or None, read only: what
        #: :meth:`get` looks up, for a caller's loop over many rows to test the entity's
        #: Timestamp itself, without a call per row.
        self.entry_of = self._entries.get

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        """Estimated bytes held (at most :attr:`budget`).

        Example::

            >>> RowCache().size
            0
        """
        return self._bytes

    def get(self, key: RowKey, timestamp: int) -> Entity | None:
        """The entity decoded from the stored version ``(key, timestamp)``, or None.

        Example::

            >>> RowCache().get((1, b"p", b"r"), 5) is None
            True
        """
        entry = self._entries.get(key)
        if entry is not None and entry[0].timestamp == timestamp:
            return entry[0]
        return None

    def put(self, key: RowKey, entity: Entity, size: int) -> None:
        """Keep the entity decoded from the row at ``key`` (replacing an older version),
        evicting the oldest entries beyond the budget.

        Example::

            >>> cache = RowCache(1000)
            >>> for n in range(5):
            ...     cache.put((1, b"p", str(n).encode()), Entity("p", str(n), 1), 300)
            >>> len(cache), cache.size
            (3, 900)
        """
        entries = self._entries
        old = entries.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        if size > self.budget:
            return
        entries[key] = (entity, size, -1)
        self._bytes += size
        while self._bytes > self.budget:
            self._bytes -= entries.pop(next(iter(entries)))[1]

    def verify(self, key: RowKey, entity: Entity, writes: int) -> None:
        """Stamp ``key``'s entry, if it is ``entity``, as stored when the store's write
        count was ``writes`` (even: no write open).

        Example::

            >>> cache = RowCache(); key = (1, b"p", b"r"); e = Entity("p", "r", 1)
            >>> cache.put(key, e, 9); cache.verify(key, e, 4)
            >>> cache.current(key, 4) is e, cache.current(key, 2) is e, cache.current(key, 6)
            (True, True, None)
        """
        entry = self._entries.get(key)
        if entry is not None and entry[0] is entity:
            self._entries[key] = (entity, entry[1], writes)  # keeps its place in the order

    def current(self, key: RowKey, since: int) -> Entity | None:
        """The entity at ``key`` if verified at a write count of at least ``since`` (the
        caller knows no write to it began from then on), else None.

        Example::

            >>> RowCache().current((1, b"p", b"r"), 0) is None
            True
        """
        entry = self._entries.get(key)
        if entry is not None and entry[2] >= since >= 0:
            return entry[0]
        return None

    def forget_table(self, tid: int) -> None:
        """Drop every entry of a table (deleted or replaced: its id is never used again).

        Example::

            >>> cache = RowCache(); cache.put((1, b"p", b"r"), Entity("p", "r", 1), 9)
            >>> cache.forget_table(1); len(cache)
            0
        """
        entries = self._entries
        for key in [key for key in entries if key[0] == tid]:
            self._bytes -= entries.pop(key)[1]

    def clear(self) -> None:
        """Drop everything.

        Example::

            >>> cache = RowCache(); cache.clear(); cache.size
            0
        """
        self._entries.clear()
        self._bytes = 0
