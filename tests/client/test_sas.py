"""SAS token generation: exact tokens for the appendix vectors and argument checking."""

from __future__ import annotations

import urllib.parse
from datetime import UTC, datetime, timedelta, timezone

import pytest

import azt
from azt._core.connection_string import DEV_ACCOUNT_KEY

CRED = azt.SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY)


def _params(token: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(token, keep_blank_values=True))


def test_table_sas_vector_token() -> None:
    token = azt.generate_table_sas(
        CRED,
        "mytable",
        permission="raud",
        start="2024-01-01T00:00:00Z",
        expiry="2030-01-01T00:00:00Z",
        protocol="https,http",
    )
    assert token == (
        "sv=2019-02-02&tn=mytable&sp=raud&st=2024-01-01T00%3A00%3A00Z"
        "&se=2030-01-01T00%3A00%3A00Z&spr=https%2Chttp"
        "&sig=ld0dyBZVi%2FEikXBt4CXVqZUzdpDF63sBot7QHSCeF4o%3D"
    )


def test_table_sas_range_vector() -> None:
    token = azt.generate_table_sas(
        CRED,
        "mytable",
        permission=azt.TableSasPermissions(read=True),
        expiry="2030-01-01T00:00:00Z",
        start_pk="pk1",
        end_pk="pk1",
    )
    params = _params(token)
    assert params["spk"] == "pk1"
    assert params["epk"] == "pk1"
    assert params["sig"] == "jNFwfE4jeF82B3YtMp//fekzyr9mfeM9SPat+AXIPAc="


def test_account_sas_vectors() -> None:
    for version, sig in (
        ("2019-02-02", "dKEa4zPUq/dWdOLrCYusn1Jnz45OJCCdBPi+hMWeijk="),
        ("2020-12-06", "aQbb1uM9CNZPJhjuzMWpvrja5t6VW2FlvCUFVvjctAk="),
    ):
        token = azt.generate_account_sas(
            CRED,
            resource_types=azt.AccountSasResourceTypes(service=True, container=True, object=True),
            permission="rwdlacu",
            expiry="2030-01-01T00:00:00Z",
            protocol="https,http",
            version=version,
        )
        params = _params(token)
        assert params["sig"] == sig
        assert params["ss"] == "t"
        assert params["srt"] == "sco"
        assert params["sv"] == version


def test_permission_order_is_normalised() -> None:
    assert str(azt.TableSasPermissions.from_string("dura")) == "raud"
    assert str(azt.AccountSasPermissions.from_string("cawlr")) == "rwlac"
    with pytest.raises(azt.ValidationError, match="raud"):
        azt.TableSasPermissions.from_string("rx")
    with pytest.raises(azt.ValidationError):
        azt.AccountSasResourceTypes.from_string("x")


def test_datetimes_are_formatted_in_utc() -> None:
    plus2 = timezone(timedelta(hours=2))
    token = azt.generate_table_sas(
        CRED,
        "t1t",
        permission="r",
        start=datetime(2030, 1, 1, 2, 0, 0, tzinfo=plus2),
        expiry=datetime(2030, 1, 2, tzinfo=UTC),
    )
    params = _params(token)
    assert params["st"] == "2030-01-01T00:00:00Z"
    assert params["se"] == "2030-01-02T00:00:00Z"


def test_stored_policy_and_ip() -> None:
    token = azt.generate_table_sas(CRED, "mytable", policy_id="readers", ip="10.0.0.1-10.0.0.9")
    params = _params(token)
    assert params["si"] == "readers"
    assert params["sip"] == "10.0.0.1-10.0.0.9"
    assert "sp" not in params
    assert "se" not in params


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"expiry": "2030-01-01"}, "permission"),
        ({"permission": "r"}, "expiry"),
        ({"permission": "r", "expiry": "x", "protocol": "http"}, "protocol"),
        ({"permission": "r", "expiry": "x", "ip": "300.1.1.1"}, "ip"),
        ({"permission": "r", "expiry": "x", "ip": "10.0.0.9-10.0.0.1"}, "ends before"),
        ({"permission": "r", "expiry": "x", "start_rk": "a"}, "start_pk"),
        ({"permission": "r", "expiry": "x", "end_rk": "a"}, "end_pk"),
        ({"permission": "r", "expiry": "x", "ip": "1.2.3.4", "version": "2013-08-15"}, "2015"),
        ({"policy_id": "x" * 65}, "64"),
    ],
)
def test_table_sas_argument_errors(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(azt.ValidationError, match=message):
        azt.generate_table_sas(CRED, "mytable", **kwargs)


def test_account_sas_argument_errors() -> None:
    with pytest.raises(azt.ValidationError, match="resource type"):
        azt.generate_account_sas(CRED, resource_types="", permission="r", expiry="x")
    with pytest.raises(azt.ValidationError, match="2015-04-05"):
        azt.generate_account_sas(
            CRED, resource_types="o", permission="r", expiry="x", version="2013-08-15"
        )
    with pytest.raises(azt.ValidationError, match="services"):
        azt.generate_account_sas(CRED, resource_types="o", permission="r", expiry="x", services="z")
    with pytest.raises(azt.ValidationError, match="SharedKeyCredential"):
        azt.generate_table_sas("key", "t", permission="r", expiry="x")  # type: ignore[arg-type]
