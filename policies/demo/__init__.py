"""so101-demo's pieces: its options, its folder layout, the steps it runs and its closing summary.

Layer rule: like the rest of robot/, nothing here imports teleop, policies or evaluation; the demo
drives them as a user would, through their console scripts in child processes.
"""
