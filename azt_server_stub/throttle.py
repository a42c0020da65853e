"""Alias of :mod:`azt_server_stub.realism.throttle` (transitional: removed once importers moved).

Example::

    from azt_server_stub.realism.throttle import Throttle
"""

from __future__ import annotations

from .realism.throttle import FakeClock, Throttle, ThrottleLimits
from .realism.throttle_middleware import THROTTLE_KEY, install

__all__ = ["THROTTLE_KEY", "FakeClock", "Throttle", "ThrottleLimits", "install"]
