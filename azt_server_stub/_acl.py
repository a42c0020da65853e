"""Stored access policies of a table ACL: the policy value and its stored JSON form (private).

Example::

    >>> acl_from_json(acl_to_json([SignedIdentifier("readers", permission="r")]))
    [SignedIdentifier(id='readers', start=None, expiry=None, permission='r')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import errors

#: The most stored access policies a table holds, and the permission letters one may grant.
MAX_ACL = 5
_ACL_PERMISSIONS = frozenset("raud")


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


def checked_acl(acl: Sequence[SignedIdentifier]) -> list[SignedIdentifier]:
    """The policies of a Set Table ACL, checked as the service does.

    More than 5 policies, an Id that is empty or longer than 64 characters, a repeated
    Id, or permission letters outside ``raud`` -> ``400 InvalidXmlDocument``.

    Example::

        >>> checked_acl([SignedIdentifier("p1", permission="ra")])[0].id
        'p1'
        >>> try:
        ...     checked_acl([SignedIdentifier("p1", permission="x")])
        ... except errors.StubError as exc:
        ...     print(exc.status, exc.code)
        400 InvalidXmlDocument
    """
    policies = list(acl)
    if len(policies) > MAX_ACL:
        raise errors.invalid_xml_document(
            "XML specified is not syntactically valid. At most 5 signed identifiers "
            "(stored access policies) are allowed."
        )
    seen: set[str] = set()
    for policy in policies:
        if not 1 <= len(policy.id) <= 64 or policy.id in seen:
            raise errors.invalid_xml_document()
        seen.add(policy.id)
        if policy.permission is not None and not set(policy.permission) <= _ACL_PERMISSIONS:
            raise errors.invalid_xml_document()
    return policies


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
