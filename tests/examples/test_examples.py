"""Every example runs (as a command, on its embedded stub and on a given account), and
what it prints or returns is checked against the data it started from."""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from azt import TableItem, TableServiceClient
from azt.indexes import is_index_row_key
from azt.keys import ticks_key
from azt_server_stub import StubServer, ThreadedStubServer
from examples import blog, demo, logs, movies, newest_first, rentals
from examples.movies_data import CATALOGUE

EXAMPLES = ["demo", "movies", "rentals", "blog", "logs", "newest_first"]


@pytest_asyncio.fixture
async def service() -> AsyncIterator[TableServiceClient]:
    async with (
        StubServer() as stub,
        TableServiceClient.from_connection_string(stub.connection_string) as client,
    ):
        yield client


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_as_a_command(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AZT_CONNECTION_STRING", raising=False)
    module = importlib.import_module(f"examples.{name}")
    assert module.main([]) == 0
    out = capsys.readouterr().out
    assert "embedded Table service stub on http://127.0.0.1:" in out
    assert "Traceback" not in out


async def _tables(conn: str) -> list[TableItem]:
    async with TableServiceClient.from_connection_string(conn) as s:
        return await s.list_tables().to_list()


@pytest.mark.parametrize("how", ["option", "env"])
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_on_a_given_account(
    name: str,
    how: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = importlib.import_module(f"examples.{name}")
    with ThreadedStubServer() as account:
        if how == "option":
            monkeypatch.delenv("AZT_CONNECTION_STRING", raising=False)
            assert module.main(["--connection-string", account.connection_string]) == 0
        else:
            monkeypatch.setenv("AZT_CONNECTION_STRING", account.connection_string)
            assert module.main([]) == 0
        out = capsys.readouterr().out
        assert "using the account from the connection string" in out
        assert "embedded" not in out
        created = [
            line.split()[-1] for line in out.splitlines() if line.startswith("created table")
        ]
        assert created  # it worked in that account...
        assert asyncio.run(_tables(account.connection_string)) == []  # ...and cleaned up


def test_keep_leaves_the_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZT_CONNECTION_STRING", raising=False)
    with ThreadedStubServer() as account:
        assert rentals.main(["--connection-string", account.connection_string, "--keep"]) == 0
        (name,) = asyncio.run(_tables(account.connection_string))
        assert name.startswith("rentals")


# ------------------------------------------------------------------ results are right


async def test_demo(service: TableServiceClient) -> None:
    out = Lines()
    name = await demo.run(service, out)
    text = out.text
    assert f"created table {name}" in text
    assert "inserted 30 movies in 6 entity group transactions" in text
    for kind in ("point:", "row range:", "partition range:", "full scan:", "multi:"):
        assert kind in text
    assert "results: Action/Shaft (3.4), Action/Sherlock Holmes (4.0), Action/Shooter (3.6)" in text
    assert "page of 2 starting at War/Das Boot; more: False" in text
    assert "got 7 movies starting at Comedy/Tootsie" in text
    assert "operation 1 failed with EntityAlreadyExistsError" in text
    assert "'Paddington 2' stored: False" in text
    assert "refused: PreconditionFailedError" in text
    assert "rating=4.7, views=1, favorite=True" in text
    assert await service.list_tables().to_list() == []


_PREDICATES: dict[str, Callable[[str, str, float, int], bool]] = {
    "SciFi 'Star Wars' (point)": lambda c, t, r, y: c == "SciFi" and t == "Star Wars",
    "SciFi from 'Sphere' to 'Star Wars' (row range)": (
        lambda c, t, r, y: c == "SciFi" and "Sphere" <= t <= "Star Wars"
    ),
    "Action titles starting with 'Sh' (row range)": (
        lambda c, t, r, y: c == "Action" and t.startswith("Sh")
    ),
    "favourites from 'Action' to 'Thriller' (partition range)": (
        lambda c, t, r, y: "Action" <= c <= "Thriller" and r >= 4.7
    ),
    "Action or Thriller rated above 4 (parallel sub-queries)": (
        lambda c, t, r, y: c in ("Action", "Thriller") and r > 4.0
    ),
    "titles from 'Cars' to 'Star Wars' in any category (full scan)": (
        lambda c, t, r, y: "Cars" <= t <= "Star Wars"
    ),
    "released before 1970 (full scan)": lambda c, t, r, y: y < 1970,
}


async def test_movies(service: TableServiceClient) -> None:
    found = await movies.run(service, Lines())
    ordered = sorted(CATALOGUE)
    assert set(_PREDICATES) == set(movies.QUERIES)
    for name, pred in _PREDICATES.items():
        expected = [(c, t) for c, t, r, y in ordered if pred(c, t, r, y)]
        assert found[name] == expected, name
        assert expected  # every query finds something
    best = [t for c, t, r, y in ordered if r >= 4.5]
    assert found["pages"] == [best[:4], best[4:8]]
    assert found["resumed"] == best[8:]
    assert found["missing"] is None


async def test_rentals(service: TableServiceClient) -> None:
    out = Lines()
    summary = await rentals.run(service, out)
    assert summary == {
        "m-001": (2, ["Alien", "Psycho"]),
        "m-002": (10, [f"Movie {i:02d}" for i in range(10)]),
    }
    assert "refused: m-001 already has 'Heat'" in out.text


async def test_blog(service: TableServiceClient) -> None:
    out = Lines()
    result = await blog.run(service, out)
    assert result == {
        "december": ["xmas", "bowl", "snow"],
        "plan": ("index", "by_category"),
        "sports": ["randy", "bowl", "draft"],  # index order: category, then the post's RowKey
        "sports_after": ["randy", "draft"],
        "fun_after": ["bowl"],
        "problems": [],
    }
    assert "duplicate post refused" in out.text
    assert "CategoryIndex" not in inspect.getsource(blog)  # no hand-written index code


async def test_blog_index_rows_live_in_the_reserved_range(service: TableServiceClient) -> None:
    result = await blog.run(service, Lines(), keep=True)
    assert result["problems"] == []
    (name,) = [t async for t in service.list_tables()]
    rows = [e async for e in service.get_table_client(name).list_entities()]
    index_rows = [e["RowKey"] for e in rows if is_index_row_key(e["RowKey"])]
    assert len(index_rows) == len(blog.POSTS)  # one key-only row per post
    assert all(rk > e["RowKey"] for rk in index_rows for e in rows if e["RowKey"] not in index_rows)


async def test_logs(service: TableServiceClient) -> None:
    found: dict[str, Any] = await logs.run(service, Lines())
    written = sorted(found["written"])
    assert len(written) == 40 * 5
    assert len({pk for pk, _, _ in written}) > 5  # the buckets did spread the writes
    assert found["component"] == [
        (pk, rk) for pk, rk, _ in written if pk.startswith("ReportingRole;")
    ]
    mine = [w for w in written if w[0].startswith("WebPortal;Instance0001;")]
    problems = sorted((pk, rk) for pk, rk, level in mine if level != "INFO")
    assert problems
    assert sorted(found["instance_problems"]) == problems
    assert [rk for _, rk in found["instance_problems"]] == sorted(rk for _, rk in problems)
    lo = ticks_key(datetime(2024, 5, 1, 12, 0, 2, tzinfo=UTC))
    hi = ticks_key(datetime(2024, 5, 1, 12, 0, 4, tzinfo=UTC))
    window = [(pk, rk) for pk, rk, _ in mine if lo <= rk < hi]
    assert len(window) == 8
    assert found["window"] == window  # merged in key order


async def test_newest_first(service: TableServiceClient) -> None:
    found = await newest_first.run(service, Lines())
    assert found["movies"] == ["Movie5", "Movie4", "Movie3", "Movie2", "Movie1"]
    assert found["naive"] == ["Movie3", "Movie5", "Movie4", "Movie1", "Movie2"]  # the seed's
    assert found["latest"] == [f"action {i}" for i in range(29, 24, -1)]
    assert found["older"] == [f"action {i}" for i in range(24, 19, -1)]


def test_every_example_is_listed() -> None:
    """A guard for CI: every runnable module in examples/ is in EXAMPLES (and so is run)."""
    folder = Path(__file__).resolve().parents[2] / "examples"
    runnable = sorted(
        p.stem for p in folder.glob("*.py") if "def main(" in p.read_text(encoding="utf-8")
    )
    assert runnable == sorted(EXAMPLES)
