"""Peer check: the legacy ``azure-cosmosdb-table`` Python SDK against the stub.

This is not a pytest module (``tests/peers/conftest.py`` keeps pytest away from it): it runs
in a throwaway virtualenv that has the legacy SDK (``scripts/test-legacy-peer.sh`` makes it),
starts the stub in a subprocess with the project's interpreter and drives it through the
legacy client's public API. The legacy SDK is an independent implementation of the wire
protocol: JSON light with ``DataServiceVersion: 3.0;NetFx``, Python ``int`` sent as
``Edm.Int64``, ``None`` sent as JSON ``null``, batches with bare LF line ends and
absolute-path request targets, its own SharedKey and SAS signers.

Example::

    $ /tmp/legacy-venv/bin/python tests/peers/legacy_cosmosdb_table_check.py
    ...
    41 passed, 0 failed
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from azure.common import (
    AzureConflictHttpError,
    AzureHttpError,
    AzureMissingResourceHttpError,
)
from azure.cosmosdb.table.common.models import (
    AccessPolicy,
    AccountPermissions,
    CorsRule,
    Metrics,
    ResourceTypes,
    RetentionPolicy,
)
from azure.cosmosdb.table.common.retry import no_retry
from azure.cosmosdb.table.models import (
    AzureBatchOperationError,
    EdmType,
    EntityProperty,
    TablePayloadFormat,
    TablePermissions,
)
from azure.cosmosdb.table.tablebatch import TableBatch
from azure.cosmosdb.table.tableservice import TableService
from cryptography.hazmat.primitives.keywrap import (  # type: ignore[import-not-found, unused-ignore]
    aes_key_unwrap,  # (cryptography comes with the legacy SDK, not in the project venv)
    aes_key_wrap,
)

REPO = Path(__file__).resolve().parents[2]
DEV_ACCOUNT = "devstoreaccount1"
DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

# --------------------------------------------------------------------------- the stub


def _echo(stream: IO[str]) -> None:
    for line in stream:
        sys.stderr.write(f"[stub] {line}")


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def running_stub(python: str) -> Iterator[tuple[str, str]]:
    """Start ``python -m azt_server_stub --port 0``; yield (endpoint, connection string)."""
    proc = subprocess.Popen(
        [python, "-m", "azt_server_stub", "--port", "0", "--log-level", "WARNING"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        endpoint = conn = None
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (endpoint is None or conn is None):
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"stub exited early (rc={proc.poll()})")
            m = re.match(r"azt-stub listening on (\S+)", line)
            if m:
                endpoint = m.group(1)
            if line.startswith("connection string: "):
                conn = line.split(": ", 1)[1].strip()
        if endpoint is None or conn is None:
            raise RuntimeError("the stub did not print its endpoint")
        # keep reading what the stub prints (a full pipe would block it); show it on stderr
        threading.Thread(target=_echo, args=(proc.stdout,), daemon=True).start()
        # a SIGTERM (e.g. from `timeout`) unwinds through the finally below: no orphan stub
        previous = signal.signal(signal.SIGTERM, _exit_on_signal)
        try:
            yield endpoint, conn
        finally:
            signal.signal(signal.SIGTERM, previous)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def prod_client(host: str, **credential: str) -> TableService:
    """A client that addresses ``devstoreaccount1.table.core.windows.net`` over HTTP, with its
    proxy set to the stub at ``host`` (so the stub sees production-style requests)."""
    ts = TableService(account_name=DEV_ACCOUNT, protocol="http", **credential)
    name, port = host.rsplit(":", 1)
    ts.set_proxy(name, int(port))
    return ts


# --------------------------------------------------------------------------- tiny runner

RESULTS: list[tuple[str, str | None]] = []


def check(name: str, fn: Callable[[], None]) -> None:
    """Run one check, record pass/fail with the traceback's last lines."""
    try:
        fn()
    except Exception:
        RESULTS.append((name, traceback.format_exc(limit=4)))
        print(f"FAIL {name}", flush=True)
    else:
        RESULTS.append((name, None))
        print(f"ok   {name}", flush=True)


def expect_status(
    status: int, fn: Callable[[], object], exc: type[BaseException] = AzureHttpError
) -> Any:
    """``fn()`` must raise ``exc`` with HTTP status ``status``; returns the exception."""
    try:
        fn()
    except exc as e:
        eq(getattr(e, "status_code", None), status)
        return e
    raise AssertionError(f"expected HTTP {status} ({exc.__name__})")


