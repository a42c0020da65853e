"""Runnable examples of azt; each runs against an embedded stub by default.

Run one with ``python -m examples.<name>``; add ``--connection-string`` (or set
``AZT_CONNECTION_STRING``) to run it against Azurite or a real account.
"""
