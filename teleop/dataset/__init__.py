"""The dataset package: LeRobot datasets that survive crashes, written off the control loop, and read back.

The writer (writer_process.py and its parts), the facts kept beside a dataset (sidecar.py, lineage.py),
whether LeRobot can open it (format_check.py), curation (curate/), and the one reader of a dataset
folder (reader.py), which the replay and the evaluation layer read through.
"""
