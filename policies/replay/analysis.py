"""What a replay found, episode by episode: plain numbers and lists with frame numbers and joints.

    findings = analyse(run, episode_run, thresholds)     # -> EpisodeFindings (JSON-ready dataclasses)

- safety: every intervention of the safety layer (limit, step, velocity, non-finite) at its frame
  and joint; limit hits are the `limit` ones;
- motion: velocity, acceleration and jerk of what the source asked for (backward differences at
  the replay's fps, assigned to the frame they end at), runs above a threshold as spikes;
- grippers: each close and open (a monotonic run of the command of at least `gripper_event_percent`);
- timing: deadline misses (real-time pace: a tick later than half a period, or skipped deadlines)
  and the replay speed as a multiple of real time;
- tracking (virtual and real arms): the state read one tick after a goal was sent against that
  goal, and against the state recorded at that frame (ticks whose read failed, and so reused the
  last state, are left out);
- policy runs: per-joint error of the policy's actions against the recorded ones (starved ticks
  excluded), a chunk-seam discontinuity measure, and inference latency.
"""

from dataclasses import dataclass

import numpy as np

from policies.replay.log import FrameEvent
from policies.replay.plan import EpisodeRun, ReplayRun, Target
from robot.config_checks import reject_non_finite
from robot.joints import BIMANUAL_KEYS, GRIPPER

GRIPPER_COLUMNS = np.array([key.endswith(f"{GRIPPER}.pos") for key in BIMANUAL_KEYS])
BODY_COLUMNS = ~GRIPPER_COLUMNS
QUANTITIES = ("velocity", "acceleration", "jerk")


@dataclass(frozen=True)
class Thresholds:
    """What the report calls a spike (body joints in degrees, grippers in percent of their range)."""

    velocity_deg_s: float = 180.0  # an STS3215 turns ~265 deg/s unloaded; demonstrations rarely pass 120
    acceleration_deg_s2: float = 6000.0  # well above encoder quantisation noise at 30 fps (~250)
    jerk_deg_s3: float = 150000.0  # idem (noise ~12000); one 10-degree outlier frame gives ~800000
    gripper_velocity_percent_s: float = 600.0  # a hand snapping a leader's gripper shut reaches ~300
    gripper_acceleration_percent_s2: float = 20000.0
    gripper_jerk_percent_s3: float = 600000.0
    gripper_event_percent: float = 10.0  # a gripper close/open is a monotonic move of at least this
    late_fraction: float = 0.5  # a tick later than this fraction of a period is a deadline miss

    def __post_init__(self) -> None:
        # so101-replay's --report.thresholds.*: a NaN threshold would call nothing a spike.
        reject_non_finite(self, "report.thresholds")

    def limit(self, quantity: str, gripper: bool) -> float:
        """The threshold of one quantity for a body joint or a gripper."""
        if gripper:
            return {
                "velocity": self.gripper_velocity_percent_s,
                "acceleration": self.gripper_acceleration_percent_s2,
                "jerk": self.gripper_jerk_percent_s3,
            }[quantity]
        return {"velocity": self.velocity_deg_s, "acceleration": self.acceleration_deg_s2, "jerk": self.jerk_deg_s3}[
            quantity
        ]


@dataclass(frozen=True)
class Spike:
    """A run of frames where one joint's motion exceeds a threshold."""

    joint: str
    quantity: str  # velocity, acceleration or jerk
    first_frame: int
    last_frame: int
    peak_frame: int
    peak: float  # signed value at the peak (deg/s^k or percent/s^k)
    threshold: float


@dataclass(frozen=True)
class GripperEvent:
    """A gripper closing or opening."""

    joint: str  # e.g. left_gripper.pos
    kind: str  # close or open
    first_frame: int
    last_frame: int
    from_percent: float
    to_percent: float


@dataclass(frozen=True)
class DeadlineMiss:
    """A tick that started late."""

    frame: int
    late_ms: float
    skipped: int  # deadlines skipped before it


