"""Alias of :mod:`azt_server_stub.realism.faults` (transitional: removed once importers moved).

Example::

    from azt_server_stub.realism.faults import FaultInjector
"""

from __future__ import annotations

from .realism.fault_middleware import CONTROL_PATH, FAULTS_KEY, install, middleware
from .realism.faults import (
    FaultInjector,
    FaultKind,
    FaultRule,
    InjectedFault,
    RequestMatch,
    make_match,
    parse_duration,
    parse_fault,
)
from .realism.inspection import BUSY_MESSAGES, RequestInfo, describe_request, prepare_refusal

__all__ = [
    "BUSY_MESSAGES",
    "CONTROL_PATH",
    "FAULTS_KEY",
    "FaultInjector",
    "FaultKind",
    "FaultRule",
    "InjectedFault",
    "RequestInfo",
    "RequestMatch",
    "describe_request",
    "install",
    "make_match",
    "middleware",
    "parse_duration",
    "parse_fault",
    "prepare_refusal",
]
