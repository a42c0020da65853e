"""Run a legacy-SDK script with azt.legacy in place of the legacy SDK; its text unchanged.

``python shim.py script.py`` calls ``azt.legacy.install_import_aliases()`` (the one switch
docs/porting.md documents: ``azure.common`` and ``azure.cosmosdb.table[.x]`` import as the
azt stand-ins), then runs the script as ``__main__``.

Example::

    $ PYTHONPATH=. .venv/bin/python tests/peers/legacy_dropin/shim.py \\
          tests/peers/legacy_dropin/crud.py
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from azt.legacy import install_import_aliases

if __name__ == "__main__":
    script = Path(sys.argv[1]).resolve()
    install_import_aliases()
    sys.path.insert(0, str(script.parent))
    sys.argv = sys.argv[1:]
    runpy.run_path(str(script), run_name="__main__")
