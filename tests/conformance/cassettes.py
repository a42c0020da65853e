"""Recordings of real traffic: the manifest of their sources, loading, and what replays.

The files under ``recordings/`` are recordings (vcrpy cassettes) of the official Python
SDKs' test suites talking to the real Azure Table service and the real Azure Cosmos DB
Table API. ``recordings/SOURCES.json`` names each file's repository, path and commit and
its SHA-256: :func:`load_manifest` refuses a file the manifest does not name, or whose bytes
changed, so the evidence stays what was published.

An interaction is *replayable* unless a rule below says why not (:func:`not_replayable`):
the rules are about what a request carries or what state it reads, never a chosen index.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml

RECORDINGS = Path(__file__).parent / "recordings"
MANIFEST = RECORDINGS / "SOURCES.json"

#: Hosts of the real services in the recordings: ``{account}[-secondary].table.{suffix}``.
SERVICE_HOST = re.compile(
    r"https?://(?P<account>[A-Za-z0-9_]+)(?P<secondary>-secondary)?"
    r"\.table\.(?P<suffix>core\.windows\.net|cosmos\.azure\.com|cosmosdb\.azure\.com)"
)


@dataclass(frozen=True)
class Source:
    """Where a recording came from (one manifest row); ``obtained``: how its bytes were
    taken (``read_file``: the stored-file look-up, page by page; empty where the row
    predates the field)."""

    file: str
    repository: str
    path: str
    commit: str
    sha256: str
    obtained: str = ""


@dataclass(frozen=True)
class Interaction:
    """One recorded request and the real service's answer."""

    index: int
    method: str
    uri: str
    headers: dict[str, str]
    body: bytes | None
    status: int
    response_headers: dict[str, str]  # lower-cased names
    response_body: bytes


@dataclass(frozen=True)
class Recording:
    """A recording file: its source, flavour and interactions."""

    source: Source
    flavor: str  # "storage" or "cosmos"
    interactions: list[Interaction] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The file name without ``.yaml`` (what test ids show)."""
        return self.source.file.removesuffix(".yaml")


class _Loader(yaml.SafeLoader):
    """Safe YAML, plus the ``!!python/unicode`` tag Python 2 recordings carry (plain text)."""


def _unicode(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    assert isinstance(node, yaml.ScalarNode)
    return str(loader.construct_scalar(node))


_Loader.add_constructor("tag:yaml.org,2002:python/unicode", _unicode)


def load_manifest() -> list[Source]:
    """The manifest's rows, after checking every recording file against them.

    Raises ``ValueError`` for a file the manifest does not name, a named file that is
    missing, or one whose SHA-256 differs from the manifest's.
    """
    rows = json.loads(MANIFEST.read_text(encoding="utf-8"))["files"]
    sources = [Source(**row) for row in rows]
    named = {s.file for s in sources}
    present = {p.relative_to(RECORDINGS).as_posix() for p in RECORDINGS.rglob("*.yaml")}
    if present - named:
        raise ValueError(f"recordings without a source in SOURCES.json: {sorted(present - named)}")
    if named - present:
        raise ValueError(f"SOURCES.json names missing recordings: {sorted(named - present)}")
    for source in sources:
        digest = hashlib.sha256((RECORDINGS / source.file).read_bytes()).hexdigest()
        if digest != source.sha256:
            raise ValueError(f"{source.file} changed since it was taken from {source.repository}")
    return sources


def _text(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, dict):  # vcrpy: {string: ...}
        return _text(value.get("string"))
    return str(value).encode("utf-8")


def _headers(raw: dict[str, Any] | None, *, lower: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, values in (raw or {}).items():
        value = values[0] if isinstance(values, list) else values
        out[name.lower() if lower else name] = str(value)
    return out


def flavor_of(uri: str) -> str:
    """``"cosmos"`` for a Cosmos DB Table API host, else ``"storage"``."""
    match = SERVICE_HOST.match(uri)
    return "cosmos" if match and "cosmos" in match.group("suffix") else "storage"


def load_recording(source: Source) -> Recording:
    """Parse one recording file."""
    data = yaml.load((RECORDINGS / source.file).read_bytes(), Loader=_Loader)
    interactions: list[Interaction] = []
    for index, item in enumerate(data["interactions"]):
        request, response = item["request"], item["response"]
        interactions.append(
            Interaction(
                index=index,
                method=str(request["method"]),
                uri=str(request["uri"]),
                headers=_headers(request.get("headers"), lower=False),
                body=_text(request.get("body")),
                status=int(response["status"]["code"]),
                response_headers=_headers(response.get("headers"), lower=True),
                response_body=_text(response.get("body")) or b"",
            )
        )
    flavor = flavor_of(interactions[0].uri) if interactions else "storage"
    return Recording(source=source, flavor=flavor, interactions=interactions)


def query_of(uri: str) -> dict[str, str]:
    """The query parameters of a recorded URI (decoded; the last of a repeated name)."""
    return dict(parse_qsl(urlsplit(uri).query, keep_blank_values=True))


def not_replayable(interaction: Interaction) -> str | None:
    """Why an interaction cannot be replayed, or None when it can.

    - ``sas``: the request is authorised by a shared access signature (``sig=``) made with
      the real account's key and long expired; re-signing it would test a different request.
      (The replayer still sends it, signed with Shared Key, so the state follows the recording.)
    - ``bearer``: the request carried an OAuth bearer token (a token credential's test),
      which the recordings scrub and the stub cannot check as Azure AD would.
    - ``other-account``: the request addresses a host that is not a Table service endpoint
      of the recorded account (a test of a made-up or misconfigured endpoint).
    - ``throttled``: the real service answered 429 or 503: its load at that moment, which no
      replay reproduces; it made no change, so the request is not sent either.
    """
    if interaction.status in (429, 503):
        return "throttled"
    if "sig" in query_of(interaction.uri):
        return "sas"
    auth = interaction.headers.get("Authorization", "")
    if auth.lower().startswith("bearer"):
        return "bearer"
    if SERVICE_HOST.match(interaction.uri) is None:
        return "other-account"
    return None


def account_state(interaction: Interaction) -> str | None:
    """Why an answer reflects state of the real account the recording did not set, or None.

    ``service``: service properties and service stats (``restype=service``) are account-wide
    settings and geo-replication status; the recording's answer shows what that account had.
    Such interactions are replayed and compared on status, error code and content type only.
    """
    if query_of(interaction.uri).get("restype") == "service":
        return "service"
    return None


def load_all() -> list[Recording]:
    """Every recording of the manifest, checked and parsed, in manifest order."""
    return [load_recording(source) for source in load_manifest()]
