"""Authentication and authorization of stub requests (PROTOCOL.md 10).

The public names live in :mod:`azt_server_stub.auth.authenticator`; the schemes'
verification in the private ``_sharedkey``, ``_sas`` and ``_bearer`` modules (``_common``
holds their signing and time parsing).

Example::

    >>> auth = Authenticator({"acct": [b"key"]}, lambda a, t: [])
    >>> auth.options.check_clock_skew
    True
"""

from __future__ import annotations

from .authenticator import (
    BEARER_CHALLENGE,
    Authenticator,
    AuthOptions,
    KeyRange,
    Operation,
    PolicyLike,
    Principal,
    RequestView,
    SasGrant,
    compute_signature,
    shared_key_string_to_sign,
    www_authenticate,
)

__all__ = [
    "BEARER_CHALLENGE",
    "AuthOptions",
    "Authenticator",
    "KeyRange",
    "Operation",
    "PolicyLike",
    "Principal",
    "RequestView",
    "SasGrant",
    "compute_signature",
    "shared_key_string_to_sign",
    "www_authenticate",
]
