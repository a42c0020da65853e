# ruff: noqa: E501 - the table below has one line per entry, recording names are long
"""Where today's stub is known to answer otherwise than the real service's recordings.

Each entry names a recording, an interaction index, the aspects that differ (the kinds of
:func:`tests.conformance.compare.differences`) and the item of issue 35 it belongs to:

- items 1-5 (Cosmos DB Table API): 1 ``PATCH`` merge refused with 400 InvalidInput;
  2 a change set with a ``PATCH`` part refused whole (400 InvalidInput, JSON); 3 ``ETag`` on the
  201 of create table; 4 ``415 MediaTypeNotSupported`` for a ``PUT`` with ``Accept: */*`` and
  ``Content-Type: application/json``; 5 what a client sees of formatting: DateTime values with
  seven fractional digits, ``odata.metadata`` with the table segment
  (``{root}/{table}/$metadata#...``), errors in full metadata, ``Content-Type: application/json`` on 204 answers, row and table order
  (insertion order);
- items 7-12 (Storage): 7 errors as XML for ``Accept: */*``; 8 change-set answer parts'
  ``Content-ID`` and the ``0:`` index prefix of an error message; 9 an empty change set answered
  202; 10 ``Preference-Applied`` on error answers; 11 an identifier with an empty access policy
  listed without ``<AccessPolicy>``; 12 ``$select`` in ``odata.metadata``;
- ``order``: the order of JSON members (none left: Cosmos DB writes ``PartitionKey`` and
  ``RowKey`` where the client sent them among the properties, and so does the stub's Cosmos
  flavour since it keeps each entity's key places);
- ``newer``: the stub follows more recent recordings of the real service on purpose (the
  decisions of docs/cosmos.md), so an older recording disagrees by design; the figures count
  these apart ("differ on purpose, newer evidence");
- ``env``: the recording itself cannot be reproduced (the real account changed meanwhile).

The test of each listed interaction is a strict xfail: when the stub is fixed the test fails
until the entry is removed; when the stub differs in another way than listed, it fails too.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Known:
    """One known difference: recording name, interaction index, differing aspects, issue item."""

    recording: str
    index: int
    kinds: tuple[str, ...]
    item: str
    note: str = ""


# recording (under recordings/, without .yaml)  interaction index  issue-35 item(s)  differing aspects
# (``python -m tests.conformance.figures --draft`` prints today's lines in this form)
_TABLE = """
data_tables/test_table_batch_cosmos.test_batch_delete 5 newer content-type
data_tables/test_table_batch_cosmos.test_batch_different_partition_operations_fail 2 newer content-type
data_tables/test_table_batch_cosmos.test_batch_insert 3 newer content-type
data_tables/test_table_batch_cosmos.test_batch_same_row_operations_fail 3 newer content-type
data_tables/test_table_batch_cosmos.test_batch_update 5 newer content-type
data_tables/test_table_batch_cosmos.test_batch_update_if_doesnt_match 4 newer content-type
data_tables/test_table_batch_cosmos.test_batch_update_if_match 4 newer content-type
data_tables/test_table_cosmos.test_create_table 1 newer content-type
data_tables/test_table_cosmos.test_create_table_fail_on_exist 2 newer content-type
data_tables/test_table_cosmos.test_delete_table_with_existing_table 1 newer content-type
data_tables/test_table_cosmos.test_query_tables 2 newer content-type
data_tables/test_table_entity_cosmos.test_binary_property_value 3 newer content-type
data_tables/test_table_entity_cosmos.test_datetime_duplicate_field 3 newer content-type
data_tables/test_table_entity_cosmos.test_datetime_duplicate_field 6 newer content-type
data_tables/test_table_entity_cosmos.test_delete_entity 2 newer content-type
data_tables/test_table_entity_cosmos.test_delete_entity 4 newer content-type
data_tables/test_table_entity_cosmos.test_etag_duplicate_field 3 newer content-type
data_tables/test_table_entity_cosmos.test_etag_duplicate_field 6 newer content-type
data_tables/test_table_entity_cosmos.test_get_entity 3 newer content-type
data_tables/test_table_entity_cosmos.test_get_entity_full_metadata 3 newer content-type
data_tables/test_table_entity_cosmos.test_get_entity_if_match 3 newer content-type
data_tables/test_table_entity_cosmos.test_get_entity_if_match 4 newer content-type
data_tables/test_table_entity_cosmos.test_get_entity_not_existing 2 newer content-type
data_tables/test_table_entity_cosmos.test_insert_entity_conflict 3 newer content-type
data_tables/test_table_entity_cosmos.test_insert_or_merge_entity_with_existing_entity 3 newer content-type
data_tables/test_table_entity_cosmos.test_insert_or_replace_entity_with_existing_entity 2 newer content-type,error-code,etag,status
data_tables/test_table_entity_cosmos.test_insert_or_replace_entity_with_existing_entity 3 newer content-type
data_tables/test_table_entity_cosmos.test_merge_entity 3 newer content-type
data_tables/test_table_entity_cosmos.test_merge_entity_not_existing 2 newer content-type
data_tables/test_table_entity_cosmos.test_none_property_value 3 newer content-type
data_tables/test_table_entity_cosmos.test_operations_on_entity_with_partition_key_having_single_quote 3 newer content-type
data_tables/test_table_entity_cosmos.test_query_entities_with_filter 3 newer content-type
data_tables/test_table_entity_cosmos.test_query_entities_with_top_and_next 10 newer content-type
data_tables/test_table_entity_cosmos.test_query_zero_entities 3 newer content-type
data_tables/test_table_entity_cosmos.test_unicode_property_value 4 newer content-type
data_tables/test_table_entity_cosmos.test_update_entity 2 newer content-type
data_tables/test_table_entity_cosmos.test_update_entity 4 newer content-type
data_tables/test_table_entity_cosmos.test_update_entity_with_if_doesnt_match 4 newer content-type
data_tables/test_table_entity_cosmos_async.test_merge_entity 2 newer content-type
data_tables/test_table_entity_cosmos_async.test_merge_entity 4 newer content-type
data_tables/test_table_entity_cosmos_async.test_merge_entity_not_existing 2 newer content-type
"""

#: What each item of issue 35 is about, as docs/conformance.md's table of known differences says.
ITEM_TITLES = {
    "1": "Cosmos: a merge sent as `PATCH` is refused (400 `InvalidInput`)",
    "2": "Cosmos: a change set with a `PATCH` part is refused whole (400 `InvalidInput`, JSON)",
    "3": "Cosmos: `ETag` on the 201 of create table",
    "4": "Cosmos: `PUT` with `Accept: */*` and `Content-Type: application/json` answered 415",
    "5": "Cosmos: formatting a client sees (`odata.metadata` with the table segment, "
    "`{root}/{table}/$metadata#...`; `Content-Type: application/json` on a change set's 204 "
    "parts)",
    "7": "Storage: errors as XML for `Accept: */*`",
    "8": "change-set answer parts: `Content-ID` and the `0:` index prefix",
    "9": "Storage: an empty change set answered 202",
    "10": "Storage: `Preference-Applied` on error answers",
    "11": "Storage: an empty access policy listed without `<AccessPolicy>`",
    "12": "Storage: `$select` in `odata.metadata`",
    "order": "Cosmos: the order of JSON members (`PartitionKey` and `RowKey` are written "
    "where the client sent them among the properties)",
    "newer": "Cosmos: the stub follows more recent (2022) recordings on purpose: "
    "`Content-Type: application/json` on 204s, upserts with `Content-Type: application/json` "
    "accepted (docs/cosmos.md, Decisions)",
    "env": "the real account changed meanwhile (not a stub defect)",
}

#: Why an entry of item ``env`` cannot agree.
_NOTES = {
    ("cosmosdb_table/test_table.test_list_tables_with_marker", 5): (
        "table358619d2, which the first page's continuation token names, was deleted by "
        "another client of the real account before the second page was read"
    ),
}


def _parse(table: str) -> tuple[Known, ...]:
    entries = []
    for line in table.strip().splitlines():
        recording, index, item, kinds = line.split()
        key = (recording, int(index))
        entries.append(
            Known(recording, int(index), tuple(kinds.split(",")), item, _NOTES.get(key, ""))
        )
    return tuple(entries)


KNOWN_DIFFERENCES: tuple[Known, ...] = _parse(_TABLE)


def known_by_key() -> dict[tuple[str, int], Known]:
    """The table by (recording, index); ``ValueError`` on a repeated key."""
    table: dict[tuple[str, int], Known] = {}
    for entry in KNOWN_DIFFERENCES:
        key = (entry.recording, entry.index)
        if key in table:
            raise ValueError(f"KNOWN_DIFFERENCES lists {key} twice")
        table[key] = entry
    return table