@dataclass(frozen=True)
class JointErrors:
    """Per-joint error statistics (degrees, grippers in percent)."""

    mean_abs: dict[str, float]
    p95_abs: dict[str, float]
    max_abs: dict[str, float]
    worst_joint: str
    worst_frame: int  # the frame of the largest error


@dataclass(frozen=True)
class PolicyFindings:
    """How a policy's actions compare with the recorded ones."""

    ticks: int
    starved_ticks: int
    error: JointErrors | None  # policy action vs recorded action (starved ticks left out)
    rmse: dict[str, float]
    body_mean_abs_deg: float | None  # mean over body joints and frames
    seams: int  # chunk changes
    seam_jump_mean_deg: float | None  # largest body-joint change across a seam, mean over seams
    seam_jump_max_deg: float | None
    within_chunk_step_mean_deg: float | None  # the same measure between consecutive actions of one chunk
    recorded_step_at_seams_mean_deg: float | None  # the recording's own change at those frames
    seam_ratio: float | None  # seam_jump_mean / within_chunk_step_mean (1: seams are invisible)
    chunks: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    latency_max_ms: float | None
    call_p50_ms: float  # time the control thread spent in next_action
    call_max_ms: float
    blocked_s: float  # engine: total time the loop waited on inference


@dataclass(frozen=True)
class EpisodeFindings:
    """Everything the report says about one episode."""

    episode: int
    task: str
    frames_recorded: int
    frames_replayed: int
    stopped_by: str
    ease_in_ticks: int
    ease_in_max_step_deg: float  # its largest per-tick goal change (the transition ramp bounds it)
    safety_events: tuple[FrameEvent, ...]
    limit_hits: tuple[FrameEvent, ...]
    spikes: tuple[Spike, ...]
    gripper_events: tuple[GripperEvent, ...]
    deadline_misses: tuple[DeadlineMiss, ...] | None  # None at fast pace (no deadlines to miss)
    achieved_hz: float  # ticks per second of the loop's own clock
    replay_speed: float  # recorded duration / wall time (1.0 = real time)
    sent_vs_recorded_max_abs: float | None  # action replays: max |sent - recorded| over joints and frames
    commanded_vs_recorded_max_abs: float | None  # dry arms: what the arms were commanded vs recorded
    tracking: JointErrors | None  # virtual/real arms: state one tick later vs the goal sent
    reproduction: JointErrors | None  # virtual/real arms: state vs the state recorded at that frame
    policy: PolicyFindings | None


def _errors(diff: np.ndarray, frames: np.ndarray) -> JointErrors | None:
    """Statistics of (n, 12) signed differences, NaN where not applicable."""
    valid = ~np.all(np.isnan(diff), axis=0)
    if diff.size == 0 or not valid.any():
        return None
    magnitude = np.abs(diff)
    keys = [k for k, ok in zip(BIMANUAL_KEYS, valid, strict=True) if ok]
    cols = np.flatnonzero(valid)
    means = {k: float(np.nanmean(magnitude[:, c])) for k, c in zip(keys, cols, strict=True)}
    p95 = {k: float(np.nanpercentile(magnitude[:, c], 95)) for k, c in zip(keys, cols, strict=True)}
    maxima = {k: float(np.nanmax(magnitude[:, c])) for k, c in zip(keys, cols, strict=True)}
    worst = max(maxima, key=lambda k: maxima[k])
    row = int(np.nanargmax(magnitude[:, BIMANUAL_KEYS.index(worst)]))
    return JointErrors(means, p95, maxima, worst, int(frames[row]))


