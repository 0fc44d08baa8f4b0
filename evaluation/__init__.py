"""Offline evaluation layer: judge recorded episodes, store verdicts, review them, write reports.

Layer rule: `evaluation` reads datasets on disk only; it never imports `robot`, `teleop` or `policies`.
"""
