"""Agreement figures of the recorded-traffic suite, per flavour, and a draft of the known list.

Run from the repository root::

    python -m tests.conformance.figures            # "Storage: N of M interactions agree; ..."
    python -m tests.conformance.figures --detail   # every difference, one line each
    python -m tests.conformance.figures --draft    # KNOWN_DIFFERENCES entries for today's stub
    python -m tests.conformance.figures --update   # rewrite the known list and the docs' figures

``--draft`` keeps the item of an entry listed with the same aspects and suggests one otherwise
from its kind (:func:`suggest_item`; ``?`` when none fits). ``--update`` writes the same lines
into ``known_differences.py`` and the figures and the table by item into docs/conformance.md
(between its ``<!-- figures -->`` and ``<!-- by-item -->`` markers); read the diff before
committing it: a new difference is a finding to file, not a line to accept.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .cassettes import Recording, load_all
from .compare import Difference
from .known_differences import ITEM_TITLES, Known, known_by_key
from .replay import Outcome, replay_all


@dataclass(frozen=True)
class Figures:
    """Replayed interactions of one flavour: agreeing, differing on purpose (the stub follows
    newer recordings of the real service: known entries of item ``newer``), differing
    otherwise; and the skipped ones by rule."""

    flavor: str
    replayed: int
    agree: int
    skipped: dict[str, int]
    newer: int = 0

    @property
    def differ(self) -> int:
        """Interactions that differ, not on purpose (each listed with its reason)."""
        return self.replayed - self.agree - self.newer

    def sentence(self) -> str:
        """``Storage: N of M interactions agree, K differ on purpose (newer evidence), D
        differ`` (the form docs/conformance.md states)."""
        return (
            f"{self.flavor.capitalize()}: {self.agree} of {self.replayed} interactions agree, "
            f"{self.newer} differ on purpose (newer evidence), {self.differ} differ"
        )


def figures(
    recordings: list[Recording],
    outcomes: dict[str, list[Outcome]],
    items: dict[tuple[str, int], str] | None = None,
) -> list[Figures]:
    """Figures per flavour (Storage first), from replayed outcomes; ``items``: the issue
    item of each known difference (default: the KNOWN_DIFFERENCES table's)."""
    if items is None:
        items = {key: entry.item for key, entry in known_by_key().items()}
    found: list[Figures] = []
    for flavor in ("storage", "cosmos"):
        replayed = agree = newer = 0
        skipped: Counter[str] = Counter()
        for recording in recordings:
            if recording.flavor != flavor:
                continue
            for outcome in outcomes[recording.name]:
                if outcome.skipped is not None:
                    skipped[outcome.skipped] += 1
                    continue
                replayed += 1
                agree += outcome.agrees
                item = items.get((recording.name, outcome.index), "")
                newer += not outcome.agrees and item == "newer"
        found.append(Figures(flavor, replayed, agree, dict(sorted(skipped.items())), newer))
    return found


def suggest_item(flavor: str, method: str, differences: list[Difference]) -> str:
    """The issue-35 item a difference most likely belongs to (a draft for a human to check)."""
    kinds = {kind for kind, _, _ in differences}
    values = {kind: (want, got) for kind, want, got in differences}
    items: list[str] = []
    if flavor == "cosmos":
        want_status = values.get("status", ("", ""))[0]
        if want_status == "400" and method == "PATCH":
            items.append("1")
        if want_status == "400" and "batch:part-count" in kinds:
            items.append("2")
        if want_status == "415":
            items.append("4")
        if kinds == {"etag"} and method == "POST":
            items.append("3")
        if kinds & {"metadata", "datetime-form", "body", "batch:content-type", "content-type"}:
            items.append("5")
        if "member-order" in kinds:
            items.append("order")
        if "batch:content-id" in kinds:
            items.append("8")
    else:
        content_type = values.get("content-type", ("", ""))
        if "xml" in content_type[0] and "json" in content_type[1]:
            items.append("7")
        if kinds & {"batch:content-id", "batch:error-index"}:
            items.append("8")
        if values.get("status") == ("202", "400"):
            items.append("9")
        if "preference-applied" in kinds:
            items.append("10")
        if "body" in kinds and "acl" in values["body"][0]:
            items.append("11")
        if "metadata" in kinds and "$select" in values["metadata"][0]:
            items.append("12")
    return ",".join(items) or "?"


KNOWN_FILE = Path(__file__).with_name("known_differences.py")
DOCS_FILE = Path(__file__).parents[2] / "docs" / "conformance.md"


def known_lines(recordings: list[Recording], outcomes: dict[str, list[Outcome]]) -> list[str]:
    """Today's known-differences table, one ``recording index item kinds`` line per entry."""
    listed = known_by_key()
    lines = []
    for recording in recordings:
        for outcome in outcomes[recording.name]:
            if outcome.skipped is not None or outcome.agrees:
                continue
            kinds = ",".join(sorted({k for k, _, _ in outcome.differences}))
            entry = listed.get((recording.name, outcome.index))
            same = entry is not None and ",".join(sorted(entry.kinds)) == kinds
            item = (
                entry.item
                if same and entry is not None
                else suggest_item(recording.flavor, outcome.method, outcome.differences)
            )
            lines.append(f"{recording.name} {outcome.index} {item} {kinds}")
    return lines


def by_item_table(entries: list[Known]) -> str:
    """The docs' table of known differences by issue-35 item (an entry counts for each item)."""
    count: Counter[str] = Counter(i for entry in entries for i in entry.item.split(","))
    order = sorted(count, key=lambda i: (not i.isdigit(), int(i) if i.isdigit() else 0, i))
    rows = ["| item | what differs | interactions |", "|---|---|---|"]
    rows += [f"| {i} | {ITEM_TITLES.get(i, '(new: to be filed)')} | {count[i]} |" for i in order]
    return "\n".join(rows)


def _replace_between(text: str, start: str, end: str, new: str) -> str:
    pattern = re.compile(re.escape(start) + r"\n.*?\n" + re.escape(end), re.S)
    if not pattern.search(text):
        raise ValueError(f"no {start} ... {end} block")
    return pattern.sub(lambda _: f"{start}\n{new}\n{end}", text)


def update_files(recordings: list[Recording], outcomes: dict[str, list[Outcome]]) -> None:
    """Rewrite the known-differences table and the docs' figures and table by item."""
    lines = known_lines(recordings, outcomes)
    source = KNOWN_FILE.read_text(encoding="utf-8")
    KNOWN_FILE.write_text(
        _replace_between(source, '_TABLE = """', '"""', "\n".join(lines)), encoding="utf-8"
    )
    entries = []
    for line in lines:
        name, index, item, kinds = line.split()
        entries.append(Known(name, int(index), tuple(kinds.split(",")), item))
    items = {(e.recording, e.index): e.item for e in entries}
    sentence = "; ".join(f.sentence() for f in figures(recordings, outcomes, items)) + "."
    docs = DOCS_FILE.read_text(encoding="utf-8")
    docs = _replace_between(docs, "<!-- figures -->", "<!-- /figures -->", sentence)
    docs = _replace_between(docs, "<!-- by-item -->", "<!-- /by-item -->", by_item_table(entries))
    DOCS_FILE.write_text(docs, encoding="utf-8")


def main() -> None:
    """Print the figures (and, on request, every difference or a draft of the known list)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detail", action="store_true", help="print every difference")
    parser.add_argument("--draft", action="store_true", help="print KNOWN_DIFFERENCES entries")
    parser.add_argument("--update", action="store_true", help="rewrite the known list and docs")
    args = parser.parse_args()
    recordings = load_all()
    outcomes = replay_all(recordings)
    items = None
    if args.update:
        update_files(recordings, outcomes)
        items = {
            (line.split()[0], int(line.split()[1])): line.split()[2]
            for line in known_lines(recordings, outcomes)
        }
    measured = figures(recordings, outcomes, items)
    print("; ".join(f.sentence() for f in measured))
    for f in measured:
        print(f"  {f.flavor}: not replayable by rule: {f.skipped or 'none'}")
    for recording in recordings:
        for outcome in outcomes[recording.name]:
            if outcome.skipped is not None or outcome.agrees:
                continue
            if args.detail:
                print(f"{recording.name} {outcome.index} {outcome.method} {outcome.path}")
                for kind, want, got in outcome.differences:
                    print(f"    {kind}: recorded {want[:200]} / stub {got[:200]}")
    if args.draft:
        print("\n".join(known_lines(recordings, outcomes)))


if __name__ == "__main__":
    main()
