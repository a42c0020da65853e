"""The examples in the stub's docstrings run and hold (every module that has ``>>>`` lines)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import azt_server_stub

MODULES = [
    "azt_server_stub._acl",
    "azt_server_stub._eager",
    "azt_server_stub._props",
    "azt_server_stub.access_log",
    "azt_server_stub.addressing",
    "azt_server_stub.app",
    "azt_server_stub.connection",
    "azt_server_stub.front",
    "azt_server_stub.front_render",
    "azt_server_stub.lined",
    "azt_server_stub.read_limits",
    "azt_server_stub.flavors",
    "azt_server_stub.handlers.batch_plain",
    "azt_server_stub.handlers.call",
    "azt_server_stub.handlers.entities",
    "azt_server_stub.handlers.cors",
    "azt_server_stub.handlers.error_payload",
    "azt_server_stub.handlers.parsing",
    "azt_server_stub.request_state",
    "azt_server_stub.cli",
    "azt_server_stub.realism.inspection",
    "azt_server_stub.realism.throttle_middleware",
    "azt_server_stub.server",
    "azt_server_stub.proxy",
    "azt_server_stub.__main__",
    "azt_server_stub.formats.atom",
    "azt_server_stub.formats.batch",
    "azt_server_stub.formats.json",
    "azt_server_stub.formats.json_feed",
    "azt_server_stub.formats.json_form",
    "azt_server_stub.formats.json_tables",
    "azt_server_stub.formats.negotiation",
    "azt_server_stub.formats.xml",
    "azt_server_stub.auth",
    "azt_server_stub.auth.authenticator",
    "azt_server_stub.auth._sas",
    "azt_server_stub.versions",
    "azt_server_stub.model",
    "azt_server_stub.query_pages",
    "azt_server_stub._rowcache",
    "azt_server_stub._rows",
    "azt_server_stub._store",
    "azt_server_stub._sql",
    "azt_server_stub._writelog",
    "azt_server_stub.writes",
    "azt_server_stub.errors",
    "azt_server_stub.odata",
    "azt_server_stub.odata._ast",
    "azt_server_stub.odata._compile",
    "azt_server_stub.odata._continuation",
    "azt_server_stub.odata._options",
    "azt_server_stub.odata._filter",
    "azt_server_stub.odata._planner",
    "azt_server_stub.odata._lexer",
    "azt_server_stub.odata._parser",
    "azt_server_stub.odata._utf16",
]

#: Modules whose examples run in their own area's tests (module -> the test file).
OWN_RUNNERS = {
    "azt_server_stub.backend": "tests/stub/test_validation.py",
    "azt_server_stub.validation": "tests/stub/test_validation.py",
    "azt_server_stub.realism.faults": "tests/stub/test_faults.py",
    "azt_server_stub.realism.throttle": "tests/stub/test_throttle.py",
    "azt_server_stub.realism.partitions": "tests/stub/test_partitions.py",
    "azt_server_stub.explorer.api": "tests/explorer/test_api.py",
    "azt_server_stub.explorer.live": "tests/explorer/test_api.py",
    "azt_server_stub.explorer.sessions": "tests/explorer/test_api.py",
    "azt_server_stub.explorer.values": "tests/explorer/test_api.py",
}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0


def test_every_stub_module_with_examples_has_a_runner() -> None:
    """A module whose docstrings gain ``>>>`` examples must be added to a runner."""
    finder = doctest.DocTestFinder()
    with_examples = set()
    for info in pkgutil.walk_packages(azt_server_stub.__path__, "azt_server_stub."):
        module = importlib.import_module(info.name)
        if any(test.examples for test in finder.find(module)):
            with_examples.add(info.name)
    assert sorted(with_examples - set(MODULES) - set(OWN_RUNNERS)) == []


@pytest.mark.parametrize(("name", "runner"), sorted(OWN_RUNNERS.items()))
def test_own_runners_run_their_modules(name: str, runner: str) -> None:
    """The other runners still exist and still doctest the module they are named for."""
    text = (Path(__file__).resolve().parents[2] / runner).read_text(encoding="utf-8")
    assert "doctest.testmod" in text
    assert name.rsplit(".", 1)[1] in text
