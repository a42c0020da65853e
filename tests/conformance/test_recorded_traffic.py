"""The stub against recordings of the real Table service and Cosmos DB Table API.

One test per recorded interaction: it agrees with the real answer on every aspect a client
reads (see :mod:`tests.conformance.compare`), or it is listed in ``KNOWN_DIFFERENCES`` and is
a strict xfail (fixing the stub makes it fail until the entry goes), or it is skipped by a
rule of :func:`tests.conformance.cassettes.not_replayable`. Each recording is replayed once,
in order, against a fresh in-process stub; its interactions' tests read the outcomes.

``test_figures_match_the_docs`` checks the per-flavour figures docs/conformance.md states.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from .cassettes import Recording, load_all
from .figures import figures
from .figures import main as figures_main
from .known_differences import known_by_key
from .replay import Outcome, replay_recording

RECORDINGS = load_all()
KNOWN = known_by_key()
DOCS = Path(__file__).parents[2] / "docs" / "conformance.md"
_OUTCOMES: dict[str, list[Outcome]] = {}


class KnownDifference(Exception):
    """Raised for an interaction that differs exactly as KNOWN_DIFFERENCES says (the xfail)."""


def outcomes(recording: Recording) -> list[Outcome]:
    """The recording's replayed outcomes (replayed on first use, then kept)."""
    if recording.name not in _OUTCOMES:
        _OUTCOMES[recording.name] = asyncio.run(replay_recording(recording))
    return _OUTCOMES[recording.name]


def _cases() -> list[object]:
    cases: list[object] = []
    for recording in RECORDINGS:
        for interaction in recording.interactions:
            key = (recording.name, interaction.index)
            marks = []
            if key in KNOWN:
                known = KNOWN[key]
                reason = f"issue 35 item {known.item}: {', '.join(known.kinds)}"
                marks.append(pytest.mark.xfail(strict=True, raises=KnownDifference, reason=reason))
            cases.append(
                pytest.param(
                    recording,
                    interaction.index,
                    id=f"{recording.name}-{interaction.index}",
                    marks=marks,
                )
            )
    return cases


def _describe(outcome: Outcome) -> str:
    lines = [f"{outcome.method} {outcome.path} (interaction {outcome.index})"]
    lines += [f"  {kind}: recorded {want} / stub {got}" for kind, want, got in outcome.differences]
    return "\n".join(lines)


@pytest.mark.parametrize(("recording", "index"), _cases())
def test_interaction_agrees(recording: Recording, index: int) -> None:
    outcome = outcomes(recording)[index]
    if outcome.skipped is not None:
        pytest.skip(f"not replayable: {outcome.skipped}")
    known = KNOWN.get((recording.name, index))
    kinds = tuple(sorted({kind for kind, _, _ in outcome.differences}))
    if known is not None and outcome.differences and kinds == tuple(sorted(known.kinds)):
        raise KnownDifference(_describe(outcome))
    if known is not None and outcome.differences:
        pytest.fail(
            "differs otherwise than KNOWN_DIFFERENCES lists "
            f"({', '.join(known.kinds)}); update the entry:\n{_describe(outcome)}"
        )
    assert not outcome.differences, _describe(outcome)


def test_known_differences_name_real_interactions() -> None:
    indexes = {r.name: len(r.interactions) for r in RECORDINGS}
    for recording, index in KNOWN:
        assert recording in indexes, f"KNOWN_DIFFERENCES names no recording {recording}"
        assert 0 <= index < indexes[recording], f"{recording} has no interaction {index}"


def test_every_flavour_has_recordings() -> None:
    assert {r.flavor for r in RECORDINGS} == {"storage", "cosmos"}


def test_figures_match_the_docs() -> None:
    text = DOCS.read_text(encoding="utf-8")
    measured = figures(RECORDINGS, {r.name: outcomes(r) for r in RECORDINGS})
    for figure in measured:
        stated = re.search(
            rf"{figure.flavor.capitalize()}: (\d+) of (\d+) interactions agree, (\d+) differ on "
            r"purpose \(newer evidence\), (\d+) differ",
            text,
        )
        assert stated is not None, f"docs/conformance.md states no figure for {figure.flavor}"
        numbers = tuple(int(n) for n in stated.groups())
        assert numbers == (figure.agree, figure.replayed, figure.newer, figure.differ), (
            f"docs/conformance.md says {stated.group(0)!r}; measured {figure.sentence()!r}"
        )
        assert figure.agree + figure.newer + figure.differ == figure.replayed


def test_figures_command_prints_the_sentence(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.argv", ["figures", "--draft"])
    figures_main()
    out = capsys.readouterr().out
    assert out.startswith("Storage: ")
    assert "; Cosmos: " in out.splitlines()[0]
    listed = {(r, str(i)) for r, i in KNOWN}
    drafted = {tuple(line.split()[:2]) for line in out.splitlines() if line.count(" ") == 3}
    assert drafted == listed, "the --draft lines are the KNOWN_DIFFERENCES table of today's stub"


def test_known_differences_by_item_match_the_docs() -> None:
    stated = {
        m.group(1): int(m.group(2))
        for m in re.finditer(
            r"^\| (\w+) \| .* \| (\d+) \|$", DOCS.read_text(encoding="utf-8"), re.M
        )
    }
    counted: dict[str, int] = {}
    for entry in KNOWN.values():
        for item in entry.item.split(","):
            counted[item] = counted.get(item, 0) + 1
    assert stated == counted, "docs/conformance.md's table of known differences by item is stale"
