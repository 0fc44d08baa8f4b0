"""Offline evaluation layer: judge recorded episodes, store verdicts, review them, write reports.

Layer rule: `evaluation` reads datasets on disk only; it never imports `robot`, `teleop` or `policies`,
but for what every command speaks: the command-line shell (`robot.shell`) and the layout of a dataset
folder (`teleop.dataset.sidecar`, `format_check`, `next_steps`), whose one reader
(`teleop.dataset.reader`) `episode_source.py` reads every dataset through.
"""
