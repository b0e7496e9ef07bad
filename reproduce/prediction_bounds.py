"""Issue 29's figures for the policies that follow predictions: consistency with the oracle, and robustness with
adversarial predictions on the cyclic adversary (docs/predictions.md §Consistency and robustness, measured).

    python reproduce/prediction_bounds.py             # about 3 minutes on 2 cores
    python reproduce/prediction_bounds.py --seeds 2   # fewer seeds (a smoke run)

Consistency: every policy that follows predictions, told by the oracle at batch size 1, on gsp (8 groups of 8
prompts, B = 9000, just above the longest query), multiturn (24 conversations, B = 9000) and cyclic (k = 8,
L = 4, B = k + L - 1), workload seed 0: ALG / OPT with OPT = FIF (exact at batch size 1); randomized policies
the mean over ``CONSISTENCY_SEEDS`` seeds. Robustness: on cyclic at k = 8 with the adversarial predictor, the
ratio of each over ``--seeds`` seeds (mean and range), beside lru and rlt, with each one's robust bound at this k
(docs/policies.md): blind-oracle's lower bound k / 2, predictive-marker's 4 H_k, lnonmarker's stand-in 2 (log2 k + H_k),
guard's 2 H_{k-1} + 2, and bo-rlt-switch's own run-by-run bound 10 min(c_BO, c_RLT) + 7 L + s B (its worst
margin over the seeds). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from kvtheory import run_fif, run_policy
from kvtheory.policies import PREDICTIVE_POLICIES, policy_class
from kvtheory.policies.bo_rlt_switch import switch_bound
from kvtheory.policies.lnonmarker import robust_stand_in
from kvtheory.policies.predictive_marker import harmonic
from kvtheory.workloads import generate

K, LENGTH = 8, 4
CYCLIC = ("cyclic", {"k": K, "L": LENGTH}, K + LENGTH - 1)
CONSISTENCY = [
    ("gsp", {"groups": 8, "prompts": 8}, 9000),
    ("multiturn", {"conversations": 24}, 9000),
    CYCLIC,
]
CONSISTENCY_SEEDS = 3
ROBUST_BOUNDS = {
    "blind-oracle": ("lower", "k / 2", K / 2),
    "predictive-marker": ("upper", "4 H_k", 4 * harmonic(K)),
    "lnonmarker": ("upper", "2 (log2 k + H_k)", robust_stand_in(K)),
    "guard": ("upper", "2 H_{k-1} + 2", 2 * harmonic(K - 1) + 2),
}


def misses(workload, budget: int, policy: str, seeds: int, **told) -> list[int]:
    """The misses of ``policy`` on each of ``seeds`` seeds (one run for a deterministic one)."""
    runs = seeds if policy_class(policy).randomized or told.get("noise") is not None else 1
    return [run_policy(workload, budget, policy, seed=s, **told).misses for s in range(runs)]


def consistency(seeds: int) -> list[dict]:
    rows = []
    for family, params, budget in CONSISTENCY:
        workload = generate(family, params, seed=0)
        opt = run_fif(workload, budget).misses
        ratios = {
            name: float(np.mean(misses(workload, budget, name, seeds, predictor="oracle"))) / opt
            for name in PREDICTIVE_POLICIES
        }
        rows.append({"workload": family, "params": params, "budget": budget, "opt": opt, "ratio": ratios})
    return rows


def switch_margin(workload, budget: int, seed: int) -> float:
    """bo-rlt-switch's misses over its run-by-run bound (:func:`~kvtheory.policies.bo_rlt_switch.switch_bound`)."""
    run = run_policy(workload, budget, "bo-rlt-switch", predictor="adversarial", seed=seed).misses
    lead = min(
        run_policy(workload, budget, "blind-oracle", predictor="adversarial").misses,
        run_policy(workload, budget, "rlt", seed=seed, backend="python").misses,
    )
    return run / switch_bound(lead, budget, workload.max_length)


def robustness(seeds: int) -> dict:
    family, params, budget = CYCLIC
    workload = generate(family, params)
    opt = run_fif(workload, budget).misses
    rows = []
    for name in [*PREDICTIVE_POLICIES, "lru", "rlt"]:
        told = {"predictor": "adversarial"} if name in PREDICTIVE_POLICIES else {}
        ratios = np.asarray(misses(workload, budget, name, seeds, **told)) / opt
        row = {"policy": name, "mean": float(ratios.mean()), "min": float(ratios.min()), "max": float(ratios.max())}
        if name in ROBUST_BOUNDS:
            kind, text, value = ROBUST_BOUNDS[name]
            row.update(kind=kind, bound=text, bound_value=value)
            row["within"] = bool(row["mean"] >= value if kind == "lower" else row["mean"] <= value)
        if name == "bo-rlt-switch":
            worst = max(switch_margin(workload, budget, s) for s in range(seeds))
            row.update(kind="upper", bound="10 min(c_BO, c_RLT) + 7 L_max + s B", worst_margin=worst)
            row["within"] = bool(worst <= 1)
        rows.append(row)
    return {"workload": family, "params": params, "budget": budget, "k": K, "opt": opt, "seeds": seeds, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds of each randomized run (default 10)")
    args = parser.parse_args(argv)
    json.dump(
        {"consistency": consistency(CONSISTENCY_SEEDS), "robustness": robustness(args.seeds)}, sys.stdout, indent=1
    )
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
