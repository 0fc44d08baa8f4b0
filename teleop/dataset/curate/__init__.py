"""Curating a dataset into a new one: drop, trim, filter, split and merge episodes, sidecars carried along.

plan.py            what the new dataset holds (episodes, spans), and its preview
request.py         from options or page marks to a plan (trims proposed from the motion, filters)
write.py           writing it beside the source, whole or not at all, journaled for so101-record
lerobot_tools.py   LeRobot's dataset tools and writer (the only file here that imports lerobot)
sidecars.py        our per-episode sidecars, renumbered and cut to match
"""
