"""The joint units a checkpoint was trained in, read from its normalizer's statistics (no weights loaded).

A policy trained on a dataset in LeRobot's percent-of-range units (-100..100 per joint) outputs
percent; our arms take degrees, so deployed as is it moves every joint by the wrong amount (the
wrist_roll ~1.7x too far). The preprocessor's state file keeps the training data's min and max per
joint, which is evidence enough (`joint_units.units_from_statistics`).
"""

from pathlib import Path

import numpy as np

from policies.checkpoint import Checkpoint
from policies.errors import ContractError
from robot.joint_units import JointUnits, UnitsVerdict, units_from_statistics
from robot.joints import BIMANUAL_KEYS, JOINT_NAMES
from teleop.dataset.vocabulary import ACTION_KEY, STATE_KEY


def checkpoint_units(checkpoint: Checkpoint, stated: JointUnits = JointUnits.AUTO) -> UnitsVerdict:
    """The units as stated (`--policy.units`), else detected from the checkpoint's statistics."""
    if stated is not JointUnits.AUTO:
        return UnitsVerdict(stated.value, "", stated=True)
    recorded = checkpoint.features.state_names or checkpoint.features.action_names
    for path in sorted(Path(checkpoint.directory).glob("policy_preprocessor_*.safetensors")):
        stats = _read(path)
        for key in (STATE_KEY, ACTION_KEY):
            low, high = stats.get(f"{key}.min"), stats.get(f"{key}.max")
            names = recorded or _rig_order(0 if low is None else len(low))  # unnamed: the contract's rig order
            if low is not None and high is not None and names and len(low) == len(names):
                return units_from_statistics(low, high, tuple(names))
    return UnitsVerdict("unknown", "the checkpoint keeps no min and max of its joints")


def degrees_or_refuse(checkpoint: Checkpoint, stated: JointUnits = JointUnits.AUTO) -> UnitsVerdict:
    """The checkpoint's units, unless they are percent: the arms take degrees.

    Raises:
        ContractError: the checkpoint was trained in percent of range (detected or stated).
    """
    units = checkpoint_units(checkpoint, stated)
    if units.units == "percent":
        raise ContractError(
            f"{checkpoint.directory} was trained on joints in percent of each joint's range"
            f" ({units.describe('--policy.units')}); the arms take degrees, so its actions would move every joint"
            " by the wrong amount. Next: train on a dataset recorded in degrees (so101-record's and LeRobot 0.6.1's"
            " default); if the statistics mislead, say so: --policy.units=degrees"
        )
    return units


def _rig_order(size: int) -> tuple[str, ...]:
    return {len(BIMANUAL_KEYS): BIMANUAL_KEYS, len(JOINT_NAMES): tuple(f"{j}.pos" for j in JOINT_NAMES)}.get(size, ())


def _read(path: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    try:
        return load_file(str(path))
    except (OSError, ValueError):  # a damaged state file is refused where the processors load, with its name
        return {}
