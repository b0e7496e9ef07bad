"""The run-derived tables of the documentation, rendered from stored results.

    python scripts/docs_results.py record claims -- kvtheory check --json     # run, store in docs/results/claims.jsonl
    python scripts/docs_results.py render                                     # rewrite every generated block
    python scripts/docs_results.py render --check                             # exit 1 where a block differs

A table or figure in docs/ that comes from a run is never typed: it sits in a marked block,

    <!-- generated: RENDERER from docs/results/NAME.jsonl by scripts/docs_results.py; do not edit -->
    ...
    <!-- end generated -->

and ``render`` rewrites the block from the stored result file. A stored result file holds JSON Lines, one
record per command run: the command exactly as run, the commit it ran at (``git rev-parse --short HEAD``,
with ``dirty`` when the working tree had changes), when, how long it took, and the command's JSON output.
``record`` runs the command (in a scratch directory, so that nothing it writes lands in the repository)
and replaces the record of the same command, if any: a file keeps the latest run of each command. Nothing
else writes these files, so every number in a generated block comes from a run.
``tests/repository/test_docs_results.py``
re-renders every block and fails when a page differs from its stored results: a number edited by hand in a
generated block, or a stored result recorded again without rendering.

Why one script here rather than a ``kvtheory`` subcommand: it knows the documentation's layout (pages, block
markers, which renderer draws which table), which the installed package does not ship and must not depend
on; it imports kvtheory and proofs_check only to format what they computed. Claim findings are not a run's
output but data kept once, in ``Claim.findings`` of the registry (``proofs_check/claims/``); the
``claim-findings`` renderer writes them into docs/claims.md, checked by the same test.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
#: pages that hold generated blocks
PAGES = (
    "README.md",
    "docs/claims.md",
    "docs/cluster.md",
    "docs/game.md",
    "docs/optima.md",
    "docs/policies.md",
    "docs/predictions.md",
    "docs/results.md",
    "docs/performance.md",
)
BLOCK = re.compile(
    r"(?P<head><!-- generated: (?P<renderer>[\w\-]+)(?: from (?P<source>\S+))? by scripts/docs_results\.py; "
    r"do not edit -->\n)(?P<body>.*?)(?P<tail><!-- end generated -->)",
    re.S,
)


# -- stored results -------------------------------------------------------------------------------------


def commit() -> tuple[str, bool]:
    """The short commit of HEAD and whether the working tree differs from it (read only)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    status = subprocess.run(["git", "status", "--porcelain", "-uno"], cwd=ROOT, capture_output=True, text=True)
    return head.stdout.strip() or "unknown", bool(status.stdout.strip())


def read_records(path: Path) -> list[dict]:
    """Every record of a stored result file, in order; a line that is not a record is an error."""
    records = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        if not {"command", "commit", "output"} <= set(record):
            raise ValueError(f"{path}:{number}: a record needs command, commit and output")
        records.append(record)
    return records


def record(name: str, command: list[str]) -> dict:
    """Run ``command``, parse its standard output as JSON, and store it in docs/results/NAME.jsonl."""
    if command and command[0] == "kvtheory":
        argv = [sys.executable, "-m", "kvtheory", *command[1:]]
    elif command and command[0] == "python":
        argv = [sys.executable, *command[1:]]
    else:
        argv = command
    rev, dirty = commit()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        argv = [str(ROOT / a) if a.endswith((".py", ".jsonl")) and (ROOT / a).is_file() else a for a in argv]
        done = subprocess.run(argv, cwd=scratch, capture_output=True, text=True)
    seconds = round(time.perf_counter() - started, 1)
    if done.returncode not in (0, 1):  # kvtheory check exits 1 when a verdict changed: still a result
        raise SystemExit(f"docs_results: {' '.join(command)} exited {done.returncode}: {done.stderr[-500:]}")
    try:
        output = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(
            f"docs_results: {' '.join(command)} printed no JSON (exit {done.returncode}): {done.stderr[-500:]}"
        ) from None
    entry = {
        "command": " ".join(command),
        "commit": rev,
        "dirty": dirty,
        "recorded": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": seconds,
        "exit_status": done.returncode,
        "output": output,
    }
    path = RESULTS / f"{name}.jsonl"
    kept = [r for r in read_records(path) if r["command"] != entry["command"]] if path.exists() else []
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in [*kept, entry]))
    return entry


def provenance(records: list[dict], *, shown: bool = False) -> str:
    """One line naming the commands and commits a generated block comes from (``shown``: the block's table
    shows every command already, so the line only counts them)."""
    groups: dict[str, list[str]] = {}
    for r in records:
        rev = r["commit"] + (" with uncommitted changes" if r.get("dirty") else "")
        groups.setdefault(f"at commit {rev}, {r.get('recorded', '?')[:10]}", []).append(f"`{r['command']}`")
    if shown:
        return (
            "Recorded by the commands of the table "
            + "; ".join(f"({len(commands)} runs) {where}" for where, commands in groups.items())
            + "."
            + _machine(records)
        )
    return (
        "Recorded by "
        + "; ".join(f"{', '.join(commands)} {where}" for where, commands in groups.items())
        + "."
        + _machine(records)
    )


def _machine(records: list[dict]) -> str:
    """Where the benchmark runs among ``records`` ran, from the ``provenance`` each stores
    (benchmarks/provenance.py): CPU, cores, versions, and the load average at each run's start."""
    runs = [r["output"]["provenance"]["machine"] for r in records if "provenance" in r["output"]]
    if not runs:
        return ""
    where = "; ".join(
        dict.fromkeys(
            f"{m['cpu']}, {m['cores']} cores, Python {m['python']}, numpy {m['numpy']}, numba {m['numba']}"
            for m in runs
        )
    )
    loads = ", ".join(f"{m['load_average'][0]:g}" for m in runs)
    return f" Ran on {where}; load average at the start {loads}."


# -- renderers ------------------------------------------------------------------------------------------


