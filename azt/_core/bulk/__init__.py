"""Bulk loads: streaming, adaptive, resumable entity group transactions (the face is
:mod:`azt.bulk`)."""
