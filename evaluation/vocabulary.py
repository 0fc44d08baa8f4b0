"""Closed vocabularies shared by rubrics, frame selection, the prompt, the store, the review page and reports.

The evaluation's own words only. Camera views are the rig's camera roles (`CAMERA_ROLES`), and sides
and joint names are the rig's too: all three live in robot/joints.py; the dataset's feature keys
(a view's video is `observation.images.<view>`) live in teleop/dataset/vocabulary.py. Phases name the
moments of an episode that frame selection can find from the recorded state and action. Route codes
say why a score goes to a person; score sources say who gave a score, and `source_label` is how every
page, table and plot names them, so a heuristic score is never shown as a judge's.
"""

from enum import StrEnum

from robot.joints import Side

SCORE_LEVELS: tuple[float, ...] = (0.0, 0.5, 1.0)

# Why a reviewer changed (or confirmed) a score. "confirmed" records a human label equal to the judge's.
REASON_CODES: tuple[str, ...] = (
    "judge_missed_evidence",  # the evidence is in the frames/videos, the judge did not see or cite it
    "view_ambiguous",  # the judge's views cannot show it (e.g. R3 displacement from overhead); another view does
    "rubric_misapplied",  # the judge saw the right things but scored against the wrong anchor
    "heuristic_disagrees",  # the motion heuristic was right and the judge wrong (or a heuristic-only score fixed)
    "judge_hallucination",  # the judge cited something that did not happen
    "confirmed",  # the reviewer checked the videos and agrees with the score shown
    "other",  # anything else: say what in the note
)
# The reason of a label the operator typed at the end of a rollout (so101-deploy), imported by
# evaluation/live_labels.py with the operator as reviewer; never offered to, or accepted from, a reviewer.
LIVE_REASON = "live"
SOURCES: tuple[str, ...] = ("override", "judge", "heuristic", "none")  # where an effective score comes from


class Phase(StrEnum):
    """A moment of an episode that a keyframe can stand for."""

    START = "start"  # the first frame
    GRASP = "grasp"  # a gripper closes
    LIFT = "lift"  # largest arm excursion while a gripper is closed after a grasp
    RELEASE = "release"  # a gripper opens after a grasp
    MOTION_ONSET = "motion_onset"  # the arms start moving
    MOTION_END = "motion_end"  # the arms stop moving for good
    PUSH = "push"  # sustained motion after the last release (pushing the cloth aside)
    FINAL = "final"  # the last frame
    FILL = "fill"  # uniform fill between events


class HeuristicSignal(StrEnum):
    """What the motion heuristic can say about a criterion (it never sees the cloth)."""

    GRASP_WITH_MOTION = "grasp_with_motion"  # a gripper closed and its arm moved while closed
    GRASP_RELEASE_CYCLE = "grasp_release_cycle"  # a gripper closed, then opened again
    MOTION_AFTER_RELEASE = "motion_after_release"  # an arm moved after the last release
    NONE = "none"  # no motion signal for this criterion


class RouteCode(StrEnum):
    """Why a criterion or episode goes to human review (stored in `route_reasons_json`)."""

    LOW_AGREEMENT = "low_agreement"  # fewer judge samples than routing.min_agreement agree with the label
    JUDGE_UNCERTAIN = "judge_uncertain"  # a judge sample marked the evidence as insufficient
    LOW_CONFIDENCE = "low_confidence"  # most judge samples report low confidence
    MISSING_SAMPLES = "missing_samples"  # some judge samples failed or were invalid
    HEURISTIC_CONFLICT = "heuristic_conflict"  # the judge's label and the motion evidence disagree
    DID_NOTHING = "did_nothing"  # no arm moved, yet the judge gave a score above 0
    HEURISTIC_BLIND = "heuristic_blind"  # the heuristic cannot see what the criterion asks (the cloth); unscored
    IDLE_ARM = "idle_arm"  # an arm that never left its start pose closed its gripper; that was not counted


class ScoreSource(StrEnum):
    """Who gave a score."""

    JUDGE = "judge"  # the LLM judge (named with its model: "judge (<model>)")
    HEURISTIC = "heuristic"  # the offline motion heuristic (joint data only, never the cloth)
    PERSON = "person"  # a reviewer's override in so101-review
    LIVE_OPERATOR = "live operator"  # reserved: a verdict given live during a rollout (no producer yet)
    TRUTH = "truth"  # computed from the simulated cloth's state (virtual rig only); a reference, never overridden


TRUTH_LABEL = "virtual ground truth"  # how ScoreSource.TRUTH is written for people, everywhere


def source_label(source: str, model: str = "") -> str:
    """How a score's source is written for people: "heuristic", "judge (<model>)", "virtual ground truth", ...

    `source` is a `ScoreSource` value, or the review store's "override" (a person's) or "none".
    """
    match source:
        case ScoreSource.JUDGE:
            return f"judge ({model})" if model else "judge"
        case "override":
            return ScoreSource.PERSON.value
        case ScoreSource.TRUTH:
            return TRUTH_LABEL
        case _:
            return source


def wrist_view(side: Side) -> str:
    """The wrist camera view of an arm."""
    return f"{side.value}_wrist"
