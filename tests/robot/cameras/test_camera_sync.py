"""Synchronised read: the acceptance scenarios of issue 3, on virtual cameras and a manual clock.

A manual clock makes each scenario exact and independent of machine load: capture threads sleep
on it and the test moves it; frame times come from the cameras' seeded schedules.
"""

import time

import pytest

from robot.cameras.errors import CameraStaleError
from robot.cameras.selection import SelectionStrategy
from robot.cameras.sync import SyncConfig, SyncReader
from robot.cameras.virtual.camera import VirtualCamera
from tests.robot.cameras.camera_test_support import (
    FakeTime,
    MakeCameras,
    ManualClock,
    ScriptedCamera,
    frame,
    run_until,
    virtual_config,
)

T = 1 / 30  # frame period at 30 fps, seconds
MS = 1e-3


def three_cameras(
    make: MakeCameras,
    clock: ManualClock,
    phases_ms: tuple[float, float, float],
    jitters_ms: tuple[float, float, float],
    **a_overrides: object,
) -> list[VirtualCamera]:
    """Cameras a, b and c with the given phases and jitters; `a_overrides` apply to camera a."""
    epoch_s = clock()
    configs = [
        virtual_config(name, phase_s=phase * MS, jitter_s=jitter * MS, seed=i, **(a_overrides if i == 0 else {}))
        for i, (name, phase, jitter) in enumerate(zip(("a", "b", "c"), phases_ms, jitters_ms, strict=True))
    ]
    return make(configs, clock=clock, epoch_s=epoch_s)


def test_nearest_puts_every_frame_within_half_a_period_of_its_tick(
    virtual_cameras: MakeCameras, manual_clock: ManualClock
) -> None:
    cameras = three_cameras(virtual_cameras, manual_clock, phases_ms=(0, 10, 19), jitters_ms=(0, 3, 1))
    epoch_s = cameras[0].schedule.epoch_s
    run_until(manual_clock, cameras, epoch_s + 1.6)
    config = SyncConfig()
    reader = SyncReader(cameras, config, clock=manual_clock)
    for k in range(5, 40):
        synced = reader.select(epoch_s + 2 * MS + k * T)
        for name, age_s in synced.ages_s.items():
            # Nearest: within half the gap around the tick (T/2 plus jitter); keeping a camera's
            # sequence may add at most the continuity margin.
            assert abs(age_s) <= T / 2 + max(3 * MS, config.continuity_margin_s) + 1e-9, (k, name, age_s)
        assert synced.skew_s <= T + 6 * MS  # one period plus jitter, whatever the phases


def test_min_skew_keeps_skew_within_half_a_period_at_every_tick_phase(
    virtual_cameras: MakeCameras, manual_clock: ManualClock
) -> None:
    # Phases 0, 6 and 11 ms with jitter: the cameras' frames fit in half a period, but a tick
    # can fall anywhere relative to them; every tick phase from 0 to T is tried. (With phases
    # spread wider, no choice can: see selection.py and benchmarks/camera_skew.py.)
    cameras = three_cameras(virtual_cameras, manual_clock, phases_ms=(0, 6, 11), jitters_ms=(0, 1.5, 1))
    epoch_s = cameras[0].schedule.epoch_s
    run_until(manual_clock, cameras, epoch_s + 1.6)
    worst_s = {strategy: 0.0 for strategy in SelectionStrategy}
    for tick_phase_ms in range(0, 34, 3):
        for strategy in SelectionStrategy:
            reader = SyncReader(cameras, SyncConfig(strategy=strategy), clock=manual_clock)
            for k in range(5, 25):
                tick_s = epoch_s + tick_phase_ms * MS + k * T
                synced = reader.select(tick_s)
                worst_s[strategy] = max(worst_s[strategy], synced.skew_s)
    assert worst_s[SelectionStrategy.MIN_SKEW] <= T / 2
    # The contrast the benchmark measures: per-camera choices split the group at some tick phases.
    assert worst_s[SelectionStrategy.NEAREST] > T / 2


def test_dropped_and_duplicated_counts_are_exact(virtual_cameras: MakeCameras, manual_clock: ManualClock) -> None:
    # Camera a loses 15 % of its frames (seeded); b is clean; c's phase sits on the half-period
    # boundary relative to the ticks, with jitter, where only sequence continuity avoids flapping.
    cameras = three_cameras(virtual_cameras, manual_clock, phases_ms=(0, 10, 19), jitters_ms=(0, 3, 1), drop_rate=0.15)
    schedule = cameras[0].schedule
    epoch_s = schedule.epoch_s
    first, last = 3, 44
    run_until(manual_clock, cameras, epoch_s + (last + 2) * T)
    lost = [k for k in range(first, last + 1) if schedule.is_dropped(k)]
    assert lost  # the scenario: some frames lost, but not at the ends of the tick range
    assert not schedule.is_dropped(first)
    assert not schedule.is_dropped(last)
    reader = SyncReader(cameras, SyncConfig(), clock=manual_clock)
    for k in range(first, last + 1):
        reader.select(epoch_s + 2 * MS + k * T)
    stats = reader.stats()
    # Each lost frame: its tick takes a neighbour, which one tick also takes: one drop, one duplicate.
    assert stats.dropped == {"a": len(lost), "b": 0, "c": 0}
    assert stats.duplicated == {"a": len(lost), "b": 0, "c": 0}
    assert stats.ticks == last - first + 1


