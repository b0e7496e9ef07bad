"""Compiled (numba) cores of the policies; imported only by the runs that use them, so that numba's import
cost is paid by those runs alone. Which runs use them is decided in one place,
:mod:`kvtheory.policies.dispatch`."""
