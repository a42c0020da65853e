"""The examples in the HTTP layer's docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "azt_server_stub.addressing",
    "azt_server_stub.app",
    "azt_server_stub.handlers",
    "azt_server_stub.server",
    "azt_server_stub.__main__",
    "azt_server_stub.formats.atom",
    "azt_server_stub.formats.batch",
    "azt_server_stub.formats.json",
    "azt_server_stub.formats.negotiation",
    "azt_server_stub.formats.xml",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
