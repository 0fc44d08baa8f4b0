"""Errors of so101-replay. Each says what is wrong with which dataset or option, and what to do next.

PolicyError (policies.errors)
└── ReplayError                 anything a replay refuses or cannot do
    ├── DatasetFormatError      not a LeRobot v3.0 dataset, an older format, a broken info.json
    ├── DatasetFitError         the dataset does not fit the rig (arms, joint names, fps, shapes)
    ├── VideoError              a video file is missing, unreadable, or shorter than its episode
    └── ReplayOptionError       an option that is not allowed (or not with the others given)
"""

from policies.errors import PolicyError


class ReplayError(PolicyError):
    """Base of every error raised by `policies.replay`."""


class DatasetFormatError(ReplayError):
    """The folder is not a readable LeRobot v3.0 dataset."""


class DatasetFitError(ReplayError, ValueError):
    """The dataset's joints, arms, shapes or rate differ from the rig's."""


class VideoError(ReplayError):
    """A video file of the dataset is missing, corrupt or too short."""


class ReplayOptionError(ReplayError, ValueError):
    """An option value that is not allowed."""
