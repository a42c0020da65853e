"""Command line: ``python -m azt_server_stub`` / ``azt-stub``.

Example::

    $ azt-stub --port 10002 --account other:T3RoZXJLZXk= --location ./data
    azt-stub listening on http://127.0.0.1:10002
    ...
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .app import DEV_ACCOUNT, DEV_KEY, StubConfig, parse_account_spec
from .auth import AuthOptions
from .cli import (
    add_fault_arguments,
    add_partition_arguments,
    add_throttle_arguments,
    faults_from_args,
    partitions_from_args,
    throttle_from_args,
)
from .explorer import is_loopback_host
from .flavors import FLAVORS
from .proxy import ProxyOptions
from .read_limits import ReadLimits
from .server import StubServer, load_ssl_context

try:  # the [stub] extra: libuv's event loop, in C (not on Windows)
    import uvloop
except ImportError:  # pragma: no cover - the extra is installed in the project's venv
    uvloop = None  # type: ignore[assignment]

#: ``--loop``'s choices: ``auto`` is uvloop when it is installed, else asyncio's own loop.
LOOPS = ("auto", "asyncio", "uvloop")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``azt-stub``.

    Example::

        >>> build_parser().parse_args([]).port
        10002
    """
    p = argparse.ArgumentParser(
        prog="azt-stub", description="Azure Table service emulator (azt_server_stub)."
    )
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on")
    p.add_argument("--port", type=int, default=10002, help="port (0: pick a free one)")
    p.add_argument(
        "--account",
        action="append",
        default=[],
        metavar="NAME:KEY[:KEY2]",
        help="an account and its base64 key(s); repeatable (devstoreaccount1 is always there)",
    )
    p.add_argument("--location", type=Path, default=None, help="directory of a durable store")
    p.add_argument(
        "--durability",
        choices=["full", "process"],
        default="full",
        help="with --location, when a write is acknowledged: full (default) once fsynced, "
        "surviving power loss; process once handed to the OS, surviving kill -9 of the stub "
        "(an OS crash or power loss may lose the last writes, never half of one)",
    )
    p.add_argument(
        "--log-level",
        default="INFO",
        help="DEBUG, INFO (an access log line per request), WARNING, ERROR",
    )
    p.add_argument("--cert", type=Path, default=None, help="PEM certificate: serve HTTPS")
    p.add_argument("--key", type=Path, default=None, help="PEM private key for --cert")
    p.add_argument(
        "--oauth",
        action="store_true",
        help="accept bearer tokens (audience and lifetime checked, not the signature); HTTPS only",
    )
    p.add_argument(
        "--oauth-allow-http",
        action="store_true",
        help="with --oauth, also accept bearer tokens over plain HTTP (Azure refuses them)",
    )
    p.add_argument(
        "--disable-clock-skew-check",
        action="store_true",
        help="accept requests whatever their x-ms-date",
    )
    p.add_argument(
        "--loose-versions",
        action="store_true",
        help="treat unknown newer x-ms-version values as the newest known version",
    )
    p.add_argument(
        "--disable-product-style-url",
        action="store_true",
        help="always take the account from the path, never from the host name",
    )
    p.add_argument(
        "--table-deletion-delay",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="a deleted table's name stays taken (409 TableBeingDeleted) this long; Azure: ~40",
    )
    p.add_argument(
        "--header-timeout",
        type=float,
        default=ReadLimits().header_seconds,
        metavar="SECONDS",
        help="close a connection whose request head takes longer to arrive "
        "(default 120, Azure's HTTP server's; 0: never)",
    )
    p.add_argument(
        "--body-timeout",
        type=float,
        default=ReadLimits().body_seconds,
        metavar="SECONDS",
        help="close a connection whose request body pauses longer between two arrivals "
        "of data (default 120, Azure's HTTP server's; 0: never)",
    )
    p.add_argument(
        "--flavor",
        choices=sorted(FLAVORS),
        default="storage",
        help="answer as Azure Table storage (default) or as the Azure Cosmos DB Table API "
        "(its limits, refused operations, error bodies, 429 throttling; docs/cosmos.md)",
    )
    p.add_argument(
        "--explorer",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve the data explorer page at /_explorer/ (sign in with an account name "
        "and key; docs/explorer.md). Default: on when --host is a loopback address, off "
        "otherwise",
    )
    p.add_argument(
        "--explorer-remote",
        action="store_true",
        help="with --explorer, serve it on a non-loopback --host too (anyone who can reach "
        "the port may try account keys on the sign-in form)",
    )
    p.add_argument(
        "--proxy-port",
        type=int,
        default=None,
        metavar="PORT",
        help="also serve as an HTTP proxy on 127.0.0.1:PORT (0: a free one) for clients that "
        "address the accounts as {account}.table.core.windows.net; nothing is forwarded, "
        "other hosts get 403 (docs/porting.md)",
    )
    p.add_argument(
        "--proxy-cert",
        type=Path,
        default=None,
        help="PEM certificate of the proxy port (naming 127.0.0.1 and "
        "*.table.core.windows.net): https:// proxy URLs and CONNECT tunnels",
    )
    p.add_argument("--proxy-key", type=Path, default=None, help="PEM private key for --proxy-cert")
    p.add_argument(
        "--proxy-auth",
        default=None,
        metavar="USER:PASSWORD",
        help="with --proxy-port, require these Basic proxy credentials",
    )
    p.add_argument(
        "--loop",
        choices=LOOPS,
        default="auto",
        help="the event loop: uvloop (pip install 'azt-tables[stub]': less CPU per "
        "request) or asyncio's own; auto (default): uvloop when it is installed",
    )
    add_fault_arguments(p)
    add_throttle_arguments(p)
    add_partition_arguments(p)
    return p


def config_from_args(args: argparse.Namespace) -> StubConfig:
    """The :class:`StubConfig` the parsed arguments describe (ValueError when invalid).

    Example::

        >>> config_from_args(build_parser().parse_args(["--oauth"])).auth.allow_bearer
        True
    """
    accounts: dict[str, list[str]] = {DEV_ACCOUNT: [DEV_KEY]}
    for spec in args.account:
        name, keys = parse_account_spec(spec)
        accounts[name] = keys
    auth = AuthOptions(
        check_clock_skew=not args.disable_clock_skew_check,
        allow_bearer=bool(args.oauth),
        bearer_allow_http=bool(args.oauth_allow_http),
    )
    explorer = getattr(args, "explorer", None)
    remote = bool(getattr(args, "explorer_remote", False))
    if explorer is None:
        explorer = is_loopback_host(str(getattr(args, "host", "127.0.0.1"))) or remote
    elif explorer and not remote and not is_loopback_host(str(args.host)):
        raise ValueError(
            f"--explorer on the non-loopback --host {args.host}: add --explorer-remote to mean it"
        )
    return StubConfig(
        explorer=bool(explorer),
        explorer_remote=remote,
        accounts=accounts,
        location=args.location,
        durability=str(args.durability),
        auth=auth,
        lenient_versions=bool(args.loose_versions),
        product_style_urls=not args.disable_product_style_url,
        faults=faults_from_args(args),
        throttle=throttle_from_args(args),
        partitions=partitions_from_args(args),
        table_deletion_seconds=max(0.0, float(args.table_deletion_delay)),
        flavor=str(getattr(args, "flavor", "storage")),
        read_limits=ReadLimits(
            header_seconds=float(args.header_timeout), body_seconds=float(args.body_timeout)
        ),
    )


def proxy_from_args(args: argparse.Namespace) -> ProxyOptions | None:
    """The proxy mode the arguments ask for (``None`` without ``--proxy-port``;
    ``ValueError`` when inconsistent).

    Example::

        >>> proxy_from_args(build_parser().parse_args(["--proxy-port", "0",
        ...     "--proxy-auth", "u:p"])).credentials
        ('u', 'p')
        >>> proxy_from_args(build_parser().parse_args([])) is None
        True
    """
    cert, key, auth = args.proxy_cert, args.proxy_key, args.proxy_auth
    if args.proxy_port is None:
        if cert is not None or key is not None or auth is not None:
            raise ValueError("--proxy-cert, --proxy-key and --proxy-auth need --proxy-port")
        return None
    context = None
    if cert is not None or key is not None:
        if cert is None or key is None:
            raise ValueError("--proxy-cert and --proxy-key go together")
        context = load_ssl_context(cert, key)
    credentials = None
    if auth is not None:
        user, sep, password = str(auth).partition(":")
        if not sep or not user:
            raise ValueError("--proxy-auth takes USER:PASSWORD")
        credentials = (user, password)
    return ProxyOptions(port=int(args.proxy_port), ssl_context=context, credentials=credentials)


async def serve(args: argparse.Namespace, *, freeze_startup: bool = False) -> None:
    """Run until SIGINT/SIGTERM; ``freeze_startup``: once listening, exempt what start-up
    left alive from later cyclic collections (:func:`_freeze_startup`; ``azt-stub``).

    Example::

        asyncio.run(serve(build_parser().parse_args(["--port", "0"])))
    """
    config = config_from_args(args)
    ssl_context = None
    if args.cert is not None or args.key is not None:
        if args.cert is None or args.key is None:
            raise ValueError("--cert and --key go together")
        ssl_context = load_ssl_context(args.cert, args.key)
    proxy = proxy_from_args(args)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    level = getattr(logging, str(args.log_level).upper(), logging.INFO)
    access_log = isinstance(level, int) and level <= logging.INFO
    async with StubServer(
        config,
        host=args.host,
        port=args.port,
        ssl_context=ssl_context,
        access_log=access_log,
        proxy=proxy,
    ) as stub:
        if freeze_startup:
            _freeze_startup()
        print(
            f"azt-stub listening on {stub.endpoint} (flavor {stub.flavor}, "
            f"{loop_name(loop)} event loop)",
            flush=True,
        )
        for account in config.accounts:
            print(f"  {account}: {stub.table_endpoint(account)}", flush=True)
            if account != stub.account:
                print(f"    {stub.connection_string_for(account)}", flush=True)
        if stub.proxy_url is not None:
            print(f"proxy mode: {stub.proxy_url} (its accounts' product hosts only)", flush=True)
        print(f"connection string: {stub.connection_string}", flush=True)
        if stub.explorer_url is not None:
            print(
                f"data explorer: {stub.explorer_url} (sign in with an account name and key)",
                flush=True,
            )
        if stub.endpoint == "http://127.0.0.1:10002" and stub.account == DEV_ACCOUNT:
            print("  (the well-known one: UseDevelopmentStorage=true)", flush=True)
        if args.location is not None:
            print(f"durable store: {args.location}", flush=True)
        await stop.wait()
        print("azt-stub shutting down", flush=True)


#: Allocations between two collections of the youngest generation in the stub's own
#: process (Python's default: 700).
GC_THRESHOLD = 50_000


def _tune_collector() -> None:
    """Collect cyclic garbage less often in the ``azt-stub`` process (not when the stub is
    embedded in another program).

    The stub allocates many small containers per request (a 100-insert change set: some
    thousands) and keeps the stored entities alive, most of them never part of a cycle;
    with the default threshold the cyclic collector ran every few hundred allocations and
    took about a sixth of the process's CPU time during change sets. Cycles are still
    collected, in fewer, larger passes.
    """
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, middle, oldest)


