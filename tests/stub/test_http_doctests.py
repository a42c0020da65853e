"""The examples in the stub's docstrings run and hold (HTTP layer, auth, OData, model)."""

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
    "azt_server_stub.auth",
    "azt_server_stub._auth_sas",
    "azt_server_stub.versions",
    "azt_server_stub.model",
    "azt_server_stub.errors",
    "azt_server_stub.odata",
    "azt_server_stub.odata._continuation",
    "azt_server_stub.odata._options",
    "azt_server_stub.odata._filter",
    "azt_server_stub.odata._planner",
    "azt_server_stub.odata._lexer",
    "azt_server_stub.odata._parser",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
