"""The dataset's names: the one home of the feature keys every layer reads and writes.

    observation.state              the followers' measured joints
    action                         the goal the followers were sent
    observation.images.<camera>    one video per camera (`camera_key`)

The writer (`features.py`), the checkpoint contract (policies/), the replay and the judge's reader
(evaluation/) all import these names from here; no module spells them again
(`tests/test_one_home.py` checks). The camera names themselves (`CAMERA_ROLES`), like the joint names
and sides inside `observation.state`, are the rig's and live in `robot/joints.py`: robot/ needs them
too, and imports point down only.

Standard library only: the evaluation layer may import this leaf (`tests/support/layering.py`).
"""

STATE_KEY = "observation.state"
ACTION_KEY = "action"
IMAGE_PREFIX = "observation.images."


def camera_key(name: str) -> str:
    """The feature key of a camera, e.g. `overhead` -> `observation.images.overhead`."""
    return f"{IMAGE_PREFIX}{name}"
