"""so101-demo's pieces: its options, its folder layout, the steps it runs and its closing summary.

The demo is the whole workflow, so it sits at the top of the control stack; it still imports only
robot/ (the virtual rig's client, the rig file) and drives teleop, policies and evaluation as a user
would, through their console scripts in child processes.
"""