def test_without_continuity_a_boundary_camera_flaps(virtual_cameras: MakeCameras, manual_clock: ManualClock) -> None:
    cameras = three_cameras(virtual_cameras, manual_clock, phases_ms=(0, 10, 19), jitters_ms=(0, 3, 1))
    epoch_s = cameras[0].schedule.epoch_s
    run_until(manual_clock, cameras, epoch_s + 1.6)
    reader = SyncReader(cameras, SyncConfig(continuity_margin_s=0.0), clock=manual_clock)
    for k in range(3, 45):
        reader.select(epoch_s + 2 * MS + k * T)
    stats = reader.stats()
    assert stats.duplicated["c"] > 0
    assert stats.dropped["c"] == stats.duplicated["c"]
    assert stats.duplicated["a"] == stats.duplicated["b"] == 0


def test_frozen_camera_raises_stale_error_within_bound(virtual_cameras: MakeCameras, manual_clock: ManualClock) -> None:
    cameras = three_cameras(virtual_cameras, manual_clock, phases_ms=(0, 10, 19), jitters_ms=(0, 3, 1))
    bound_s = cameras[1].config.capture.max_frame_age_s
    epoch_s = cameras[0].schedule.epoch_s
    reader = SyncReader(cameras, SyncConfig(), clock=manual_clock)
    frozen_at_s = raised_at_s = None
    error = None
    for k in range(3, 60):
        tick_s = epoch_s + k * T
        manual_clock.advance_to(tick_s, sleepers=len(cameras))
        if k == 10:
            cameras[1].freeze()
            frozen_at_s = manual_clock()
        try:
            reader.select(tick_s)
        except CameraStaleError as stale:
            raised_at_s, error = manual_clock(), stale
            break
    assert error is not None
    assert frozen_at_s is not None
    assert raised_at_s is not None
    assert error.camera == "b"
    assert "'b'" in str(error)
    assert "so101-doctor" in str(error)
    # Not before the bound (no false alarm), and at the first tick after it.
    assert bound_s <= raised_at_s - frozen_at_s + T
    assert raised_at_s - frozen_at_s <= bound_s + 2 * T


def _waiting_reader(capture_times_s: list[float], delivery_s: float, now_s: float) -> tuple[SyncReader, FakeTime]:
    clock = FakeTime(now_s)
    frames = [frame("a", t, k) for k, t in enumerate(capture_times_s)]
    camera = ScriptedCamera("a", frames, clock, max_frame_age_s=10.0, delivery_s=delivery_s)
    return SyncReader([camera], SyncConfig(delivery_margin_s=0.01), clock=clock), clock


def test_read_waits_for_a_nearer_frame_after_the_tick() -> None:
    reader, clock = _waiting_reader([0.980, 1.013], delivery_s=0.002, now_s=1.0)  # tick at 1.0
    synced = reader.read(1.0)
    assert synced.frames["a"].sequence == 1  # 13 ms after beats 20 ms before
    assert synced.wait_s == pytest.approx(0.015)  # until it arrived (captured + 2 ms)
    assert clock() == pytest.approx(1.015)


def test_read_stops_waiting_once_no_frame_could_be_nearer() -> None:
    reader, _ = _waiting_reader([0.995, 1.028], delivery_s=0.002, now_s=1.0)
    synced = reader.read(1.0)
    assert synced.frames["a"].sequence == 0  # 5 ms before; 28 ms after is farther
    assert synced.wait_s == pytest.approx(0.015)  # 5 ms mirrored past the tick + 10 ms margin


def test_read_rethinks_when_a_frame_in_flight_lands() -> None:
    # At the tick the newest buffered frame is 36 ms old; the one captured 3 ms before the tick
    # lands 2 ms after it, and then waiting for the frame 30 ms after the tick is pointless.
    reader, _ = _waiting_reader([0.964, 0.997, 1.030], delivery_s=0.005, now_s=1.0)
    synced = reader.read(1.0)
    assert synced.frames["a"].sequence == 1
    assert synced.wait_s == pytest.approx(0.013)  # 3 ms mirrored + 10 ms margin


def test_read_waits_at_most_max_wait() -> None:
    reader, _ = _waiting_reader([0.900], delivery_s=0.0, now_s=1.0)  # nothing after the tick comes
    synced = reader.read(1.0)
    assert synced.frames["a"].sequence == 0
    assert synced.wait_s == pytest.approx(SyncConfig().max_wait_s)


def test_latest_never_waits() -> None:
    clock = FakeTime(1.0)
    camera = ScriptedCamera("a", [frame("a", 0.980, 0), frame("a", 1.013, 1)], clock, max_frame_age_s=10.0)
    synced = SyncReader([camera], SyncConfig(strategy=SelectionStrategy.LATEST), clock=clock).read(1.0)
    assert (synced.frames["a"].sequence, synced.wait_s, clock()) == (0, 0.0, 1.0)


def test_read_on_real_threads_returns_every_camera(virtual_cameras: MakeCameras) -> None:
    # Real time: only what holds on any machine load (the exact waits are tested above).
    cameras = virtual_cameras([virtual_config("a"), virtual_config("b", phase_s=0.015)])
    reader = SyncReader(cameras, SyncConfig(max_wait_s=0.05))
    for _ in range(10):
        synced = reader.read(time.monotonic())
        assert set(synced.frames) == {"a", "b"}
        assert synced.wait_s >= 0.0  # how long is the machine's; the cap is tested on a manual clock above
    assert reader.stats().ticks == 10


@pytest.mark.parametrize(
    ("field", "value"),
    [("strategy", "best"), ("max_wait_s", -1.0), ("delivery_margin_s", 2.0), ("stats_window", 0)],
)
def test_sync_config_names_the_bad_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"{field}={value!r}"):
        SyncConfig(**{field: value})  # type: ignore[arg-type]
