"""The JSON-to-Arrow decoder on its own: values the service could not have sent are refused
naming the property (as the entity decoder refuses them), nulls and missing properties are
null, and the rows of a page need not share their keys."""

from __future__ import annotations

from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")

from azt import WireDecodeError  # noqa: E402
from azt.frames import EXTRA, FrameDecoder  # noqa: E402


def row(**props: Any) -> dict[str, Any]:
    return {"PartitionKey": "p", "RowKey": "r", **props}


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"N@odata.type": "Edm.Int64", "N": "12x"}, "property 'N': invalid Edm.Int64 value '12x'"),
        ({"N@odata.type": "Edm.Int64", "N": "9223372036854775808"}, "invalid Edm.Int64"),
        ({"G@odata.type": "Edm.Guid", "G": "c9da_455-213d-42c9-9a79-3e9149a57833"}, "'G'"),
        ({"B@odata.type": "Edm.Binary", "B": "AA E="}, "property 'B': invalid Edm.Binary"),
        ({"T@odata.type": "Edm.DateTime", "T": "yesterday"}, "property 'T': invalid Edm"),
        ({"D@odata.type": "Edm.Double", "D": "Inf"}, "property 'D': invalid Edm.Double"),
        ({"X@odata.type": "Edm.Decimal", "X": "1"}, "unknown type annotation 'Edm.Decimal'"),
        ({"L": [1, 2]}, "a JSON list is not an EDM value"),
    ],
)
def test_values_the_service_cannot_send_are_refused(props: dict[str, Any], message: str) -> None:
    with pytest.raises(WireDecodeError, match=message):
        FrameDecoder().decode([row(**props)])


def test_rows_of_other_shapes_and_nulls() -> None:
    guid = "c9da6455-213d-42c9-9a79-3e9149a57833"
    rows = [
        row(A=1, G=guid, **{"G@odata.type": "Edm.Guid"}),
        row(B="x"),
        row(A=None, G=None, **{"G@odata.type": "Edm.Guid"}),  # a null is a missing property
        row(A=2, B="y"),
    ]
    batch = FrameDecoder().decode(rows)
    assert batch.column("A").to_pylist() == [1, None, None, 2]
    assert batch.column("B").to_pylist() == [None, "x", None, "y"]
    assert [str(g) if g else g for g in batch.column("G").to_pylist()] == [guid, None, None, None]
    assert batch.column(EXTRA).null_count == 4


def test_int32_widens_only_for_an_entity_class() -> None:
    rows = [row(N=1)]
    plain = FrameDecoder({"N": "Edm.Int64"}, fixed=True).decode(rows)  # type: ignore[dict-item]
    assert plain.column("N").to_pylist() == [None]
    assert plain.column(EXTRA).to_pylist() == ['{"N":1}']
    typed = FrameDecoder({"N": "Edm.Int64"}, fixed=True, widen=True).decode(rows)  # type: ignore[dict-item]
    assert typed.column("N").to_pylist() == [1]


def test_rows_with_the_same_names_in_another_order_or_as_many_other_names() -> None:
    # the same names in another order: one shape, each value in its own column
    swapped = [row(A=1, B="x"), {"B": "y", "RowKey": "r2", "A": 2, "PartitionKey": "p"}]
    batch = FrameDecoder().decode(swapped)
    assert batch.column("RowKey").to_pylist() == ["r", "r2"]
    assert batch.column("A").to_pylist() == [1, 2]
    assert batch.column("B").to_pylist() == ["x", "y"]
    # as many names but not the same ones: row by row, nothing lost or misplaced
    other = [row(A=1, B="x"), row(A=2, C="z"), row(D=3.5, B="w")]
    batch = FrameDecoder().decode(other)
    assert batch.column("A").to_pylist() == [1, 2, None]
    assert batch.column("B").to_pylist() == ["x", None, "w"]
    assert batch.column("C").to_pylist() == [None, "z", None]
    assert batch.column("D").to_pylist() == [None, None, 3.5]
    assert batch.column(EXTRA).null_count == 3
