"""The one switch that makes code (and test suites) written for the retired Python SDK run
on ``azt.legacy`` unchanged: :func:`install_import_aliases` makes ``azure.common`` and
``azure.cosmosdb.table`` (with its ``tableservice``, ``models``, ``tablebatch`` and
``common`` modules, and the private helper modules the legacy SDK's own tests import)
importable as azt's stand-ins.

Call it once, before the legacy imports run: at the top of the program's entry point, in
a ``conftest.py`` for a test suite, or in ``sitecustomize.py``. Other ``azure.*``
packages (``azure.core``, ...) stay importable as before.

Example::

    import azt.legacy
    azt.legacy.install_import_aliases()

    from azure.cosmosdb.table import TableService   # azt.legacy's TableService
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

__all__ = ["ALIASES", "install_import_aliases"]

_TABLE = "azt.legacy.cosmosdb_table"

ALIASES: dict[str, str] = {
    "azure.common": "azt.legacy.azure_common",
    "azure.cosmosdb.table": _TABLE,
    "azure.cosmosdb.table.tableservice": f"{_TABLE}.tableservice",
    "azure.cosmosdb.table.models": f"{_TABLE}.models",
    "azure.cosmosdb.table.tablebatch": f"{_TABLE}.tablebatch",
    "azure.cosmosdb.table._error": f"{_TABLE}._error",
    "azure.cosmosdb.table.common": f"{_TABLE}.common",
    "azure.cosmosdb.table.common.models": f"{_TABLE}.common.models",
    "azure.cosmosdb.table.common.retry": f"{_TABLE}.common.retry",
    "azure.cosmosdb.table.common._common_conversion": f"{_TABLE}.common._common_conversion",
    "azure.cosmosdb.table.common._encryption": f"{_TABLE}.common._encryption",
    "azure.cosmosdb.table.common._error": f"{_TABLE}.common._error",
}
"""Each legacy module name and the ``azt.legacy`` module that stands in for it."""


def _package(name: str) -> types.ModuleType:
    """The package ``name``: already imported, importable (a real ``azure`` namespace), or
    a new empty one."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    if name == "azure":
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if found:
            return importlib.import_module(name)
    module = types.ModuleType(name)
    module.__path__ = []
    sys.modules[name] = module
    return module


def install_import_aliases() -> None:
    """Make the legacy SDK's module names import azt's stand-ins (idempotent).

    Example::

        install_import_aliases()
        from azure.cosmosdb.table.tableservice import TableService  # azt.legacy's
    """
    azure = _package("azure")
    cosmosdb = _package("azure.cosmosdb")
    azure.cosmosdb = cosmosdb  # type: ignore[attr-defined]
    for legacy, stand_in in ALIASES.items():
        module = importlib.import_module(stand_in)
        sys.modules[legacy] = module
        head, _, tail = legacy.rpartition(".")
        setattr(sys.modules[head], tail, module)
