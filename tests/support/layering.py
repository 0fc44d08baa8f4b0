"""What every layer may import although it sits elsewhere: one list, read by both layer tests.

The command-line shell (robot/shell/); the rig's vocabulary (robot/joints.py: joint names, sides,
arm and camera roles); and the layout of a dataset folder
(`DATASET_LAYOUT`: the dataset's names, its feature keys, in teleop/dataset/vocabulary.py; the facts
we keep beside it, whether they still belong to their episodes, whether LeRobot can open it, the one
reader of its metadata and data files and the errors it raises, the trim a curation proposes, where
a curated dataset's episodes came from, the scores an operator typed during a rollout).

Each name has one home (tests/test_one_home.py checks): the rig's names sit in robot/ because robot/
speaks them and imports nothing above it; the dataset's keys sit beside the dataset writer. The
evaluation layer reads datasets of this rig, so it speaks both, and imports them rather than keeping
copies. tests/test_layers.py checks that these leaves import nothing else of the product;
tests/evaluation/test_layering.py lets the evaluation layer import them.
"""

SHELL = "robot.shell"  # the one part of robot/ that evaluation/ may import
JOINTS = "robot.joints"  # the rig's joint names, sides and camera roles: standard library only
DATASET_LAYOUT = (
    "teleop.dataset.vocabulary",
    "teleop.dataset.sidecar",
    "teleop.dataset.format_check",
    "teleop.dataset.next_steps",
    "teleop.dataset.curate.trim_proposal",
    "teleop.dataset.lineage",
    "teleop.dataset.live_scores",
    # The one reader of a dataset folder (the replay and evaluation/episode_source.py read through it),
    # the features it checks, the errors it raises, and LeRobot's metadata reader it calls.
    "teleop.dataset.reader",
    "teleop.dataset.reader_features",
    "teleop.dataset.errors",
    "teleop.dataset.lerobot_format",
)
SHARED = (SHELL, JOINTS, *DATASET_LAYOUT)
