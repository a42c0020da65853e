"""The ``>>>`` examples in the context modules' docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "azt._uow.types",
        "azt._uow.access",
        "azt._uow.descriptor",
        "azt._uow.tracker",
        "azt.legacy._dotnet",
        "azt.legacy._wire",
        "azt.legacy._requests",
        "azt.legacy._retry",
        "azt.legacy._models",
        "azt.legacy._encryption",
        "azt.legacy.table_service",
    ],
)
def test_docstring_examples(module: str) -> None:
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
