"""azt_server_stub: a faithful emulator of the Azure Table service REST API.

Run it with ``python -m azt_server_stub`` (or ``azt-stub``), or embed it.

Example::

    async with StubServer() as stub:
        print(stub.connection_string)

For synchronous code, :class:`ThreadedStubServer` runs it on a background thread.
:class:`StubConfig` (with :class:`AuthOptions`) configures accounts, the durable
location and the authentication switches.
"""

from __future__ import annotations

from .app import DEV_ACCOUNT, DEV_KEY, StubConfig, create_app
from .auth import AuthOptions
from .proxy import ProxyOptions
from .server import StubServer, ThreadedStubServer

__all__ = [
    "DEV_ACCOUNT",
    "DEV_KEY",
    "AuthOptions",
    "ProxyOptions",
    "StubConfig",
    "StubServer",
    "ThreadedStubServer",
    "create_app",
]
