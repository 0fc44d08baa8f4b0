"""so101-replay: dry runs of a dataset or a policy through the real control stack, with a report."""
