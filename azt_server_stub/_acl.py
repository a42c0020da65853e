"""Stored access policies of a table ACL: the policy value and its stored JSON form (private).

Example::

    >>> acl_from_json(acl_to_json([SignedIdentifier("readers", permission="r")]))
    [SignedIdentifier(id='readers', start=None, expiry=None, permission='r')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SignedIdentifier:
    """A stored access policy of a table ACL (``si`` in a SAS). Times are kept verbatim.

    Example::

        >>> SignedIdentifier("readers", permission="r").id
        'readers'
    """

    id: str
    start: str | None = None
    expiry: str | None = None
    permission: str | None = None


def acl_to_json(acl: Sequence[SignedIdentifier]) -> list[dict[str, str | None]]:
    """The stored form of an ACL: one JSON object per policy.

    Example::

        >>> acl_to_json([SignedIdentifier("readers", permission="r")])[0]["permission"]
        'r'
    """
    return [
        {"id": s.id, "start": s.start, "expiry": s.expiry, "permission": s.permission} for s in acl
    ]


def acl_from_json(data: list[dict[str, str | None]]) -> list[SignedIdentifier]:
    """An ACL read back from its stored form.

    Example::

        >>> acl_from_json([{"id": "x", "start": None, "expiry": None, "permission": "r"}])[0].id
        'x'
    """
    out = []
    for item in data:
        ident = item["id"]
        assert ident is not None
        out.append(SignedIdentifier(ident, item["start"], item["expiry"], item["permission"]))
    return out
