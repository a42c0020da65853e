"""The realism switches of ``azt-stub``: faults, throttling and range partitions.

Each ``add_*_arguments`` adds a group of switches to the parser of
:mod:`azt_server_stub.__main__`; each ``*_from_args`` builds what they describe (None
when absent; ``ValueError`` for a malformed value).

Example::

    >>> p = argparse.ArgumentParser(); add_throttle_arguments(p)
    >>> throttle_from_args(p.parse_args(["--throttle", "partition=50"])).limits.partition_rate
    50.0
"""

from __future__ import annotations

import argparse

from .realism.fault_middleware import CONTROL_PATH
from .realism.faults import FaultInjector, parse_fault
from .realism.partitions import PartitionLayout, RangeLayout
from .realism.throttle import Throttle, ThrottleLimits


def add_fault_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--fault``, ``--latency`` and ``--fault-seed`` to the stub's argument parser.

    Example::

        >>> p = argparse.ArgumentParser(); add_fault_arguments(p)
        >>> args = p.parse_args(["--fault", "503:20%", "--fault-seed", "7"])
        >>> faults_from_args(args).rules[0].rate
        0.2
    """
    group = parser.add_argument_group("fault injection")
    group.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="KIND[:WHEN][@COND,...]",
        help="inject faults, repeatable: KIND is internal-error|500, timeout, timeout-after, "
        "busy|503 (busy=account|ingress|egress: the account-limit texts), drop-before, "
        "drop-after, latency=50ms; WHEN is a probability (0.2, 20%%), "
        "next=N, every=K or at=N|M|... (a schedule of matching-request numbers); "
        "COND is writes, reads, method=POST|PUT, table=NAME, path=REGEX. "
        "Example: --fault 503:20%% --fault drop-after:0.05@writes",
    )
    group.add_argument(
        "--latency",
        action="append",
        default=[],
        metavar="DELAY[:WHEN][@COND,...]",
        help="add latency to requests, e.g. --latency 50ms (same WHEN/COND syntax as --fault)",
    )
    group.add_argument(
        "--fault-seed", type=int, default=None, help="seed of the fault RNG (reproducible runs)"
    )
    group.add_argument(
        "--fault-control",
        action="store_true",
        help=f"serve {CONTROL_PATH} (no authentication) to read counters and change fault "
        "rules at run time; for local tests only",
    )


def faults_from_args(args: argparse.Namespace) -> FaultInjector | None:
    """The injector the parsed ``--fault``/``--latency``/``--fault-control`` arguments
    describe (None when there are none). Raises ``ValueError`` for a malformed spec.

    Example::

        >>> faults_from_args(argparse.Namespace(fault=["busy:next=1"], latency=[], fault_seed=1,
        ...                              fault_control=True)).control
        True
    """
    specs = list(getattr(args, "fault", None) or [])
    specs += ["latency=" + s for s in getattr(args, "latency", None) or []]
    control = bool(getattr(args, "fault_control", False))
    if not specs and not control:
        return None
    return FaultInjector(
        [parse_fault(s) for s in specs], seed=getattr(args, "fault_seed", None), control=control
    )


def add_throttle_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--throttle [SPEC]`` to the stub's argument parser.

    Example::

        >>> p = argparse.ArgumentParser(); add_throttle_arguments(p)
        >>> throttle_from_args(p.parse_args(["--throttle"])).limits.partition_rate
        2000.0
        >>> throttle_from_args(p.parse_args([])) is None
        True
    """
    parser.add_argument(
        "--throttle",
        nargs="?",
        const="",
        default=None,
        metavar="partition=N,account=N,burst=S,timeouts=F",
        help="answer 503 ServerBusy above the scalability targets, in entities per second "
        "(defaults: partition=2000, account=20000, burst=1 second; 'off' disables one limit); "
        "timeouts=0.1 answers that share of refusals 500 OperationTimedOut instead",
    )


def throttle_from_args(args: argparse.Namespace) -> Throttle | None:
    """The throttle ``--throttle`` describes (None when absent). ValueError when malformed.

    Example::

        >>> throttle_from_args(argparse.Namespace(throttle="partition=50")).limits.partition_rate
        50.0
    """
    spec = getattr(args, "throttle", None)
    if spec is None:
        return None
    return Throttle(ThrottleLimits.parse(spec))


def add_partition_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--range-boundary`` (repeatable) and ``--scan-budget`` to the stub's parser.

    Example::

        >>> p = argparse.ArgumentParser(); add_partition_arguments(p)
        >>> args = p.parse_args(["--range-boundary", "m", "--scan-budget", "5"])
        >>> layout = partitions_from_args(args)
        >>> layout.default
        RangeLayout(boundaries=('m',), scan_budget=5, partition_pages=False)
    """
    group = parser.add_argument_group("range partitions")
    group.add_argument(
        "--range-boundary",
        action="append",
        default=[],
        metavar="PARTITIONKEY",
        help="a PartitionKey where a range partition starts (all tables); repeatable. Query "
        "pages stop there with continuation headers, possibly empty",
    )
    group.add_argument(
        "--partition-pages",
        action="store_true",
        help="every PartitionKey is a range partition of its own: a query page never holds "
        "two PartitionKeys",
    )
    group.add_argument(
        "--scan-budget",
        type=int,
        default=None,
        metavar="N",
        help="at most N entities examined per query page (stands in for the 5-second rule)",
    )


def partitions_from_args(args: argparse.Namespace) -> PartitionLayout | None:
    """The layout the parsed arguments describe (None when no flag is given).

    Raises ``ValueError`` for a scan budget below 1.

    Example::

        >>> ns = argparse.Namespace(range_boundary=["k"], scan_budget=None, partition_pages=False)
        >>> partitions_from_args(ns).default.boundaries
        ('k',)
    """
    bounds = tuple(getattr(args, "range_boundary", None) or ())
    budget = getattr(args, "scan_budget", None)
    per_partition = bool(getattr(args, "partition_pages", False))
    if not bounds and budget is None and not per_partition:
        return None
    return PartitionLayout(
        RangeLayout(boundaries=bounds, scan_budget=budget, partition_pages=per_partition)
    )