def motion_spikes(values: np.ndarray, frames: np.ndarray, fps: float, thresholds: Thresholds) -> list[Spike]:
    """Runs of frames where a joint's velocity, acceleration or jerk exceeds its threshold."""
    spikes: list[Spike] = []
    for order, quantity in enumerate(QUANTITIES, start=1):
        if len(values) <= order:
            break
        derivative = np.diff(values, n=order, axis=0) * fps**order  # row i ends at frame i + order
        for column, key in enumerate(BIMANUAL_KEYS):
            limit = thresholds.limit(quantity, bool(GRIPPER_COLUMNS[column]))
            series = derivative[:, column]
            over = np.abs(np.nan_to_num(series)) > limit
            for first, last in _runs(over):
                peak = first + int(np.argmax(np.abs(series[first : last + 1])))
                spikes.append(
                    Spike(
                        key,
                        quantity,
                        int(frames[first + order]),
                        int(frames[last + order]),
                        int(frames[peak + order]),
                        float(series[peak]),
                        limit,
                    )
                )
    return sorted(spikes, key=lambda s: (s.first_frame, s.joint, QUANTITIES.index(s.quantity)))


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) index of each run of True."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), (np.flatnonzero(edges == -1) - 1).tolist(), strict=True))


def gripper_events(values: np.ndarray, frames: np.ndarray, min_change: float, band: float = 1.0) -> list[GripperEvent]:
    """Each monotonic move of a gripper command of at least `min_change` percent (a close or an open).

    The command is first passed through a backlash of `band` percent (it follows only moves larger
    than that), so encoder-step jitter neither splits one close into several nor counts as a move.
    """
    events: list[GripperEvent] = []
    for column in np.flatnonzero(GRIPPER_COLUMNS):
        series = values[:, column]
        if len(series) < 2 or np.isnan(series).any():
            continue
        follow = np.empty_like(series)
        follow[0] = series[0]
        for i in range(1, len(series)):
            gap = series[i] - follow[i - 1]
            follow[i] = follow[i - 1] if abs(gap) <= band else series[i] - np.sign(gap) * band
        sign = np.sign(np.diff(follow))  # step i: from frame i to i + 1
        for direction in (-1, 1):
            for first, last in _runs(sign == direction):
                start, end = first, last + 1
                if abs(follow[end] - follow[start]) >= min_change:
                    events.append(
                        GripperEvent(
                            BIMANUAL_KEYS[column],
                            "open" if direction > 0 else "close",
                            int(frames[start]),
                            int(frames[end]),
                            float(series[start]),
                            float(series[end]),
                        )
                    )
    return sorted(events, key=lambda e: (e.first_frame, e.joint))


def deadline_misses(run: EpisodeRun, fps: float, late_fraction: float) -> list[DeadlineMiss]:
    """Ticks that started more than `late_fraction` of a period late, or after skipped deadlines."""
    trace = run.trace
    late = (trace.late_s > late_fraction / fps) | (trace.skipped > 0)
    return [
        DeadlineMiss(int(trace.frames[i]), float(trace.late_s[i] * 1000), int(trace.skipped[i]))
        for i in np.flatnonzero(late)
    ]


def _policy(run: EpisodeRun) -> PolicyFindings | None:
    facts = run.trace.facts
    if not facts or all(f is None for f in facts):
        return None
    trace = run.trace
    starved = np.array([f is None or f.starved for f in facts])
    recorded = run.recorded_actions[trace.frames]
    diff = np.where(starved[:, None], np.nan, trace.requested - recorded)
    error = _errors(diff, trace.frames)
    rmse = {
        k: float(np.sqrt(np.nanmean(diff[:, i] ** 2)))
        for i, k in enumerate(BIMANUAL_KEYS)
        if not np.all(np.isnan(diff[:, i]))
    }
    body = np.abs(diff[:, BODY_COLUMNS])
    chunk = np.array([-1 if f is None or f.chunk_id is None else f.chunk_id for f in facts])
    step = np.nanmax(np.abs(np.diff(trace.requested[:, BODY_COLUMNS], axis=0)), axis=1, initial=0.0)
    recorded_step = np.nanmax(np.abs(np.diff(recorded[:, BODY_COLUMNS], axis=0)), axis=1, initial=0.0)
    both = (chunk[1:] >= 0) & (chunk[:-1] >= 0)
    seam = both & (chunk[1:] != chunk[:-1])
    within = both & (chunk[1:] == chunk[:-1])
    latencies = {f.chunk_id: f.chunk_latency_s for f in facts if f is not None and f.chunk_id is not None}
    latency_ms = np.array([v * 1000 for v in latencies.values() if v is not None])
    calls_ms = np.array([f.call_s * 1000 for f in facts if f is not None])
    seam_mean = float(step[seam].mean()) if seam.any() else None
    within_mean = float(step[within].mean()) if within.any() else None
    return PolicyFindings(
        ticks=len(facts),
        starved_ticks=int(starved.sum()),
        error=error,
        rmse=rmse,
        body_mean_abs_deg=float(np.nanmean(body)) if not np.all(np.isnan(body)) else None,
        seams=int(seam.sum()),
        seam_jump_mean_deg=seam_mean,
        seam_jump_max_deg=float(step[seam].max()) if seam.any() else None,
        within_chunk_step_mean_deg=within_mean,
        recorded_step_at_seams_mean_deg=float(recorded_step[seam].mean()) if seam.any() else None,
        seam_ratio=seam_mean / within_mean if seam_mean is not None and within_mean else None,
        chunks=len(latencies),
        latency_p50_ms=float(np.percentile(latency_ms, 50)) if latency_ms.size else None,
        latency_p95_ms=float(np.percentile(latency_ms, 95)) if latency_ms.size else None,
        latency_max_ms=float(latency_ms.max()) if latency_ms.size else None,
        call_p50_ms=float(np.percentile(calls_ms, 50)) if calls_ms.size else 0.0,
        call_max_ms=float(calls_ms.max()) if calls_ms.size else 0.0,
        blocked_s=run.engine.blocked_s if run.engine is not None else 0.0,
    )