def eq(actual: object, expected: object) -> None:
    assert actual == expected, f"{actual!r} != {expected!r}"


class _KeyWrapper:
    """A key-encryption key for the SDK's client-side encryption (AES key wrap, RFC 3394)."""

    def __init__(self) -> None:
        self._key = os.urandom(32)

    def wrap_key(self, key: bytes) -> bytes:
        return bytes(aes_key_wrap(self._key, key))

    def unwrap_key(self, key: bytes, algorithm: str) -> bytes:
        assert algorithm == "A256KW", algorithm
        return bytes(aes_key_unwrap(self._key, key))

    def get_key_wrap_algorithm(self) -> str:
        return "A256KW"

    def get_kid(self) -> str:
        return "local:kek1"


# --------------------------------------------------------------------------- the checks


class Peer:
    """The checks, against one stub, through one addressing mode."""

    def __init__(self, ts: TableService, label: str, host: str) -> None:
        self.ts = ts
        self.label = label
        self.host = host  # "127.0.0.1:port" (for SAS clients)
        self.prefix = "L" + label.lower()[:3] + uuid.uuid4().hex[:6]

    def t(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def sas_client(self, token: str) -> TableService:
        """A client of this peer's addressing mode that authenticates with the SAS ``token``."""
        if self.label == "prod":
            c = prod_client(self.host, sas_token=token)
        else:
            c = TableService(
                connection_string=f"TableEndpoint=http://{self.host}/{DEV_ACCOUNT};"
                f"SharedAccessSignature={token}"
            )
        c.retry = no_retry
        return c

    # ---- tables
    def tables(self) -> None:
        ts = self.ts
        names = [self.t(f"tab{i}") for i in range(5)]
        for n in names:
            assert ts.create_table(n) is True
        assert ts.create_table(names[0]) is False  # fail_on_exist=False swallows the 409
        expect_status(409, lambda: ts.create_table(names[0], fail_on_exist=True))
        assert ts.exists(names[1])
        assert not ts.exists(self.t("nosuch"))
        listed = [t.name for t in ts.list_tables() if t.name.startswith(self.prefix)]
        eq(sorted(listed), sorted(names))
        # paging with a small page: the marker carries NextTableName
        gen = ts.list_tables(num_results=2)
        first = [t.name for t in gen]
        eq(len(first), 2)
        assert gen.next_marker, "no next_marker after a full page"
        rest = [t.name for t in ts.list_tables(marker=gen.next_marker)]
        assert not set(first) & set(rest)
        assert set(names) <= set(first) | set(rest)
        assert ts.delete_table(names[4]) is True
        assert ts.delete_table(names[4]) is False
        expect_status(
            404,
            lambda: ts.delete_table(names[4], fail_not_exist=True),
            AzureMissingResourceHttpError,
        )
        assert not ts.exists(names[4])

    # ---- every EDM type
    def edm_types(self) -> None:
        ts = self.ts
        table = self.t("types")
        ts.create_table(table)
        g = uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")
        when = datetime(2008, 7, 10, 13, 14, 15, tzinfo=UTC)
        ent = {
            "PartitionKey": "p'k ü",
            "RowKey": "r'1",
            "i64": 255,  # Python int -> Edm.Int64 (string + annotation)
            "i64max": 2**63 - 1,
            "i64min": -(2**63),
            "i32": EntityProperty(EdmType.INT32, -(2**31)),
            "guid": EntityProperty(EdmType.GUID, g),
            "bin": EntityProperty(EdmType.BINARY, b"\x00\xffbytes\n"),
            "emptybin": EntityProperty(EdmType.BINARY, b""),
            "dt": when,
            "dbl": 200.25,
            "dblint": 3.0,  # json "3.0": Double, not Int32
            "nan": float("nan"),
            "inf": float("inf"),
            "ninf": float("-inf"),
            "yes": True,
            "no": False,
            "s": "Mountain View  \u00e9\u4e2d\U0001f600",
            "empty": "",
            "numeric_text": "12",
            "typed_str": EntityProperty(EdmType.STRING, "forced"),
            "i64str": EntityProperty(EdmType.INT64, 7),
            "gone": None,  # sent as JSON null: dropped
        }
        etag = ts.insert_entity(table, ent)
        assert etag.startswith('W/"'), etag
        got = ts.get_entity(table, "p'k ü", "r'1")
        eq(got["etag"], etag)
        eq(got["i64"], 255)
        eq(got["i64max"], 2**63 - 1)
        eq(got["i64min"], -(2**63))
        eq((got["i32"].type, got["i32"].value), (EdmType.INT32, -(2**31)))
        eq((got["guid"].type, got["guid"].value), (EdmType.GUID, str(g)))
        eq((got["bin"].type, got["bin"].value), (EdmType.BINARY, b"\x00\xffbytes\n"))
        eq(got["emptybin"].value, b"")
        eq(got["dt"], when)
        eq(got["dbl"], 200.25)
        eq((type(got["dblint"]), got["dblint"]), (float, 3.0))
        assert math.isnan(got["nan"]), got["nan"]
        eq(got["inf"], float("inf"))
        eq(got["ninf"], float("-inf"))
        assert got["yes"] is True
        assert got["no"] is False
        eq(got["s"], ent["s"])
        eq(got["empty"], "")
        eq(got["numeric_text"], "12")
        eq(got["typed_str"], "forced")
        eq(got["i64str"], 7)
        assert "gone" not in got, "a null property was stored"
        assert isinstance(got["Timestamp"], datetime)
        # full and no metadata (the latter with a resolver) give the same values
        full = next(
            iter(
                ts.query_entities(
                    table, filter="RowKey eq 'r''1'", accept=TablePayloadFormat.JSON_FULL_METADATA
                )
            )
        )
        eq(full["i64"], 255)
        eq(full["guid"].value, str(g))
        types = {
            "i64": EdmType.INT64,
            "guid": EdmType.GUID,
            "bin": EdmType.BINARY,
            "dt": EdmType.DATETIME,
            "dblint": EdmType.DOUBLE,
        }

        def resolver(pk: str, rk: str, name: str, value: object, edm: str | None) -> str | None:
            return types.get(name, edm)

        bare = ts.get_entity(
            table,
            "p'k ü",
            "r'1",
            accept=TablePayloadFormat.JSON_NO_METADATA,
            property_resolver=resolver,
        )
        eq(bare["i64"], 255)
        eq(bare["bin"].value, b"\x00\xffbytes\n")
        eq(bare["dt"], when)
        eq(bare["dblint"], 3.0)
        # out-of-range Int32 is refused by the client before it reaches the wire
        try:
            ts.insert_entity(
                table,
                {"PartitionKey": "x", "RowKey": "y", "v": EntityProperty(EdmType.INT32, 2**31)},
            )
        except TypeError:
            pass
        else:
            raise AssertionError("the client sent an out-of-range Int32")

    # ---- writes
    def writes(self) -> None:
        ts = self.ts
        table = self.t("writes")
        ts.create_table(table)
        base = {"PartitionKey": "p", "RowKey": "r", "a": 1, "b": "two"}
        e1 = ts.insert_entity(table, base)
        expect_status(409, lambda: ts.insert_entity(table, base), AzureConflictHttpError)
        # replace drops b
        e2 = ts.update_entity(table, {"PartitionKey": "p", "RowKey": "r", "a": 10})
        assert e2 != e1
        got = ts.get_entity(table, "p", "r")
        eq(got["a"], 10)
        assert "b" not in got
        # merge keeps a, adds c
        ts.merge_entity(table, {"PartitionKey": "p", "RowKey": "r", "c": True})
        got = ts.get_entity(table, "p", "r")
        eq((got["a"], got["c"]), (10, True))
        # merge with a null: Azure leaves the property as it was (nulls are dropped)
        ts.merge_entity(table, {"PartitionKey": "p", "RowKey": "r", "a": None, "d": 4})
        got = ts.get_entity(table, "p", "r")
        eq((got["a"], got["d"]), (10, 4))
        # upserts on an existing and a new row
        ts.insert_or_replace_entity(table, {"PartitionKey": "p", "RowKey": "r", "only": "x"})
        got = ts.get_entity(table, "p", "r")
        eq(
            sorted(k for k in got if k not in ("etag", "Timestamp")),
            ["PartitionKey", "RowKey", "only"],
        )
        ts.insert_or_merge_entity(table, {"PartitionKey": "p", "RowKey": "r", "more": 2})
        got = ts.get_entity(table, "p", "r")
        eq((got["only"], got["more"]), ("x", 2))
        ts.insert_or_replace_entity(table, {"PartitionKey": "p", "RowKey": "new1", "v": 1})
        ts.insert_or_merge_entity(table, {"PartitionKey": "p", "RowKey": "new2", "v": 2})
        eq(ts.get_entity(table, "p", "new1")["v"], 1)
        eq(ts.get_entity(table, "p", "new2")["v"], 2)
        # update/merge of a missing row: 404
        expect_status(
            404,
            lambda: ts.update_entity(table, {"PartitionKey": "p", "RowKey": "nope", "v": 1}),
            AzureMissingResourceHttpError,
        )
        expect_status(
            404,
            lambda: ts.merge_entity(table, {"PartitionKey": "p", "RowKey": "nope", "v": 1}),
            AzureMissingResourceHttpError,
        )
        ts.delete_entity(table, "p", "new1")
        expect_status(404, lambda: ts.get_entity(table, "p", "new1"), AzureMissingResourceHttpError)
        expect_status(
            404, lambda: ts.delete_entity(table, "p", "new1"), AzureMissingResourceHttpError
        )
        # a missing table: 404 TableNotFound
        expect_status(
            404,
            lambda: ts.insert_entity(self.t("nosuch"), {"PartitionKey": "p", "RowKey": "r"}),
            AzureMissingResourceHttpError,
        )

    # ---- optimistic concurrency
    def etags(self) -> None:
        ts = self.ts
        table = self.t("etags")
        ts.create_table(table)
        e1 = ts.insert_entity(table, {"PartitionKey": "p", "RowKey": "r", "v": 1})
        got = ts.get_entity(table, "p", "r")
        eq(got["etag"], e1)
        e2 = ts.update_entity(table, {"PartitionKey": "p", "RowKey": "r", "v": 2}, if_match=e1)
        assert e2 != e1
        # stale etag: 412 on replace, merge and delete; nothing changes
        for op in (
            lambda: ts.update_entity(
                table, {"PartitionKey": "p", "RowKey": "r", "v": 3}, if_match=e1
            ),
            lambda: ts.merge_entity(
                table, {"PartitionKey": "p", "RowKey": "r", "v": 3}, if_match=e1
            ),
            lambda: ts.delete_entity(table, "p", "r", if_match=e1),
        ):
            err = expect_status(412, op)
            assert "UpdateConditionNotSatisfied" in str(err), str(err)
        eq(ts.get_entity(table, "p", "r")["v"], 2)
        # the etag the client derives from Timestamp (query path) also works as If-Match
        listed = next(iter(ts.query_entities(table, filter="RowKey eq 'r'")))
        eq(listed["etag"], e2)
        e3 = ts.merge_entity(
            table, {"PartitionKey": "p", "RowKey": "r", "w": 1}, if_match=listed["etag"]
        )
        ts.delete_entity(table, "p", "r", if_match=e3)
        expect_status(404, lambda: ts.get_entity(table, "p", "r"), AzureMissingResourceHttpError)

    # ---- queries
    def queries(self) -> None:
        ts = self.ts
        table = self.t("query")
        ts.create_table(table)
        g = uuid.UUID("11111111-2222-3333-4444-555555555555")
        start = datetime(2020, 1, 1, tzinfo=UTC)
        batch = TableBatch()
        for i in range(40):
            batch.insert_entity(
                {
                    "PartitionKey": "q",
                    "RowKey": f"{i:03d}",
                    "n": i,
                    "i32": EntityProperty(EdmType.INT32, i),
                    "even": i % 2 == 0,
                    "d": i / 4,
                    "when": start + timedelta(days=i),
                    "g": EntityProperty(EdmType.GUID, g if i == 7 else uuid.UUID(int=i)),
                    "bin": EntityProperty(EdmType.BINARY, bytes([i])),
                    "name": f"name{i}",
                }
            )
        ts.commit_batch(table, batch)
        ts.insert_entity(table, {"PartitionKey": "other", "RowKey": "x", "n": 1000})

        def rows(flt: str, **kw: Any) -> list[str]:
            return [e["RowKey"] for e in ts.query_entities(table, filter=flt, **kw)]

        eq(rows("PartitionKey eq 'q' and n ge 35L"), [f"{i:03d}" for i in range(35, 40)])
        eq(rows("i32 lt 3"), ["000", "001", "002"])
        # Python ints are stored as Int64: an Int32 literal is widened to them (PROTOCOL 7.3),
        # an Int64 literal never narrowed to an Int32 property
        eq(rows("PartitionKey eq 'q' and n ge 38"), ["038", "039"])
        eq(rows("i32 lt 3L"), [])
        eq(len(rows("even eq true and PartitionKey eq 'q'")), 20)
        eq(rows("d gt 9.5"), ["039"])
        eq(rows("when ge datetime'2020-02-08T00:00:00Z'"), ["038", "039"])
        eq(rows(f"g eq guid'{g}'"), ["007"])
        eq(rows("bin eq X'05'"), ["005"])
        eq(rows("bin eq binary'06'"), ["006"])
        eq(rows("name eq 'name12' or RowKey eq '013'"), ["012", "013"])
        eq(rows("not (n lt 38L) and PartitionKey eq 'q'"), ["038", "039"])
        eq(rows("RowKey ge '038' and RowKey lt '04'"), ["038", "039"])
        eq(rows("n eq 1000L"), ["x"])
        eq(rows("missing eq 'x'"), [])
        # select: only the asked properties (and the keys when asked)
        sel = list(ts.query_entities(table, filter="RowKey eq '003'", select="n,name"))
        eq(len(sel), 1)
        eq(sorted(k for k in sel[0] if k != "etag"), ["n", "name"])
        eq((sel[0]["n"], sel[0]["name"]), (3, "name3"))
        assert sel[0]["etag"], "no etag with $select"
        sel2 = ts.get_entity(table, "q", "004", select="PartitionKey,RowKey,d")
        eq((sel2["PartitionKey"], sel2["RowKey"], sel2["d"]), ("q", "004", 1.0))
        # top / num_results with a marker
        gen = ts.query_entities(table, filter="PartitionKey eq 'q'", num_results=7)
        first = [e["RowKey"] for e in gen]
        eq(first, [f"{i:03d}" for i in range(7)])
        assert gen.next_marker, "no continuation marker after $top"
        gen2 = ts.query_entities(
            table, filter="PartitionKey eq 'q'", num_results=7, marker=gen.next_marker
        )
        eq([e["RowKey"] for e in gen2], [f"{i:03d}" for i in range(7, 14)])
        # an invalid filter: 400
        expect_status(400, lambda: list(ts.query_entities(table, filter="n eq eq 1")))

    def paging(self) -> None:
        ts = self.ts
        table = self.t("paging")
        ts.create_table(table)
        total = 1234
        for start in range(0, total, 100):
            batch = TableBatch()
            for i in range(start, min(total, start + 100)):
                batch.insert_entity({"PartitionKey": f"p{i // 500}", "RowKey": f"{i:05d}", "i": i})
            ts.commit_batch(table, batch)
        pages: list[int] = []
        seen: list[int] = []
        marker = None
        while True:
            page = ts._query_entities(table, marker=marker)
            pages.append(len(page))
            seen.extend(e["i"] for e in page)
            marker = getattr(page, "next_marker", None)
            if not marker:
                break
        eq(seen, list(range(total)))
        assert max(pages) == 1000, pages
        # the generator follows the continuation by itself
        eq(sum(1 for _ in ts.query_entities(table)), total)
        eq(sum(1 for _ in ts.query_entities(table, filter="i ge 990L and i lt 1010L")), 20)

    # ---- batches
    def batches(self) -> None:
        ts = self.ts
        table = self.t("batch")
        ts.create_table(table)
        ts.insert_entity(table, {"PartitionKey": "b", "RowKey": "upd", "v": 1, "keep": "k"})
        ts.insert_entity(table, {"PartitionKey": "b", "RowKey": "mrg", "v": 1, "keep": "k"})
        ts.insert_entity(table, {"PartitionKey": "b", "RowKey": "del", "v": 1})
        cur = ts.get_entity(table, "b", "upd")["etag"]
        batch = TableBatch()
        batch.insert_entity({"PartitionKey": "b", "RowKey": "ins", "v": 1, "none": None})
        batch.update_entity({"PartitionKey": "b", "RowKey": "upd", "v": 2}, if_match=cur)
        batch.merge_entity({"PartitionKey": "b", "RowKey": "mrg", "v": 2})
        batch.delete_entity("b", "del")
        batch.insert_or_replace_entity({"PartitionKey": "b", "RowKey": "ior", "v": 5})
        batch.insert_or_merge_entity({"PartitionKey": "b", "RowKey": "iom", "v": 6})
        res = ts.commit_batch(table, batch)
        eq(len(res), 6)
        for i, etag in enumerate(res):
            if i == 3:
                assert not etag, f"a delete answered an etag: {etag!r}"
            else:
                eq((i, str(etag)[:3]), (i, 'W/"'))
        eq(ts.get_entity(table, "b", "ins")["etag"], res[0])
        got = ts.get_entity(table, "b", "upd")
        eq((got["v"], "keep" in got), (2, False))
        got = ts.get_entity(table, "b", "mrg")
        eq((got["v"], got["keep"]), (2, "k"))
        expect_status(404, lambda: ts.get_entity(table, "b", "del"), AzureMissingResourceHttpError)
        eq(ts.get_entity(table, "b", "ior")["v"], 5)
        eq(ts.get_entity(table, "b", "iom")["v"], 6)
        # the context-manager form, with a quote in the keys
        with ts.batch(table) as b2:
            b2.insert_entity({"PartitionKey": "b'q", "RowKey": "o'1", "v": 1})
            b2.insert_entity({"PartitionKey": "b'q", "RowKey": "o'2", "v": 2})
        eq(ts.get_entity(table, "b'q", "o'2")["v"], 2)
        with ts.batch(table) as b3:
            b3.delete_entity("b'q", "o'1")
            b3.merge_entity({"PartitionKey": "b'q", "RowKey": "o'2", "w": 1})
        expect_status(
            404, lambda: ts.get_entity(table, "b'q", "o'1"), AzureMissingResourceHttpError
        )

    def batch_atomic_failure(self) -> None:
        ts = self.ts
        table = self.t("atomic")
        ts.create_table(table)
        ts.insert_entity(table, {"PartitionKey": "a", "RowKey": "exists", "v": 1})
        ts.insert_entity(table, {"PartitionKey": "a", "RowKey": "upd", "v": 1})
        batch = TableBatch()
        batch.insert_entity({"PartitionKey": "a", "RowKey": "new1", "v": 1})
        batch.update_entity({"PartitionKey": "a", "RowKey": "upd", "v": 2})
        batch.insert_entity({"PartitionKey": "a", "RowKey": "exists", "v": 2})  # 409
        batch.insert_entity({"PartitionKey": "a", "RowKey": "new2", "v": 1})
        try:
            ts.commit_batch(table, batch)
        except AzureBatchOperationError as e:
            eq(e.status_code, 409)
            eq(e.code, "EntityAlreadyExists")
            eq(str(e)[:2], "2:")  # the failing operation's index leads the message
        else:
            raise AssertionError("the batch did not fail")
        # nothing applied
        expect_status(404, lambda: ts.get_entity(table, "a", "new1"), AzureMissingResourceHttpError)
        expect_status(404, lambda: ts.get_entity(table, "a", "new2"), AzureMissingResourceHttpError)
        eq(ts.get_entity(table, "a", "upd")["v"], 1)
        # a stale etag inside a batch: 412
        stale = ts.get_entity(table, "a", "upd")["etag"]
        ts.merge_entity(table, {"PartitionKey": "a", "RowKey": "upd", "w": 1})
        batch = TableBatch()
        batch.insert_entity({"PartitionKey": "a", "RowKey": "new3", "v": 1})
        batch.delete_entity("a", "upd", if_match=stale)
        try:
            ts.commit_batch(table, batch)
        except AzureBatchOperationError as e:
            eq(e.status_code, 412)
            eq(e.code, "UpdateConditionNotSatisfied")
        else:
            raise AssertionError("a stale If-Match in a batch succeeded")
        expect_status(404, lambda: ts.get_entity(table, "a", "new3"), AzureMissingResourceHttpError)
        # a missing entity in a batch update: 404 ResourceNotFound
        batch = TableBatch()
        batch.merge_entity({"PartitionKey": "a", "RowKey": "nope", "v": 1})
        try:
            ts.commit_batch(table, batch)
        except AzureBatchOperationError as e:
            eq(e.status_code, 404)
            eq(e.code, "ResourceNotFound")
        else:
            raise AssertionError("a merge of a missing entity in a batch succeeded")
        # a batch into a missing table
        batch = TableBatch()
        batch.insert_entity({"PartitionKey": "a", "RowKey": "x"})
        try:
            ts.commit_batch(self.t("nosuchtable"), batch)
        except AzureBatchOperationError as e:
            eq(e.status_code, 404)
            eq(e.code, "TableNotFound")
        else:
            raise AssertionError("a batch into a missing table succeeded")

    # ---- SAS and ACL
    def sas(self) -> None:
        ts = self.ts
        table = self.t("sas")
        ts.create_table(table)
        for pk in ("a", "m", "z"):
            ts.insert_entity(table, {"PartitionKey": pk, "RowKey": "1", "v": 1})
        expiry = datetime.now(UTC) + timedelta(hours=1)
        client = self.sas_client

        ro = client(
            ts.generate_table_shared_access_signature(table, TablePermissions.QUERY, expiry)
        )
        eq(sorted(e["PartitionKey"] for e in ro.query_entities(table)), ["a", "m", "z"])
        eq(ro.get_entity(table, "m", "1")["v"], 1)
        expect_status(403, lambda: ro.insert_entity(table, {"PartitionKey": "n", "RowKey": "1"}))
        expect_status(403, lambda: ro.delete_entity(table, "a", "1"))
        # a SAS for one table does not open another
        other = self.t("sasother")
        ts.create_table(other)
        expect_status(403, lambda: list(ro.query_entities(other)))
        # key range b..n: reads are filtered to it, writes outside it are refused
        perms = TablePermissions(query=True, add=True, update=True, delete=True)
        ranged = client(
            ts.generate_table_shared_access_signature(
                table, perms, expiry, start_pk="b", start_rk="", end_pk="n", end_rk="~"
            )
        )
        eq([e["PartitionKey"] for e in ranged.query_entities(table)], ["m"])
        ranged.insert_entity(table, {"PartitionKey": "c", "RowKey": "1", "v": 2})
        ranged.update_entity(table, {"PartitionKey": "m", "RowKey": "1", "v": 3})
        expect_status(
            403, lambda: ranged.insert_entity(table, {"PartitionKey": "y", "RowKey": "1"})
        )
        expect_status(403, lambda: ranged.get_entity(table, "a", "1"))
        eq(ts.get_entity(table, "m", "1")["v"], 3)
        # a batch through the SAS client
        with ranged.batch(table) as b:
            b.insert_entity({"PartitionKey": "d", "RowKey": "1"})
            b.insert_entity({"PartitionKey": "d", "RowKey": "2"})
        eq(len(list(ts.query_entities(table, filter="PartitionKey eq 'd'"))), 2)
        # an expired SAS: 403
        old = client(
            ts.generate_table_shared_access_signature(
                table, TablePermissions.QUERY, datetime.now(UTC) - timedelta(minutes=5)
            )
        )
        expect_status(403, lambda: list(old.query_entities(table)))
        # a stored access policy (Set/Get Table ACL) referenced by id
        policy = AccessPolicy(permission=TablePermissions.QUERY, expiry=expiry)
        ts.set_table_acl(table, {"readers": policy})
        acl = ts.get_table_acl(table)
        eq(list(acl), ["readers"])
        eq(str(acl["readers"].permission), "r")
        byid = client(ts.generate_table_shared_access_signature(table, id="readers"))
        eq(sorted(e["PartitionKey"] for e in byid.query_entities(table)), list("acddmz"))
        expect_status(403, lambda: byid.insert_entity(table, {"PartitionKey": "q", "RowKey": "1"}))
        ts.set_table_acl(table, {})
        eq(dict(ts.get_table_acl(table)), {})

    def account_sas(self) -> None:
        ts = self.ts
        table = self.t("acctsas")
        ts.create_table(table)
        token = ts.generate_account_shared_access_signature(
            ResourceTypes(service=True, container=True, object=True),
            AccountPermissions(read=True, write=True, list=True, add=True, create=True),
            datetime.now(UTC) + timedelta(hours=1),
        )
        c = self.sas_client(token)
        c.insert_entity(table, {"PartitionKey": "p", "RowKey": "r", "v": 1})
        eq(c.get_entity(table, "p", "r")["v"], 1)
        assert table in [t.name for t in c.list_tables()]
        expect_status(403, lambda: c.delete_entity(table, "p", "r"))  # no delete permission
        ro = self.sas_client(
            ts.generate_account_shared_access_signature(
                ResourceTypes(object=True),
                AccountPermissions(read=True),
                datetime.now(UTC) + timedelta(hours=1),
            )
        )
        eq(ro.get_entity(table, "p", "r")["v"], 1)
        expect_status(403, lambda: list(ro.list_tables()))  # no container resource type

    def service_properties(self) -> None:
        ts = self.ts
        props = ts.get_table_service_properties()
        assert props.hour_metrics is not None
        assert props.logging is not None
        rule = CorsRule(["http://a.example"], ["GET", "PUT"], max_age_in_seconds=60)
        ts.set_table_service_properties(
            hour_metrics=Metrics(
                enabled=True, include_apis=True, retention_policy=RetentionPolicy(True, 3)
            ),
            cors=[rule],
        )
        props = ts.get_table_service_properties()
        assert props.hour_metrics.enabled
        assert props.hour_metrics.retention_policy.days == 3
        eq([r.allowed_origins for r in props.cors], [["http://a.example"]])
        eq(sorted(props.cors[0].allowed_methods), ["GET", "PUT"])
        ts.set_table_service_properties(cors=[])
        eq(ts.get_table_service_properties().cors, [])

    def client_side_encryption(self) -> None:
        """The SDK's client-side encryption: Binary ciphertexts, ``_ClientEncryptionMetadata*``."""
        ts = self.ts
        table = self.t("crypt")
        ts.create_table(table)
        kek = _KeyWrapper()
        ts.key_encryption_key = kek
        ts.key_resolver_function = lambda kid: kek if kid == kek.get_kid() else None
        ts.encryption_resolver_function = lambda pk, rk, name: name == "secret"
        try:
            ent = {"PartitionKey": "p", "RowKey": "r", "secret": "s3cr3t \u00e9", "plain": "x"}
            ts.insert_entity(table, ent)
            with ts.batch(table) as b:
                b.insert_entity({"PartitionKey": "p", "RowKey": "r2", "secret": "two"})
            got = ts.get_entity(table, "p", "r")
            eq((got["secret"], got["plain"]), ("s3cr3t \u00e9", "x"))
            eq([e["secret"] for e in ts.query_entities(table)], ["s3cr3t \u00e9", "two"])
        finally:
            ts.key_encryption_key = ts.key_resolver_function = None
            ts.encryption_resolver_function = None
        raw = ts.get_entity(table, "p", "r")  # what the service stored
        eq(raw["secret"].type, EdmType.BINARY)
        assert b"s3cr3t" not in raw["secret"].value
        eq(
            sorted(k for k in raw if k.startswith("_")),
            [
                "_ClientEncryptionMetadata1",
                "_ClientEncryptionMetadata2",
            ],
        )

    def run(self) -> None:
        for name in (
            "tables",
            "edm_types",
            "writes",
            "etags",
            "queries",
            "paging",
            "batches",
            "batch_atomic_failure",
            "sas",
            "account_sas",
            "service_properties",
            "client_side_encryption",
        ):
            check(f"{self.label}: {name}", getattr(self, name))


def main(argv: list[str] | None = None) -> int:
    """Run every check in both addressing modes; print ``N passed, N failed``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--stub-python",
        default=os.environ.get("AZT_STUB_PYTHON", str(REPO / ".venv" / "bin" / "python")),
        help="the interpreter that runs the stub (the project's venv)",
    )
    ap.add_argument("--only", default=None, help="run only checks whose name contains this")
    args = ap.parse_args(argv)
    # the legacy client logs every refused request (the checks provoke many) at ERROR
    logging.getLogger("azure.cosmosdb").setLevel(logging.CRITICAL)
    with running_stub(args.stub_python) as (endpoint, conn):
        host = endpoint.split("://", 1)[1]
        print(f"stub at {endpoint}", flush=True)
        # 1. A connection string with a path-style TableEndpoint: the batch parts' targets are
        #    "/table(...)" with no account segment.
        by_conn = TableService(connection_string=conn)
        # 2. The emulator mode (is_emulated): the client adds "/devstoreaccount1" to every path,
        #    batch parts included.
        emulated = TableService(
            connection_string=f"UseDevelopmentStorage=true;TableEndpoint={host}"
        )
        # 3. Production (host-style) addressing: devstoreaccount1.table.core.windows.net, the
        #    client's HTTP proxy set to the stub, so requests arrive as they would at Azure.
        prod = prod_client(host, account_key=DEV_KEY)
        peers = [
            Peer(prod, "prod", host),
            Peer(by_conn, "conn", host),
            Peer(emulated, "emul", host),
        ]
        for p in peers:
            p.ts.retry = no_retry
            if args.only:
                for name in dir(p):
                    if (
                        args.only in name
                        and callable(getattr(p, name))
                        and not name.startswith("_")
                    ):
                        check(f"{p.label}: {name}", getattr(p, name))
            else:
                p.run()
    failed = [(n, tb) for n, tb in RESULTS if tb]
    for name, tb in failed:
        print(f"\n=== {name}\n{tb}")
    print(f"{len(RESULTS) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
