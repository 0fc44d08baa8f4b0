"""Test support that ships with the package: tiny ACT and SmolVLA checkpoints built offline."""