def _freeze_startup() -> None:
    """Move every object alive now to the collector's permanent generation (``azt-stub``
    only, once it listens): the modules, the application and the server live as long as
    the process, and each full collection traversed all of them again (measured: about
    80 ms of a 95 ms full collection, with 20,000 entities stored). Garbage made later,
    the stored entities included, is collected as before; a cycle of start-up objects
    that became garbage only after this would be kept (none is known)."""
    gc.collect()
    gc.freeze()


def has_uvloop() -> bool:
    """Whether uvloop is installed (``--loop auto`` takes it then).

    Example::

        >>> has_uvloop() in (True, False)
        True
    """
    return uvloop is not None


def loop_factory(choice: str) -> tuple[str, Callable[[], asyncio.AbstractEventLoop]]:
    """The event loop ``--loop choice`` names: its name and a factory of new loops.

    ``auto`` takes uvloop when it is installed (the ``[stub]`` extra), else asyncio's
    own; ``uvloop`` without it installed is a ``ValueError``. Answers are the same on
    either loop (the stub's tests run on both); uvloop only costs less CPU per request.

    Example::

        >>> loop_factory("asyncio")[0]
        'asyncio'
    """
    if choice == "uvloop" or (choice == "auto" and uvloop is not None):
        if uvloop is None:
            raise ValueError(
                "--loop uvloop: uvloop is not installed (pip install 'azt-tables[stub]')"
            )
        return "uvloop", uvloop.new_event_loop
    if choice not in LOOPS:
        raise ValueError(f"--loop: unknown event loop {choice!r} (one of {', '.join(LOOPS)})")
    return "asyncio", asyncio.new_event_loop


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """``"uvloop"`` or ``"asyncio"``: which event loop ``loop`` is (the start-up banner).

    Example::

        >>> loop = asyncio.new_event_loop()
        >>> loop_name(loop)
        'asyncio'
        >>> loop.close()
    """
    return "uvloop" if type(loop).__module__.partition(".")[0] == "uvloop" else "asyncio"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``azt-stub``; returns the process exit status.

    Example::

        sys.exit(main(["--port", "10002", "--location", "./data"]))
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    _tune_collector()
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        _, new_loop = loop_factory(str(args.loop))
        with asyncio.Runner(loop_factory=new_loop) as runner:
            runner.run(serve(args, freeze_startup=True))
    except ValueError as exc:
        parser.error(str(exc))
    except OSError as exc:
        print(f"azt-stub: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
