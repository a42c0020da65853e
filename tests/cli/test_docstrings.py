"""The docstring examples of the command line, the plugin and their helpers run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["azt.cli", "azt.cli._jsonl", "azt.cli._migrate", "azt.cli._progress", "azt.testing"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0


@pytest.mark.parametrize("name", MODULES)
def test_public_names_have_examples(name: str) -> None:
    module = importlib.import_module(name)
    for public in module.__all__:
        obj = getattr(module, public)
        if isinstance(obj, str | int):
            continue  # constants are documented with #: comments
        doc = obj.__doc__ or ""
        assert "Example" in doc, f"{name}.{public} has no example"
