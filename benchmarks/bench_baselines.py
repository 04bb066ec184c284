"""The exploration baselines of issue 34: speed of long interactions, and PSRL's schedules.

* **speed**: seconds per test MDP and steps per second of a whole interaction, numba
  cache warm (compilation excluded), best of ``--repeats`` passes:
  - PSRL's episodic form on DeepSea-50, 10,000 episodes of H = 50 steps (target ≤ 10 s per
    test MDP), uniform and accurate priors;
  - PSRL's episodic form on DeepSea-25 and DeepSea-10 episodic (10,000 episodes) against
    Colosseum's own PSRL timed with its code (issue 34: 399 and 758 steps/s; target
    ≥ 100×), and UCRL2 and Q-learning-UCB on the same interactions;
  - UCRL2 continuing on RiverSwim-25 and DeepSea-20, 10⁵ steps.
  The players are given an Episode with ``episode_length`` H (the runner's episodic test
  sets come from another part of issue 34).
* **schedules**: why PSRL's doubling rule (Ouyang et al. 2017) scored so little on
  RiverSwim-12 (issue 34): mean undiscounted and discounted return of the continuing
  PSRL with ``schedule=doubling`` and ``fixed`` periods 1, 5, 10, 20, 40, and its
  samples per trajectory, on RiverSwim-12, RiverSwim-6, Chain, GC, GDL and Grid, uniform
  priors, T = 250 (the paper's protocol) and 2,000, 30 test MDPs.

    .venv/bin/python benchmarks/bench_baselines.py [--repeats 3] [--only speed|schedules]

Writes ``benchmarks/results/baselines.json`` and ``baselines.md``. The JSON says
``"calibration": false``: its records are episodic interactions, which the cost model's
records (continuing, one horizon) do not describe yet.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from bbrlcore import __version__, agents
from bbrlcore import protocol as E
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import families as F

RESULTS = Path(__file__).parent / "results"
#: Colosseum's PSRL on its episodic DeepSea, steps per second (issue 34, timed with its
#: code on this machine class).
COLOSSEUM_STEPS_PER_S = {10: 758.0, 25: 399.0}


def interaction(name: str, raw: dict, family: str, size: int, prior_kind: str, T: int,
                H: int, n_mdps: int, repeats: int, **extra) -> dict:
    """Seconds per test MDP of ``name`` over ``T`` steps (episodes of ``H``; 0:
    continuing), best of ``repeats`` passes, and what the interactions earned."""
    p = F.make(family, size=size, **extra)
    ts = E.new_test_set(p.test, n_mdps, 0.95, T, seed=0)
    ep = dataclasses.replace(ts.episode(), episode_length=H)
    alg = agents.get(name)
    play = alg.make_player(p.prior(prior_kind), alg.parse_params(raw), None, ep)
    play(np.ascontiguousarray(ts.mdps[0]), 0, np.empty(T))  # compiled (or loaded)
    best = np.full(n_mdps, np.inf)
    returns = np.zeros(n_mdps)
    learned = []
    for _ in range(repeats):
        for i in range(n_mdps):
            mdp = np.ascontiguousarray(ts.mdps[i])
            r = np.empty(T)
            t0 = time.perf_counter()
            _, counters = play(mdp, 100 + i, r)
            best[i] = min(best[i], time.perf_counter() - t0)
            returns[i] = r.sum()
            if H:
                per = r.reshape(-1, H).sum(axis=1) if T % H == 0 else r[:T - T % H].reshape(
                    -1, H).sum(axis=1)
                learned.append(float(per[-100:].mean()))
    s = float(best.mean())
    return {"algorithm": name, "params": raw, "test": p.short_name,
            "prior": p.prior(prior_kind).short_name, "horizon": T, "episode_length": H,
            "n_mdps": n_mdps, "s_per_mdp": s, "steps_per_s": T / s,
            "mean_undiscounted_return": float(returns.mean()),
            "last_100_episodes_mean_return": (float(np.mean(learned[-n_mdps:]))
                                              if learned else None)}


def speed(repeats: int) -> list[dict]:
    rows = []
    for prior in ("uniform", "accurate"):
        rows.append(interaction("psrl", {}, "deepsea", 50, prior, 50 * 10_000, 50, 3,
                                repeats))
        print(_line(rows[-1]), flush=True)
    for N in (25, 10):
        for name, raw in (("psrl", {}), ("ucrl2", {}), ("q-learning-ucb", {})):
            rows.append(interaction(name, raw, "deepsea", N, "uniform", N * 10_000, N, 3,
                                    repeats))
            col = COLOSSEUM_STEPS_PER_S[N]
            rows[-1]["colosseum_psrl_steps_per_s"] = col
            rows[-1]["factor_vs_colosseum_psrl"] = rows[-1]["steps_per_s"] / col
            print(_line(rows[-1]), flush=True)
    for family, size in (("riverswim", 25), ("deepsea", 20)):
        rows.append(interaction("ucrl2", {}, family, size, "uniform", 100_000, 0, 3, repeats))
        print(_line(rows[-1]), flush=True)
    return rows


def _line(r: dict) -> str:
    extra = (f", ×{r['factor_vs_colosseum_psrl']:.0f} Colosseum's PSRL"
             if "factor_vs_colosseum_psrl" in r else "")
    return (f"{r['algorithm']:15s} {r['test']:14s} {r['prior']:15s} T={r['horizon']:>7,d} "
            f"H={r['episode_length']:>3d}: {r['s_per_mdp']:7.3f} s per MDP, "
            f"{r['steps_per_s']:>12,.0f} steps/s{extra}")


SCHEDULES = [{"schedule": "doubling"}] + [{"schedule": "fixed", "period": k}
                                          for k in (1, 5, 10, 20, 40)]


def schedules() -> list[dict]:
    problems = [("riverswim", 12), ("riverswim", 6), ("chain", None), ("GC", None),
                ("GDL", None), ("Grid", None)]
    rows = []
    for family, size in problems:
        if size is None and family in D.BUILTINS:
            test, prior = D.builtin(family), D.builtin("U" + family)
        else:
            p = F.make(family, size=size) if size else F.make(family)
            test, prior = p.test, p.prior("uniform")
        for T in (250, 2000):
            ts = E.new_test_set(test, 30, 0.95, T, seed=0)
            for raw in SCHEDULES:
                alg = agents.get("psrl")
                play = alg.make_player(prior, alg.parse_params(raw), None, ts.episode())
                und, disc, samples = [], [], []
                for i in range(ts.n_mdps):
                    r = np.empty(T)
                    ret, c = play(np.ascontiguousarray(ts.mdps[i]), 1000 + i, r)
                    und.append(r.sum())
                    disc.append(ret)
                    samples.append(int(c[0]))
                rows.append({"test": test.short_name, "prior": prior.short_name,
                             "horizon": T, "params": raw,
                             "mean_undiscounted_return": float(np.mean(und)),
                             "mean_discounted_return": float(np.mean(disc)),
                             "mean_samples": float(np.mean(samples))})
                print(f"{test.short_name:13s} T={T:5d} {_cfg(raw):12s} "
                      f"undiscounted {np.mean(und):9.2f} discounted {np.mean(disc):7.3f} "
                      f"samples {np.mean(samples):7.1f}", flush=True)
    return rows


def _cfg(raw: dict) -> str:
    return raw["schedule"] if raw["schedule"] == "doubling" else f"fixed {raw['period']}"


def markdown(out: dict) -> str:
    lines = [f"# Exploration baselines (issue 34), {out['meta']['date']}", "",
             f"bbrlcore {out['meta']['bbrlcore']}, {out['meta']['machine']}; best of "
             f"{out['meta']['repeats']} passes, numba cache warm. Written by "
             "`benchmarks/bench_baselines.py`.", ""]
    if out.get("speed"):
        lines += ["## Speed of long interactions", "",
                  "| algorithm | test | prior | T | H | s per MDP | steps/s | × Colosseum's PSRL "
                  "| last 100 episodes' mean return |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in out["speed"]:
            f = (f"{r['factor_vs_colosseum_psrl']:,.0f}"
                 if "factor_vs_colosseum_psrl" in r else "")
            last = r["last_100_episodes_mean_return"]
            lines.append(f"| {r['algorithm']} | {r['test']} | {r['prior']} | {r['horizon']:,} "
                         f"| {r['episode_length']} | {r['s_per_mdp']:.3f} | "
                         f"{r['steps_per_s']:,.0f} | {f} | "
                         f"{'' if last is None else f'{last:.3f}'} |")
        lines += ["", "Colosseum's PSRL (its own code, issue 34): 399 steps/s on its "
                  "DeepSea-25 episodic, 758 on DeepSea-10. Its DeepSea is another problem "
                  "(README, families against their peers), of the same size and episode "
                  "length.", ""]
    if out.get("schedules"):
        lines += ["## PSRL's schedules in a continuing interaction", "",
                  "Mean undiscounted return (mean samples per trajectory) over 30 test MDPs, "
                  "uniform priors.", ""]
        cfgs = [_cfg(c) for c in SCHEDULES]
        lines += ["| test | T | " + " | ".join(cfgs) + " |",
                  "|---|---|" + "---|" * len(cfgs)]
        by: dict = {}
        for r in out["schedules"]:
            by.setdefault((r["test"], r["horizon"]), {})[_cfg(r["params"])] = r
        for (test, T), row in by.items():
            cells = [f"{row[c]['mean_undiscounted_return']:.1f} "
                     f"({row[c]['mean_samples']:.0f})" for c in cfgs]
            lines.append(f"| {test} | {T} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=("speed", "schedules"))
    args = ap.parse_args()
    path = RESULTS / "baselines.json"
    out = json.loads(path.read_text()) if path.exists() and args.only else {}
    out["meta"] = {"calibration": False, "bbrlcore": __version__,
                   "date": time.strftime("%Y-%m-%d"), "repeats": args.repeats,
                   "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
                   "python": sys.version.split()[0]}
    if args.only in (None, "speed"):
        out["speed"] = speed(args.repeats)
    if args.only in (None, "schedules"):
        out["schedules"] = schedules()
    RESULTS.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    (RESULTS / "baselines.md").write_text(markdown(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
