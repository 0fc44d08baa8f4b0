"""Virtual cameras: the virtual rig's follower arms, table and cloth rendered with OpenCV drawing."""
