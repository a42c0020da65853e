"""Wire codec benchmark: encode/decode a page of 1,000 twelve-property entities.

Compares, in one run and on the same bytes:

* decode: a bare ``json.loads`` of the page (the floor), ``azt._core.wire.json.decode_feed``,
  and azure-data-tables' own deserializer (``json.loads`` + ``_convert_to_entity``);
* encode: ``azt._core.wire.json.encode_entity`` per entity vs azure-data-tables'
  ``_add_entity_properties`` + ``json.dumps`` per entity;
* Atom decode of the same page, for reference.

Run: ``.venv/bin/python benchmarks/wire_bench.py [--rounds N]``. Prints per-entity
costs and the ratios; nothing is asserted (tests check behaviour, this measures speed).
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from azt._core.wire import atom as atom_wire
from azt._core.wire import json as json_wire
from azt.edm import EdmDateTime, EdmType, TableEntity

PAGE = 1000


def make_page_json(typed: bool = True) -> bytes:
    """A minimal-metadata page as the service writes it (annotations before values).

    ``typed=False`` replaces the four annotated properties (Int64, DateTime, Guid,
    Binary) by strings and ints, to show the decoder's fixed cost without conversions.
    """
    base = datetime(2021, 9, 21, 0, 50, 52, tzinfo=UTC)
    values = []
    for i in range(PAGE):
        ts = EdmDateTime.from_datetime(base + timedelta(seconds=i)).replace(nanosecond=300)
        wire_ts = ts.to_wire()
        etag = "W/\"datetime'" + wire_ts.replace(":", "%3A") + "'\""
        if not typed:
            values.append(
                {
                    "odata.etag": etag,
                    "PartitionKey": f"partition{i % 10:03d}",
                    "RowKey": f"row{i:08d}",
                    "Timestamp": wire_ts,
                    "Name": f"Customer number {i}",
                    "City": "Mountain View",
                    "Age": 20 + i % 60,
                    "Rating": 3.5 + (i % 7) / 10,
                    "Active": i % 2 == 0,
                    "Visits": 1000 + i,
                    "Since": wire_ts,
                    "Code": str(uuid.UUID(int=i)),
                    "Blob": "AAECAwQFBgcICQ==",
                }
            )
            continue
        values.append(
            {
                "odata.etag": etag,
                "PartitionKey": f"partition{i % 10:03d}",
                "RowKey": f"row{i:08d}",
                "Timestamp": wire_ts,
                "Name": f"Customer number {i}",
                "City": "Mountain View",
                "Age": 20 + i % 60,
                "Rating": 3.5 + (i % 7) / 10,
                "Active": i % 2 == 0,
                "Visits@odata.type": "Edm.Int64",
                "Visits": str(2**40 + i),
                "Since@odata.type": "Edm.DateTime",
                "Since": wire_ts,
                "Code@odata.type": "Edm.Guid",
                "Code": str(uuid.UUID(int=i)),
                "Blob@odata.type": "Edm.Binary",
                "Blob": "AAECAwQFBgcICQ==",
            }
        )
    doc = {
        "odata.metadata": "http://127.0.0.1:10002/devstoreaccount1/$metadata#bench",
        "value": values,
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def make_page_atom(entities: list[TableEntity]) -> bytes:
    """The same page as an Atom feed, shaped like the service's (m:type on non-strings)."""
    from lxml import etree

    a, d, m = (
        "{http://www.w3.org/2005/Atom}",
        "{http://schemas.microsoft.com/ado/2007/08/dataservices}",
        "{http://schemas.microsoft.com/ado/2007/08/dataservices/metadata}",
    )
    nsmap = {
        None: a[1:-1],
        "d": d[1:-1],
        "m": m[1:-1],
    }
    feed = etree.Element(a + "feed", nsmap=nsmap)  # type: ignore[arg-type]
    etree.SubElement(feed, a + "title").text = "bench"
    for e in entities:
        entry = etree.SubElement(feed, a + "entry")
        entry.set(m + "etag", e.metadata.etag or "")
        etree.SubElement(entry, a + "id").text = "x"
        props = etree.SubElement(etree.SubElement(entry, a + "content"), m + "properties")
        ts = e.metadata.timestamp
        items: list[tuple[str, Any]] = list(e.items())
        items.insert(2, ("Timestamp", ts))
        for name, value in items:
            el = etree.SubElement(props, d + name)
            t = EdmType.DATETIME if name == "Timestamp" else e.edm_types.get(name)
            if isinstance(value, bool):
                el.set(m + "type", "Edm.Boolean")
                el.text = "true" if value else "false"
            elif isinstance(value, float):
                el.set(m + "type", "Edm.Double")
                el.text = repr(value)
            elif isinstance(value, int):
                el.set(m + "type", (t or EdmType.INT32).value)
                el.text = str(value)
            elif isinstance(value, EdmDateTime):
                el.set(m + "type", "Edm.DateTime")
                el.text = value.to_wire()
            elif isinstance(value, uuid.UUID):
                el.set(m + "type", "Edm.Guid")
                el.text = str(value)
            elif isinstance(value, bytes):
                el.set(m + "type", "Edm.Binary")
                el.text = base64.b64encode(value).decode()
            else:
                el.text = value
    return etree.tostring(feed, xml_declaration=True, encoding="utf-8")


