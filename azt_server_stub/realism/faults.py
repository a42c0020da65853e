"""Fault injection (PROTOCOL.md 12.3): which requests get errors, latency or a dropped connection.

A :class:`FaultInjector` holds an ordered list of :class:`FaultRule`: *what* to inject
(:class:`FaultKind`), *when* (a seeded probability, the next ``N``, every ``k``-th, or
given matching-request numbers) and *to which requests* (:class:`RequestMatch`).
:func:`parse_fault` reads the ``--fault`` spec syntax. The HTTP side (middleware, control
endpoint) is :mod:`azt_server_stub.realism.fault_middleware`.

Example::

    >>> injector = FaultInjector(seed=1)
    >>> rule = injector.add(parse_fault("busy:every=2@method=GET"))
    >>> info = RequestInfo("GET", "/devstoreaccount1/t()", "devstoreaccount1", None, "t", None)
    >>> [injector.decide(info).outcome is rule for _ in range(4)]
    [False, True, False, True]
    >>> injector.counters[FaultKind.BUSY]
    2
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import random
import re
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal, TypedDict, Unpack

from .inspection import BUSY_MESSAGES, RequestInfo


class FaultKind(enum.StrEnum):
    """What a rule injects.

    What each kind does to a matching request:

    =================  ====================================================================
    ``internal-error`` ``500 InternalError``; the request is not applied.
    ``timeout``        ``500 OperationTimedOut``; the request is not applied.
    ``timeout-after``  the request IS applied, then answered ``500 OperationTimedOut``.
    ``busy``           ``503 ServerBusy``; the request is not applied.
    ``drop-before``    the connection is aborted without an answer; not applied.
    ``drop-after``     the request IS applied, then the connection is aborted without an
                       answer ("succeeded on the server, failed at the client").
    ``latency``        the answer is delayed by the rule's ``delay`` (then served normally).
    =================  ====================================================================

    Latency rules add up; of the other rules, the first one (in order) that fires decides
    the request's fate and later ones are not consulted for it. Rules count the requests
    they saw (``seen``) and the faults they injected (``injected``); the injector keeps
    totals per kind (:attr:`FaultInjector.counters`) and a bounded log of recent faults.

    Example::

        >>> FaultKind.parse("503") is FaultKind.BUSY
        True
    """

    INTERNAL_ERROR = "internal-error"
    TIMEOUT = "timeout"
    TIMEOUT_AFTER = "timeout-after"
    BUSY = "busy"
    DROP_BEFORE = "drop-before"
    DROP_AFTER = "drop-after"
    LATENCY = "latency"

    @classmethod
    def parse(cls, text: str) -> FaultKind:
        """A kind from its name or an alias (``500``, ``503``, ``server-busy``, ...).

        Example::

            >>> FaultKind.parse("operation-timed-out")
            <FaultKind.TIMEOUT: 'timeout'>
        """
        name = text.strip().lower()
        kind = _KIND_ALIASES.get(name)
        if kind is None:
            try:
                return cls(name)
            except ValueError:
                known = ", ".join(sorted({k.value for k in cls} | set(_KIND_ALIASES)))
                raise ValueError(f"unknown fault kind {text!r} (known: {known})") from None
        return kind


_KIND_ALIASES = {
    "500": FaultKind.INTERNAL_ERROR,
    "internal": FaultKind.INTERNAL_ERROR,
    "internalerror": FaultKind.INTERNAL_ERROR,
    "operation-timed-out": FaultKind.TIMEOUT,
    "operationtimedout": FaultKind.TIMEOUT,
    "500-timeout": FaultKind.TIMEOUT,
    "503": FaultKind.BUSY,
    "server-busy": FaultKind.BUSY,
    "serverbusy": FaultKind.BUSY,
    "drop": FaultKind.DROP_BEFORE,
}


@dataclass(frozen=True, slots=True)
class RequestMatch:
    """Which requests a rule applies to (every given condition must hold).

    ``methods``: effective methods (upper case). ``tables``: table names, compared
    case-insensitively (a ``$batch`` request's table is its first operation's, known when
    the body was inspected). ``path``: a regular expression searched in the raw request
    path. ``only``: ``"writes"`` (POST, PUT, MERGE, PATCH, DELETE) or ``"reads"`` (the rest).

    Example::

        >>> from azt_server_stub.addressing import Kind
        >>> m = RequestMatch(methods=frozenset({"POST"}), tables=frozenset({"orders"}))
        >>> m.matches(RequestInfo("POST", "/a/Orders", "a", Kind.COLLECTION, "Orders", None))
        True
    """

    methods: frozenset[str] | None = None
    tables: frozenset[str] | None = None
    path: re.Pattern[str] | None = None
    only: Literal["writes", "reads"] | None = None

    def __post_init__(self) -> None:
        if self.methods is not None:
            object.__setattr__(self, "methods", frozenset(m.upper() for m in self.methods))
        if self.tables is not None:
            object.__setattr__(self, "tables", frozenset(t.lower() for t in self.tables))
        if self.only not in (None, "writes", "reads"):
            raise ValueError(f"only must be 'writes', 'reads' or None, got {self.only!r}")

    @property
    def needs_body(self) -> bool:
        """Whether matching may need the body (a table condition on a ``$batch``).

        Example::

            >>> RequestMatch(tables=frozenset({"orders"})).needs_body
            True
            >>> RequestMatch(methods=frozenset({"POST"}), only="writes").needs_body
            False
        """
        return self.tables is not None

    def matches(self, info: RequestInfo) -> bool:
        """Whether ``info`` satisfies every condition.

        Example::

            >>> RequestMatch(only="reads").matches(RequestInfo("GET", "/a/t()", "a", None,
            ...                                                 "t", None))
            True
        """
        if self.methods is not None and info.method not in self.methods:
            return False
        if self.only == "writes" and not info.is_write:
            return False
        if self.only == "reads" and info.is_write:
            return False
        if self.tables is not None and (
            info.table is None or info.table.lower() not in self.tables
        ):
            return False
        return self.path is None or self.path.search(info.raw_path) is not None


_ANY = RequestMatch()


@dataclass(slots=True, eq=False)
class FaultRule:
    """One injection rule and its counters.

    Give at most one trigger: ``rate`` (probability in [0, 1] per matching request),
    ``next`` (the next N matching requests, then the rule is spent), ``every`` (every
    k-th matching request: the k-th, 2k-th, ...) or ``at`` (a schedule: the matching
    requests with these 1-based numbers, e.g. ``{1, 3, 4}``; spent after the last). With
    none, every matching request is
    hit. ``delay`` (seconds) is required for ``latency`` and ignored otherwise;
    ``message`` overrides the error text (e.g. ``"Operations per second is over the
    account limit."`` for ``busy``).

    ``seen`` counts the matching requests the rule was consulted for, ``injected`` the
    faults it caused.

    Example::

        >>> rule = FaultRule(FaultKind.BUSY, next=2)
        >>> rule.remaining
        2
    """

    kind: FaultKind
    rate: float | None = None
    next: int | None = None
    every: int | None = None
    delay: float = 0.0
    match: RequestMatch = _ANY
    at: frozenset[int] | None = None
    message: str | None = None
    seen: int = field(default=0, init=False)
    injected: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.kind = FaultKind(self.kind)
        if self.at is not None:
            self.at = frozenset(self.at)
            if not self.at or min(self.at) < 1:
                raise ValueError(f"at needs request numbers >= 1, got {sorted(self.at)!r}")
        triggers = [t for t in (self.rate, self.next, self.every, self.at) if t is not None]
        if len(triggers) > 1:
            raise ValueError("give at most one of rate, next, every and at")
        if self.rate is not None and not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"rate must be within [0, 1], got {self.rate!r}")
        if self.next is not None and self.next < 0:
            raise ValueError(f"next must be >= 0, got {self.next!r}")
        if self.every is not None and self.every < 1:
            raise ValueError(f"every must be >= 1, got {self.every!r}")
        if self.kind is FaultKind.LATENCY:
            if not self.delay > 0:
                raise ValueError("a latency rule needs a delay > 0 seconds")
        elif self.delay:
            raise ValueError("delay applies to latency rules only")

    @property
    def remaining(self) -> int | None:
        """For a ``next`` rule: how many faults it will still inject; otherwise None.

        Example::

            >>> inj = FaultInjector(); rule = inj.fail_next("busy", 2)
            >>> _ = inj.decide(RequestInfo("GET", "/a/t()", "a", None, "t", None))
            >>> rule.remaining, FaultRule(FaultKind.BUSY, every=3).remaining
            (1, None)
        """
        return None if self.next is None else self.next - self.injected

    @property
    def spent(self) -> bool:
        """True when a ``next`` rule has injected all its faults, or an ``at`` schedule is
        past its last request number.

        Example::

            >>> inj = FaultInjector(); rule = inj.fail_next("busy", 1)
            >>> get = RequestInfo("GET", "/a/t()", "a", None, "t", None)
            >>> rule.spent, inj.decide(get).outcome is rule, rule.spent
            (False, True, True)
            >>> inj.decide(get).outcome is None  # a spent rule is skipped
            True
        """
        if self.at is not None:
            return self.seen >= max(self.at)
        return self.next is not None and self.injected >= self.next

    def _fires(self, rng: random.Random) -> bool:
        """Count one matching request and say whether the rule fires for it."""
        self.seen += 1
        if self.next is not None:
            return self.injected < self.next
        if self.every is not None:
            return self.seen % self.every == 0
        if self.at is not None:
            return self.seen in self.at
        if self.rate is not None:
            return rng.random() < self.rate
        return True

    def describe(self) -> str:
        """A compact text form (the ``--fault`` syntax).

        Example::

            >>> FaultRule(FaultKind.BUSY, rate=0.25).describe()
            'busy:0.25'
        """
        head = self.kind.value
        if self.kind is FaultKind.LATENCY:
            head += f"={self.delay * 1000:g}ms"
        elif self.kind is FaultKind.BUSY and self.message is not None:
            variant = next((v for v, m in BUSY_MESSAGES.items() if m == self.message), None)
            if variant is not None and variant != "server":
                head += f"={variant}"
        if self.rate is not None:
            head += f":{self.rate:g}"
        elif self.next is not None:
            head += f":next={self.next}"
        elif self.every is not None:
            head += f":every={self.every}"
        elif self.at is not None:
            head += ":at=" + "|".join(str(n) for n in sorted(self.at))
        conds: list[str] = []
        m = self.match
        if m.only is not None:
            conds.append(m.only)
        if m.methods is not None:
            conds.append("method=" + "|".join(sorted(m.methods)))
        if m.tables is not None:
            conds.append("table=" + "|".join(sorted(m.tables)))
        if m.path is not None:
            conds.append("path=" + m.path.pattern)
        return head + ("@" + ",".join(conds) if conds else "")


@dataclass(frozen=True, slots=True)
class InjectedFault:
    """A log record of one injected fault.

    Example::

        >>> InjectedFault(FaultKind.BUSY, "PUT", "/a/t(PartitionKey='p',RowKey='r')").kind
        <FaultKind.BUSY: 'busy'>
    """

    kind: FaultKind
    method: str
    path: str


@dataclass(slots=True)
class Decision:
    """What :meth:`FaultInjector.decide` chose for one request.

    Example::

        >>> Decision().outcome is None
        True
    """

    delay: float = 0.0
    outcome: FaultRule | None = None


Sleep = Callable[[float], Awaitable[None]]


class FaultInjector:
    """The fault rules of a stub, their RNG, counters and log. Safe to change at run time.

    ``seed`` makes rate-based rules reproducible (for a given request order); ``rng``
    supplies a ready ``random.Random`` instead. ``sleep`` performs latency (tests inject a
    recorder). ``enabled`` can be toggled, or use :meth:`suspended` to run set-up and
    verification requests without faults. ``control`` opens the HTTP control endpoint
    (:data:`CONTROL_PATH`) for stubs running in another process.

    Example::

        >>> inj = FaultInjector(seed=3)
        >>> _ = inj.fail_rate(FaultKind.BUSY, 0.5, methods={"PUT"})
        >>> put = RequestInfo("PUT", "/a/t(PartitionKey='p',RowKey='r')", "a", None, "t", None)
        >>> hits = sum(inj.decide(put).outcome is not None for _ in range(1000))
        >>> 400 < hits < 600, inj.counters[FaultKind.BUSY] == hits
        (True, True)
    """

    def __init__(
        self,
        rules: Iterable[FaultRule] = (),
        *,
        seed: int | None = None,
        rng: random.Random | None = None,
        sleep: Sleep | None = None,
        log_size: int = 10_000,
        control: bool = False,
    ) -> None:
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = list(rules)
        self._rng = rng if rng is not None else random.Random(seed)
        self._sleep: Sleep = sleep or asyncio.sleep
        self.enabled = True
        self.counters: collections.Counter[FaultKind] = collections.Counter()
        self.log: collections.deque[InjectedFault] = collections.deque(maxlen=log_size)
        self.total_delay = 0.0
        self.control = control

    # -- rule management -----------------------------------------------------------------
    @property
    def rules(self) -> list[FaultRule]:
        """A snapshot of the rules, in evaluation order.

        Example::

            >>> inj = FaultInjector(); _ = inj.add("busy:next=1"); _ = inj.add("latency=5ms")
            >>> [r.describe() for r in inj.rules]
            ['busy:next=1', 'latency=5ms']
            >>> inj.rules.clear(); len(inj.rules)  # clearing the copy changes nothing
            2
        """
        with self._lock:
            return list(self._rules)

    def add(self, rule: FaultRule | str) -> FaultRule:
        """Append a rule (or a ``--fault`` spec string); returns the rule.

        Example::

            >>> FaultInjector().add("timeout:next=1").kind
            <FaultKind.TIMEOUT: 'timeout'>
        """
        if isinstance(rule, str):
            rule = parse_fault(rule)
        with self._lock:
            self._rules.append(rule)
        return rule

    def remove(self, rule: FaultRule) -> None:
        """Remove one rule (ValueError if it is not there).

        Example::

            >>> inj = FaultInjector(); rule = inj.add("busy"); inj.remove(rule); inj.rules
            []
        """
        with self._lock:
            self._rules.remove(rule)

    def clear(self) -> None:
        """Remove every rule (counters and log are kept; see :meth:`reset_counters`).

        Example::

            >>> inj = FaultInjector([parse_fault("busy")]); inj.clear(); inj.rules
            []
        """
        with self._lock:
            self._rules.clear()

    def reset_counters(self) -> None:
        """Zero the injector's totals and log (rules keep their own counters).

        Example::

            >>> inj = FaultInjector(); inj.counters[FaultKind.BUSY] += 1; inj.reset_counters()
            >>> inj.counters[FaultKind.BUSY]
            0
        """
        with self._lock:
            self.counters.clear()
            self.log.clear()
            self.total_delay = 0.0

    def fail_next(self, kind: FaultKind | str, n: int = 1, **match: Unpack[MatchArgs]) -> FaultRule:
        """Inject ``kind`` into the next ``n`` requests matching ``match`` (see :func:`make_match`).

        Example::

            >>> FaultInjector().fail_next("drop-after", 1, methods={"POST"}).remaining
            1
        """
        return self.add(FaultRule(FaultKind.parse(str(kind)), next=n, match=make_match(**match)))

    def fail_every(self, kind: FaultKind | str, k: int, **match: Unpack[MatchArgs]) -> FaultRule:
        """Inject ``kind`` into every ``k``-th matching request.

        Example::

            >>> FaultInjector().fail_every(FaultKind.BUSY, 3).every
            3
        """
        return self.add(FaultRule(FaultKind.parse(str(kind)), every=k, match=make_match(**match)))

    def fail_at(
        self, kind: FaultKind | str, numbers: Iterable[int], **match: Unpack[MatchArgs]
    ) -> FaultRule:
        """Inject ``kind`` into the matching requests with these 1-based numbers (a schedule).

        Example::

            >>> inj = FaultInjector(); rule = inj.fail_at("timeout", [2, 3], only="writes")
            >>> put = RequestInfo("PUT", "/a/t(PartitionKey='p',RowKey='r')", "a", None, "t", None)
            >>> [inj.decide(put).outcome is rule for _ in range(4)], rule.spent
            ([False, True, True, False], True)
        """
        return self.add(
            FaultRule(FaultKind.parse(str(kind)), at=frozenset(numbers), match=make_match(**match))
        )

    def fail_rate(
        self, kind: FaultKind | str, rate: float, **match: Unpack[MatchArgs]
    ) -> FaultRule:
        """Inject ``kind`` into matching requests with probability ``rate``.

        Example::

            >>> FaultInjector().fail_rate("503", 0.2, only="writes").rate
            0.2
        """
        return self.add(FaultRule(FaultKind.parse(str(kind)), rate=rate, match=make_match(**match)))

    def add_latency(
        self, seconds: float, *, rate: float | None = None, **match: Unpack[MatchArgs]
    ) -> FaultRule:
        """Delay matching requests by ``seconds`` (all of them, or with probability ``rate``).

        Example::

            >>> FaultInjector().add_latency(0.05).delay
            0.05
        """
        return self.add(
            FaultRule(FaultKind.LATENCY, rate=rate, delay=seconds, match=make_match(**match))
        )

    @contextlib.contextmanager
    def suspended(self) -> Iterator[None]:
        """A context in which no fault is injected (rules do not count requests either).

        Example::

            >>> inj = FaultInjector(); _ = inj.fail_rate("busy", 1.0)
            >>> with inj.suspended():
            ...     inj.decide(RequestInfo("GET", "/a/t()", "a", None, "t", None)).outcome
        """
        before = self.enabled
        self.enabled = False
        try:
            yield
        finally:
            self.enabled = before

    # -- decisions ---------------------------------------------------------------------------
    @property
    def needs_body(self) -> bool:
        """Whether some rule needs the body of ``$batch`` requests to match.

        Example::

            >>> inj = FaultInjector([parse_fault("busy@method=POST")]); inj.needs_body
            False
            >>> _ = inj.fail_next("timeout", table="orders"); inj.needs_body
            True
        """
        with self._lock:
            return any(r.match.needs_body for r in self._rules)

    def decide(self, info: RequestInfo) -> Decision:
        """Consult the rules for one request: total latency and the deciding rule (or None).

        Counts are updated as if the decision is carried out (the middleware does).

        Example::

            >>> inj = FaultInjector([parse_fault("latency=20ms"), parse_fault("timeout")])
            >>> d = inj.decide(RequestInfo("GET", "/a/t()", "a", None, "t", None))
            >>> d.delay, d.outcome.kind.value
            (0.02, 'timeout')
        """
        decision = Decision()
        if not self.enabled:
            return decision
        with self._lock:
            for rule in self._rules:
                is_latency = rule.kind is FaultKind.LATENCY
                if not is_latency and decision.outcome is not None:
                    continue
                if rule.spent or not rule.match.matches(info):
                    continue
                if not rule._fires(self._rng):
                    continue
                rule.injected += 1
                self.counters[rule.kind] += 1
                self.log.append(InjectedFault(rule.kind, info.method, info.raw_path))
                if is_latency:
                    decision.delay += rule.delay
                else:
                    decision.outcome = rule
            self.total_delay += decision.delay
        return decision

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` with the injector's sleep function.

        Example::

            >>> slept = []
            >>> async def record(seconds: float) -> None:
            ...     slept.append(seconds)
            >>> asyncio.run(FaultInjector(sleep=record).sleep(0.25)); slept
            [0.25]
        """
        await self._sleep(seconds)


class MatchArgs(TypedDict, total=False):
    """Keyword arguments of :func:`make_match` (and of the ``FaultInjector.fail_*`` helpers).

    Example::

        >>> args: MatchArgs = {"methods": ["POST"], "only": "writes"}
        >>> make_match(**args).only
        'writes'
    """

    methods: Iterable[str] | None
    tables: Iterable[str] | None
    table: str | None
    path: str | re.Pattern[str] | None
    only: Literal["writes", "reads"] | None


def make_match(
    *,
    methods: Iterable[str] | None = None,
    tables: Iterable[str] | None = None,
    table: str | None = None,
    path: str | re.Pattern[str] | None = None,
    only: Literal["writes", "reads"] | None = None,
) -> RequestMatch:
    """Build a :class:`RequestMatch` from keyword arguments (``table`` is one table).

    Example::

        >>> make_match(table="Orders", methods=["post"]).methods
        frozenset({'POST'})
    """
    names: set[str] | None = None
    if tables is not None:
        names = set(tables)
    if table is not None:
        names = (names or set()) | {table}
    return RequestMatch(
        methods=None if methods is None else frozenset(methods),
        tables=None if names is None else frozenset(names),
        path=re.compile(path) if isinstance(path, str) else path,
        only=only,
    )


_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s)?\s*$")


