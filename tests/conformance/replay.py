"""Replaying a recording against a fresh in-process stub, interaction by interaction.

For each recording (each run of its test, where it holds several: :func:`runs`): a new
:class:`StubServer` of the recording's flavour; the tables the real account already had when
the recording began are created first (:func:`preexisting`);
then every replayable interaction is sent in order, rewritten for the stub:

- the recorded host (``https://{account}.table.core.windows.net`` or the Cosmos host) becomes
  the stub's path-style account URL, in the URL and in the body (change-set parts);
- the request is re-signed with Shared Key for the stub's account (``x-ms-date`` now), other
  recorded headers are kept as they were;
- ETags and continuation tokens the real service handed out are replaced by the ones the stub
  handed out for the same answer (a map from recorded to live values grows as the replay goes).

Each answer is reduced to a :class:`~tests.conformance.compare.View` and compared with the
recorded answer's view: the :class:`Outcome` says which aspects differ.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib
import hmac
import json
import re
from dataclasses import dataclass, field, replace
from email.utils import format_datetime, parsedate_to_datetime
from urllib.parse import quote, unquote, urlsplit

import aiohttp
from yarl import URL

from azt_server_stub import StubServer
from azt_server_stub.app import DEV_ACCOUNT, DEV_KEY

from .cassettes import SERVICE_HOST, Interaction, Recording, account_state, not_replayable
from .compare import Difference, View, differences, view_of

#: Query parameters that carry a continuation token handed out in ``x-ms-continuation-*``.
CONTINUATION_PARAMETERS = ("nextpartitionkey", "nextrowkey", "nexttablename")
#: Query parameters of a shared access signature (dropped when a SAS request is sent for state).
SAS_PARAMETERS = frozenset(
    {
        "sv",
        "ss",
        "srt",
        "sp",
        "se",
        "st",
        "spr",
        "sip",
        "si",
        "sig",
        "tn",
        "spk",
        "srk",
        "epk",
        "erk",
    }
)
#: Recorded headers not replayed: the transport's own, and the signature (made anew).
DROPPED_HEADERS = {"authorization", "content-length", "host", "transfer-encoding"}
_TABLE_PATH = re.compile(r"^/(?P<name>[^/()$?]+)(?:\(.*\))?$")
_TABLE_ADDRESS = re.compile(r"^/Tables\('(?P<name>[^']*)'\)$")


@dataclass
class Outcome:
    """What became of one recorded interaction."""

    index: int
    method: str
    path: str
    skipped: str | None = None  # the rule that makes it not replayable
    differences: list[Difference] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        """Replayed, and no aspect differs."""
        return self.skipped is None and not self.differences


def _path(uri: str) -> str:
    return urlsplit(uri).path


def _table_names_in_listing(interaction: Interaction) -> list[str]:
    try:
        data = json.loads(interaction.response_body)
    except ValueError:
        return []
    rows = data.get("value") if isinstance(data, dict) else None
    return [str(r["TableName"]) for r in rows or [] if isinstance(r, dict) and "TableName" in r]


def _batch_tables(interaction: Interaction) -> list[str]:
    text = (interaction.body or b"").decode("utf-8", "replace")
    found = []
    for match in SERVICE_HOST.finditer(text):
        rest = text[match.end() :].split(" ", 1)[0]
        table = _TABLE_PATH.match(rest.split("?", 1)[0])
        if table:
            found.append(table.group("name"))
    return found


def _table_not_found(interaction: Interaction) -> bool:
    body = interaction.response_body
    return interaction.status == 404 and (
        b"TableNotFound" in body
        or interaction.response_headers.get("x-ms-error-code") == "TableNotFound"
    )


_STORAGE_TABLE_TOKEN = re.compile(r"^1!\d+!(?P<data>[A-Za-z0-9+/=]+)$")


def _next_table(interaction: Interaction) -> list[tuple[str, bool]]:
    """The table a real Storage ``NextTableName`` token points at (it exists: the page ends there).

    Storage's token is ``1!{length}!{base64 of the name, U+0001, more}``; others are not read.
    """
    token = interaction.response_headers.get("x-ms-continuation-nexttablename", "")
    match = _STORAGE_TABLE_TOKEN.match(token)
    if match is None:
        return []
    try:
        name = base64.b64decode(match.group("data")).split(b"\x01", 1)[0].decode("ascii")
    except ValueError:
        return []
    return [(name, True)] if name.isalnum() else []


def _events(interaction: Interaction) -> list[tuple[str, bool]]:
    """(table name, whether this interaction shows the table existed before it) pairs."""
    path = _path(interaction.uri)
    if path == "/Tables" and interaction.method == "POST":
        try:
            name = str(json.loads(interaction.body or b"{}")["TableName"])
        except (ValueError, KeyError, TypeError):
            return []
        return [(name, interaction.status == 409)]
    if path == "/Tables" and interaction.method == "GET":
        listed = [(name, True) for name in _table_names_in_listing(interaction)]
        return listed + _next_table(interaction)
    address = _TABLE_ADDRESS.match(unquote(path))
    if address:
        return [(address.group("name"), interaction.status < 400)]
    if path == "/$batch":
        return [(name, not _table_not_found(interaction)) for name in _batch_tables(interaction)]
    table = _TABLE_PATH.match(unquote(path))
    if table:
        existed = not (
            interaction.status == 404
            and (_table_not_found(interaction) or "comp=acl" in interaction.uri)
        )
        return [(table.group("name"), existed)]
    return []


def preexisting(recording: Recording) -> list[str]:
    """Tables the real account had before the recording began, as the recording shows them.

    A table's first appearance decides: a listing that shows it, an answer that needs it
    (an entity write that succeeded, a create that answered 409, a delete that answered
    204) means it existed; a create that succeeded or a 404 means it did not.
    """
    first: dict[str, bool] = {}
    names: dict[str, str] = {}
    for interaction in recording.interactions:
        for name, existed in _events(interaction):
            key = name.lower()
            if key not in first:
                first[key] = existed
                names[key] = name
    return [names[key] for key, existed in first.items() if existed]


class Replayer:
    """One recording replayed against one running stub (see the module docstring)."""

    def __init__(self, stub: StubServer, session: aiohttp.ClientSession) -> None:
        self.stub = stub
        self.session = session
        self.root = stub.table_endpoint(DEV_ACCOUNT)
        self.key = base64.b64decode(DEV_KEY)
        self.etags: dict[str, str] = {}
        self.tokens: dict[tuple[str, str], str] = {}

    def rewrite_text(self, text: str) -> str:
        """Recorded hosts to the stub's account URL; recorded ETags to live ones."""

        def host(match: re.Match[str]) -> str:
            return self.root + (match.group("secondary") or "")

        text = SERVICE_HOST.sub(host, text)
        for recorded, live in self.etags.items():
            text = text.replace(recorded, live)
        return text

    def url(self, uri: str, *, drop_sas: bool = False) -> str:
        """The stub URL for a recorded URI, with live continuation tokens in its query.

        ``drop_sas`` leaves out the parameters of a shared access signature.
        """
        parts = urlsplit(uri)
        match = SERVICE_HOST.match(uri)
        assert match is not None
        base = self.root + (match.group("secondary") or "")
        pieces = []
        for piece in parts.query.split("&") if parts.query else []:
            name, _, value = piece.partition("=")
            if drop_sas and unquote(name).lower() in SAS_PARAMETERS:
                continue
            live = self.tokens.get((unquote(name).lower(), unquote(value)))
            pieces.append(f"{name}={quote(live, safe='')}" if live is not None else piece)
        query = ("?" + "&".join(pieces)) if pieces else ""
        path = quote(parts.path, safe="/()',=:;!@$&+*-._~%")
        return base + path + query

    def sign(self, method: str, url: str, headers: dict[str, str]) -> None:
        """Shared Key for the stub's account (Table-service string-to-sign)."""
        parts = urlsplit(url)
        comp = dict(p.partition("=")[::2] for p in parts.query.split("&") if p).get("comp")
        resource = "/" + DEV_ACCOUNT + parts.path + ("?comp=" + comp if comp else "")
        lookup = {k.lower(): v for k, v in headers.items()}
        to_sign = "\n".join(
            [
                method,
                lookup.get("content-md5", ""),
                lookup.get("content-type", ""),
                lookup["x-ms-date"],
                resource,
            ]
        )
        digest = hmac.new(self.key, to_sign.encode("utf-8"), hashlib.sha256).digest()
        headers["Authorization"] = f"SharedKey {DEV_ACCOUNT}:{base64.b64encode(digest).decode()}"

    def request(
        self, interaction: Interaction, *, drop_sas: bool = False
    ) -> tuple[str, dict[str, str], bytes | None]:
        """The rewritten, re-signed request for ``interaction`` (Shared Key; see :meth:`url`)."""
        now = format_datetime(dt.datetime.now(dt.UTC), usegmt=True)
        headers: dict[str, str] = {}
        for name, value in interaction.headers.items():
            lower = name.lower()
            if lower in DROPPED_HEADERS:
                continue
            if lower in ("x-ms-date", "date"):
                value = now
            elif lower in ("if-match", "if-none-match"):
                value = self.etags.get(value, value)
            headers[name] = value
        if not any(k.lower() == "x-ms-date" for k in headers):
            headers["x-ms-date"] = now
        body = interaction.body
        if body:
            body = self.rewrite_text(body.decode("utf-8", "surrogateescape")).encode(
                "utf-8", "surrogateescape"
            )
        url = self.url(interaction.uri, drop_sas=drop_sas)
        self.sign(interaction.method, url, headers)
        return url, headers, body or None

    def learn(self, recorded: View, live: View) -> None:
        """Map the recorded ETags and continuation tokens to the live ones of the same answer."""
        for key, value in recorded.etags.items():
            if key in live.etags:
                self.etags[value] = live.etags[key]
        for name, value in recorded.continuation_values.items():
            if name in live.continuation_values:
                self.tokens[(name.lower(), value)] = live.continuation_values[name]
        for want, got in zip(recorded.parts or [], live.parts or [], strict=False):
            self.learn(want, got)

    async def replay(self, interaction: Interaction) -> Outcome:
        """Send one interaction and compare the stub's answer with the recorded one.

        An interaction no rule lets us compare is not sent, except a request authorised by a
        shared access signature: it is sent signed with Shared Key instead (its SAS parameters
        left out), so that the account's state follows the recording, and its answer is not
        compared.
        """
        outcome = Outcome(interaction.index, interaction.method, _path(interaction.uri))
        rule = not_replayable(interaction)
        outcome.skipped = rule
        if rule is not None and rule != "sas":
            return outcome
        url, headers, body = self.request(interaction, drop_sas=rule == "sas")
        async with self.session.request(
            interaction.method,
            URL(url, encoded=True),
            headers=headers,
            data=body,
            skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent", "Content-Type"),
        ) as response:
            live_body = await response.read()
            live_headers = {k.lower(): v for k, v in response.headers.items()}
            live_status = response.status
        compare_body = account_state(interaction) is None
        ordered = not (self.stub.flavor == "cosmos" and outcome.path == "/Tables")
        recorded = view_of(
            interaction.status,
            interaction.response_headers,
            interaction.response_body,
            self.root,
            compare_body=compare_body,
            ordered=ordered,
        )
        live = view_of(
            live_status,
            live_headers,
            live_body,
            self.root,
            compare_body=compare_body,
            ordered=ordered,
        )
        self.learn(recorded, live)
        if rule is not None:
            return outcome
        if not compare_body:
            recorded.content_id = live.content_id = None
        outcome.differences = differences(recorded, live)
        return outcome


