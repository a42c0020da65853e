"""The flow-control pieces on a fake clock: AIMD limits, the pacing bucket, the success
meter and the latency tracker; and the checkpoint's done positions and file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from azt._core.bulk.checkpoint import DonePositions, FileCheckpoint
from azt._core.bulk.control import Aimd, LatencyTracker, RateLimiter, RateMeter
from azt._errors import ValidationError
from azt_server_stub.realism.throttle import FakeClock


def test_aimd_grows_one_step_per_window_and_stays_under_the_maximum() -> None:
    clock = FakeClock()
    limit = Aimd(4, minimum=1, maximum=6, increase=1, clock=clock)
    for _ in range(4):
        limit.grow()
    assert limit.value == pytest.approx(5.0)
    for _ in range(100):
        limit.grow()
    assert limit.value == 6.0


def test_aimd_cuts_multiplicatively_once_per_hold_and_not_below_the_minimum() -> None:
    clock = FakeClock()
    limit = Aimd(100, minimum=10, maximum=100, increase=5, decrease=0.5, hold=1.0, clock=clock)
    assert limit.cut()
    assert limit.value == 50.0
    assert not limit.cut()  # the same congestion episode
    limit.grow(1000)  # no growth while the cut holds
    assert limit.value == 50.0
    clock.advance(1.0)
    assert limit.cut()
    clock.advance(1.0)
    assert limit.cut()
    clock.advance(1.0)
    assert limit.cut()
    assert limit.value == 10.0
    assert limit.cuts == 4


def test_aimd_cut_starts_from_a_lower_measured_rate() -> None:
    limit = Aimd(20000, minimum=20, maximum=20000, increase=100, decrease=0.8, clock=FakeClock())
    assert limit.cut(to=1000.0)
    assert limit.value == pytest.approx(800.0)


def test_aimd_rate_grows_by_its_increase_per_second_of_traffic() -> None:
    clock = FakeClock()
    rate = Aimd(1000, minimum=1, maximum=5000, increase=100, hold=0.0, clock=clock)
    for _ in range(10):  # one second of traffic at 1,000/s in batches of 100
        rate.grow(100)
    assert rate.value == pytest.approx(1100, rel=0.01)


def test_aimd_returns_quickly_under_the_rate_it_was_cut_from_then_probes_slowly() -> None:
    clock = FakeClock()
    rate = Aimd(5000, minimum=1, maximum=5000, increase=30, approach=0.5, clock=clock)
    assert rate.cut(to=1000.0)  # measured: the service admitted 1,000/s
    assert rate.ceiling == 1000.0
    assert rate.value == pytest.approx(700.0)
    clock.advance(1.0)  # past the hold
    rate.grow(700)  # one window: half the gap (150)
    assert rate.value == pytest.approx(850.0)
    rate.grow(850)  # half the rest (75)
    assert rate.value == pytest.approx(925.0)
    for _ in range(3):  # the gap is small now: steps of `increase` (30)
        rate.grow(rate.value)
    assert rate.value == pytest.approx(1022.5)  # just past the ceiling
    windows = 0
    while rate.value < 2000:  # beyond it: the probe doubles each window
        rate.grow(rate.value)
        windows += 1
    assert windows <= 7


def test_aimd_cut_resets_the_probe() -> None:
    clock = FakeClock()
    rate = Aimd(1000, minimum=1, maximum=10**6, increase=10, approach=0.5, hold=0.0, clock=clock)
    rate.cut(to=100.0)
    for _ in range(30):
        rate.grow(rate.value)
    assert rate.value > 1000
    rate.cut()
    base = rate.value
    rate.grow(rate.value)  # just under the new ceiling: half the gap, not a doubled probe
    assert rate.value == pytest.approx(base + (base / 0.7 - base) * 0.5)


def test_rate_limiter_binding_and_empty() -> None:
    lim = RateLimiter(100, now=0.0)
    assert not lim.binding(0.0)  # full: nothing holds requests back
    lim.take(40, 0.0)
    assert not lim.binding(0.0)
    lim.take(20, 0.0)
    assert lim.binding(0.0)  # 40 of 100 left
    assert not lim.binding(0.2)  # refilled to 60
    lim.empty(1.0)
    assert lim.delay(10, 1.0) == pytest.approx(0.1)


def test_aimd_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="minimum"):
        Aimd(1, minimum=0, maximum=1, increase=1)
    with pytest.raises(ValueError, match="decrease"):
        Aimd(1, minimum=1, maximum=1, increase=1, decrease=1.0)


def test_rate_limiter_paces_like_the_service_bucket() -> None:
    lim = RateLimiter(100, now=0.0)
    assert lim.delay(100, 0.0) == 0.0
    lim.take(100, 0.0)
    assert lim.delay(100, 0.0) == pytest.approx(1.0)
    assert lim.delay(100, 0.5) == pytest.approx(0.5)
    assert lim.delay(500, 1.0) == 0.0  # larger than the capacity: from a full bucket
    lim.take(500, 1.0)  # ... leaving debt
    assert lim.delay(1, 1.0) == pytest.approx(4.01)
    lim.set_rate(1000, 1.0)
    assert lim.delay(1, 1.0) == pytest.approx(0.401)


def test_rate_meter_counts_the_recent_span_only() -> None:
    m = RateMeter(span=1.0, slot=0.1)
    for i in range(20):
        m.add(50, i / 10)  # 500/s for two seconds
    assert m.rate(1.95) == pytest.approx(500)
    assert m.rate(5.0) == 0.0
    assert m.total == 1000
    fresh = RateMeter(span=2.0)
    fresh.add(100, 0.0)
    assert fresh.rate(0.5, since=0.0) == pytest.approx(200)  # not diluted by the span


def test_latency_tracker_notices_a_rise_over_its_baseline() -> None:
    lat = LatencyTracker(factor=3.0, samples=5)
    for _ in range(10):
        lat.add(0.02)
    assert not lat.rising()
    for _ in range(3):
        lat.add(0.05)
    assert not lat.rising()  # 2.5x: within the factor
    for _ in range(5):
        lat.add(0.2)
    assert lat.rising()


def test_done_positions_keep_a_prefix_and_ranges() -> None:
    done = DonePositions()
    for i in [5, 3, 0, 1, 9, 4, 2]:
        done.add(i)
    assert done.state() == {"version": 1, "done_below": 6, "ranges": [[9, 10]]}
    assert [i in done for i in range(11)] == [True] * 6 + [False] * 3 + [True, False]
    assert done.count() == 7
    again = DonePositions.from_state(done.state())
    assert again.state() == done.state()


@pytest.mark.parametrize(
    "state",
    [
        {"version": 2, "done_below": 0, "ranges": []},
        {"version": 1, "done_below": -1, "ranges": []},
        {"version": 1, "done_below": 5, "ranges": [[3, 4]]},
        {"version": 1, "done_below": 0, "ranges": [[4, 4]]},
        {"version": 1, "ranges": []},
    ],
)
def test_a_checkpoint_that_is_not_one_is_refused(state: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        DonePositions.from_state(state)


def test_file_checkpoint_replaces_atomically(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    ckpt = FileCheckpoint(path)
    assert ckpt.load() is None
    ckpt.save({"version": 1, "done_below": 3, "ranges": []})
    ckpt.save({"version": 1, "done_below": 7, "ranges": [[9, 12]]})
    assert ckpt.load() == {"version": 1, "done_below": 7, "ranges": [[9, 12]]}
    assert os.listdir(tmp_path) == ["c.json"]  # no temporary file left behind
    path.write_text("{not json")
    with pytest.raises(ValidationError, match="not JSON"):
        ckpt.load()
    path.write_text(json.dumps([1]))
    with pytest.raises(ValidationError, match="JSON object"):
        ckpt.load()


def test_file_checkpoint_failed_save_keeps_the_previous_one(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    ckpt = FileCheckpoint(path)
    ckpt.save({"version": 1, "done_below": 3, "ranges": []})
    with pytest.raises(TypeError):
        ckpt.save({"version": 1, "done_below": object(), "ranges": []})
    assert ckpt.load() == {"version": 1, "done_below": 3, "ranges": []}
    assert os.listdir(tmp_path) == ["c.json"]
