"""Test and demo helpers shipped with the evaluation layer (no pytest imports here).

`fake_messages_server` speaks the parts of the Anthropic Messages API the judge uses, on loopback;
`synthetic_dataset` writes small LeRobot v3.0 datasets with scripted bimanual motion.
"""
