"""OData v3 JSON table bodies: a single table (Create Table echo, Get Table) and a Query
Tables page, in the flavour's member order (:class:`~.json_form.JsonForm`).

Example::

    >>> from .negotiation import Fmt
    >>> table_feed(Fmt.MINIMAL, "http://h/a", "a", ["t"])
    b'{"odata.metadata":"http://h/a/$metadata#Tables","value":[{"TableName":"t"}]}'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .json import dumps
from .json_feed import key_literal
from .json_form import STORAGE_FORM, JsonForm
from .negotiation import Fmt


def _table_dict(fmt: Fmt, endpoint: str, account: str, name: str) -> dict[str, Any]:
    if fmt is Fmt.FULL:
        return {
            "odata.type": f"{account}.Tables",
            "odata.id": f"{endpoint}/Tables({key_literal(name)})",
            "odata.editLink": f"Tables({key_literal(name)})",
            "TableName": name,
        }
    return {"TableName": name}


def table_single(
    fmt: Fmt, endpoint: str, account: str, name: str, form: JsonForm = STORAGE_FORM
) -> bytes:
    """A Create Table echo / single table body (``odata.metadata`` last in the Cosmos
    order, as recorded: ``{"TableName":"t","odata.metadata":...}``).

    Example::

        >>> table_single(Fmt.MINIMAL, "http://h/a", "a", "t")
        b'{"odata.metadata":"http://h/a/$metadata#Tables/@Element","TableName":"t"}'
    """
    d = _table_dict(fmt, endpoint, account, name)
    if fmt is Fmt.NOMETADATA:
        return dumps(d)
    url = f"{endpoint}/$metadata#Tables/@Element"
    if form.cosmos_order:
        return dumps({**d, "odata.metadata": url})
    return dumps({"odata.metadata": url, **d})


def table_feed(
    fmt: Fmt, endpoint: str, account: str, names: Sequence[str], form: JsonForm = STORAGE_FORM
) -> bytes:
    """A Query Tables page body (``value`` before ``odata.metadata`` in the Cosmos order).

    Example::

        >>> table_feed(Fmt.NOMETADATA, "http://h/a", "a", ["t"])
        b'{"value":[{"TableName":"t"}]}'
    """
    values = [_table_dict(fmt, endpoint, account, n) for n in names]
    if fmt is Fmt.NOMETADATA:
        return dumps({"value": values})
    url = f"{endpoint}/$metadata#Tables"
    if form.cosmos_order:
        return dumps({"value": values, "odata.metadata": url})
    return dumps({"odata.metadata": url, "value": values})
