"""FIF's one-pass traversal (:mod:`kvtheory.experiments.fif_stack`) compiled by numba: imported only by the runs
that use it, so that numba's import cost is paid by those runs alone."""

from kvtheory.experiments.fif_stack import fif_stack_traversal
from kvtheory.jit import njit

compiled_fif_traversal = njit(cache=True)(fif_stack_traversal)