def _number(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return f"{value:.4g}"


def claims_table(records: list[dict]) -> str:
    """The verdict table of ``kvtheory check --json``, laid out as ``kvtheory check`` prints it."""
    from kvtheory.cli.check import _table

    (run,) = [r for r in records if r["command"] == "kvtheory check --json"]
    out = run["output"]
    rows = []
    for c in out["claims"]:
        worst = c["worst"] or {}
        verdict = c["verdict"] + ("" if c["verdict"] == c["expected"] else " (changed)")
        rows.append(
            [
                c["claim"],
                c["status"],
                c["kind"],
                str(c["instances"]),
                _number(worst.get("ratio")),
                _number(worst.get("bound")),
                verdict,
                c["bound"],
            ]
        )
    o = out["options"]
    return (
        f"`kvtheory check` with its defaults (seed {o['seed']}, {o['instances']} random instances per search, "
        f"{o['seeds']} seeds per randomized instance, one-sided {o['level']:.0%}, margin {o['margin']:.0%}; "
        f"{out['seconds']:.0f} s). {provenance([run])}\n\n```\n{_table(rows)}\n```\n"
    )


def claims_summary(records: list[dict]) -> str:
    """One Markdown table row per claim: id (linked), verdict, worst ratio against the bound there."""
    (run,) = [r for r in records if r["command"] == "kvtheory check --json"]
    lines = ["| claim | status | verdict | worst ratio | bound there |", "| --- | --- | --- | --- | --- |"]
    for c in run["output"]["claims"]:
        worst = c["worst"] or {}
        link = f"[{c['claim']}](claims.md#{c['claim'].lower()})"
        ratio, bound = _number(worst.get("ratio")), _number(worst.get("bound"))
        lines.append(f"| {link} | {c['status']} | {c['verdict']} | {ratio} | {bound} |")
    return "\n".join(lines) + f"\n\n{provenance([run])}\n"


def claim_findings(records: list[dict]) -> str:
    """What checking found, claim by claim: ``Claim.findings`` of the registry (kept there, nowhere else)."""
    from proofs_check.claims import all_claims

    lines = [f"- **{claim.id}**: {' '.join(claim.findings)}" for claim in all_claims() if claim.findings]
    return "\n".join(lines) + "\n"


def costmodel_table(records: list[dict]) -> str:
    """One row per ``kvtheory costmodel --json`` run."""
    lines = [
        "| model | GPU | tp | a_miss (us/token) | a_cached (ns/token) | decode (ms/token) | KV bytes/token "
        "| B (tokens) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in records:
        o = r["output"]
        lines.append(
            f"| {o['model']} | {o['gpu']} | {o['tp']} | {o['a_miss'] * 1e6:.1f} | {o['a_cached'] * 1e9:.0f} | "
            f"{o['decode_per_output_token'] * 1e3:.1f} | {o['kv_bytes_per_token']:,} | {o['budget']:,} |"
        )
    return "\n".join(lines) + f"\n\n{provenance(records)}\n"


def _benchmark(name: str):
    """A script of benchmarks/ as a module (its own table layout is reused, not copied)."""
    import importlib.util

    if str(ROOT / "benchmarks") not in sys.path:  # the scripts import their helpers (provenance) by name
        sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def batched_optimum_table(records: list[dict]) -> str:
    """``python benchmarks/batched_optimum.py``'s cells as its own ``--table`` prints them."""
    (run,) = records
    out = run["output"]
    s = out["summary"]
    return (
        f"{_benchmark('batched_optimum').table(out['cells'])}\n\n{s['proven_optimal']} of {s['cells']} cells "
        f"proven optimal, {s['infeasible']} infeasible. {provenance(records)}\n"
    )


def sweeps_table(records: list[dict]) -> str:
    """``python benchmarks/sweep_throughput.py``: a plain loop against the local process pool, a row per run."""
    lines = [
        "| cells | plain loop | local pool | identical records | CPU seconds (loop / pool) | load average |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for run in records:
        o = run["output"]
        same = "yes" if o["identical_records"] else "NO"
        lines.append(
            f"| {o['cells']} of `{o['spec']}` | {o['sequential_cells_per_s']} cells/s ({o['sequential_s']} s) "
            f"| {o['local_pool_cells_per_s']} cells/s ({o['local_pool_s']} s, {o['workers']} processes) | {same} "
            f"| {o['sequential_cpu_s']} / {o['local_pool_cpu_s']} | {o['load_avg_before'][0]} on {o['cpus']} cores |"
        )
    return "\n".join(lines) + f"\n\n{provenance(records)}\n"


def mip_backends_table(records: list[dict]) -> str:
    """``python benchmarks/mip_backends.py``: HiGHS against CBC, in the exact solver and alone, per instance."""
    (run,) = records
    o = run["output"]
    lines = [
        "| instance | beta | B | exact, HiGHS | exact, CBC | MIP alone, HiGHS | MIP alone, CBC |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for i in o["instances"]:
        params = " ".join(f"{k}={v}" for k, v in i["params"].items())
        times = [i[f"{mode}_{solver}"]["seconds"] for mode in ("exact", "mip") for solver in ("highs", "cbc")]
        lines.append(
            f"| {i['workload']} {params} seed {i['seed']} | {i['beta']} | {i['B']:,} | "
            + " | ".join(f"{t:.2f}" for t in times)
            + " |"
        )
    total = [o["summary"][mode]["total_seconds"][solver] for mode in ("exact", "mip") for solver in ("highs", "cbc")]
    lines.append("| **total** | | | " + " | ".join(f"**{t:.2f}**" for t in total) + " |")
    faster = {mode: o["summary"][mode]["instances_faster"]["cbc"] for mode in ("exact", "mip")}
    disagree = o["summary"]["optima_disagree"]
    return (
        "\n".join(lines)
        + f"\n\nCBC was faster on {faster['exact']} of {len(o['instances'])} instances in the exact solver and on "
        f"{faster['mip']} alone; the MIP ran inside the exact solver on {o['summary']['mip_ran_in_exact']} of them; "
        + ("both back ends proved the same optimum on every instance" if not disagree else f"optima differ: {disagree}")
        + f". {provenance(records)}\n"
    )


def evict_amount_table(records: list[dict]) -> str:
    """``python reproduce/evict_amount.py``: paired relative differences of misses, mean [95% interval]."""
    (run,) = records
    rows = run["output"]["rows"]
    pairs = (
        "rlt-authors vs rlt",
        "lru allocation vs shortfall",
        "rlt allocation vs shortfall",
        "rlt-authors allocation vs shortfall",
    )
    heads = ("rlt-authors vs rlt", *(p.replace(" allocation", ": allocation") for p in pairs[1:]))
    cells = {(r["workload"], r["budget_fraction"], r["pair"]): r for r in rows}
    lines = [f"| workload | B / distinct | {' | '.join(heads)} |", "| --- | --- | " + "--- | " * len(pairs)]
    for workload, fraction in dict.fromkeys((r["workload"], r["budget_fraction"]) for r in rows):
        shown = []
        for pair in pairs:
            r = cells[(workload, fraction, pair)]
            low, high = r["ci95"]
            shown.append(f"{100 * r['mean_relative_difference']:+.2f}% [{100 * low:+.2f}, {100 * high:+.2f}]")
        lines.append(f"| {workload} | {fraction} | {' | '.join(shown)} |")
    n = rows[0]["instances"]
    return "\n".join(lines) + f"\n\nOver {n} instances each. {provenance(records)}\n"


def _game_size(output: dict) -> str:
    """What a ``kvtheory game`` run explored: states (worst, best --deterministic), graph nodes (limit) or LP
    variables (best --randomized)."""
    if output["mode"] == "limit":
        return f"{output['nodes']:,} nodes"
    if "variables" in output:
        return f"{output['variables']:,} LP variables"
    return f"{output['states']:,} states"


def _game_mode(record: dict) -> str:
    o = record["output"]
    return f"best --{o['kind']}" if o["mode"] == "best" else o["mode"]


def game_sizes_table(records: list[dict]) -> str:
    """``kvtheory game ... --json`` runs: each command with its exact ratio, what it explored and its seconds."""
    lines = ["| command | ratio | explored | seconds |", "| --- | --- | --- | --- |"]
    for r in records:
        lines.append(f"| `{r['command']}` | {r['output']['ratio']} | {_game_size(r['output'])} | {r['seconds']:.0f} |")
    return "\n".join(lines) + f"\n\n{provenance(records, shown=True)}\n"


def game_reach(records: list[dict]) -> str:
    """For each mode of ``kvtheory game``, its largest stored run within 60 s (by what it explored)."""
    best: dict[str, dict] = {}
    for r in records:
        o = r["output"]
        explored = o.get("states", o.get("nodes", o.get("variables", 0)))
        mode = _game_mode(r)
        if r["seconds"] <= 60 and explored >= best.get(mode, {}).get("explored", -1):
            best[mode] = {"explored": explored, "record": r}
    lines = ["| mode | largest run within 60 s | explored | seconds |", "| --- | --- | --- | --- |"]
    for mode in ("worst", "limit", "best --deterministic", "best --randomized"):
        if mode in best:
            r = best[mode]["record"]
            args = r["command"].split(" --json")[0].replace("kvtheory game ", "")
            lines.append(f"| {mode} | `{args}` | {_game_size(r['output'])} | {r['seconds']:.0f} |")
    return "\n".join(lines) + "\n"


#: the order policies are listed in, where a run's JSON keeps them in a dict
POLICY_ORDER = ("lru", "token-lru", "fifo", "lfu", "rlt", "rlt-authors", "random-leaf")


def traces_table(records: list[dict]) -> str:
    """``python benchmarks/traces.py``: whole processes on a Mooncake-format trace, a table per stored run."""
    parts = []
    for run in records:
        o = run["output"]
        policies = [
            k for k in o if isinstance(o[k], dict) and "process_seconds" in o[k] and k not in ("read", "fif", "mrc")
        ]
        policies.sort(key=lambda k: (POLICY_ORDER.index(k) if k in POLICY_ORDER else len(POLICY_ORDER), k))
        rows = [("read the trace and build its trie", o["read"])]
        rows += [(f"`kvtheory evict --policy {k}`", o[k]) for k in policies]
        rows.append(("`kvtheory opt` (FIF)", o["fif"]))
        m = o["mrc"]
        rows.append((f"`kvtheory mrc` of {m['policies']}, 8 budgets, {m['workers']} processes", m))
        lines = ["| process | CPU seconds | wall seconds | peak RSS |", "| --- | --- | --- | --- |"]
        lines += [
            f"| {what} | {r['process_cpu_seconds']:.2f} | {r['process_seconds']:.2f} "
            f"| {r['process_peak_rss_mb']:.0f} MB |"
            for what, r in rows
        ]
        parts.append(
            f"{o['requests']:,} requests of {o['trace']['conversations']:,} conversations, {o['tokens']:,} tokens "
            f"({o['distinct_tokens']:,} distinct, {o['radix_nodes']:,} radix nodes, a {o['file_mb']} MB file), "
            f"B = {o['budget']:,}:\n\n" + "\n".join(lines) + f"\n\n{provenance([run])}\n"
        )
    return "\n".join(parts)


def single_worker_table(records: list[dict]) -> str:
    """``python benchmarks/run.py``: each policy and FIF on one worker, in process (on the engine "auto" takes, and
    on each engine) and as a whole process, against the per-token reference on a slice scaled to the whole by
    tokens. The latest stored run."""
    run = max(records, key=lambda r: r["recorded"])
    o = run["output"]
    s = o["slice"]
    lines = [
        "| policy | in process (auto) | per-edge class | compiled core | tokens/s (auto) | whole process (CPU; wall) "
        "| peak RSS | reference, scaled | speed-up | hits as the reference's |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    names = sorted(o["policies"], key=lambda k: (*POLICY_ORDER, "fif").index(k) if k in (*POLICY_ORDER, "fif") else 99)
    for name in names:
        e = o["policies"][name]
        same = e["identical_to_reference_on_slice"]
        same = "yes" if same is True else "NO" if same is False else "in distribution (tested)"
        auto = f"{e['seconds']:.3f} s ({e['engine']})"
        each = " | ".join(f"{e['engine_seconds'][k]:.3f} s" for k in ("python", "compiled"))
        lines.append(
            f"| {'fif (OPT)' if name == 'fif' else name} | {auto} | {each} "
            f"| {e['tokens_per_second'] / 1e6:.3g} M "
            f"| {e['process_cpu_seconds']:.2f} s; {e['process_seconds']:.2f} s | {e['process_peak_rss_mb']:.0f} MB "
            f"| {e['reference_scaled_seconds']:,.0f} s | {e['speedup_vs_reference']:,.0f}x | {same} |"
        )
    params = o["workload"]["params"]
    setting = "the paper's size" if isinstance(params, str) else " x ".join(f"{v} {k}" for k, v in params.items())
    return (
        f"gsp ({setting}, seed {o['workload']['seed']}): {o['queries']:,} queries, {o['tokens']:,} tokens "
        f"({o['distinct_tokens']:,} distinct), B = {o['budget']:,}; the reference ran on the first {s['queries']} "
        f"queries ({s['tokens']:,} tokens, B = {s['budget']:,}).\n\n" + "\n".join(lines) + f"\n\n{provenance([run])}\n"
    )


SOLVER_NAMES = {"cbc": "CBC", "highs": "HiGHS"}


def _reach(ladder: dict) -> str:
    best = ladder["largest_solved"]
    if best is None:
        return "none, not even the smallest"
    return f"{best['queries']:,} queries, {best['tokens']:,} tokens" + (
        " (the largest tried)" if ladder["first_unsolved"] is None else ""
    )


def mip_scaling_table(records: list[dict]) -> str:
    """``python benchmarks/mip_scaling.py``: the largest instance each MIP formulation proves optimal within
    the time limit, a row per worker count and prompt-length scale, per stored run (solver)."""
    lines = [
        "| instance | solver | limit | token formulation | edge formulation | edge / token (tokens) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for run in records:
        o = run["output"]
        for key, ladders in o.items():
            if not key.startswith(("single_worker_scale_", "two_workers_scale_")):
                continue
            workers = "one worker" if key.startswith("single") else "two workers"
            token, edge = ladders["token"]["largest_solved"], ladders["edge"]["largest_solved"]
            sample = edge or token
            length = f", ~{sample['tokens'] / sample['queries']:,.0f}-token prompts" if sample else ""
            ratio = f"{edge['tokens'] / token['tokens']:.1f}x" if edge and token else "-"
            lines.append(
                f"| {workers}{length} | {SOLVER_NAMES[o['solver']]} | {o['time_limit_s']:g} s "
                f"| {_reach(ladders['token'])} | {_reach(ladders['edge'])} | {ratio} |"
            )
    return "\n".join(lines) + f"\n\n{provenance(records)}\n"


def cluster_simulation_table(records: list[dict]) -> str:
    """``python benchmarks/cluster_throughput.py --skip-mip``: simulated queries per second, router by router."""
    (run,) = [r for r in records if "--skip-mip" in r["command"].split()]
    sim = run["output"]["simulation"]
    w = sim["workload"]
    lines = ["| router | eviction | queries per CPU second | queries per second (wall) | hit rate |"]
    lines.append("| --- | --- | --- | --- | --- |")
    for r in sim["runs"]:
        lines.append(
            f"| {r['router']} | {r['eviction']} | {r['queries_per_cpu_second']:,} | {r['queries_per_second']:,} "
            f"| {r['hit_rate']:.3f} |"
        )
    return (
        f"{w['name']} {w['params'] or '(the paper size)'}: {w['queries']:,} queries, {w['tokens']:,} tokens, on "
        f"{sim['workers']} workers with B = {sim['budget']:,}; the workload and its trie took "
        f"{sim['workload_and_trie_seconds']} s.\n\n" + "\n".join(lines) + f"\n\n{provenance([run])}\n"
    )


def cluster_mip_table(records: list[dict]) -> str:
    """``python benchmarks/cluster_throughput.py``'s second part: the largest joint MIP proven optimal."""
    (run,) = [r for r in records if "joint_mip" in r["output"]]
    mip = run["output"]["joint_mip"]
    lines = ["| workers | largest proven optimal | its seconds | next size | its gap at the limit |"]
    lines.append("| --- | --- | --- | --- | --- |")
    for row in mip["by_workers"]:
        ok, bad = row["largest_optimal"], row["first_not_optimal"]
        size = "-" if ok is None else f"{ok['queries']} queries, {ok['tokens']} tokens"
        seconds = "-" if ok is None else f"{ok['seconds']}"
        next_size = "-" if bad is None else f"{bad['queries']} queries, {bad['tokens']} tokens"
        gap = "-" if bad is None or bad["gap"] is None else f"{100 * bad['gap']:.2f}%"
        lines.append(f"| {row['workers']} | {size} | {seconds} | {next_size} | {gap} |")
    return (
        f"The {mip['formulation']} formulation on {mip['solver'].upper()}, {mip['time_limit']:g} s per instance:\n\n"
        + "\n".join(lines)
        + f"\n\n{provenance([run])}\n"
    )


def flat_trace_table(records: list[dict]) -> str:
    """``python benchmarks/flat_trace.py --json``: whole processes on a flat Zipf trace, against libCacheSim: its
    whole process, and its C LRU's processing time measured inside that process (the issue's anchor)."""
    (run,) = records
    o = run["output"]
    lib = o["libcachesim_lru"]
    inside = lib.get("processing_cpu_seconds")
    lines = [
        "| process | CPU seconds | wall seconds | over libCacheSim's process (CPU; wall) "
        "| over its processing (CPU) | peak RSS | misses |"
    ]
    lines.append("| --- | --- | --- | --- | --- | --- | --- |")
    names = sorted(
        o["policies"], key=lambda k: (POLICY_ORDER + ("fif",)).index(k) if k in POLICY_ORDER + ("fif",) else 99
    )
    for name in names:
        e = o["policies"][name]
        what = "`kvtheory opt --solver fif`" if name == "fif" else f"`kvtheory evict --policy {name}`"
        over = (
            f"{e['cpu_times_libcachesim_lru']:.1f}x; {e['times_libcachesim_lru']:.1f}x"
            if "times_libcachesim_lru" in e
            else "-"
        )
        over_inside = f"{e['process_cpu_seconds'] / inside:.2f}x" if inside else "-"
        lines.append(
            f"| {what} | {e['process_cpu_seconds']:.2f} | {e['process_seconds']:.2f} | {over} | {over_inside} "
            f"| {e['process_peak_rss_mb']:.0f} MB | {e['misses']:,} |"
        )
    if lib.get("available"):
        lines.append(
            f"| libCacheSim LRU, whole process | {lib['process_cpu_seconds']:.2f} | {lib['process_seconds']:.2f} "
            f"| 1x | - | {lib['process_peak_rss_mb']:.0f} MB | {lib['misses']:,} |"
        )
        if inside:
            lines.append(
                f"| libCacheSim LRU, processing only | {inside:.2f} | {lib['processing_seconds']:.2f} "
                "| - | 1x | - | - |"
            )
    tr = o["trace"]
    reads = {"jsonl": "its JSON Lines file", "oracle-general": "the oracleGeneral file libCacheSim reads"}
    read = tr.get("kvtheory_reads", "jsonl")
    note = "" if lib.get("available") else " libCacheSim was not installed where this ran: no comparison."
    return (
        f"{tr['requests']:,} one-token requests, Zipf {tr['alpha']} over {tr['pages']:,} pages (seed {tr['seed']}), "
        f"B = {o['budget']:,}, {o['cores']} cores; kvtheory reads {reads[read]}.{note}\n\n"
        + "\n".join(lines)
        + f"\n\n{provenance(records)}\n"
    )


def predictive_table(records: list[dict]) -> str:
    """``python benchmarks/predictive.py --json``: each policy that follows predictions against RLT, in process on
    its default backend ("auto"): median seconds after a first run, and the ratio to RLT's (issue 29: at most 2)."""
    (run,) = records
    o = run["output"]
    lines = ["| policy | backend | first run (s) | median (s) | CPU (s) | over RLT (CPU) | misses |"]
    lines.append("| --- | --- | --- | --- | --- | --- | --- |")
    for name, e in o["policies"].items():
        lines.append(
            f"| `{name}` | {e['backend']} | {e['first_seconds']:.3f} | {e['seconds']:.3f} | {e['cpu_seconds']:.3f} "
            f"| {e['cpu_ratio_to_rlt']:.2f}x | {e['misses']:,} |"
        )
    w = o["workload"]
    return (
        f"{w['name']} ({w['params']}, seed {w['seed']}): {o['queries']:,} queries, {o['tokens']:,} tokens, "
        f"B = {o['budget']:,}.\n\n" + "\n".join(lines) + f"\n\n{provenance(records)}\n"
    )


def first_run_table(records: list[dict]) -> str:
    """``python benchmarks/first_run.py --json``: each policy's first whole process after an install against the
    median of its warm ones, on a flat Zipf trace (the issue's bar: first <= 1.5x warm)."""
    (run,) = records
    o = run["output"]
    lines = ["| process | first run (s) | warm run (s) | first / warm | first / warm (CPU) | misses |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for name, e in o["policies"].items():
        what = "`kvtheory opt --solver fif`" if name == "fif" else f"`kvtheory evict --policy {name}`"
        lines.append(
            f"| {what} | {e['first_seconds']:.2f} | {e['warm_seconds']:.2f} | {e['first_over_warm']:.2f}x "
            f"| {e['first_over_warm_cpu']:.2f}x | {e['misses']:,} |"
        )
    tr = o["trace"]
    return (
        f"Cache: {o['cache']}. {tr['requests']:,} one-token requests, Zipf {tr['alpha']} over {tr['pages']:,} pages "
        f"(seed {tr['seed']}), B = {o['budget']:,}.\n\n" + "\n".join(lines) + f"\n\n{provenance(records)}\n"
    )


def startup_table(records: list[dict]) -> str:
    """``python benchmarks/startup.py --json``: median start of whole processes, beside the interpreter's floor."""
    (run,) = records
    o = run["output"]
    lines = ["| process | wall seconds | CPU seconds | importing (s) | modules loaded | heavy libraries |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for name, e in o["floor"].items():
        what = "`python -c pass`" if name == "python" else "`python -c 'import numpy'`"
        lines.append(f"| {what} | {e['wall_seconds']:.3f} | {e['cpu_seconds']:.3f} | - | - | - |")
    for e in o["commands"].values():
        argv = " ".join(a if "/" not in a else a.rsplit("/", 1)[1] for a in e["argv"])
        heavy = ", ".join(e["heavy_loaded"]) or "none"
        lines.append(
            f"| `{argv}` | {e['wall_seconds']:.3f} | {e['cpu_seconds']:.3f} | {e['import_seconds']:.3f} "
            f"| {e['modules_loaded']} | {heavy} |"
        )
    return f"Medians of {o['repeats']} processes.\n\n" + "\n".join(lines) + f"\n\n{provenance(records)}\n"


def _mrc_workers(workers: int | None) -> str:
    if workers is None:
        return "the command's default processes (a pool of every CPU when the runs take the compiled engines)"
    return f"{workers} process(es)"


def mrc_table(records: list[dict]) -> str:
    """``python benchmarks/mrc.py --json``: ``kvtheory mrc`` per budget and auto (one pass where exact); the peer."""
    (run,) = records
    o = run["output"]
    lines = ["| trace | process | method per policy | CPU seconds | wall seconds | peak RSS |", "| --- " * 6 + "|"]
    for name in ("mooncake", "flat"):
        t, k, peer = o[name], o[name]["kvtheory"], o[name]["kvcache_simulator"]
        rows = [("`kvtheory mrc --method per-budget`", "all per-budget", k["before_per_budget"])]
        chosen = ", ".join(f"{p} {m}" for p, m in k["method"].items())
        rows.append(("`kvtheory mrc` (auto)", chosen, k["after_auto"]))
        if "after_auto_one_process" in k:  # the runs before it had no single-process figure
            rows.append(("`kvtheory mrc --workers 1` (auto, in one process)", chosen, k["after_auto_one_process"]))
        if peer.get("available"):
            rows.append(("kvcache-simulator (C++ batch core)", "all budgets in one run", peer))
        for what, how, f in rows:
            lines.append(
                f"| {name}: {t['requests']:,} requests | {what} | {how} | {f['process_cpu_seconds']:.2f} "
                f"| {f['process_seconds']:.2f} | {f['process_peak_rss_mb']:.0f} MB |"
            )
        if not k["identical"]:
            lines.append(f"| {name} | per-budget and auto DIFFER | | | | |")
    peers = {o[n]["kvcache_simulator"].get("note") for n in ("mooncake", "flat")} - {None}
    return (
        f"Policies {o['policies']}, 8 budgets each, per-budget runs on {_mrc_workers(o['workers'])}; the curves of "
        f"every kvtheory process identical to the last miss on both traces: "
        f"{all(o[n]['kvtheory']['identical'] for n in ('mooncake', 'flat'))}."
        + "".join(f" {note}" for note in sorted(peers))
        + "\n\n"
        + "\n".join(lines)
        + f"\n\n{provenance(records)}\n"
    )


def _interval(summary: dict, digits: int) -> str:
    low, high = summary["ci95"]
    return f"{summary['mean']:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def table1_tables(records: list[dict]) -> str:
    """``python reproduce/table1.py``: the paper's Table 1 rows and ratios, one configuration per record."""
    rows = [
        "| router + eviction | engine | eviction amount | seeds | p50 latency (s) | p50 TTFT (s) | hit rate "
        "| paper p50 latency (s) | paper hit rate |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    ratios = [
        "| cache-aware + LRU over lbgr + RLT | policies | engine | eviction amount | seeds | p50 latency ratio "
        "| p50 TTFT ratio | paper |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in records:
        o = run["output"]
        engine = o["simulation_options"].get("engine", "batch")
        mfu = o["cost_model"]["mfu"]
        engine += "" if mfu == 0.5 else f", MFU {mfu:g}"
        amount = o["simulation_options"].get("evict_amount") or "shortfall"
        seeds = len(o["seeds"])
        for r in o["rows"]:
            p = r["paper"]
            rows.append(
                f"| {r['router']} + {r['eviction']} | {engine} | {amount} | {seeds} | {_interval(r['latency_p50'], 1)} "
                f"| {_interval(r['ttft_p50'], 1)} | {_interval(r['hit_rate'], 3)} | {p['latency_p50']} "
                f"| {p['hit_rate']} |"
            )
        for r in o["ratios"]:
            p = r["paper"]
            ratios.append(
                f"| {r['label']} | {r['ratio']} | {engine} | {amount} | {seeds} | {_interval(r['latency_p50'], 2)} "
                f"| {_interval(r['ttft_p50'], 2)} | {p['latency_p50']}x, {p['ttft_p50']}x |"
            )
    return "\n".join(rows) + "\n\n" + "\n".join(ratios) + f"\n\n{provenance(records)}\n"


def exact_game_table(records: list[dict]) -> str:
    """Exact values of ``kvtheory game ... --json`` against the bounds of the claims, one row per stored run: the
    universe's k = B - beta*L_max + 1 (read from the universe file the command names), the exact ratio the run
    found, and k, H_k, 2 H_k and k(B + 1)/(k + 1) evaluated exactly at that B and k."""
    from fractions import Fraction

    from kvtheory import read_workload

    def show(x: Fraction) -> str:
        return f"{x.numerator}/{x.denominator} = {float(x):.4g}" if x.denominator != 1 else str(x.numerator)

    lines = [
        "| command | B | k | what | exact ratio | k | H_k | 2 H_k | k(B+1)/(k+1) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in records:
        words = r["command"].split()
        option = {words[i]: words[i + 1] for i in range(len(words) - 1) if words[i].startswith("--")}
        out = r["output"]
        budget, batch = int(option["--budget"]), int(option.get("--batch", 1))
        k = budget - batch * read_workload(ROOT / option["--workload"]).max_length + 1
        h = sum((Fraction(1, i) for i in range(1, k + 1)), Fraction(0))
        if out["mode"] == "limit":
            what = f"{out['policy']}: asymptotic ratio"
        elif out["mode"] == "worst":
            what = f"{out['policy']}: worst, H = {out['horizon']}"
        else:
            what = f"best {out['kind']}, H = {out['horizon']}"
        ratio = out["ratio"] if out["ratio"] == "inf" else show(Fraction(out["ratio"]))
        bounds = [show(Fraction(k)), show(h), show(2 * h), show(Fraction(k * (budget + 1), k + 1))]
        lines.append(f"| `{r['command']}` | {budget} | {k} | {what} | {ratio} | " + " | ".join(bounds) + " |")
    where = sorted(
        {
            f"{r['commit']}{' with uncommitted changes' if r.get('dirty') else ''}, {r.get('recorded', '?')[:10]}"
            for r in records
        }
    )
    seconds = sum(r.get("seconds", 0) for r in records)
    return "\n".join(lines) + (
        f"\n\nRecorded by the commands of the first column ({len(records)} runs, {seconds:.0f} s in all) at commit "
        + "; ".join(where)
        + ".\n"
    )


def _cluster_setting(s: dict) -> str:
    tp = f"{s['tp']} x " if s["tp"] > 1 else ""
    return (
        f"{s['model']} on {tp}{s['gpu']} ({s['workers']} workers, B = {s['budget']:,} tokens each, a_miss = "
        f"{s['a_miss'] * 1e6:.1f} us/token, a_cached = {s['a_cached'] * 1e9:.0f} ns/token, decode "
        f"{s['decode'] * 1e3:.1f} ms/token)"
    )


def cluster_main_tables(records: list[dict]) -> str:
    """``python -m kvtheory.cluster.report --json --only main``: one table per model setting, every workload,
    router and eviction (means over the record's seeds), with each workload's offered load."""
    parts = []
    for r in (r for r in records if "main" in r["output"]):
        seeds = r["output"]["seeds"]
        for s in r["output"]["main"]["settings"]:
            lines = [
                "| workload | router | eviction | hit rate | p50 latency (s) | p95 latency (s) | p50 TTFT (s) "
                "| throughput (q/s) |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |",
            ]
            loads = []
            for w in s["workloads"]:
                loads.append(f"{w['name']} {w['offered_load_all_miss']:.2f} / {w['offered_load_best']:.2f}")
                for row in w["rows"]:
                    lines.append(
                        f"| {w['name']} | {row['router']} | {row['eviction']} | {row['hit_rate']:.3f} "
                        f"| {row['latency_p50']:.2f} | {row['latency_p95']:.2f} | {row['ttft_p50']:.2f} "
                        f"| {row['throughput_qps']:.2f} |"
                    )
            parts.append(
                f"**{_cluster_setting(s)}**, means over seeds {seeds[0]}-{seeds[-1]}:\n\n"
                + "\n".join(lines)
                + "\n\nOffered load per worker (all tokens missed / every reusable prefix hit; above 1 is overload): "
                + "; ".join(loads)
                + ".\n"
            )
    runs = [r for r in records if "main" in r["output"]]
    verdicts = [f"- {line}" for r in runs for line in r["output"]["main"]["verdicts"]]
    return (
        "\n".join(parts)
        + "\nlbgr+rlt against cache-aware+lru, row by row (ahead = better; tie within 2%):\n\n"
        + "\n".join(verdicts)
        + f"\n\n{provenance(runs)}\n"
    )


def cluster_sweeps_tables(records: list[dict]) -> str:
    """``python -m kvtheory.cluster.report --json --only sweeps``: p50 latency (s) and hit rate per swept value,
    the sweeps in the report's order whichever record holds each."""
    from kvtheory.cluster.report import SWEEPS

    runs = [r for r in records if "sweeps" in r["output"]]
    found = {name: (rows, r["output"]["seeds"]) for r in runs for name, rows in r["output"]["sweeps"].items()}
    parts = []
    for name in sorted(found, key=list(SWEEPS).index):
        rows, seeds = found[name]
        if name == "forgetting":
            lines = ["| q/s | forgetting | p50 latency (s) | hit rate |", "| --- | --- | --- | --- |"]
            lines += [
                f"| {x['rate']} | {x['forgetting']} | {x['latency_p50']:.2f} | {x['hit_rate']:.3f} |" for x in rows
            ]
            title = "LBGR's forgetting factor, lbgr + rlt"
        elif name == "thresholds":
            lines = ["| cache_threshold | balance_abs | p50 latency (s) | hit rate |", "| --- | --- | --- | --- |"]
            lines += [
                f"| {x['cache_threshold']} | {x['balance_abs']:g} | {x['latency_p50']:.2f} | {x['hit_rate']:.3f} |"
                for x in rows
            ]
            title = "cache-aware's thresholds (balance_rel 1.0001), cache-aware + lru"
        else:
            labels = list(dict.fromkeys(x["label"] for x in rows))
            cell = {(x["value"], x["label"]): x for x in rows}
            lines = [f"| {name} | " + " | ".join(labels) + " |", "|" + " --- |" * (len(labels) + 1)]
            for value in dict.fromkeys(x["value"] for x in rows):
                at = [cell[(value, label)] for label in labels]
                lines.append(
                    f"| {value} | " + " | ".join(f"{x['latency_p50']:.2f} ({x['hit_rate']:.3f})" for x in at) + " |"
                )
            title = f"{SWEEPS[name]} p50 latency in seconds (hit rate)"
        shown = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}-{seeds[-1]}"
        parts.append(f"*{title}* ({shown}):\n\n" + "\n".join(lines) + "\n")
    return "\n".join(parts) + f"\n{provenance(runs)}\n"


def cluster_offline_table(records: list[dict]) -> str:
    """``python -m kvtheory.cluster.report --json --only offline``: makespans over the best lower bound."""
    (run,) = [r for r in records if "offline" in r["output"]]
    o = run["output"]["offline"]
    b = o["bounds"]
    lines = ["| router | eviction | makespan (s) | ratio to bound | hit rate |", "| --- | --- | --- | --- | --- |"]
    lines += [
        f"| {x['router']} | {x['eviction']} | {x['makespan']:.1f} | {x['ratio']:.3f} | {x['hit_rate']:.3f} |"
        for x in o["rows"]
    ]
    return (
        f"Lower bounds: work/M = {b['work_over_m']:.1f} s, largest query = {b['largest_query']:.2f} s.\n\n"
        + "\n".join(lines)
        + f"\n\n{provenance([run])}\n"
    )


def model_types_table(records: list[dict]) -> str:
    """``python reproduce/model_types.py``: per model config and KV dtype, the cost model and the gsp runs."""
    parts = []
    for r in records:
        o = r["output"]
        s = o["setting"]
        pairs = s["pairs"]
        head = "| model | kind | params (total / active) | KV dtype | KV bytes/token | GPUs per worker | B (tokens) "
        head += "| a_miss (us/token) | " + " | ".join(f"{p}: hit rate, p50 TTFT (s), p50 latency (s)" for p in pairs)
        lines = [head + " |", "| --- " * (8 + len(pairs)) + "|"]
        for m in o["models"]:
            params = f"{m['total_params'] / 1e9:.1f} B / {m['active_params'] / 1e9:.1f} B"
            start = f"| {m['model']} | {m['kind']} | {params} | {m['kv_dtype']} | {m['kv_bytes_per_token']:,} "
            if not m["fits"]:
                lines.append(start + "| does not fit on 8 | - | - | " + " | ".join("-" for _ in pairs) + " |")
                continue
            gpus = f"{m['tp']} ({m['memory_per_worker'] / 1e9:.0f} GB)"
            runs = [m["runs"][p] for p in pairs]
            shown = [f"{x['hit_rate']:.3f}, {x['ttft_p50']:.3g}, {x['latency_p50']:.3g}" for x in runs]
            lines.append(start + f"| {gpus} | {m['budget']:,} | {m['a_miss'] * 1e6:.1f} | " + " | ".join(shown) + " |")
        blocks = f", caches of whole blocks of {s['block_size']} tokens" if s.get("block_size", 1) > 1 else ""
        parts.append(
            f"**{s['gpu']}**{blocks}: {s['workload']}, {s['queries']:,} queries, {s['tokens']:,} tokens (prompts of "
            f"{s['mean_prompt']:,.0f} tokens on average, at most {s['max_prompt']:,}), {s['rate']}, output "
            f"{s['output_len']} tokens, {s['workers']} workers, seed {s['seed']}; the fewest GPUs per worker that "
            f"leave B >= {s['min_budget']:,} tokens:\n\n" + "\n".join(lines) + "\n"
        )
    return "\n".join(parts) + f"\n{provenance(records)}\n"


def engine_locks_table(records: list[dict]) -> str:
    """``python reproduce/engine_locks.py``: served minus locked, mean paired difference [95% interval]."""
    lines = [
        "| eviction | seeds | hit rate | p50 latency (s) | p50 TTFT (s) | seeds with identical hit rates |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in records:
        for res in r["output"]["results"]:
            d = res["served_minus_locked"]
            seeds = len(res["runs"]["served"])
            cells = [
                f"{d[m]['mean_difference']:+.4f} [{d[m]['ci95'][0]:+.4f}, {d[m]['ci95'][1]:+.4f}]"
                for m in ("hit_rate", "latency_p50", "ttft_p50")
            ]
            lines.append(
                f"| {res['eviction']} | {seeds} | " + " | ".join(cells) + f" | {d['hit_rate']['identical_seeds']} |"
            )
    setting = records[0]["output"]["setting"]
    return f"{setting}:\n\n" + "\n".join(lines) + f"\n\n{provenance(records)}\n"


def catalog_tables(records: list[dict]) -> str:
    """``kvtheory costmodel --list --json``: the GPU table and the model table the cost model reads (KV bytes
    per token by kvtheory's own ModelSpec, from the listed fields)."""
    from urllib.parse import urlparse

    from kvtheory.cluster.costmodel import ModelSpec

    (run,) = records
    o = run["output"]
    lines = [
        "| GPU | bf16 TFLOP/s | fp8 TFLOP/s | memory (GB) | bandwidth (TB/s) | source |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for g in o["gpus"]:
        fp8 = f"{g['peak_fp8_flops'] / 1e12:g}" if g["peak_fp8_flops"] else "none"
        lines.append(
            f"| {g['name']} | {g['peak_bf16_flops'] / 1e12:g} | {fp8} | {g['hbm_bytes'] / 1e9:g} "
            f"| {g['hbm_bandwidth'] / 1e12:g} | {urlparse(g['source']).netloc.removeprefix('www.')} |"
        )
    models = [
        "| model | kind | layers | KV bytes/token | total params | active params | weights |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in o["models"]:
        mixture = f"MoE {m['experts']}, {m['experts_per_token']} per token" if m["experts"] else "dense"
        kv = ModelSpec(**m).kv_bytes_per_token
        models.append(
            f"| {m['name']} | {mixture}, {m['attention'].upper()} | {m['layers']} | {kv:,} ({m['kv_dtype']}) "
            f"| {m['total_params'] / 1e9:.2f} B | {m['active_params'] / 1e9:.2f} B | {m['weight_dtype']} |"
        )
    return "\n".join(lines) + "\n\n" + "\n".join(models) + f"\n\n{provenance(records)}\n"


def page_size_table(records: list[dict]) -> str:
    """``python reproduce/page_size.py``: hit rates of lru and OPT at each block size, per workload and budget; then
    the miss-ratio curves in blocks of vllm, lru, rlt and OPT side by side on the Mooncake-format trace, one table
    per block size (hit rates, %)."""
    (run,) = records
    output = run["output"]
    sizes = output["block_sizes"]
    names = {"vllm": "vllm", "lru": "lru", "fif": "OPT", "rlt": "rlt", "opt": "OPT"}
    heads = [f"{names[p]} b = {b}" for p in ("lru", "fif") for b in sizes]
    lines = [f"| workload | B (tokens) | B / distinct | {' | '.join(heads)} |", "|" + " --- |" * (3 + len(heads))]
    cells = {(r["workload"], r["budget"], r["policy"], r["block_size"]): r for r in output["rows"]}
    for workload, budget in dict.fromkeys((r["workload"], r["budget"]) for r in output["rows"]):
        row = [cells[(workload, budget, p, b)] for p in ("lru", "fif") for b in sizes]
        share = budget / row[0]["distinct_tokens"]
        rates = " | ".join(f"{100 * r['hit_rate']:.2f}%" for r in row)
        lines.append(f"| {workload} ({row[0]['queries']} queries, {row[0]['tokens']:,} tokens) | {budget:,} | "
                     f"{share:.2f} | {rates} |")  # fmt: skip
    for curve in output["curves"]:
        policies = [p for p in ("vllm", "lru", "rlt", "opt") if p in curve["hit_rate"]]
        heads = [names[p] for p in policies]
        lines += [
            "",
            f"| b = {curve['block_size']}: B (tokens) | {' | '.join(heads)} |",
            "|" + " --- |" * (1 + len(heads)),
        ]
        for i, budget in enumerate(curve["budgets"]):
            rates = " | ".join(f"{100 * curve['hit_rate'][p][i]:.2f}%" for p in policies)
            lines.append(f"| {budget:,} | {rates} |")
    return "\n".join(lines) + f"\n\n{provenance(records)}\n"


def _hit_rate(row: dict) -> str:
    return f"{100 * row['hit_rate']:.2f}%"


def predictions_serving_tables(records: list[dict]) -> str:
    """``python reproduce/predictions_serving.py``: per workload and budget, the learned predictor's eta and
    eta / OPT, and the hit rates of OPT, lru, rlt and every policy that follows predictions told by learned; the
    same policies told by the oracle; then the cluster's hit rate, TTFT and latency per eviction policy."""
    (run,) = records
    output = run["output"]
    tables = output["tables"]
    told = [r["policy"].split("@")[0] for r in tables[0]["rows"] if r["policy"].endswith("@learned")]
    lines = [
        f"| workload | b | B (tokens) | eta (learned) | eta / OPT | OPT | lru | rlt | {' | '.join(told)} |",
        "|" + " --- |" * (8 + len(told)),
    ]
    oracle = [f"| workload | b | B (tokens) | OPT | {' | '.join(told)} |", "|" + " --- |" * (4 + len(told))]
    for t in tables:
        rows = {r["policy"]: r for r in t["rows"]}
        eta, opt = rows[f"{told[0]}@learned"]["eta"], rows["opt"]["misses_in_eta_units"]
        start = f"| {t['workload']} ({t['queries']} queries, {t['tokens']:,} tokens) | {t['block_size']}"
        start += f" | {t['budget']:,}"
        shown = " | ".join(_hit_rate(rows[name]) for name in ["opt", "lru", "rlt"] + [f"{p}@learned" for p in told])
        lines.append(f"{start} | {eta:,.0f} | {eta / opt:.1f} | {shown} |")
        shown = " | ".join(_hit_rate(rows[name]) for name in ["opt"] + [f"{p}@oracle" for p in told])
        oracle.append(f"{start} | {shown} |")
    c = output["cluster"]
    cluster = [
        "| eviction | hit rate | TTFT mean (s) | TTFT p95 (s) | latency mean (s) | latency p95 (s) | eta |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in c["runs"]:
        eta = f"{r['eta']:,.0f}" if "eta" in r else ""
        cluster.append(
            f"| {r['policy']} | {100 * r['hit_rate']:.2f}% | {r['ttft_mean']:.3f} | {r['ttft_p95']:.3f} "
            f"| {r['latency_mean']:.3f} | {r['latency_p95']:.3f} | {eta} |"
        )
    head = (
        f"Cluster: {c['workers']} workers ({c['model']} on {c['tp']} x {c['gpu']} each) of B = {c['budget']:,} "
        f"tokens, router {c['router']}, {c['queries']} queries of chat-blocks with their arrival times:"
    )
    parts = ["\n".join(lines), "Told by the oracle:\n\n" + "\n".join(oracle), head + "\n\n" + "\n".join(cluster)]
    return "\n\n".join(parts) + f"\n\n{provenance(records)}\n"


def prediction_bounds_tables(records: list[dict]) -> str:
    """``python reproduce/prediction_bounds.py``: ALG / OPT of each policy that follows predictions told by the
    oracle, per workload; then, on cyclic with adversarial predictions, each one's ratio against its robust bound."""
    (run,) = records
    output = run["output"]
    names = list(output["consistency"][0]["ratio"])
    lines = [f"| workload | B | OPT | {' | '.join(names)} |", "|" + " --- |" * (3 + len(names))]
    for row in output["consistency"]:
        params = ", ".join(f"{key} = {value}" for key, value in row["params"].items())
        ratios = " | ".join(f"{row['ratio'][name]:.4f}" for name in names)
        lines.append(f"| {row['workload']} ({params}) | {row['budget']:,} | {row['opt']:,} | {ratios} |")
    r = output["robustness"]
    robust = [
        "| policy | mean ratio | range | bound | held |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in r["rows"]:
        if "bound_value" in row:
            bound = f"{'>=' if row['kind'] == 'lower' else '<='} {row['bound']} = {row['bound_value']:.3f}"
        elif "worst_margin" in row:
            bound = f"each run <= {row['bound']} (worst run at {row['worst_margin']:.2f} of it)"
        else:
            bound = ""
        held = "" if "within" not in row else ("yes" if row["within"] else "NO")
        robust.append(
            f"| {row['policy']} | {row['mean']:.3f} | {row['min']:.3f} .. {row['max']:.3f} | {bound} | {held} |"
        )
    head = (
        f"With `adversarial` predictions on {r['workload']} (k = {r['k']}, L = {r['params']['L']}, B = {r['budget']}, "
        f"OPT = {r['opt']:,}), {r['seeds']} seeds:"
    )
    return "\n".join(lines) + f"\n\n{head}\n\n" + "\n".join(robust) + f"\n\n{provenance(records)}\n"


RENDERERS: dict[str, Callable[[list[dict]], str]] = {
    "claims-table": claims_table,
    "claims-summary": claims_summary,
    "claim-findings": claim_findings,
    "exact-game-table": exact_game_table,
    "costmodel-table": costmodel_table,
    "batched-optimum-table": batched_optimum_table,
    "sweeps-table": sweeps_table,
    "mip-backends-table": mip_backends_table,
    "game-sizes-table": game_sizes_table,
    "evict-amount-table": evict_amount_table,
    "game-reach": game_reach,
    "traces-table": traces_table,
    "single-worker-table": single_worker_table,
    "mip-scaling-table": mip_scaling_table,
    "cluster-simulation-table": cluster_simulation_table,
    "cluster-mip-table": cluster_mip_table,
    "flat-trace-table": flat_trace_table,
    "mrc-table": mrc_table,
    "first-run-table": first_run_table,
    "predictive-table": predictive_table,
    "startup-table": startup_table,
    "table1-tables": table1_tables,
    "cluster-main-tables": cluster_main_tables,
    "cluster-sweeps-tables": cluster_sweeps_tables,
    "cluster-offline-table": cluster_offline_table,
    "model-types-table": model_types_table,
    "engine-locks-table": engine_locks_table,
    "catalog-tables": catalog_tables,
    "page-size-table": page_size_table,
    "predictions-serving-tables": predictions_serving_tables,
    "prediction-bounds-tables": prediction_bounds_tables,
}


# -- rendering ------------------------------------------------------------------------------------------


def render_text(text: str) -> str:
    """``text`` with every generated block drawn again from its stored results."""

    def draw(match: re.Match) -> str:
        renderer = RENDERERS[match["renderer"]]
        source = ROOT / match["source"] if match["source"] else None
        if source is not None and not source.exists():
            raise SystemExit(f"docs_results: {match['source']} does not exist: store it first with `record`")
        records = read_records(source) if source is not None else []
        return match["head"] + renderer(records) + match["tail"]

    return BLOCK.sub(draw, text)


def blocks(text: str) -> list[str]:
    """The renderer names of the generated blocks of a page."""
    return [m["renderer"] for m in BLOCK.finditer(text)]


def render(check: bool = False) -> list[str]:
    """Render every page; return the pages that differed (and, unless ``check``, were rewritten)."""
    changed = []
    for page in PAGES:
        path = ROOT / page
        if not path.exists():
            continue
        text = path.read_text()
        new = render_text(text)
        if new != text:
            changed.append(page)
            if not check:
                path.write_text(new)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="docs_results", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    rec = sub.add_parser("record", help="run a command and store its JSON output in docs/results/NAME.jsonl")
    rec.add_argument("name")
    rec.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    ren = sub.add_parser("render", help="rewrite the generated blocks of the docs from the stored results")
    ren.add_argument("--check", action="store_true", help="change nothing; exit 1 when a page differs")
    args = parser.parse_args(argv)
    if args.action == "record":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not command:
            parser.error("record needs a command after --")
        entry = record(args.name, command)
        print(f"stored {entry['command']} ({entry['seconds']} s) in docs/results/{args.name}.jsonl")
        return 0
    changed = render(check=args.check)
    for page in changed:
        print(f"{page}: {'differs from its stored results' if args.check else 'rendered'}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
