"""Measurements that calibrate and check the cost model (:mod:`bbrlcore.plan.cost`).

For every algorithm, a spread of configurations over its whole grid in ``config.yaml``,
extremes included (smallest ε and δ of SBOSS in both modes, largest K, C and D of BAMCP
and BFS3, the largest formula sets and budgets of OPPS-DS), on the paper's six
experiments: milliseconds per trajectory (online) and seconds of training (offline),
numba cache warm. A configuration whose trajectory would last more than ``--max-s``
seconds is measured on a shorter horizon (recorded: the model's work amounts follow the
horizon). Each record is then compared with the model's prediction made **without** that
configuration's own measurements (leave-one-configuration-out); the worst ratio per
algorithm goes to ``results/cost_model.md``.

    .venv/bin/python benchmarks/bench_cost.py [--only sboss,bfs3] [--budget 1.5] [--max-s 20]

Writes ``benchmarks/results/cost_model.json`` (records read by the cost model) and
``benchmarks/results/cost_model.md`` (the check). ``--only`` re-measures some algorithms
and keeps the others' records. ``--report`` only redoes the check from the records.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

from bbrlcore import __version__
from bbrlcore import protocol as E
from bbrlcore.mdp import distributions as D
from bbrlcore.plan import cost

RESULTS = Path(__file__).parent / "results"
EXPERIMENTS = [("GC", "GC"), ("GDL", "GDL"), ("Grid", "Grid"), ("GC", "UGC"),
               ("GDL", "UGDL"), ("Grid", "UGrid")]


def _grid(**axes) -> list[dict]:
    keys = list(axes)
    return [dict(zip(keys, v, strict=True)) for v in itertools.product(*axes.values())]


def _compat(configs: list[dict]) -> list[dict]:
    return [c for base in configs for c in (base, {**base, "compat": True})]


#: Online configurations per algorithm: the corners and a middle of each grid.
ONLINE: dict[str, list[dict]] = {
    "random": [{}],
    "optimal": [{}],
    "e-greedy": _grid(epsilon=[0.0, 0.5, 1.0]),
    "soft-max": _compat(_grid(tau=[0.05, 1.0, 25.0])),
    "beb": _compat(_grid(beta=[0.25, 2.5, 16.0])),
    "sboss": _compat(
        _grid(epsilon=[1.0, 0.001], delta=[9.0, 0.001])
        + [{"epsilon": 0.1, "delta": 1.0}, {"epsilon": 0.01, "delta": 0.1}]
        + _grid(epsilon=[1e-4, 1e-6], delta=[1e-4, 1e-6])
    ),
    "bamcp": _grid(K=[1, 500, 25000], D=[15, 50]) + [{"K": 2500, "D": 25}],
    "bfs3": _grid(K=[1, 500, 1250, 2500, 5000, 10000], C=[2, 15], D=[15, 50])
    + [{"K": 1250, "C": 5, "D": 25}],
    # beyond the paper (config.yaml's extended_algorithms)
    "psrl": [{"schedule": "doubling"}, {"schedule": "fixed", "period": 1},
             {"schedule": "fixed", "period": 50}],
    "boss": _grid(K=[1, 10], B=[1, 10]) + [{"K": 5, "B": 5}],
    "bolt": _grid(eta=[0.5, 5.0, 25.0]),
    "mbie-eb": _grid(beta=[0.5, 5.0, 25.0]),
}

#: OPPS-DS trainings (offline), per prior; the learned agents are then timed online.
OFFLINE: list[tuple[dict, tuple[str, ...] | None]] = [
    ({"formula_set": "F2", "n_draws": 50}, None),
    ({"formula_set": "F2", "n_draws": 1250}, None),
    ({"formula_set": "F3", "n_draws": 10000}, None),
    ({"formula_set": "F6", "n_draws": 7500}, None),
    ({"formula_set": "F2", "n_draws": 100000}, ("GC", "Grid", "UGrid")),
    ({"formula_set": "F2", "n_draws": 1000000}, ("GC",)),
]


def measure(ts: E.TestSet, agent: E.TrainedAgent, budget: float) -> tuple[float, int]:
    """Mean seconds per trajectory over the first MDPs, until ``budget`` seconds of
    trajectories (at least one); the better of two passes when a pass is short."""
    best = math.inf
    n_used = 0
    for _ in range(2):
        total, n = 0.0, 0
        while n < ts.n_mdps and (n == 0 or total < budget):
            run = E.run_agent(ts, agent, range(n, n + 1), progress=False)
            total += float(run["online_time_s"][0])
            n += 1
        best = min(best, total / n)
        n_used = max(n_used, n)
        if total > 5 * budget:
            break
    return best, n_used


def horizon_for(alg: str, params: dict, test: str, prior: str, max_s: float) -> int:
    """250, or a shorter horizon when a 10-step trajectory says 250 steps would take
    longer than ``max_s``."""
    ts = E.new_test_set(D.builtin(test), 1, 0.95, 10, seed=7)
    agent = E.train_agent(alg, {k: str(v) for k, v in params.items()}, D.builtin(prior),
                          horizon=10, progress=False)
    E.run_agent(ts, agent, progress=False)  # compile
    t10 = float(E.run_agent(ts, agent, progress=False)["online_time_s"][0])
    if t10 * 25 <= max_s:
        return 250
    return max(10, int(250 * max_s / (t10 * 25)))


def online(alg: str, budget: float, max_s: float, skip: set | None = None) -> list[dict]:
    rows = []
    for params in ONLINE[alg]:
        for test, prior in EXPERIMENTS:
            if skip and (alg, json.dumps(params, sort_keys=True), test, prior) in skip:
                continue
            T = horizon_for(alg, params, test, prior, max_s)
            ts = E.new_test_set(D.builtin(test), 50, 0.95, T, seed=1)
            agent = E.train_agent(alg, {k: str(v) for k, v in params.items()},
                                  D.builtin(prior), horizon=T, progress=False)
            s, n = measure(ts, agent, budget)
            rows.append({"algorithm": alg, "params": params, "agent": agent.agent_id,
                         "test": test, "prior": prior, "horizon": T, "gamma": 0.95,
                         "n_mdps": n, "ms_per_trajectory": round(1000 * s, 6)})
            print(f"{agent.agent_id:42s} {test}-{prior:6s} T={T:3d} n={n:3d} "
                  f"{1000 * s:12.3f} ms", flush=True)
    return rows


def opps(budget: float) -> list[dict]:
    rows = []
    for params, priors in OFFLINE:
        for test, prior in EXPERIMENTS:
            if priors is not None and prior not in priors:
                continue
            agent = E.train_agent("opps-ds", {k: str(v) for k, v in params.items()},
                                  D.builtin(prior), progress=False)
            rows.append({"algorithm": "opps-ds", "params": params, "agent": agent.agent_id,
                         "test": prior, "prior": prior, "horizon": 250, "gamma": 0.95,
                         "offline_s": round(agent.offline_time_s, 6),
                         "formula": agent.info.get("infix")})
            print(f"{agent.agent_id:50s} train on {prior:6s} {agent.offline_time_s:10.2f} s",
                  flush=True)
            ts = E.new_test_set(D.builtin(test), 50, 0.95, 250, seed=1)
            s, n = measure(ts, agent, budget)
            rows.append({"algorithm": "opps-ds", "params": params, "agent": agent.agent_id,
                         "test": test, "prior": prior, "horizon": 250, "gamma": 0.95,
                         "n_mdps": n, "ms_per_trajectory": round(1000 * s, 6),
                         "formula": agent.info.get("infix")})
            print(f"{agent.agent_id:50s} {test}-{prior:6s} {1000 * s:12.3f} ms "
                  f"({agent.info.get('infix')})", flush=True)
    return rows


def check(path: Path) -> str:
    """The cost model against every record of ``path`` (leave-one-configuration-out)."""
    model = cost.model()
    lines = ["# Cost model against measurements", "",
             f"Records of `{path.name}` and the other benchmark files calibrate "
             "`bbrlcore.plan.cost`; each configuration is predicted by a fit **without** its own "
             "measurements (leave-one-configuration-out). Ratio = max(predicted/measured, "
             "measured/predicted). Generated by `benchmarks/bench_cost.py`.", "",
             "| algorithm | phase | configurations | records | worst ratio (left out) | "
             "worst, the paper's six experiments (left out) | "
             "worst ratio (in sample) | median ratio (left out) |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    detail = []
    paper = {t for t, _ in EXPERIMENTS} | {p for _, p in EXPERIMENTS}
    for (alg, phase), fit in sorted(model.fits.items()):
        ratios = [cost._ratio(p, m) for _, m, _, p in fit.validation]
        on_paper = max((cost._ratio(p, m) for cfg, m, _, p in fit.validation
                        if cfg[2] in paper), default=float("nan"))
        lines.append(f"| {alg} | {phase} | {fit.n_configs} | {fit.n_records} | "
                     f"×{fit.worst_ratio:.2f} | ×{on_paper:.2f} | "
                     f"×{fit.worst_ratio_in_sample:.2f} | "
                     f"×{float(np.median(ratios)):.2f} |")
        worst = sorted(fit.validation, key=lambda v: -cost._ratio(v[3], v[1]))[:5]
        for cfg, m, _, p in worst:
            _, params, test, prior, T, _, H = cfg  # (H: episodes of H steps, 0 continuing)
            ps = ", ".join(f"{k}={v}" for k, v in params)
            setting = f"{T:,}" + (f" (H = {H})" if H else "")
            detail.append(f"| {alg} | {phase} | {ps} | {test}-{prior} | {setting} | "
                          f"{1000 * m:.4g} | {1000 * p:.4g} | ×{cost._ratio(p, m):.2f} |")
    # the problem families' size ladders (benchmarks/bench_ladder.py records): each size
    # predicted without its own record (issue 27: within x3)
    ladder = []
    for (alg, _phase), fit in sorted(model.fits.items()):
        pts = [(cfg, m, p) for cfg, m, _, p in fit.validation if cfg[2] not in paper]
        if pts:
            worst = max(pts, key=lambda v: cost._ratio(v[2], v[1]))
            med = float(np.median([cost._ratio(p, m) for _, m, p in pts]))
            ladder.append(f"| {alg} | {len(pts)} | ×{cost._ratio(worst[2], worst[1]):.2f} "
                          f"({worst[0][2]}: {1000 * worst[1]:.4g} ms measured, "
                          f"{1000 * worst[2]:.4g} predicted) | ×{med:.2f} |")
    if ladder:
        lines += ["", "The size ladders of the problem families (`bench_ladder.py`), each size "
                  "predicted without its own record:", "",
                  "| algorithm | ladder points | worst ratio (left out) | median |",
                  "|---|---:|---|---:|", *ladder]
    lines += ["", "Worst five configurations of each (ms; offline: ms of training):", "",
              "| algorithm | phase | parameters | experiment | T | measured | predicted "
              "(left out) | ratio |", "|---|---|---|---|---:|---:|---:|---:|", *detail]
    if model.skipped:
        lines += ["", f"{len(model.skipped)} records skipped (unknown algorithm or "
                  "distribution)."]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated algorithms to measure (others kept)")
    ap.add_argument("--budget", type=float, default=1.5,
                    help="seconds of trajectories per measurement (1.5)")
    ap.add_argument("--max-s", type=float, default=20.0,
                    help="longest trajectory measured on the full horizon (20 s)")
    ap.add_argument("--report", action="store_true", help="only redo the check")
    ap.add_argument("--missing", action="store_true",
                    help="measure only the online configurations without a record yet")
    args = ap.parse_args()
    path = RESULTS / "cost_model.json"
    old = json.loads(path.read_text()) if path.exists() else {"rows": []}
    if not args.report:
        todo = (args.only.split(",") if args.only else [*ONLINE, "opps-ds"])
        skip = None
        if args.missing:  # keep every record, add the configurations without one
            rows = list(old["rows"])
            skip = {(r["algorithm"], json.dumps(r.get("params", {}), sort_keys=True),
                     r["test"], r["prior"]) for r in rows if "ms_per_trajectory" in r}
            todo = [a for a in todo if a != "opps-ds"]
        else:
            rows = [r for r in old["rows"] if r["algorithm"] not in todo]
        t0 = time.perf_counter()
        for alg in todo:
            rows += opps(args.budget) if alg == "opps-ds" else online(alg, args.budget,
                                                                     args.max_s, skip)
        meta = {"benchmark": "cost_model", "bbrlcore_version": __version__,
                "date": time.strftime("%Y-%m-%d"), "machine": platform.machine(),
                "python": platform.python_version(), "budget_s": args.budget,
                "max_s": args.max_s, "minutes": round((time.perf_counter() - t0) / 60, 1)}
        RESULTS.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    report = check(path)
    (RESULTS / "cost_model.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
