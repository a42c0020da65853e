"""tests/peers holds scripts for other clients' interpreters, not pytest modules.

They run in throwaway virtualenvs with legacy SDKs (``scripts/test-legacy-peer.sh``);
pytest must not import them.
"""

collect_ignore_glob = ["*.py"]
