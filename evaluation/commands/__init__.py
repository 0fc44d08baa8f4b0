"""Entry points of the evaluation layer (the only place that prints and wires the pieces together)."""