def make_entities() -> list[TableEntity]:
    return json_wire.decode_feed(make_page_json())


def bench(fn: Callable[[], Any], rounds: int) -> float:
    """Best-of-rounds seconds per call (after one warm-up)."""
    fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) if rounds < 5 else statistics.median(sorted(times)[: max(3, rounds // 2)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    rounds: int = args.rounds

    page = make_page_json()
    entities = make_entities()

    from azure.data.tables import EdmType as AzEdm
    from azure.data.tables import EntityProperty
    from azure.data.tables._deserialize import _convert_to_entity
    from azure.data.tables._serialize import _add_entity_properties

    def bare() -> None:
        json.loads(page)

    plain_page = make_page_json(typed=False)

    def bare_plain() -> None:
        json.loads(plain_page)

    def azt_decode_plain() -> None:
        json_wire.decode_feed(plain_page)

    def azt_decode() -> None:
        json_wire.decode_feed(page)

    def azure_decode() -> None:
        for e in json.loads(page)["value"]:
            _convert_to_entity(e)  # type: ignore[no-untyped-call]

    # The same entities in the shape each library writes.
    az_entities = []
    for e in entities:
        d = dict(e)
        d["Visits"] = EntityProperty(d["Visits"], AzEdm.INT64)
        az_entities.append(d)

    def azt_encode() -> None:
        for e in entities:
            json_wire.encode_entity(e)

    def azure_encode() -> None:
        for e in az_entities:
            json.dumps(_add_entity_properties(e)).encode()

    atom_page = make_page_atom(entities)

    def azt_atom_decode() -> None:
        atom_wire.decode_feed(atom_page)

    # Accessing metadata forces the lazily parsed Timestamp: measure that cost too.
    def azt_decode_with_metadata() -> None:
        for e in json_wire.decode_feed(page):
            _ = e.metadata.timestamp

    res = {
        "json.loads (bare)": bench(bare, rounds),
        "azt decode_feed": bench(azt_decode, rounds),
        "azt decode_feed + metadata": bench(azt_decode_with_metadata, rounds),
        "json.loads (bare), untyped page": bench(bare_plain, rounds),
        "azt decode_feed, untyped page": bench(azt_decode_plain, rounds),
        "azure-data-tables decode": bench(azure_decode, rounds),
        "azt encode_entity x1000": bench(azt_encode, rounds),
        "azure-data-tables encode x1000": bench(azure_encode, rounds),
        "azt atom decode_feed": bench(azt_atom_decode, max(3, rounds // 3)),
    }
    print(f"page: {PAGE} entities x 12 properties, {len(page)} bytes JSON, {len(atom_page)} Atom")
    for name, secs in res.items():
        print(f"  {name:36s} {secs * 1e3:8.2f} ms/page  {secs * 1e6 / PAGE:7.2f} us/entity")
    b = res["json.loads (bare)"]
    print("ratios:")
    print(f"  azt decode / bare json.loads           {res['azt decode_feed'] / b:5.2f}x")
    print(f"  azt decode+metadata / bare json.loads  {res['azt decode_feed + metadata'] / b:5.2f}x")
    print(f"  azure decode / bare json.loads         {res['azure-data-tables decode'] / b:5.2f}x")
    bp = res["json.loads (bare), untyped page"]
    plain_ratio = res["azt decode_feed, untyped page"] / bp
    print(f"  azt decode / bare, untyped page        {plain_ratio:5.2f}x")
    print(
        f"  azure decode / azt decode              "
        f"{res['azure-data-tables decode'] / res['azt decode_feed']:5.2f}x"
    )
    print(
        f"  azure encode / azt encode              "
        f"{res['azure-data-tables encode x1000'] / res['azt encode_entity x1000']:5.2f}x"
    )


if __name__ == "__main__":
    main()
