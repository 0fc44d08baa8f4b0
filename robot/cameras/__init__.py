"""Timestamped cameras (OpenCV and virtual) behind one `Camera` protocol, and the synchronised read."""
