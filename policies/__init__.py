"""Autonomous control layer: ACT/SmolVLA loading, inference engines, rollouts, replay and dry runs.

Layer rule: `policies` may import `robot` and `teleop` (to record rollouts); never `evaluation`.
"""
