"""Human-in-the-loop layer: leader->follower teleoperation, recording sessions, dataset writing.

Layer rule: `teleop` may import `robot`; never `policies` or `evaluation`.
"""
