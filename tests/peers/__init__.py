"""Peer checks: other, independent clients driven against the stub (not pytest modules)."""
