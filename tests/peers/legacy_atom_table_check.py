"""Peer check: the AtomPub Table client of ``azure-storage`` 0.20.3 against the stub.

``azure-storage`` 0.20.x (2015) is the last Python SDK that spoke AtomPub to the Table
service: ``x-ms-version: 2014-02-14``, ``DataServiceVersion: 2.0;NetFx``, Atom entries with
``m:type`` on every typed value and ``m:null`` for ``None``, ``MERGE`` as a verb, batches with
bare LF line ends and absolute ``http://host/path`` targets, its own SharedKey signer and
the 2014-02-14 table SAS. Like the JSON check beside it, this runs in the throwaway venv of
``scripts/test-legacy-peer.sh`` (pytest ignores it), in the emulator mode of that client
(``EMULATED=true``: path-style URLs with the development account).

Example::

    $ /tmp/legacy-venv/bin/python tests/peers/legacy_atom_table_check.py
    ...
    9 passed, 0 failed
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from tests.peers.legacy_cosmosdb_table_check import (
    DEV_ACCOUNT,
    DEV_KEY,
    RESULTS,
    check,
    eq,
    running_stub,
)

os.environ["EMULATED"] = "true"  # read by the 0.20 client at construction

from azure.common import (
    AzureConflictHttpError,
    AzureHttpError,
    AzureMissingResourceHttpError,
)
from azure.storage.models import (
    AccessPolicy,
    AzureBatchOperationError,
    SignedIdentifier,
    SignedIdentifiers,
)
from azure.storage.sharedaccesssignature import (
    SharedAccessPolicy,
)
from azure.storage.table import (
    EntityProperty,
    TableService,
    TableSharedAccessPermissions,
)


def next_row_key(cont: Any) -> str | None:
    """NextRowKey of a 0.20 continuation (a dict of lower-cased names; only [] folds case)."""
    return cont["NextRowKey"] if "nextrowkey" in cont else None


def status_of(fn: Any, exc: type[BaseException] = AzureHttpError) -> int:
    """The HTTP status ``fn()`` fails with (AssertionError when it does not fail)."""
    try:
        fn()
    except exc as e:
        return int(getattr(e, "status_code", 0))
    raise AssertionError(f"expected a failure ({exc.__name__})")


class AtomPeer:
    """The checks, through one 0.20 client.

    ``prod``: host-style addressing (``devstoreaccount1.table.core.windows.net``), the
    client's HTTP proxy set to the stub, so that requests arrive as they would at Azure.
    ``emul``: the client's emulator mode (``EMULATED=true``, path-style URLs). In that mode
    the 0.20 client cannot batch (it posts to ``/$batch`` without the account segment) nor
    use a SAS (a SAS client always addresses the production host), so those checks run in
    ``prod`` only.
    """

    def __init__(self, host: str, mode: str) -> None:
        self.host = host
        self.mode = mode
        self.ts = self.client()
        self.prefix = "atom" + mode + uuid.uuid4().hex[:6]

    def client(self, sas_token: str | None = None) -> TableService:
        """A 0.20 client for this mode (SharedKey, or the SAS ``sas_token``)."""
        if self.mode == "emul":
            assert sas_token is None
            return TableService(dev_host=self.host)
        if sas_token is None:
            ts = TableService(account_name=DEV_ACCOUNT, account_key=DEV_KEY, protocol="http")
        else:
            ts = TableService(account_name=DEV_ACCOUNT, sas_token=sas_token, protocol="http")
        host, port = self.host.rsplit(":", 1)
        ts.set_proxy(host, int(port))
        return ts

    def t(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def tables(self) -> None:
        ts = self.ts
        names = [self.t(f"tab{i}") for i in range(4)]
        for n in names:
            assert ts.create_table(n) is True
        assert ts.create_table(names[0]) is False
        eq(status_of(lambda: ts.create_table(names[0], True), AzureConflictHttpError), 409)
        listed = [t.name for t in ts.query_tables() if t.name.startswith(self.prefix)]
        eq(sorted(listed), sorted(names))
        eq([t.name for t in ts.query_tables(names[1])], [names[1]])
        page = ts.query_tables(top=2)
        eq(len(page), 2)
        nxt = page.x_ms_continuation["NextTableName"]
        rest = ts.query_tables(next_table_name=nxt)
        assert not {t.name for t in page} & {t.name for t in rest}
        assert set(names) <= {t.name for t in page} | {t.name for t in rest}
        assert ts.delete_table(names[3]) is True
        assert ts.delete_table(names[3]) is False
        eq(status_of(lambda: ts.delete_table(names[3], True), AzureMissingResourceHttpError), 404)

    def edm_types(self) -> None:
        ts = self.ts
        table = self.t("types")
        ts.create_table(table)
        g = "c9da6455-213d-42c9-9a79-3e9149a57833"
        when = datetime(2008, 7, 10, 13, 14, 15, tzinfo=UTC)
        ent = {
            # no quote in the keys: the 0.20 client does not double it in the entity URL
            "PartitionKey": "pk ü",
            "RowKey": "r&<1>+%",
            "i32": 23,  # small Python int: Edm.Int32
            "i64": 2**40,  # large Python int: Edm.Int64
            "i64typed": EntityProperty("Edm.Int64", 255),
            "i64min": -(2**63),
            "guid": EntityProperty("Edm.Guid", g),
            "bin": EntityProperty("Edm.Binary", b"\x00\xffbytes\n"),
            "dt": when,
            "dbl": 200.25,
            "dblint": 3.0,
            "yes": True,
            "no": False,
            "s": "  Mountain View \u00e9\u4e2d\U0001f600\n",
            "empty": "",
            "gone": None,  # <d:gone m:null="true" />: dropped
        }
        created = ts.insert_entity(table, ent)
        assert created.etag.startswith('W/"'), created.etag
        got = ts.get_entity(table, "pk ü", "r&<1>+%")
        eq(got.etag, created.etag)
        eq((got.i32, got.i64, got.i64typed, got.i64min), (23, 2**40, 255, -(2**63)))
        eq((got.guid.type, got.guid.value), ("Edm.Guid", g))
        eq((got.bin.type, got.bin.value), ("Edm.Binary", b"\x00\xffbytes\n"))
        eq(got.dt, when)
        eq((got.dbl, got.dblint), (200.25, 3.0))
        assert got.yes is True
        assert got.no is False
        eq(got.s, ent["s"])  # whitespace is significant
        eq(got.empty, "")
        assert not hasattr(got, "gone"), "a null property was stored"
        # xsd:double's special values (the 0.20 client's own spelling, str(float), is "nan" and
        # "inf", which is no xsd:double: the stub refuses it, as an XmlConvert reader would)
        specials = {
            "nan": EntityProperty("Edm.Double", "NaN"),
            "inf": EntityProperty("Edm.Double", "INF"),
            "ninf": EntityProperty("Edm.Double", "-INF"),
            "tiny": 5e-324,
            "huge": 1e308,
        }
        ts.insert_entity(table, {"PartitionKey": "pk", "RowKey": "specials", **specials})
        sp = ts.get_entity(table, "pk", "specials")
        assert math.isnan(sp.nan), sp.nan
        eq((sp.inf, sp.ninf, sp.tiny, sp.huge), (math.inf, -math.inf, 5e-324, 1e308))
        eq(
            status_of(
                lambda: ts.insert_entity(
                    table, {"PartitionKey": "pk", "RowKey": "n", "d": math.nan}
                )
            ),
            400,
        )
        # $select, a missing property is m:null
        sel = ts.get_entity(table, "pk ü", "r&<1>+%", select="i32,dbl,nosuch")
        eq((sel.i32, sel.dbl), (23, 200.25))
        assert not hasattr(sel, "s")

    def writes_and_etags(self) -> None:
        ts = self.ts
        table = self.t("writes")
        ts.create_table(table)
        e1 = ts.insert_entity(table, {"PartitionKey": "p", "RowKey": "r", "a": 1, "b": "two"}).etag
        eq(
            status_of(
                lambda: ts.insert_entity(table, {"PartitionKey": "p", "RowKey": "r"}),
                AzureConflictHttpError,
            ),
            409,
        )
        e2 = ts.update_entity(table, "p", "r", {"a": 10}, if_match=e1)["etag"]
        got = ts.get_entity(table, "p", "r")
        eq((got.a, hasattr(got, "b")), (10, False))
        e3 = ts.merge_entity(table, "p", "r", {"c": True}, if_match=e2)["etag"]
        got = ts.get_entity(table, "p", "r")
        eq((got.a, got.c, got.etag), (10, True, e3))
        # stale ETags: 412, nothing changes
        eq(status_of(lambda: ts.update_entity(table, "p", "r", {"a": 0}, if_match=e1)), 412)
        eq(status_of(lambda: ts.merge_entity(table, "p", "r", {"a": 0}, if_match=e2)), 412)
        eq(status_of(lambda: ts.delete_entity(table, "p", "r", if_match=e1)), 412)
        eq(ts.get_entity(table, "p", "r").a, 10)
        # upserts (MERGE / PUT without If-Match)
        ts.insert_or_replace_entity(table, "p", "r", {"only": "x"})
        got = ts.get_entity(table, "p", "r")
        eq((got.only, hasattr(got, "a")), ("x", False))
        ts.insert_or_merge_entity(table, "p", "r", {"more": 2})
        got = ts.get_entity(table, "p", "r")
        eq((got.only, got.more), ("x", 2))
        ts.insert_or_merge_entity(table, "p", "new", {"v": 1})
        eq(ts.get_entity(table, "p", "new").v, 1)
        eq(
            status_of(
                lambda: ts.update_entity(table, "p", "nope", {"v": 1}),
                AzureMissingResourceHttpError,
            ),
            404,
        )
        ts.delete_entity(table, "p", "r")
        eq(
            status_of(lambda: ts.get_entity(table, "p", "r"), AzureMissingResourceHttpError),
            404,
        )

    def queries(self) -> None:
        ts = self.ts
        table = self.t("query")
        ts.create_table(table)
        start = datetime(2020, 1, 1, tzinfo=UTC)
        ts.begin_batch()
        for i in range(30):
            ts.insert_entity(
                table,
                {
                    "PartitionKey": "q",
                    "RowKey": f"{i:03d}",
                    "n": i,
                    "big": EntityProperty("Edm.Int64", i),
                    "even": i % 2 == 0,
                    "d": i / 4,
                    "when": start + timedelta(days=i),
                    "name": f"name {i}",
                },
            )
        ts.commit_batch()

        def rows(flt: str, **kw: Any) -> list[str]:
            return [e.RowKey for e in ts.query_entities(table, filter=flt, **kw)]

        eq(rows("n ge 27"), ["027", "028", "029"])
        eq(rows("big lt 2L"), ["000", "001"])
        eq(len(rows("even eq true")), 15)
        eq(rows("d gt 7.0"), ["029"])
        eq(rows("when ge datetime'2020-01-29T00:00:00Z'"), ["028", "029"])
        eq(rows("name eq 'name 12'"), ["012"])
        sel = ts.query_entities(table, filter="RowKey eq '003'", select="n")
        eq([(getattr(e, "n", None), hasattr(e, "name")) for e in sel], [(3, False)])
        # $top and the continuation headers
        page = ts.query_entities(table, filter="PartitionKey eq 'q'", top=7)
        eq([e.RowKey for e in page], [f"{i:03d}" for i in range(7)])
        cont = page.x_ms_continuation
        page2 = ts.query_entities(
            table,
            filter="PartitionKey eq 'q'",
            top=7,
            next_partition_key=cont["NextPartitionKey"],
            next_row_key=next_row_key(cont),
        )
        eq([e.RowKey for e in page2], [f"{i:03d}" for i in range(7, 14)])
        eq(status_of(lambda: ts.query_entities(table, filter="n eq eq 1")), 400)

    def paging(self) -> None:
        ts = self.ts
        table = self.t("paging")
        ts.create_table(table)
        total = 1100
        for start in range(0, total, 100):
            ts.begin_batch()
            for i in range(start, start + 100):
                ts.insert_entity(table, {"PartitionKey": "p", "RowKey": f"{i:05d}", "i": i})
            ts.commit_batch()
        seen: list[int] = []
        sizes: list[int] = []
        npk = nrk = None
        while True:
            page = ts.query_entities(table, next_partition_key=npk, next_row_key=nrk)
            sizes.append(len(page))
            seen.extend(e.i for e in page)
            cont = getattr(page, "x_ms_continuation", None)
            if not cont:
                break
            npk, nrk = cont["NextPartitionKey"], next_row_key(cont)
        eq(seen, list(range(total)))
        eq(sizes, [1000, 100])

    def batches(self) -> None:
        ts = self.ts
        table = self.t("batch")
        ts.create_table(table)
        ts.insert_entity(table, {"PartitionKey": "b", "RowKey": "upd", "v": 1, "keep": "k"})
        ts.insert_entity(table, {"PartitionKey": "b", "RowKey": "mrg", "v": 1, "keep": "k"})
        ts.insert_entity(table, {"PartitionKey": "b", "RowKey": "del", "v": 1})
        etag = ts.get_entity(table, "b", "upd").etag
        ts.begin_batch()
        ts.insert_entity(table, {"PartitionKey": "b", "RowKey": "ins", "v": 1})
        ts.update_entity(table, "b", "upd", {"v": 2}, if_match=etag)
        ts.merge_entity(table, "b", "mrg", {"v": 2})
        ts.delete_entity(table, "b", "del")
        ts.insert_or_replace_entity(table, "b", "ior", {"v": 5})
        ts.insert_or_merge_entity(table, "b", "iom", {"v": 6})
        ts.commit_batch()
        eq(ts.get_entity(table, "b", "ins").v, 1)
        got = ts.get_entity(table, "b", "upd")
        eq((got.v, hasattr(got, "keep")), (2, False))
        got = ts.get_entity(table, "b", "mrg")
        eq((got.v, got.keep), (2, "k"))
        eq(
            status_of(lambda: ts.get_entity(table, "b", "del"), AzureMissingResourceHttpError),
            404,
        )
        eq((ts.get_entity(table, "b", "ior").v, ts.get_entity(table, "b", "iom").v), (5, 6))

    def batch_atomic_failure(self) -> None:
        ts = self.ts
        table = self.t("atomic")
        ts.create_table(table)
        ts.insert_entity(table, {"PartitionKey": "a", "RowKey": "exists", "v": 1})
        ts.begin_batch()
        ts.insert_entity(table, {"PartitionKey": "a", "RowKey": "new1", "v": 1})
        ts.insert_entity(table, {"PartitionKey": "a", "RowKey": "exists", "v": 2})
        ts.insert_entity(table, {"PartitionKey": "a", "RowKey": "new2", "v": 1})
        try:
            ts.commit_batch()
        except AzureBatchOperationError as e:
            eq((e.status_code, e.code), (409, "EntityAlreadyExists"))
            eq(str(e)[:2], "1:")  # the failing operation's index leads the message
        else:
            raise AssertionError("the batch did not fail")
        for rk in ("new1", "new2"):
            eq(
                status_of(
                    lambda rk=rk: ts.get_entity(table, "a", rk), AzureMissingResourceHttpError
                ),
                404,
            )
        eq(ts.get_entity(table, "a", "exists").v, 1)

    def sas(self) -> None:
        ts = self.ts
        table = self.t("sas")
        ts.create_table(table)
        for pk in ("a", "m", "z"):
            ts.insert_entity(table, {"PartitionKey": pk, "RowKey": "1", "v": 1})
        expiry = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

        def client(policy: SharedAccessPolicy) -> TableService:
            token = ts.generate_shared_access_signature(table, policy)
            return self.client(token)

        ro = client(
            SharedAccessPolicy(AccessPolicy(None, expiry, TableSharedAccessPermissions.QUERY))
        )
        eq(sorted(e.PartitionKey for e in ro.query_entities(table)), ["a", "m", "z"])
        eq(status_of(lambda: ro.insert_entity(table, {"PartitionKey": "n", "RowKey": "1"})), 403)
        ranged_policy = AccessPolicy(None, expiry, "raud", start_pk="b", end_pk="n")
        ranged = client(SharedAccessPolicy(ranged_policy))
        eq([e.PartitionKey for e in ranged.query_entities(table)], ["m"])
        ranged.insert_entity(table, {"PartitionKey": "c", "RowKey": "1"})
        eq(
            status_of(lambda: ranged.insert_entity(table, {"PartitionKey": "y", "RowKey": "1"})),
            403,
        )
        # a stored access policy (Atom-era ACL XML) referenced by id
        si = SignedIdentifier()
        si.id = "readers"
        si.access_policy = AccessPolicy(None, expiry, "r")
        ids = SignedIdentifiers()
        ids.signed_identifiers.append(si)
        ts.set_table_acl(table, ids)
        acl = ts.get_table_acl(table)
        eq([(s.id, s.access_policy.permission) for s in acl.signed_identifiers], [("readers", "r")])
        byid = client(SharedAccessPolicy(signed_identifier="readers"))
        eq(len(byid.query_entities(table)), 4)
        eq(status_of(lambda: byid.delete_entity(table, "a", "1")), 403)

    def service_properties(self) -> None:
        ts = self.ts
        props = ts.get_table_service_properties()
        props.hour_metrics.enabled = True
        props.hour_metrics.include_apis = True
        props.hour_metrics.retention_policy.enabled = True
        props.hour_metrics.retention_policy.days = 4
        props.logging.read = True
        ts.set_table_service_properties(props)  # the 0.20 client writes booleans as "True"
        got = ts.get_table_service_properties()
        eq(
            (
                got.hour_metrics.enabled,
                # the 0.20 reader types a value by the attribute's default (None here): text
                str(got.hour_metrics.include_apis),
                got.hour_metrics.retention_policy.days,
                got.logging.read,
                got.logging.write,
            ),
            (True, "true", 4, True, False),
        )

    def run(self) -> None:
        names = ["tables", "edm_types", "writes_and_etags", "service_properties"]
        if self.mode == "prod":
            names += ["queries", "paging", "batches", "batch_atomic_failure", "sas"]
        for name in names:
            check(f"atom {self.mode}: {name}", getattr(self, name))


def main(argv: list[str] | None = None) -> int:
    """Run every check; print ``N passed, N failed``."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument(
        "--stub-python",
        default=os.environ.get(
            "AZT_STUB_PYTHON",
            str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "python"),
        ),
        help="the interpreter that runs the stub (the project's venv)",
    )
    args = ap.parse_args(argv)
    with running_stub(args.stub_python) as (endpoint, _conn):
        print(f"stub at {endpoint}", flush=True)
        host = endpoint.split("://", 1)[1]
        for mode in ("prod", "emul"):
            AtomPeer(host, mode).run()
    failed = [(n, tb) for n, tb in RESULTS if tb]
    for name, tb in failed:
        print(f"\n=== {name}\n{tb}")
    print(f"{len(RESULTS) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
