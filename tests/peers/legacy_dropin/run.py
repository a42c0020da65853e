"""Run each legacy script twice against one stub and compare the transcripts.

Once with the real azure-cosmosdb-table 1.0.6 (``--legacy-python``, the legacy venv's
interpreter) and once with only the import changed to azt.legacy (``--azt-python`` runs
``shim.py``, which maps the legacy module names to the stand-ins; the script text is the
same). Any difference in the transcripts (entities and property types, ETag presence,
errors, markers) fails the run. ``--azt-only`` runs just the azt half and checks that
every script ran to its end (the pytest in tests/context uses it).

Example::

    $ python tests/peers/legacy_dropin/run.py --legacy-python /tmp/legacy-venv/bin/python
    crud: 38 lines match
    ...
    6 scripts, 0 differences
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SCRIPTS = ["crud", "edm_types", "query", "batch", "conditional", "tables_acl_sas"]


@contextmanager
def running_stub(python: str) -> Iterator[str]:
    """Start the stub on a free port; yield its connection string; stop it."""
    proc = subprocess.Popen(
        [python, "-m", "azt_server_stub", "--port", "0", "--log-level", "WARNING"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        conn = None
        while conn is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the stub exited early (rc={proc.poll()})")
            if line.startswith("connection string: "):
                conn = line.split(": ", 1)[1].strip()
        if conn is None:
            raise RuntimeError("the stub did not print its connection string")
        yield conn
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def run_script(cmd: list[str], conn: str, prefix: str) -> tuple[int, str, str]:
    env = {**os.environ, "AZT_DROPIN_CONN": conn, "AZT_DROPIN_PREFIX": prefix}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(REPO)])
    done = subprocess.run(
        cmd, cwd=HERE, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    return done.returncode, done.stdout, done.stderr


def one(script: str, conn: str, legacy: str | None, azt: str) -> tuple[str, list[str]]:
    """Run ``script`` under both clients; the problems found (empty when they match)."""
    path = str(HERE / f"{script}.py")
    tag = uuid.uuid4().hex[:6]
    runs = {"azt": [azt, str(HERE / "shim.py"), path]}
    if legacy is not None:
        runs["legacy"] = [legacy, path]
    results = {
        who: run_script(cmd, conn, f"{who[0]}{tag}{script.replace('_', '')}")
        for who, cmd in runs.items()
    }
    problems = []
    for who, (rc, _out, err) in results.items():
        if rc != 0:
            problems.append(f"{who} run of {script} failed (rc={rc}):\n{err[-3000:]}")
    if legacy is not None and not problems:
        want = results["legacy"][1].splitlines()
        got = results["azt"][1].splitlines()
        if want != got:
            diff = difflib.unified_diff(want, got, "legacy", "azt.legacy", lineterm="", n=0)
            problems.append("\n".join(diff))
        elif not want:
            problems.append(f"{script} printed nothing")
    if legacy is None and not problems and not results["azt"][1].strip():
        problems.append(f"{script} printed nothing")
    lines = len(results["azt"][1].splitlines())
    return f"{script}: {lines} lines" + (" match" if legacy else ""), problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--legacy-python", help="the legacy venv's interpreter")
    parser.add_argument("--azt-python", default=sys.executable)
    parser.add_argument("--stub-python", default=os.environ.get("AZT_STUB_PYTHON", sys.executable))
    parser.add_argument("--azt-only", action="store_true", help="run only the azt half")
    parser.add_argument("scripts", nargs="*", default=SCRIPTS)
    args = parser.parse_args()
    if not args.azt_only and not args.legacy_python:
        parser.error("--legacy-python is required unless --azt-only")
    legacy = None if args.azt_only else args.legacy_python
    failures = 0
    with running_stub(args.stub_python) as conn, ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(one, s, conn, legacy, args.azt_python) for s in args.scripts]
        for future in futures:
            summary, problems = future.result()
            if problems:
                failures += 1
                print(f"FAIL {summary}")
                for problem in problems:
                    print(re.sub(r"^", "    ", problem, flags=re.M))
            else:
                print(f"ok   {summary}")
    print(f"{len(args.scripts)} scripts, {failures} with differences")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
