"""Closed vocabularies shared by rubrics, frame selection, the prompt and the store.

Camera views are the dataset's video keys without the `observation.images.` prefix. Phases name the
moments of an episode that frame selection can find from the recorded state and action.
"""

from enum import StrEnum

IMAGE_KEY_PREFIX = "observation.images."
VIEWS: tuple[str, ...] = ("left_wrist", "right_wrist", "overhead")
SCORE_LEVELS: tuple[float, ...] = (0.0, 0.5, 1.0)


class Side(StrEnum):
    """An arm of the bimanual rig; the value is the prefix of its feature names."""

    LEFT = "left"
    RIGHT = "right"


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


def image_key(view: str) -> str:
    """Dataset feature key of a camera view, e.g. `overhead` -> `observation.images.overhead`."""
    return f"{IMAGE_KEY_PREFIX}{view}"


def wrist_view(side: Side) -> str:
    """The wrist camera view of an arm."""
    return f"{side.value}_wrist"
