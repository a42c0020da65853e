"""Shared pytest configuration.

Fixtures specific to one area live in that area's ``conftest.py``
(``tests/stub``, ``tests/client``, ``tests/orm``, ``tests/context``).
"""
