"""The examples in the frames modules' docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")
pytest.importorskip("polars")
pytest.importorskip("dask.dataframe")


@pytest.mark.parametrize(
    "module",
    [
        "azt._frames.types",
        "azt._frames.decode",
        "azt._frames.encode",
        "azt._frames.io",
        "azt._frames.parquet",
        "azt._frames.ranges",
        "azt._frames.dask",
        "azt.frames",
        "azt.frames_dask",
        "azt.cli._parquet",
    ],
)
def test_docstring_examples(module: str) -> None:
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
