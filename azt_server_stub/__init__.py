"""azt_server_stub: a faithful emulator of the Azure Table service REST API.

Run it with ``python -m azt_server_stub`` (or ``azt-stub``), or embed it::

    async with StubServer() as stub:
        print(stub.connection_string)

For synchronous code, :class:`ThreadedStubServer` runs it on a background thread.
"""

from __future__ import annotations

from .app import DEV_ACCOUNT, DEV_KEY, StubConfig, create_app
from .server import StubServer, ThreadedStubServer

__all__ = [
    "DEV_ACCOUNT",
    "DEV_KEY",
    "StubConfig",
    "StubServer",
    "ThreadedStubServer",
    "create_app",
]
