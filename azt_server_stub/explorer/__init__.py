"""The data explorer: a web page served by the stub itself, under ``/_explorer/``.

Tables with their entity counts, a table's entities (paged with continuation tokens,
filtered with OData, typed columns), one entity's type-correct editor with ETag
concurrency, exports as JSON lines and CSV, the stub's realism settings and its recent
requests. Sign-in with an account's name and key (see :mod:`.sessions`); plain HTML, CSS
and JavaScript shipped in the package (``static/``), nothing fetched from elsewhere.
``docs/explorer.md`` shows each screen.

Example::

    async with StubServer(explorer=True) as stub:
        print(stub.endpoint + "/_explorer/")
"""

from .api import PREFIX, Explorer, install
from .live import Realism, RecentRequests, RecordingAccessLogger
from .sessions import Sessions, is_loopback_host

__all__ = [
    "PREFIX",
    "Explorer",
    "Realism",
    "RecentRequests",
    "RecordingAccessLogger",
    "Sessions",
    "install",
    "is_loopback_host",
]
