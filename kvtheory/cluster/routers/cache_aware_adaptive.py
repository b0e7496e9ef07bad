"""cache-aware-adaptive: SGLang's cache-aware rule with a balance threshold that follows queueing."""

from __future__ import annotations

from kvtheory.cluster.routers import register_router
from kvtheory.cluster.routers.cache_aware import CacheAware


@register_router
class CacheAwareAdaptive(CacheAware):
    """cache-aware whose ``balance_abs`` threshold adapts to the queueing the router observes.

    On every completion the router estimates the query's queueing delay as its observed latency minus
    its predicted service time (the worker's cost model with the router's own match as hits), and keeps
    an exponential average per worker (weight ``alpha``). The target is ``target_wait`` seconds, or, when
    that is 0, ``target_factor`` times the running mean predicted service time. If the worst worker's
    average exceeds the target the threshold halves (down to ``min_abs``: balance sooner); below half
    the target it grows by one (up to ``max_abs``: favour cache affinity). Additive increase,
    multiplicative decrease, starting from the paper's 32.
    """

    name = "cache-aware-adaptive"
    OPTIONS = {
        **CacheAware.OPTIONS,
        "target_wait": 0.0,
        "target_factor": 1.0,
        "alpha": 0.1,
        "min_abs": 1.0,
        "max_abs": 1024.0,
    }

    def __init__(self, view, *, seed=None, options=None) -> None:
        super().__init__(view, seed=seed, options=options)
        self.threshold = float(self.opts["balance_abs"])
        self._wait = [0.0] * self.m
        self._predicted: dict[int, float] = {}
        self._service_sum = 0.0
        self._service_n = 0
        self._trace_min = self.threshold
        self._trace_max = self.threshold

    def balance_abs(self) -> float:
        return self.threshold

    def choose(self, j: int, now: float) -> int:
        i = super().choose(j, now)
        hits = self.matches(j)[i]
        self._predicted[j] = self.view.predicted_cost(i, j, hits)
        return i

    def finished(self, j: int, i: int, now: float, latency: float, ttft: float) -> None:
        service = self._predicted.pop(j)
        self._service_sum += service
        self._service_n += 1
        alpha = self.opts["alpha"]
        self._wait[i] = (1 - alpha) * self._wait[i] + alpha * max(latency - service, 0.0)
        target = self.opts["target_wait"] or self.opts["target_factor"] * self._service_sum / self._service_n
        worst = max(self._wait)
        if worst > target:
            self.threshold = max(self.opts["min_abs"], self.threshold / 2)
        elif worst < target / 2:
            self.threshold = min(self.opts["max_abs"], self.threshold + 1)
        self._trace_min = min(self._trace_min, self.threshold)
        self._trace_max = max(self._trace_max, self.threshold)

    def state(self) -> dict:
        return {
            **super().state(),
            "balance_abs_final": self.threshold,
            "balance_abs_min": self._trace_min,
            "balance_abs_max": self._trace_max,
        }
