"""Dataset writing for the recorder: LeRobot datasets that survive crashes, written off the control loop."""
