"""Video rentals: a member's running count kept exact with entity group transactions.

The seed's rental shop keeps two kinds of rows in one table, in one partition per member
(PartitionKey = member id):

* ``Member``: the member's details and the number of movies they have out;
* ``Rental_<title>``: one row per movie currently checked out.

Renting inserts a ``Rental_`` row and increments the member's count in one entity group
transaction (a ``BATCH`` save of a unit of work); returning deletes the row and decrements
the count the same way. The count update is conditional on the member's ETag, so two
clerks renting for the same member at once cannot lose an increment: the loser re-reads
and tries again. Renting a movie twice fails as a whole and changes nothing.

Run it::

    python -m examples.rentals [--connection-string CONN]
"""

from __future__ import annotations

import asyncio
import random
import sys
from collections.abc import Sequence
from typing import Any

from azt import EntityAlreadyExistsError, PreconditionFailedError, TableServiceClient
from azt.context import SaveChangesError, SaveChangesOptions, TableContext
from azt.dynamic import by_row_key_prefix
from azt.entity import Entity, Prop, prop
from azt.query import Query

from ._common import Out, run_example, scratch_table

RENTAL_PREFIX = "Rental_"


class Member(Entity):
    """The member row: RowKey ``"Member"``.

    Example::

        >>> Member("m-001", "Member", name="Ada").rentals
        0
    """

    name: Prop[str] = prop(name="Name", default="")
    rentals: Prop[int] = prop(name="RentalCount", default=0)


class Rental(Entity):
    """A checked-out movie: RowKey ``"Rental_<title>"``.

    Example::

        >>> Rental("m-001", rental_key("Alien"), title="Alien").RowKey
        'Rental_Alien'
    """

    title: Prop[str] = prop(name="Title", default="")


def rental_key(title: str) -> str:
    """The RowKey of a rental of ``title``.

    Example::

        >>> rental_key("Heat")
        'Rental_Heat'
    """
    return RENTAL_PREFIX + title


class AlreadyRentedError(Exception):
    """The member already has this movie."""


async def join(service: TableServiceClient, table: str, member_id: str, name: str) -> None:
    """Create the member row."""
    ctx = TableContext(service)
    ctx.add(table, Member(member_id, "Member", name=name))
    await ctx.save_changes()


async def rent(service: TableServiceClient, table: str, member_id: str, title: str) -> int:
    """Rent ``title``: insert the rental and increment the count in one transaction.

    Retries when another writer changed the member row meanwhile (412); raises
    :class:`AlreadyRentedError` when the member has the movie already. Returns the new count.
    """
    while True:
        ctx = TableContext(service)
        member = await ctx.get(Member, table, member_id, "Member", ignore_resource_not_found=False)
        member.rentals += 1
        ctx.add(table, Rental(member_id, rental_key(title), title=title))
        try:
            await ctx.save_changes(SaveChangesOptions.BATCH)
        except SaveChangesError as exc:
            errors = [getattr(e, "error", None) or e for e in exc.errors]
            if any(isinstance(e, EntityAlreadyExistsError) for e in errors):
                raise AlreadyRentedError(f"{member_id} already has {title!r}") from exc
            if any(isinstance(e, PreconditionFailedError) for e in errors):
                # Someone else changed the member: wait a moment, read again and retry.
                await asyncio.sleep(random.uniform(0, 0.02))
                continue
            raise
        return member.rentals


async def give_back(service: TableServiceClient, table: str, member_id: str, title: str) -> int:
    """Return ``title``: delete the rental and decrement the count in one transaction."""
    while True:
        ctx = TableContext(service)
        member = await ctx.get(Member, table, member_id, "Member", ignore_resource_not_found=False)
        rental = await ctx.get(
            Rental, table, member_id, rental_key(title), ignore_resource_not_found=False
        )
        member.rentals -= 1
        ctx.delete(rental)
        try:
            await ctx.save_changes(SaveChangesOptions.BATCH)
        except SaveChangesError as exc:
            errors = [getattr(e, "error", None) or e for e in exc.errors]
            if any(isinstance(e, PreconditionFailedError) for e in errors):
                await asyncio.sleep(random.uniform(0, 0.02))
                continue
            raise
        return member.rentals


async def account(service: TableServiceClient, table: str, member_id: str) -> tuple[Any, list[str]]:
    """The member row and their rentals, read with one row-range query over the partition
    (a resolver picks the class of each row by its RowKey)."""
    resolver = by_row_key_prefix({"Member": Member, RENTAL_PREFIX: Rental})
    rows = (
        await Query(resolver, service.get_table_client(table))
        .where(Entity.PartitionKey == member_id)
        .to_list()
    )
    member = next(r for r in rows if isinstance(r, Member))
    titles = [r.title for r in rows if isinstance(r, Rental)]
    return member, titles


async def run(service: TableServiceClient, out: Out, *, keep: bool = False) -> dict[str, Any]:
    """The rental story; returns each member's (count, titles) at the end."""
    summary: dict[str, Any] = {}
    async with scratch_table(service, "rentals", out, keep=keep) as table:
        await join(service, table, "m-001", "Ada")
        await join(service, table, "m-002", "Grace")
        for title in ("Alien", "Heat", "Psycho"):
            count = await rent(service, table, "m-001", title)
            out(f"Ada rents {title}: {count} out")
        try:
            await rent(service, table, "m-001", "Heat")
        except AlreadyRentedError as exc:
            out(f"refused: {exc}; the count was not touched")
        count = await give_back(service, table, "m-001", "Heat")
        out(f"Ada returns Heat: {count} out")

        # Ten clerks rent ten different movies for Grace at the same time. Every one of
        # them succeeds (retrying on 412) and no increment is lost.
        titles = [f"Movie {i:02d}" for i in range(10)]
        await asyncio.gather(*(rent(service, table, "m-002", t) for t in titles))
        out("ten concurrent rentals for Grace done")

        for member_id in ("m-001", "m-002"):
            member, rented = await account(service, table, member_id)
            out(f"{member.name}: RentalCount={member.rentals}, rows: {', '.join(rented)}")
            summary[member_id] = (member.rentals, rented)
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m examples.rentals``."""
    return run_example("Rentals: a member's count kept in one transaction", run, argv)


if __name__ == "__main__":
    sys.exit(main())
