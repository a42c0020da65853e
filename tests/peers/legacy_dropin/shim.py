"""Run a legacy-SDK script with azt.legacy in place of the legacy SDK; its text unchanged.

``python shim.py script.py`` makes ``azure.common`` and ``azure.cosmosdb.table[.x]``
importable as the azt stand-ins (exactly the import change docs/porting.md tells users to
make), then runs the script as ``__main__``.

Example::

    $ PYTHONPATH=. .venv/bin/python tests/peers/legacy_dropin/shim.py \\
          tests/peers/legacy_dropin/crud.py
"""

from __future__ import annotations

import importlib
import runpy
import sys
import types
from pathlib import Path

ALIASES = {
    "azure.common": "azt.legacy.azure_common",
    "azure.cosmosdb.table": "azt.legacy.cosmosdb_table",
    "azure.cosmosdb.table.tableservice": "azt.legacy.cosmosdb_table.tableservice",
    "azure.cosmosdb.table.models": "azt.legacy.cosmosdb_table.models",
    "azure.cosmosdb.table.tablebatch": "azt.legacy.cosmosdb_table.tablebatch",
    "azure.cosmosdb.table.common": "azt.legacy.cosmosdb_table.common",
    "azure.cosmosdb.table.common.models": "azt.legacy.cosmosdb_table.common.models",
    "azure.cosmosdb.table.common.retry": "azt.legacy.cosmosdb_table.common.retry",
}


def install() -> None:
    """Put the stand-ins into ``sys.modules`` under the legacy names."""
    for parent in ("azure", "azure.cosmosdb"):
        package = types.ModuleType(parent)
        package.__path__ = []
        sys.modules[parent] = package
    for legacy, stand_in in ALIASES.items():
        module = importlib.import_module(stand_in)
        sys.modules[legacy] = module
        head, _, tail = legacy.rpartition(".")
        setattr(sys.modules[head], tail, module)


if __name__ == "__main__":
    script = Path(sys.argv[1]).resolve()
    install()
    sys.path.insert(0, str(script.parent))
    sys.argv = sys.argv[1:]
    runpy.run_path(str(script), run_name="__main__")
