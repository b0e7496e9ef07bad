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
    entry = {
        "command": " ".join(command),
        "commit": rev,
        "dirty": dirty,
        "recorded": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": seconds,
        "exit_status": done.returncode,
        "output": json.loads(done.stdout),
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
        )
    return "Recorded by " + "; ".join(f"{', '.join(commands)} {where}" for where, commands in groups.items()) + "."


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
    """``python benchmarks/sweep_throughput.py``: a plain loop against the local process pool."""
    (run,) = records
    o = run["output"]
    same = "yes" if o["identical_records"] else "NO"
    return (
        "| cells | plain loop | local pool | identical records | CPU seconds (loop / pool) | load average |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        f"| {o['cells']} of `{o['spec']}` | {o['sequential_cells_per_s']} cells/s ({o['sequential_s']} s) "
        f"| {o['local_pool_cells_per_s']} cells/s ({o['local_pool_s']} s, {o['workers']} processes) | {same} "
        f"| {o['sequential_cpu_s']} / {o['local_pool_cpu_s']} | {o['load_avg_before'][0]} on {o['cpus']} cores |\n\n"
        f"{provenance(records)}\n"
    )


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
    """``python benchmarks/traces.py``: whole processes on a Mooncake-format trace."""
    (run,) = records
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
    lines = ["| process | wall seconds | peak RSS |", "| --- | --- | --- |"]
    lines += [f"| {what} | {r['process_seconds']:.2f} | {r['process_peak_rss_mb']:.0f} MB |" for what, r in rows]
    return (
        f"{o['requests']:,} requests of {o['trace']['conversations']:,} conversations, {o['tokens']:,} tokens "
        f"({o['distinct_tokens']:,} distinct, {o['radix_nodes']:,} radix nodes, a {o['file_mb']} MB file), "
        f"B = {o['budget']:,}:\n\n" + "\n".join(lines) + f"\n\n{provenance(records)}\n"
    )


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
    """``python benchmarks/flat_trace.py --json``: whole processes on a flat Zipf trace, against libCacheSim."""
    (run,) = records
    o = run["output"]
    lib = o["libcachesim_lru"]
    lines = ["| process | CPU seconds | wall seconds | over libCacheSim (CPU; wall) | peak RSS | misses |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
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
        lines.append(
            f"| {what} | {e['process_cpu_seconds']:.2f} | {e['process_seconds']:.2f} | {over} "
            f"| {e['process_peak_rss_mb']:.0f} MB | {e['misses']:,} |"
        )
    if lib.get("available"):
        lines.append(
            f"| libCacheSim LRU | {lib['process_cpu_seconds']:.2f} | {lib['process_seconds']:.2f} | 1x "
            f"| {lib['process_peak_rss_mb']:.0f} MB | {lib['misses']:,} |"
        )
    tr = o["trace"]
    note = "" if lib.get("available") else " libCacheSim was not installed where this ran: no comparison."
    return (
        f"{tr['requests']:,} one-token requests, Zipf {tr['alpha']} over {tr['pages']:,} pages (seed {tr['seed']}), "
        f"B = {o['budget']:,}, {o['cores']} cores.{note}\n\n" + "\n".join(lines) + f"\n\n{provenance(records)}\n"
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
    "cluster-simulation-table": cluster_simulation_table,
    "cluster-mip-table": cluster_mip_table,
    "flat-trace-table": flat_trace_table,
    "table1-tables": table1_tables,
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