#: A pause between two recorded requests longer than this starts a new run of the test.
RUN_GAP = dt.timedelta(seconds=45)


def runs(recording: Recording) -> list[Recording]:
    """The recording split into the runs of its test it holds, in order.

    vcrpy's ``new_episodes`` mode appends each new run of a test to its recording; the real
    account's clean-up between runs (a test's tear-down) was not recorded, so each run is
    replayed on a fresh stub of its own. A run starts where the requests' date jumps by more
    than :data:`RUN_GAP` (in the published recordings runs start 51 seconds or more after
    the run before, while the longest pause inside one run is 31 seconds: a test waiting for
    service properties to apply). A recording of one run is returned whole.
    """
    found: list[list[Interaction]] = []
    previous: dt.datetime | None = None
    for interaction in recording.interactions:
        text = interaction.headers.get("x-ms-date") or interaction.headers.get("Date")
        when = parsedate_to_datetime(text) if text else None
        if not found or (when and previous and when - previous > RUN_GAP):
            found.append([])
        found[-1].append(interaction)
        previous = when or previous
    if len(found) <= 1:
        return [recording]
    return [replace(recording, interactions=run) for run in found]


async def _replay_run(recording: Recording) -> list[Outcome]:
    async with StubServer(flavor=recording.flavor) as stub:
        for name in preexisting(recording):
            try:
                stub.backend.create_table(stub.account, name)
            except Exception:
                continue
        async with aiohttp.ClientSession(auto_decompress=True) as session:
            replayer = Replayer(stub, session)
            return [await replayer.replay(i) for i in recording.interactions]


async def replay_recording(recording: Recording) -> list[Outcome]:
    """Replay a recording against a fresh stub of its flavour, each run of its test on a
    stub of its own (:func:`runs`); one outcome per interaction."""
    outcomes: list[Outcome] = []
    for run in runs(recording):
        outcomes += await _replay_run(run)
    return outcomes


def replay_all(recordings: list[Recording]) -> dict[str, list[Outcome]]:
    """Every recording's outcomes, by recording name (one event loop, one stub at a time)."""

    async def run() -> dict[str, list[Outcome]]:
        return {r.name: await replay_recording(r) for r in recordings}

    return asyncio.run(run())
