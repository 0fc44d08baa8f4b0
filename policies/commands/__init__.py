"""Console entry points of the policy layer (so101-deploy, so101-replay)."""
