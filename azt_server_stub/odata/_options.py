"""``$select`` and ``$top`` parsing.

Error codes (Azure's exact codes are not documented; PROTOCOL.md 7.1/5.2):

* ``$select`` with an empty item or an invalid property name -> ``400
  InvalidInput`` (the OData parser's refusal), more than 255 names -> ``400
  InvalidInput``;
* ``$top`` that is not an integer -> ``400 InvalidQueryParameterValue``; an
  integer outside 1..1000 -> ``400 OutOfRangeQueryParameterValue`` (the storage
  services' convention for a well-formed but out-of-range query parameter),
  with ``QueryParameterName``/``QueryParameterValue`` details and the allowed
  bounds.
"""

from __future__ import annotations

import re

from ..errors import (
    invalid_input,
    invalid_query_parameter_value,
    out_of_range_query_parameter_value,
)
from ..validation import is_property_name

MAX_SELECT = 255
MAX_TOP = 1000
_INTEGER = re.compile(r"-?[0-9]+", re.ASCII)


def parse_select(text: str) -> list[str]:
    """Parse ``$select``: comma-separated property names, blanks around names tolerated.

    Returns the names in order without duplicates. ``*`` (alone or among names)
    and an empty value select everything and return ``[]``: callers treat an
    empty list as "no projection". Raises ``400 InvalidInput`` for an empty item,
    a name that is not a valid property name, or more than 255 names.

    Example::

        >>> parse_select("Name, Age ,Name")
        ['Name', 'Age']
        >>> parse_select("*")
        []
    """
    if not text.strip():
        return []
    names: dict[str, None] = {}
    select_all = False
    for position, raw in enumerate(text.split(",")):
        name = raw.strip()
        if name == "*":
            select_all = True
            continue
        if not name:
            raise invalid_input(
                f"Invalid $select '{text}': item {position + 1} is empty (expected a comma-"
                "separated list of property names)."
            )
        if not is_property_name(name):
            raise invalid_input(
                f"Invalid $select '{text}': '{name}' is not a valid property name (a letter or "
                "'_' followed by letters, digits or '_', at most 255 characters)."
            )
        names[name] = None
    if len(names) > MAX_SELECT:
        raise invalid_input(
            f"$select lists {len(names)} properties; at most {MAX_SELECT} can be selected."
        )
    return [] if select_all else list(names)


def parse_top(text: str) -> int:
    """Parse ``$top``: an integer from 1 to 1000 (the page size cap).

    Raises ``400 InvalidQueryParameterValue`` for a non-integer and ``400
    OutOfRangeQueryParameterValue`` for an integer outside 1..1000.

    Example::

        >>> parse_top("25")
        25
    """
    stripped = text.strip()
    details = {"QueryParameterName": "$top", "QueryParameterValue": text}
    if _INTEGER.fullmatch(stripped) is None:
        err = invalid_query_parameter_value(
            f"Value for one of the query parameters specified in the request URI is invalid. "
            f"$top must be an integer from 1 to {MAX_TOP}, got '{text}'."
        )
        err.details.update(details)
        raise err
    value = int(stripped)
    if not 1 <= value <= MAX_TOP:
        err = out_of_range_query_parameter_value(
            "One of the query parameters specified in the request URI is outside the permissible "
            f"range. $top must be from 1 to {MAX_TOP}, got {value}."
        )
        err.details.update(details, MinimumAllowed="1", MaximumAllowed=str(MAX_TOP))
        raise err
    return value
