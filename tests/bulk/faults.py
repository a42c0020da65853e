"""The fault mix of the exactly-once tests: 5 % 503 ServerBusy on every request to the
``chaos`` table, 2 % of its writes dropped before they are applied, 2 % after."""

from __future__ import annotations

from azt_server_stub.realism.faults import FaultInjector, FaultKind


def chaos(seed: int) -> FaultInjector:
    inj = FaultInjector(seed=seed)
    inj.fail_rate(FaultKind.BUSY, 0.05, table="chaos")
    inj.fail_rate(FaultKind.DROP_BEFORE, 0.02, only="writes", table="chaos")
    inj.fail_rate(FaultKind.DROP_AFTER, 0.02, only="writes", table="chaos")
    return inj
