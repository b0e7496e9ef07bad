"""The one-pass traversal of :mod:`kvtheory.experiments.stack_mrc` compiled by numba: imported only by the runs
that use it, so that numba's import cost is paid by those runs alone."""

from kvtheory.experiments.stack_mrc import stack_traversal
from kvtheory.jit import njit

compiled_traversal = njit(cache=True)(stack_traversal)
