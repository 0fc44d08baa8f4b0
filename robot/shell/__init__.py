"""The command-line shell every `so101-*` command shares: `--help`, option names, config files.

One home for how a command talks: the help layout (what it does, examples, options by section),
"did you mean" for an unknown option, and why a `--config_path` cannot be read. Light on purpose,
the standard library and draccus only, so that evaluation/ (which imports nothing else of robot/,
tests/test_layers.py) speaks the same language as the robot-side commands.
"""
