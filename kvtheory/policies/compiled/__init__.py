"""Compiled (numba) cores of the policies; imported only when a run uses them, so that numba's import
cost is paid by those runs alone."""
