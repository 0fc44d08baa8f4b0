"""Frame selection and per-tick accounting on hand-made frames (pure, no threads)."""

import itertools

import numpy as np
import pytest

from robot.cameras.errors import CameraConfigError, CameraStaleError
from robot.cameras.selection import nearest_frame, select_latest, select_min_skew, select_nearest
from robot.cameras.sync import SyncConfig, SyncReader
from robot.cameras.virtual.schedule import FrameSchedule
from tests.robot.cameras.camera_test_support import ScriptedCamera, frame

T = 1 / 30
MS = 1e-3


def test_nearest_frame_picks_the_closest_and_the_earlier_on_a_tie() -> None:
    frames = [frame("a", t, i) for i, t in enumerate((0.0, 0.1, 0.2))]
    assert nearest_frame(frames, 0.06).sequence == 1
    assert nearest_frame(frames, 0.04).sequence == 0
    assert nearest_frame(frames, 0.05).sequence == 0  # tie
    assert nearest_frame(frames, -1.0).sequence == 0
    assert nearest_frame(frames, 9.0).sequence == 2


def test_latest_ignores_the_tick() -> None:
    rings = {"a": [frame("a", 0.0, 0), frame("a", 0.1, 1)]}
    assert select_latest(rings, -5.0)["a"].sequence == 1


def test_nearest_keeps_the_sequence_while_within_the_margin() -> None:
    ring = [frame("a", k * T + 17 * MS, k) for k in range(5)]  # 17 ms after each tick: a boundary
    tick_s = 2 * T  # frame 1 is 16.3 ms before, frame 2 is 17 ms after
    assert select_nearest({"a": ring}, tick_s)["a"].sequence == 1
    assert select_nearest({"a": ring}, tick_s, {"a": 1}, {"a": T / 2 + 4 * MS})["a"].sequence == 1
    # Frame 1 went with the previous tick: frame 2, 17 ms away, continues the sequence ...
    assert select_nearest({"a": ring}, tick_s, {"a": 2}, {"a": T / 2 + 4 * MS})["a"].sequence == 2
    # ... but not beyond the margin.
    assert select_nearest({"a": ring}, tick_s, {"a": 2}, {"a": T / 2})["a"].sequence == 1


def _rings(phases_ms: tuple[float, ...], jitter_ms: float, seed: int) -> dict[str, list]:
    rings = {}
    for i, phase in enumerate(phases_ms):
        schedule = FrameSchedule(30.0, 0.0, phase * MS, jitter_ms * MS, seed=seed * 10 + i)
        rings[f"c{i}"] = [frame(f"c{i}", schedule.capture_time_s(k), k) for k in range(12)]
    return rings


@pytest.mark.parametrize("seed", range(25))
def test_min_skew_spread_is_at_most_a_period_minus_the_largest_phase_gap(seed: int) -> None:
    rng = np.random.default_rng(seed)
    phases_ms = tuple(float(p) for p in rng.uniform(0, T / MS, 3))
    jitter_ms = 2.0
    rings = _rings(phases_ms, jitter_ms, seed)
    ordered = sorted(phases_ms)
    gaps = [b - a for a, b in itertools.pairwise(ordered)] + [T / MS - ordered[-1] + ordered[0]]
    bound_s = (T / MS - max(gaps) + 2 * jitter_ms) * MS
    for tick_ms in np.arange(3 * T / MS, 8 * T / MS, 2.5):
        chosen = select_min_skew(rings, tick_ms * MS, window_s=T)
        times = [f.capture_time_s for f in chosen.values()]
        assert max(times) - min(times) <= bound_s + 1e-9
        assert bound_s <= 2 * T / 3 + 2 * jitter_ms * MS + 1e-9  # three cameras: never worse than 2T/3


def test_reader_counts_duplicates_and_drops_per_tick() -> None:
    now = [10.0]
    frames = [frame("a", t, s) for t, s in ((0.0, 0), (T, 1), (3 * T, 3), (4 * T, 4))]  # slot 2 lost
    camera = ScriptedCamera("a", frames, lambda: now[0], max_frame_age_s=100.0)
    reader = SyncReader([camera], SyncConfig(continuity_margin_s=0.0), clock=lambda: now[0])
    picks = [reader.select(k * T + 1 * MS) for k in range(5)]
    assert [p.frames["a"].sequence for p in picks] == [0, 1, 3, 3, 4]
    assert [p.dropped["a"] for p in picks] == [0, 0, 1, 0, 0]
    assert [bool(p.duplicated) for p in picks] == [False, False, False, True, False]
    stats = reader.stats()
    assert (stats.ticks, stats.dropped, stats.duplicated) == (5, {"a": 1}, {"a": 1})
    assert stats.skew_max_s == 0.0  # one camera
    assert stats.age_max_s == pytest.approx(T - 1 * MS)
    reader.reset()
    assert reader.stats().ticks == 0
    assert reader.select(T).dropped["a"] == 0  # no previous tick after a reset


def test_reader_reports_skew_and_ages() -> None:
    now = [1.0]
    a = ScriptedCamera("a", [frame("a", 0.100, 0)], lambda: now[0], max_frame_age_s=10)
    b = ScriptedCamera("b", [frame("b", 0.112, 0)], lambda: now[0], max_frame_age_s=10)
    synced = SyncReader([a, b], clock=lambda: now[0]).select(0.105)
    assert synced.skew_s == pytest.approx(0.012)
    assert synced.ages_s["a"] == pytest.approx(0.005)
    assert synced.ages_s["b"] == pytest.approx(-0.007)


def test_reader_raises_stale_for_an_old_newest_frame() -> None:
    now = [1.0]
    camera = ScriptedCamera("a", [frame("a", 0.5, 0)], lambda: now[0], max_frame_age_s=0.25)
    with pytest.raises(CameraStaleError, match="'a'"):
        SyncReader([camera], clock=lambda: now[0]).select(1.0)


def test_reader_needs_unique_camera_names() -> None:
    now = [1.0]
    cameras = [ScriptedCamera("a", [], lambda: now[0]), ScriptedCamera("a", [], lambda: now[0])]
    with pytest.raises(CameraConfigError, match="unique"):
        SyncReader(cameras)
    with pytest.raises(CameraConfigError, match="unique"):
        SyncReader([])


def test_a_camera_faster_than_the_loop_is_not_counted_as_dropping() -> None:
    now = [10.0]
    period_s = T / 2  # 60 fps
    frames = [frame("a", k * period_s, k) for k in range(20) if k != 9]  # one real loss
    camera = ScriptedCamera("a", frames, lambda: now[0], fps=60.0, max_frame_age_s=100.0)
    reader = SyncReader([camera], clock=lambda: now[0])
    picks = [reader.select(k * T + 1 * MS) for k in range(8)]
    assert [p.frames["a"].sequence for p in picks] == [0, 2, 4, 6, 8, 10, 12, 14]
    assert reader.stats().dropped == {"a": 0}
    assert reader.stats().duplicated == {"a": 0}
    frames_with_gap = [frame("a", k * period_s, k) for k in range(20) if k not in (4, 5)]
    reader = SyncReader([ScriptedCamera("a", frames_with_gap, lambda: now[0], fps=60.0, max_frame_age_s=100.0)])
    picks = [reader.select(k * T + 1 * MS) for k in range(6)]
    assert [p.frames["a"].sequence for p in picks] == [0, 2, 3, 6, 8, 10]
    assert reader.stats().dropped == {"a": 1}  # 3 -> 6 skips 4 and 5, one more than expected
