"""Compiled (numba) cores of the policies; imported only by the runs that use them, so that numba's import
cost is paid by those runs alone. Which runs use them is decided in one place,
:mod:`kvtheory.policies.dispatch`. numba is a required dependency: there is no interpreted fallback.

Each core's kernel serves a run of consecutive batches from a given state: a whole run (``serve_all``) is
one call, and the core's object (a :class:`~kvtheory.policies.base.KernelServed`, what ``create`` returns for
the cluster simulation's workers) calls it batch by batch."""
