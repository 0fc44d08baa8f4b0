"""Hardware layer: SO-101 arms on LeRobot's Feetech bus, the virtual rig, rig configs.

Layer rule: `robot` imports nothing from `teleop`, `policies` or `evaluation`. Everything above
builds on it; `tests/test_layers.py` enforces the direction.
"""
