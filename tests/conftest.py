import os
import sys

from hypothesis import HealthCheck, Phase, settings

sys.path.insert(0, os.path.dirname(__file__))

settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# mutation testing (docs/mutation-testing.md): the same examples on every run, so that a mutant is killed by
# what it changed and not by the luck of the draw; no time limit per example (a slow mutant is no kill); no
# shrinking (the first failing example kills the mutant, and shrinking it could outlast mutmut's time limit)
settings.register_profile(
    "mutation",
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
