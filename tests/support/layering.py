"""What every layer may import although it sits elsewhere: one list, read by both layer tests.

The command-line shell (robot/shell/) and the layout of a dataset folder (`DATASET_LAYOUT`: the
facts we keep beside it, whether they still belong to their episodes, whether LeRobot can open it,
the trim a curation proposes, where a curated dataset's episodes came from, the scores an operator
typed during a rollout). tests/test_layers.py checks that these import nothing else of the product;
tests/evaluation/test_layering.py lets the evaluation layer import them.
"""

SHELL = "robot.shell"  # the one part of robot/ that evaluation/ may import
DATASET_LAYOUT = (
    "teleop.dataset.sidecar",
    "teleop.dataset.format_check",
    "teleop.dataset.next_steps",
    "teleop.dataset.curate.trim_proposal",
    "teleop.dataset.lineage",
    "teleop.dataset.live_scores",
)
SHARED = (SHELL, *DATASET_LAYOUT)
