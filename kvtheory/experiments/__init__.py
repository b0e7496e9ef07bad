"""Experiments built on the model: the demo table, competitive-ratio sweeps."""
