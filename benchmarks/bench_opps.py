"""Benchmark: OPPS-DS offline training time and online time of the learned agent.

For each prior (GC, GDL, Grid) and configuration (F2 with n_draws = 500, F3 with
n_draws = 1250; c = 660, gamma = 0.95, T = 250): the training time (best and median of
``--repeat`` trainings with seeds 1..repeat, numba compiled beforehand) and the online time
per trajectory of the learned agent (median and mean over ``--n-mdps`` MDPs drawn from the
prior beforehand, one ``play`` call each, timed like the runner does). Original C++
(spec/issue 3, GC): F2 trains in 4.0 s and plays 6.1 ms/trajectory; F3 14.5 s and 12.2 ms.

Usage::

    python benchmarks/bench_opps.py [--repeat 3] [--n-mdps 200]

writes ``benchmarks/results/opps_ds.json`` and ``opps_ds.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bbrlcore.agents import get
from bbrlcore.agents.base import Episode, TrainContext
from bbrlcore.mdp import distributions as D

HERE = Path(__file__).resolve().parent
CONFIGS = [("F2", 500), ("F3", 1250)]
ORIGINAL = {("GC", "F2"): (4.0, 6.1), ("GC", "F3"): (14.5, 12.2)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n-mdps", type=int, default=200)
    ap.add_argument("--priors", nargs="+", default=["GC", "GDL", "Grid"])
    a = ap.parse_args()
    A = get("opps-ds")
    rows = []
    for prior_name in a.priors:
        prior = D.builtin(prior_name)
        ep = Episode(prior.reward, prior.reward_std, prior.reward_type == "gaussian",
                     prior.initial_state, 0.95, 250)
        mdps = [prior.draw_mdp(np.random.default_rng([99, i])) for i in range(a.n_mdps)]
        for fs, n_draws in CONFIGS:
            params = A.parse_params({"formula_set": fs, "n_draws": n_draws})
            # compile (and generate/cache the formula set) outside the timings
            A.train(prior, A.parse_params({"formula_set": fs, "n_draws": 20}),
                    TrainContext(seed=0, horizon=5))
            times, trained = [], None
            for r in range(a.repeat):
                t0 = time.perf_counter()
                tr = A.train(prior, params, TrainContext(seed=r + 1, gamma=0.95, horizon=250))
                times.append(time.perf_counter() - t0)
                trained = trained or tr
            play = A.make_player(prior, params, trained, ep)
            play(mdps[0], 0)  # compile
            per, rets = [], []
            for i, P in enumerate(mdps):
                t0 = time.perf_counter()
                ret, _ = play(P, i)
                per.append(time.perf_counter() - t0)
                rets.append(ret)
            orig = ORIGINAL.get((prior_name, fs), (None, None))
            row = {
                "prior": prior_name, "formula_set": fs, "n_draws": n_draws,
                "agent": A.agent_id(params),
                "learned_formula": trained.info["rpn"], "learned_infix": trained.info["infix"],
                "train_s_best": round(min(times), 3),
                "train_s_median": round(statistics.median(times), 3),
                "ms_per_trajectory_median": round(1e3 * statistics.median(per), 3),
                "ms_per_trajectory_mean": round(1e3 * statistics.fmean(per), 3),
                "mean_return": round(float(np.mean(rets)), 3),
                "original_train_s": orig[0], "original_ms_per_trajectory": orig[1],
                # the keys the cost model (bbrlcore.plan.cost) reads
                "algorithm": "opps-ds", "test": prior_name,
                "ms_per_trajectory": round(1e3 * statistics.fmean(per), 3),
            }
            rows.append(row)
            print(row, file=sys.stderr, flush=True)
    res = {
        # the cost model is calibrated by bench_cost.py (one protocol over every grid)
        "meta": {"calibration": False},
        "benchmark": "OPPS-DS training (c=660, gamma=0.95, T=250) and learned agent's "
                     "online time",
        "machine": f"{platform.node()} {platform.processor() or platform.machine()}, "
                   f"{os.cpu_count()} cores (shared with other jobs: figures are noisy)",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "repeats": a.repeat, "n_mdps": a.n_mdps,
        "requirement": "GC: train and play time at most half of the original (goal: a fifth)",
        "results": rows,
    }
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "opps_ds.json").write_text(json.dumps(res, indent=2) + "\n")
    lines = [
        "# OPPS-DS: training time and online time of the learned agent",
        "",
        f"Measured {res['date']} on {res['machine']}. Training: best and median of "
        f"{a.repeat} trainings (seeds 1..{a.repeat}), compilation excluded. Online: one "
        f"`play` call per MDP over {a.n_mdps} MDPs drawn from the prior (T = 250), "
        "formula of the seed-1 training. Original: the C++ reference (GC).",
        "",
        "| prior | set | n_draws | learned formula | train best (s) | train median (s) | "
        "ms/trajectory (median) | ms/trajectory (mean) | original train (s) | "
        "original ms/trajectory |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['prior']} | {r['formula_set']} | {r['n_draws']} | `{r['learned_infix']}` | "
            f"{r['train_s_best']} | {r['train_s_median']} | {r['ms_per_trajectory_median']} | "
            f"{r['ms_per_trajectory_mean']} | {r['original_train_s'] or ''} | "
            f"{r['original_ms_per_trajectory'] or ''} |"
        )
    (HERE / "results" / "opps_ds.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
