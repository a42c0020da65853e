"""No secret ever reaches a log record: the client's and the context's test suites are
re-run in-process with the ``azt`` logger at DEBUG into a capture, while every secret the
run handles is collected (account keys, SAS signatures, bearer tokens, ``Authorization``
values as sent on the wire); then every captured record (its message, every ``extra``
value, its formatted exception) is scanned for each of them.

The re-run also logs every request exactly as the transport sends it, through the
redaction functions (``redact_url``, ``redact_headers``), so they are tried on the real
traffic of the whole suite; the last test turns redaction off for a small part of the run
and checks that the scan then does find the leaks (the scan can fail)."""

from __future__ import annotations

import functools
import logging
import os
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

import azt
from azt._core import logs, pipeline, retry, sas
from azt._core.auth import BearerTokenCredential, SharedKeyCredential
from azt._core.connection_string import DEV_ACCOUNT_KEY
from azt._core.transport import AiohttpTransport, HttpRequest, HttpResponse, MockTransport

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]

#: Where the inner run logs each request as sent (through the redaction functions).
_WIRE = logging.getLogger("azt.secrets-scan")

_STANDARD = set(vars(logging.LogRecord("n", logging.INFO, "p", 1, "m", None, None))) | {
    "message",
    "asctime",
}


class SecretScan:
    """A pytest plugin for the inner run: collects secrets and captures ``azt`` records."""

    def __init__(self, *, break_redaction: bool = False) -> None:
        self.break_redaction = break_redaction
        self.keys: set[str] = {DEV_ACCOUNT_KEY}
        self.sas_signatures: set[str] = set()
        self.bearer_tokens: set[str] = set()
        self.authorization: set[str] = set()
        self.records: list[logging.LogRecord] = []
        self._patch = pytest.MonkeyPatch()
        self._handler = _Keep(self.records)
        self._old_level = logging.NOTSET

    # -- collecting secrets ------------------------------------------------------------

    def _saw_request(self, request: HttpRequest) -> None:
        auth = request.headers.get("Authorization")
        if auth:
            self.authorization.add(auth)
            scheme, _, credential = auth.partition(" ")
            if scheme == "Bearer":
                self.bearer_tokens.add(credential)
            else:  # SharedKey[Lite] account:signature
                self.authorization.add(credential.rpartition(":")[2])
        query = urllib.parse.urlsplit(request.url).query
        for name, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
            if name == "sig":
                self.sas_signatures.add(value)
        # The wire as sent, through the redaction functions (looked up at call time).
        _WIRE.debug(
            "wire %s %s %s",
            request.method,
            logs.redact_url(request.url),
            logs.redact_headers(request.headers),
        )

    def pytest_sessionstart(self) -> None:
        scan = self
        patch = self._patch
        original_key_init = SharedKeyCredential.__init__

        @functools.wraps(original_key_init)
        def key_init(self: SharedKeyCredential, account_name: str, account_key: str) -> None:
            scan.keys.add(account_key)
            original_key_init(self, account_name, account_key)

        patch.setattr(SharedKeyCredential, "__init__", key_init)

        original_header = BearerTokenCredential.get_header

        @functools.wraps(original_header)
        async def get_header(self: BearerTokenCredential) -> str:
            header = await original_header(self)
            scan.bearer_tokens.add(header.partition(" ")[2])
            return header

        patch.setattr(BearerTokenCredential, "get_header", get_header)

        for owner in (AiohttpTransport, MockTransport):
            original_send = owner.send

            @functools.wraps(original_send)
            async def send(
                self: Any, request: HttpRequest, _send: Any = original_send
            ) -> HttpResponse:
                scan._saw_request(request)
                response: HttpResponse = await _send(self, request)
                return response

            patch.setattr(owner, "send", send)

        for name in ("generate_table_sas", "generate_account_sas"):
            original = getattr(sas, name)

            @functools.wraps(original)
            def generate(*args: Any, _original: Any = original, **kwargs: Any) -> str:
                token: str = _original(*args, **kwargs)
                for key, value in urllib.parse.parse_qsl(token):
                    if key == "sig":
                        scan.sas_signatures.add(value)
                return token

            patch.setattr(sas, name, generate)
            patch.setattr(azt, name, generate)

        if self.break_redaction:

            def same(value: Any) -> Any:
                return value

            for module in (logs, pipeline, retry):
                for name in ("redact_url", "redact_headers", "redact_text"):
                    if hasattr(module, name):
                        patch.setattr(module, name, same)

        root = logging.getLogger("azt")
        self._old_level = root.level
        root.setLevel(logging.DEBUG)
        root.addHandler(self._handler)

    def pytest_sessionfinish(self) -> None:
        root = logging.getLogger("azt")
        root.removeHandler(self._handler)
        root.setLevel(self._old_level)
        self._patch.undo()

    # -- scanning ----------------------------------------------------------------------

    def secrets(self) -> dict[str, str]:
        """Every secret seen (and its percent-encoded forms), mapped to its kind."""
        found: dict[str, str] = {}
        for kind, values in (
            ("account key", self.keys),
            ("SAS signature", self.sas_signatures),
            ("bearer token", self.bearer_tokens),
            ("Authorization value", self.authorization),
        ):
            for value in values:
                if len(value) < 8:  # too short to tell apart from ordinary text
                    continue
                for form in {
                    value,
                    urllib.parse.unquote(value),
                    urllib.parse.quote(value, safe=""),
                }:
                    found[form] = kind
        return found

    def leaks(self) -> list[str]:
        secrets = self.secrets()
        formatter = logging.Formatter()
        out: list[str] = []
        for record in self.records:
            texts = [record.getMessage()]
            texts += [repr(v) for k, v in vars(record).items() if k not in _STANDARD]
            if record.exc_info:
                texts.append(formatter.formatException(record.exc_info))
            blob = "\n".join(texts)
            for secret, kind in secrets.items():
                if secret in blob:
                    out.append(f"{kind} in {record.name} record: {record.getMessage()[:200]}")
        return out