def parse_duration(text: str) -> float:
    """Seconds from ``50ms``, ``1.5s`` or a bare number of seconds.

    Example::

        >>> parse_duration("50ms"), parse_duration("2s"), parse_duration("0.25")
        (0.05, 2.0, 0.25)
    """
    m = _DURATION.match(text)
    if m is None:
        raise ValueError(f"not a duration: {text!r} (use e.g. 50ms, 1.5s or 0.2)")
    value = float(m.group(1))
    return value / 1000.0 if m.group(2) == "ms" else value


def _parse_rate(text: str) -> float:
    text = text.strip()
    try:
        value = float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(f"not a probability: {text!r} (use e.g. 0.2 or 20%)") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"probability out of range: {text!r}")
    return value


def _parse_count(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{what} needs an integer, got {text!r}") from None
    return value


def parse_fault(spec: str) -> FaultRule:
    """Parse the ``--fault`` syntax: ``KIND[=DELAY][:WHEN][@CONDITION,...]``.

    * ``KIND``: ``internal-error`` (``500``), ``timeout``, ``timeout-after``, ``busy``
      (``503``; ``busy=account``, ``busy=ingress`` or ``busy=egress`` for the service's
      other ServerBusy texts, :data:`BUSY_MESSAGES`), ``drop-before`` (``drop``),
      ``drop-after``, ``latency=DELAY`` (``latency=50ms``).
    * ``WHEN``: a probability (``0.2`` or ``20%``), ``next=N``, ``every=K`` or a schedule
      ``at=N|M|...`` (1-based numbers of matching requests); omitted: every matching
      request.
    * ``CONDITION``: ``writes``, ``reads``, ``method=POST|PUT``, ``table=NAME|NAME``,
      ``path=REGEX`` (``path`` takes the rest of the spec, commas included).

    Example::

        >>> rule = parse_fault("drop-after:10%@writes,table=orders")
        >>> (rule.kind.value, rule.rate, rule.match.only, sorted(rule.match.tables or ()))
        ('drop-after', 0.1, 'writes', ['orders'])
        >>> parse_fault("latency=50ms").delay
        0.05
    """
    text = spec.strip()
    if not text:
        raise ValueError("empty fault spec")
    head, _, conds = text.partition("@")
    kind_text, _, when = head.partition(":")
    kind_name, _, arg = kind_text.partition("=")
    kind = FaultKind.parse(kind_name)
    delay = 0.0
    message: str | None = None
    if kind is FaultKind.LATENCY:
        if not arg:
            raise ValueError("latency needs a delay: latency=50ms")
        delay = parse_duration(arg)
    elif kind is FaultKind.BUSY and arg:
        message = BUSY_MESSAGES.get(arg.strip().lower())
        if message is None:
            known = ", ".join(BUSY_MESSAGES)
            raise ValueError(f"unknown ServerBusy variant {arg!r} in {spec!r} (known: {known})")
    elif arg:
        raise ValueError(f"{kind.value} takes no '=' argument: {spec!r}")
    rate: float | None = None
    nxt: int | None = None
    every: int | None = None
    at: frozenset[int] | None = None
    when = when.strip()
    if when:
        name, eq, value = when.partition("=")
        if eq and name.strip() == "next":
            nxt = _parse_count(value, "next")
        elif eq and name.strip() == "every":
            every = _parse_count(value, "every")
        elif eq and name.strip() == "at":
            at = frozenset(_parse_count(v, "at") for v in value.split("|") if v.strip())
        elif eq:
            raise ValueError(
                f"unknown trigger {name!r} in {spec!r} (use next=N, every=K or at=N|M)"
            )
        else:
            rate = _parse_rate(when)
    methods: set[str] | None = None
    tables: set[str] | None = None
    path: str | None = None
    only: Literal["writes", "reads"] | None = None
    rest = conds
    while rest:
        if rest.startswith("path="):
            path = rest[len("path=") :]
            break
        item, _, rest = rest.partition(",")
        item = item.strip()
        if not item:
            continue
        if item == "writes":
            only = "writes"
        elif item == "reads":
            only = "reads"
        elif item.startswith("method="):
            methods = {m.strip().upper() for m in item[7:].split("|") if m.strip()}
        elif item.startswith("table="):
            tables = {t.strip() for t in item[6:].split("|") if t.strip()}
        else:
            raise ValueError(
                f"unknown condition {item!r} in {spec!r} "
                "(use writes, reads, method=, table=, path=)"
            )
    try:
        match = make_match(methods=methods, tables=tables, path=path, only=only)
    except re.error as exc:
        raise ValueError(f"bad path pattern in {spec!r}: {exc}") from None
    return FaultRule(
        kind, rate=rate, next=nxt, every=every, at=at, delay=delay, match=match, message=message
    )
