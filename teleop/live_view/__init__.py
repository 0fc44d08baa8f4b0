"""A live view of a running session in a browser: the cameras and the joint traces (`--view.enabled=true`)."""