class _Keep(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.DEBUG)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _run(scan: SecretScan, *args: str) -> int:
    old = Path.cwd()
    os.chdir(ROOT)
    try:
        return int(
            pytest.main(
                ["-q", "-p", "no:cacheprovider", "--no-header", "-o", "addopts=", *args],
                plugins=[scan],
            )
        )
    finally:
        os.chdir(old)


@pytest.fixture
def no_target_override(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner run always targets the in-process stub (its secrets are the known ones)."""
    monkeypatch.delenv("AZT_TEST_CONNECTION_STRING", raising=False)


@pytest.mark.slow
@pytest.mark.usefixtures("no_target_override")
def test_no_secret_reaches_the_debug_log() -> None:
    scan = SecretScan()
    status = _run(
        scan,
        "tests/client",
        "tests/context",
        f"--ignore={HERE.relative_to(ROOT)}",
        # pure encoder/decoder differential tests (Hypothesis): no request, no record
        "--ignore=tests/client/test_wire_json_fast_paths.py",
        "--ignore=tests/client/test_batch_fast_paths.py",
        "--deselect=tests/client/test_logging.py::test_module_examples_run",
    )
    assert scan.leaks() == []
    assert status == 0, "the re-run suite failed"
    # The run handled every kind of secret and logged plenty: the scan is not vacuous.
    assert len(scan.keys) >= 2
    assert scan.sas_signatures
    assert scan.bearer_tokens
    assert any(a.startswith("SharedKey ") for a in scan.authorization)
    http = [r for r in scan.records if r.name == "azt.http"]
    assert len(http) > 1000
    assert any(r.name == "azt.retry" for r in scan.records)
    wire = [r.getMessage() for r in scan.records if r.name == _WIRE.name]
    assert any("&sig=REDACTED" in m for m in wire)
    assert any("'Authorization': 'REDACTED'" in m for m in wire)


@pytest.mark.usefixtures("no_target_override")
def test_the_scan_finds_leaks_when_redaction_is_off() -> None:
    scan = SecretScan(break_redaction=True)
    status = _run(
        scan,
        "tests/client/test_e2e.py",
        "tests/client/test_e2e_faults.py",
        "-k",
        "sas_token_grants or bearer_tokens_against",
    )
    assert status == 0
    kinds = {leak.split(" in ")[0] for leak in scan.leaks()}
    assert {"SAS signature", "bearer token", "Authorization value"} <= kinds
