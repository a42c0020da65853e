"""A bounded cache of the durable store's decoded rows (private).

Decoding a stored row (its JSON properties, then the typed values) costs far more than
reading it from SQLite, so :class:`~azt_server_stub._store.SqliteStore` keeps the
entities it has decoded or written, keyed by ``(tid, pk blob, rk blob)``, within a byte
budget (estimated; the oldest entries go first), so memory stays bounded whatever the
store holds.

Two uses, with two different rules:

* Reuse of a decoded row (:meth:`RowCache.decoded`): a row read from SQLite whose
  Timestamp equals the cached entity's is that entity. Timestamps strictly increase
  across the whole store, so ``(table, key, Timestamp)`` names exactly one stored
  version: the row itself, from whatever committed state the read sees, says whether
  the cached entity is it. Always correct, inside a snapshot or not.
* A point read answered without SQLite (:meth:`RowCache.current`): only outside a read
  transaction, and only for a key no commit is writing (:meth:`RowCache.begin_commit`
  marks the keys before the commit, :meth:`RowCache.end_commit` records what the commit
  stored and unmarks them). Reads record a row (:meth:`RowCache.remember`) only when no
  commit touched its key since the state they read was taken (a key being written, or a
  commit ended since the snapshot's start: :attr:`RowCache.generation`). So an entry of
  a key not being written is always its last committed version.

Every method is called with the store's read lock held.

Example::

    >>> from azt_server_stub.model import Entity
    >>> cache = RowCache(1 << 20)
    >>> cache.remember((1, b"p", b"r"), Entity("p", "r", 7), 10, cache.generation)
    >>> cache.current((1, b"p", b"r")).timestamp
    7
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import Entity

__all__ = ["DEFAULT_CACHE_BYTES", "RowCache", "entry_size"]

RowKey = tuple[int, bytes, bytes]
"""A stored row's key: table id, PartitionKey and RowKey as stored (UTF-16-BE BLOBs)."""

#: The default budget of decoded rows kept (estimated bytes of their Python objects).
DEFAULT_CACHE_BYTES = 64 << 20

#: Estimated Python size of an entity beyond what its stored text explains.
_BASE_SIZE = 256


def entry_size(key: RowKey, props_len: int) -> int:
    """Estimated bytes of a decoded entity kept under ``key`` whose stored properties are
    ``props_len`` characters of JSON (about five bytes of objects per character, measured
    on typical entities).

    Example::

        >>> entry_size((1, b"\\x00p", b"\\x00r"), 100)
        764
    """
    return _BASE_SIZE + 5 * props_len + 2 * (len(key[1]) + len(key[2]))


class RowCache:
    """Decoded entities by stored key, within ``budget`` estimated bytes (see the module).

    Example::

        >>> RowCache(0).current((1, b"p", b"r")) is None
        True
    """

    __slots__ = ("_bytes", "_entries", "_writing", "budget", "generation")

    def __init__(self, budget: int = DEFAULT_CACHE_BYTES) -> None:
        self.budget = budget
        self._entries: dict[RowKey, tuple[Entity, int]] = {}
        self._bytes = 0
        #: Keys a commit in progress is writing.
        self._writing: set[RowKey] = set()
        #: Commits ended so far (a read taken before one may not record rows).
        self.generation = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        """Estimated bytes held.

        Example::

            >>> RowCache().size
            0
        """
        return self._bytes

    def current(self, key: RowKey) -> Entity | None:
        """The entity last committed at ``key`` if known (None: ask SQLite). Outside a
        read transaction only.

        Example::

            >>> RowCache().current((1, b"p", b"r")) is None
            True
        """
        if self._writing and key in self._writing:
            return None
        entry = self._entries.get(key)
        return None if entry is None else entry[0]

    def decoded(self, key: RowKey, timestamp: int) -> Entity | None:
        """The cached entity of the stored version ``(key, timestamp)``, or None.

        Example::

            >>> RowCache().decoded((1, b"p", b"r"), 5) is None
            True
        """
        entry = self._entries.get(key)
        if entry is not None and entry[0].timestamp == timestamp:
            return entry[0]
        return None

    def remember(self, key: RowKey, entity: Entity, size: int, generation: int) -> None:
        """Keep an entity read from a state taken at ``generation`` (skipped if a commit
        has touched its key since).

        Example::

            >>> cache = RowCache()
            >>> cache.remember((1, b"p", b"r"), Entity("p", "r", 1), 300, cache.generation - 1)
            >>> len(cache)
            0
        """
        if generation != self.generation or (self._writing and key in self._writing):
            return
        self._put(key, entity, size)

    def _put(self, key: RowKey, entity: Entity, size: int) -> None:
        entries = self._entries
        old = entries.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        if size > self.budget:
            return
        entries[key] = (entity, size)
        self._bytes += size
        while self._bytes > self.budget:
            oldest = next(iter(entries))
            self._bytes -= entries.pop(oldest)[1]

    def _drop(self, key: RowKey) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old[1]

    def begin_commit(self, keys: Iterable[RowKey]) -> None:
        """Mark the keys a commit is about to write (before it starts).

        Example::

            >>> cache = RowCache(); cache.begin_commit([(1, b"p", b"r")])
            >>> cache.current((1, b"p", b"r")) is None
            True
        """
        self._writing.update(keys)

    def end_commit(
        self,
        puts: Iterable[tuple[RowKey, Entity, int]],
        deletes: Iterable[RowKey],
    ) -> None:
        """Record a commit that is on disk: its stored entities (with their estimated
        sizes) and removed keys; every key marked is then unmarked.

        Example::

            >>> cache = RowCache(); key = (1, b"p", b"r")
            >>> cache.begin_commit([key])
            >>> cache.end_commit([(key, Entity("p", "r", 3), 300)], [])
            >>> cache.current(key).timestamp
            3
        """
        for key, entity, size in puts:
            self._put(key, entity, size)
        for key in deletes:
            self._drop(key)
        self._writing.clear()
        self.generation += 1

    def abandon_commit(self) -> None:
        """Forget every key marked (a commit that failed: what is on disk is unknown).

        Example::

            >>> cache = RowCache(); key = (1, b"p", b"r")
            >>> cache.remember(key, Entity("p", "r", 1), 300, cache.generation)
            >>> cache.begin_commit([key]); cache.abandon_commit()
            >>> cache.current(key) is None
            True
        """
        for key in self._writing:
            self._drop(key)
        self._writing.clear()
        self.generation += 1

    def forget_table(self, tid: int) -> None:
        """Drop every entry of a table (deleted or replaced).

        Example::

            >>> cache = RowCache(); cache.remember((1, b"p", b"r"), Entity("p", "r", 1), 9, 0)
            >>> cache.forget_table(1); len(cache)
            0
        """
        for key in [key for key in self._entries if key[0] == tid]:
            self._drop(key)
        self.generation += 1

    def clear(self) -> None:
        """Drop everything.

        Example::

            >>> cache = RowCache(); cache.clear(); cache.size
            0
        """
        self._entries.clear()
        self._bytes = 0
        self.generation += 1
