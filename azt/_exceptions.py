"""The azt exception tree.

CONTRACT: the client core owns this module and extends the tree (service errors
registered by ``x-ms-error-code``, transport errors, batch errors, ambiguous
retry outcomes). These two roots are fixed now because every layer raises them::

    AztError
     +-- ValidationError (also ValueError)   bad input caught before anything is sent
     +-- ...                                  (service, transport, batch errors)
"""

from __future__ import annotations


class AztError(Exception):
    """Base class of every error azt raises.

    Example::

        >>> try:
        ...     raise ValidationError("PartitionKey contains '/'")
        ... except AztError as exc:
        ...     print(type(exc).__name__)
        ValidationError
    """


class ValidationError(AztError, ValueError):
    """Input refused client-side before any request is sent (keys, names, sizes, types).

    Example::

        >>> isinstance(ValidationError("x"), ValueError)
        True
    """