def analyse(replay: ReplayRun, run: EpisodeRun, thresholds: Thresholds) -> EpisodeFindings:
    """The findings of one episode's replay."""
    trace = run.trace
    fps = replay.plan.fit.fps
    frames = trace.frames
    recorded = run.recorded_actions[frames] if len(frames) else run.recorded_actions[:0]
    realtime = replay.plan.pace == "realtime"
    arms_move = replay.plan.target is not Target.DRY
    tracking = reproduction = None
    if arms_move and len(frames) > 1:
        # A stale observation (the tick's bus read failed and the last one was reused) is not the
        # state one tick later: it would charge the arms with the read's failure.
        fresh = ~trace.stale[:, None]
        tracking = _errors(np.where(fresh[1:], trace.observed[1:] - trace.sent[:-1], np.nan), frames[:-1])
        if run.recorded_states is not None:
            reproduction = _errors(np.where(fresh, trace.observed - run.recorded_states[frames], np.nan), frames)
    commanded = None
    if run.arm_commands is not None and len(frames):
        goals = np.concatenate(
            [run.arm_commands[f"{side}_follower"][: len(frames)] for side in ("left", "right")], axis=1
        )
        commanded = float(np.nanmax(np.abs(goals - recorded))) if goals.shape == recorded.shape else None
    duration = len(frames) / replay.plan.fit.dataset_fps
    is_policy = any(f is not None for f in trace.facts)
    return EpisodeFindings(
        episode=run.episode,
        task=run.task,
        frames_recorded=len(run.recorded_actions),
        frames_replayed=len(frames),
        stopped_by=run.stopped_by,
        ease_in_ticks=run.ease_in_ticks,
        ease_in_max_step_deg=run.ease_in_max_step_deg,
        safety_events=trace.events,
        limit_hits=tuple(e for e in trace.events if e.kind == "limit"),
        spikes=tuple(motion_spikes(trace.requested, frames, fps, thresholds)),
        gripper_events=tuple(gripper_events(trace.requested, frames, thresholds.gripper_event_percent)),
        deadline_misses=tuple(deadline_misses(run, fps, thresholds.late_fraction)) if realtime else None,
        achieved_hz=run.loop.achieved_hz,
        replay_speed=duration / run.wall_s if run.wall_s > 0 else 0.0,
        sent_vs_recorded_max_abs=float(np.nanmax(np.abs(trace.sent - recorded)))
        if len(frames) and not is_policy
        else None,
        commanded_vs_recorded_max_abs=None if is_policy else commanded,
        tracking=tracking,
        reproduction=reproduction,
        policy=_policy(run),
    )
