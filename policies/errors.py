"""Errors of the policy layer. Each says what failed and what to do next.

PolicyError
├── CheckpointError        a checkpoint directory cannot be loaded (hub ids are refused)
├── DeviceError            the requested torch device (cuda, mps) is not available here
├── RuntimeChoiceError     a compiled runtime asked for a checkpoint or an option it cannot serve
├── ContractError          the checkpoint's inputs or outputs do not fit the rig (raised before weights load)
├── InferenceError         the policy failed while running
│   └── NonFiniteActionError   a NaN or inf in a post-processed action: it never reaches the bus
└── RemotePolicyError      the remote policy server cannot be reached or answers wrongly

PolicyError is a CommandError (robot/shell/errors.py): a command prints it as its one error line, exit 1.
"""

from robot.shell.errors import CommandError


class PolicyError(CommandError):
    """Base of every error raised by `policies`."""


class CheckpointError(PolicyError):
    """A checkpoint cannot be found or loaded."""


class DeviceError(PolicyError):
    """The requested compute device does not exist on this machine."""


class RuntimeChoiceError(PolicyError):
    """--policy.runtime (or one of its options) cannot run this checkpoint."""


class ContractError(PolicyError, ValueError):
    """The checkpoint's input/output contract differs from the rig's."""


class InferenceError(PolicyError):
    """The policy failed while producing actions."""


class NonFiniteActionError(InferenceError):
    """A policy produced NaN or inf; the episode stops safely and nothing is sent."""


class RemotePolicyError(PolicyError, ConnectionError):
    """The remote policy server is unreachable or replied with something unusable."""
