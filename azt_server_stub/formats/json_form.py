"""How a service flavour writes its JSON bodies: the choices a client can see in the text.

Azure Table storage and the Cosmos DB Table API answer the same requests with the same
members, written differently (every difference recorded, docs/cosmos.md "Fidelity
decisions"). :class:`JsonForm` names those differences; the writers of
:mod:`azt_server_stub.formats.json` and :mod:`azt_server_stub.formats.json_feed` follow
the form the flavour gives them.

Example::

    >>> STORAGE_FORM.element_path, COSMOS_FORM.element_path
    (False, True)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["COSMOS_FORM", "STORAGE_FORM", "JsonForm"]


@dataclass(frozen=True, slots=True)
class JsonForm:
    """The written form of JSON entity and table bodies.

    ``fixed_fraction``: user DateTime values with exactly seven fractional digits (Cosmos;
    Storage trims trailing zeros). ``element_path``: a single entity's ``odata.metadata``
    names the table's own path, ``{root}/{table}/$metadata#{table}/@Element`` (Cosmos;
    Storage: ``{root}/$metadata#{table}/@Element``); feeds are ``{root}/$metadata#{table}``
    on both. ``cosmos_order``: the Cosmos DB member order: ``Timestamp`` after the
    properties, ``odata.metadata`` after ``value`` in feeds and after ``TableName`` in
    table bodies, and in full metadata ``odata.type``, ``odata.id``, ``odata.editLink``,
    ``odata.metadata``, ``odata.etag`` (Storage: ``odata.metadata`` first, ``Timestamp``
    right after ``RowKey``, ``odata.etag`` before ``odata.editLink``). ``select_by_name``:
    a ``$select`` projection's properties after the keys in ordinal name order (Storage,
    recorded), not in the order the ``$select`` lists them (Cosmos). ``key_places``:
    ``PartitionKey`` and ``RowKey`` written where the client sent them among the
    properties (Cosmos, recorded; ``Entity.keys_at``), not first (Storage); the handlers
    note the places of what they read only for such a form.

    Example::

        >>> JsonForm(fixed_fraction=True).cosmos_order, STORAGE_FORM.select_by_name
        (False, True)
    """

    fixed_fraction: bool = False
    element_path: bool = False
    cosmos_order: bool = False
    select_by_name: bool = True
    key_places: bool = False


STORAGE_FORM = JsonForm()
"""Azure Table storage's form."""

COSMOS_FORM = JsonForm(
    fixed_fraction=True,
    element_path=True,
    cosmos_order=True,
    select_by_name=False,
    key_places=True,
)
"""The Cosmos DB Table API's form (recorded 2020-2022, docs/cosmos.md)."""
