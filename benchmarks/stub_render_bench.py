"""The stub's CPU per entity it serves in query pages, by metadata level and flavour.

A stub in its own process (``benchmarks/_seeded_stub.py``: the ``azt-stub`` server, its
table filled before it listens) is read page by page (1,000 entities a page, plain HTTP
through a table SAS, ``urllib``: the client's own cost is not measured) and the stub
process's CPU time over each read (``/proc/PID/task/*/schedstat``: nanoseconds, all its
threads) is divided by the entities served. The machine is shared: CPU time, unlike wall
clock, barely moves with the load. Each level is read from a new stub, twice: the first
read writes every entity's text; the second reads entities asked for before (remembered
when the table fits the memory of entity texts, 16,384 entities; a larger table is a
scan either way).

Two row shapes: ``frames`` (``_frames_rows.py``: one property of each of the eight EDM
types, as ``frames_bench.py`` exports them) and ``query`` (``_query_rows.py``: the rows of
``stub_vs_azurite.py``'s query figures). Compare two versions of the stub by running
this script with each on ``PYTHONPATH`` (the stub process imports what this one does)::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/stub_render_bench.py --rows 50000

Prints one line per flavour, shape, level and read: rows, the stub's CPU per entity (us)
and its CPU per page. ``--durable``: stubs with a durable store (``--location`` in a new
temporary folder, ``--durability process``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from urllib.parse import quote

from azt import SharedKeyCredential, generate_table_sas
from azt_server_stub import DEV_ACCOUNT, DEV_KEY

HERE = Path(__file__).resolve().parent
SHAPES = {"frames": ("_frames_rows", "framesbench"), "query": ("_query_rows", "benchtable")}
LEVELS = ("nometadata", "minimalmetadata", "fullmetadata")


def cpu_ns(pid: int) -> int:
    """CPU time a process's threads have run so far, in nanoseconds (Linux schedstat)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total


def read_table(port: int, table: str, level: str, where: str = "") -> tuple[int, int]:
    """Every entity of ``table`` (``where``: a $filter) in 1,000-entity pages at ``level``:
    (entities, pages)."""
    sas = generate_table_sas(
        SharedKeyCredential(DEV_ACCOUNT, DEV_KEY), table, permission="r", expiry="2099-01-01"
    )
    base = f"http://127.0.0.1:{port}/{DEV_ACCOUNT}/{table}()?{sas}&$top=1000"
    if where:
        base += "&$filter=" + quote(where)
    headers = {
        "Accept": f"application/json;odata={level}",
        "x-ms-version": "2019-02-02",
        "DataServiceVersion": "3.0",
    }
    url, rows, pages = base, 0, 0
    while True:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as answer:
            body = answer.read()
            npk = answer.headers.get("x-ms-continuation-NextPartitionKey")
            nrk = answer.headers.get("x-ms-continuation-NextRowKey")
        rows += body.count(b'"RowKey":')
        pages += 1
        if npk is None:
            return rows, pages
        url = f"{base}&NextPartitionKey={quote(npk)}"
        if nrk is not None:
            url += f"&NextRowKey={quote(nrk)}"


def run(flavor: str, shape: str, rows: int, level: str, reads: int, durable: bool = False) -> None:
    """Read the table ``reads`` times at ``level`` from a new seeded stub (``durable``: one
    with a durable store in a new temporary folder)."""
    module, table = SHAPES[shape]
    argv = [sys.executable, str(HERE / "_seeded_stub.py"), "--module", module]
    argv += ["--rows", str(rows), "--port", "0", "--flavor", flavor]
    with tempfile.TemporaryDirectory() as folder:
        if durable:
            argv += ["--location", folder]
        _read_from(argv, flavor, shape, table, level, reads)


def _read_from(
    argv: list[str], flavor: str, shape: str, table: str, level: str, reads: int
) -> None:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = 0
        for line in proc.stdout:
            word, _, rest = line.partition(" ")
            if word == "listening":
                port = int(rest)
                break
        if not port:
            raise RuntimeError("the seeded stub exited before listening")
        # warm-up (imports, connection, code paths) without writing any entity of the table
        read_table(port, table, level, "PartitionKey eq 'none'")
        for n in range(1, reads + 1):
            before = cpu_ns(proc.pid)
            got, pages = read_table(port, table, level)
            spent = cpu_ns(proc.pid) - before
            print(
                f"{flavor:<8}{shape:<8}{level:<17}read {n}{got:>9,}"
                f"{spent / got / 1000:>9.2f} us{spent / pages / 1e6:>9.2f} ms/page",
                flush=True,
            )
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=50_000, help="entities in the table")
    parser.add_argument("--shapes", default="frames,query", help="frames, query")
    parser.add_argument("--flavors", default="storage,cosmos", help="storage, cosmos")
    parser.add_argument("--levels", default=",".join(LEVELS), help="metadata levels")
    parser.add_argument("--reads", type=int, default=2, help="reads of the table per level")
    parser.add_argument("--durable", action="store_true", help="stubs with a durable store")
    args = parser.parse_args()
    print(f"{'flavor':<8}{'shape':<8}{'level':<23}{'rows':>9}{'stub CPU':>12}{'per page':>12}")
    for flavor in args.flavors.split(","):
        for shape in args.shapes.split(","):
            for level in args.levels.split(","):
                run(flavor, shape, args.rows, level, args.reads, args.durable)


if __name__ == "__main__":
    main()
