"""EDM types as plain strings: the constants, the name lookup, and what the cyclic
garbage collector makes of the entities an in-memory store holds."""

from __future__ import annotations

import gc
import json

import pytest

from azt_server_stub.backend import Backend, WriteOp
from azt_server_stub.handlers.batch_plain import plain_entity
from azt_server_stub.model import EDM_NAMES, EDM_TYPES, Edm, edm_type, is_edm_type

ACCOUNT = "devstoreaccount1"


def test_each_type_is_its_name_and_looks_up_to_itself() -> None:
    assert len(EDM_TYPES) == len(set(EDM_TYPES)) == 8
    for edm in EDM_TYPES:
        assert getattr(Edm, EDM_NAMES[edm]) is edm
        assert edm_type("".join(edm)) is edm  # equal text made anew: the constant itself
        assert is_edm_type(edm)
        assert not is_edm_type("".join(edm))  # equal text is not the type
    for other in ("Edm.Single", "edm.string", "", "Int32"):
        with pytest.raises(ValueError, match="is not an EDM type"):
            edm_type(other)
    with pytest.raises(ValueError):
        edm_type(Edm.INT32.encode())  # type: ignore[arg-type]


def test_stored_properties_leave_the_cyclic_collector_alone() -> None:
    """After a full collection an in-memory store's entities are the only tracked objects
    of their data: their property dicts and ``(type, value)`` tuples are untracked."""
    b = Backend()
    b.create_table(ACCOUNT, "Tracked")
    body = {
        "PartitionKey": "p",
        "RowKey": "r",
        "Name": "n",
        "Count": 1,
        "Score@odata.type": "Edm.Double",
        "Score": 0.5,
        "Active": False,
        "Big@odata.type": "Edm.Int64",
        "Big": "1099511627777",
        "When@odata.type": "Edm.DateTime",
        "When": "2024-01-01T12:00:00Z",
        "Blob@odata.type": "Edm.Binary",
        "Blob": "AAE=",
    }
    got = plain_entity(json.loads(json.dumps(body)), None, None)
    assert got is not None
    b.write(ACCOUNT, "Tracked", WriteOp("insert", got[0], got[1], got[2], None, got[3]))
    b.write(ACCOUNT, "Tracked", WriteOp("insert", "p", "s", {"N": (Edm.INT64, 5)}))
    gc.collect()
    stored = b.query_entities(ACCOUNT, "Tracked", None, None, None).entities
    assert [e.rk for e in stored] == ["r", "s"]
    for entity in stored:
        assert not gc.is_tracked(entity.props)
        for typed in entity.props.values():
            assert not gc.is_tracked(typed)
            assert is_edm_type(typed[0])
