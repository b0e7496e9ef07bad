"""Compiled (numba) cores of the routers; imported only by the runs that use them (the rule of
:func:`kvtheory.policies.dispatch.long_enough`), so that numba's import cost is paid by those runs alone."""
