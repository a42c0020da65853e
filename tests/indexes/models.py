"""Entity classes with secondary indexes, shared by the index tests."""

from __future__ import annotations

from azt.entity import Entity, EntityBase, Prop, partition_key, prop, row_key
from azt.indexes import Holds, Index


class Item(Entity):
    """Three indexes: key-only by colour, a copy-holding one by (size, colour), and a
    sparse key-only one by tag (``None``: no row)."""

    color: Prop[str] = prop(default="")
    size: Prop[int] = prop(default=0)
    note: Prop[str] = prop(default="")
    tag: Prop[str | None] = prop(default=None)

    class Meta:
        indexes = (
            Index("by_color", "color"),
            Index("by_size", "size", "color", holds=Holds.ENTITY),
            Index("by_tag", "tag"),
        )


class Plain(Entity):
    """No index: reads the same table as :class:`Item`."""

    color: Prop[str] = prop(default="")


class Member(Entity):
    """An index across partitions by e-mail (sparse: ``None`` has no row) beside a
    key-only index by team in the member's own partition."""

    email: Prop[str | None] = prop(default=None)
    team: Prop[str] = prop(default="")
    note: Prop[str] = prop(default="")

    class Meta:
        indexes = (
            Index("by_email", "email", across_partitions=True),
            Index("by_team", "team"),
        )


class Ticket(EntityBase):
    """PartitionKey project, RowKey ticket_id; an index by state (keys), one by
    (priority, state) holding a copy, and one across partitions by reporter."""

    project: Prop[str] = partition_key()
    ticket_id: Prop[str] = row_key()
    state: Prop[str] = prop(name="State", default="open")
    priority: Prop[int] = prop(default=0)
    reporter: Prop[str | None] = prop(default=None)

    class Meta:
        indexes = (
            Index("by_state", "state"),
            Index("by_priority", "priority", "state", holds=Holds.ENTITY),
            Index("by_reporter", "reporter", across_partitions=True),
        )
