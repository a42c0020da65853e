"""What the ``azt`` commands share: exit statuses, the streams, usage errors and a few
message helpers (the command modules import it; :mod:`azt.cli` re-exports the public
names).

Example::

    >>> entities_text(1), entities_text(2)
    ('1 entity', '2 entities')
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

__all__ = [
    "ENV_VAR",
    "EXIT_BROKEN_PIPE",
    "EXIT_INCONSISTENT",
    "EXIT_INPUT",
    "EXIT_SERVICE",
    "EXIT_USAGE",
    "CliStreams",
]

#: Environment variable holding the default connection string.
ENV_VAR = "AZT_CONNECTION_STRING"
#: Exit status when the service refused the request or could not be reached.
EXIT_SERVICE = 1
#: Exit status for bad usage: arguments, connection string, filter.
EXIT_USAGE = 2
#: Exit status for bad input data (``azt import``).
EXIT_INPUT = 3
#: Exit status of ``azt index verify`` when the index is not consistent (the service
#: answered; the index differs from what the main rows imply, or intents are pending).
EXIT_INCONSISTENT = 4

#: Exit status when the reader of stdout went away (128 + SIGPIPE, as shells report it).
EXIT_BROKEN_PIPE = 141


class UsageError(Exception):
    """Bad usage detected after parsing (exit status 2)."""


class CliStreams:
    """Where the command reads and writes (real stdio by default; tests pass buffers).

    Example::

        >>> import io
        >>> streams = CliStreams(stdin=io.StringIO("x"), stdout=io.StringIO())
        >>> streams.stdin.read()
        'x'
    """

    def __init__(
        self,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stdout
        self.stderr = stderr if stderr is not None else sys.stderr


def progress_on(args: argparse.Namespace, stream: TextIO) -> bool:
    """Whether to draw a progress bar on ``stream`` (``--progress auto``: a terminal)."""
    if args.progress == "always":
        return True
    if args.progress == "never":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def entities_text(n: int) -> str:
    return f"{n} entity" if n == 1 else f"{n} entities"


def missing_table(name: str, status: int | None = None, code: str | None = None) -> str:
    """What to say about a missing table (with the service's status and code, if known)."""
    code = f" ({status} {code})" if status is not None else ""
    return f"table {name!r} does not exist{code}: pass --create to create it"
