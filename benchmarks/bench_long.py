"""Long interactions (issue 34): what a step costs along T, what recording costs, and how
large a run table of 10^6 steps is.

* ``speed``: ns per step of Random and Optimal on DeepSea-20 (accurate prior) along
  T = 10^3, 10^4, 10^5, 10^6 (the online time ``run_agent`` measures per trajectory,
  divided by T; median over the MDPs, best of ``--rounds`` rounds). Flat means a long
  interaction costs per step what a short one does.
* ``overhead``: the wall time of ``run_agent`` at T = 10^6 (checkpoints every 100 steps,
  aggregated after each trajectory from the one reused buffer, and the run table built)
  against the same trajectories played by the bare player into that buffer (no
  aggregation, no table), rounds alternating, median of the rounds.
* ``size``: the Parquet run table of 100 MDPs × 10^6 steps (Random, continuing, default
  checkpoints every 100 steps) and of 100 MDPs × 10,000 episodes of DeepSea-20 (bsuite's
  protocol, 2 × 10^5 steps: episode returns and checkpoints at every episode end), in MB.

    .venv/bin/python benchmarks/bench_long.py            # all three, ≈ 3-5 min
    .venv/bin/python benchmarks/bench_long.py --only speed

Writes ``results/long.json`` and prints a markdown summary.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bbrlcore import protocol as E
from bbrlcore.mdp import families
from bbrlcore.protocol import runner

HERE = Path(__file__).resolve().parent
PROBLEM = ("deepsea", {"size": 20})
HORIZONS = (1_000, 10_000, 100_000, 1_000_000)
#: MDPs per horizon (about 2-4 × 10^6 steps each)
N_OF = {1_000: 400, 10_000: 200, 100_000: 30, 1_000_000: 4}


def _problem():
    name, kw = PROBLEM
    p = families.make(name, **kw)
    return p, p.prior("accurate")


def speed(rounds: int) -> list[dict]:
    p, prior = _problem()
    rows = []
    for alg in ("random", "optimal"):
        agent = E.train_agent(alg, {}, prior, progress=False)
        for T in HORIZONS:
            ts = E.new_test_set(p.test, N_OF[T], 0.95, T, 0)
            best = None
            for _ in range(rounds):
                t = E.run_agent(ts, agent, progress=False)
                ns = 1e9 * statistics.median(t["online_time_s"].to_list()) / T
                best = ns if best is None else min(best, ns)
            rows.append({"algorithm": alg, "T": T, "n_mdps": ts.n_mdps,
                         "ns_per_step": round(best, 2)})
            print(f"{alg:8s} T={T:>9,}  {best:7.2f} ns/step", flush=True)
    return rows


def overhead(rounds: int) -> list[dict]:
    from bbrlcore import agents

    p, prior = _problem()
    T = 1_000_000
    ts = E.new_test_set(p.test, 4, 0.95, T, 0)
    rows = []
    for alg in ("random", "optimal"):
        agent = E.train_agent(alg, {}, prior, progress=False)
        play = agents.get(alg).make_player(prior, agent.params, runner._as_trained(agent),
                                           ts.episode())
        buf = np.empty(T)
        mdps = [np.ascontiguousarray(ts.mdps[i]) for i in range(ts.n_mdps)]
        E.run_agent(ts, agent, progress=False)  # (compiled, caches warm)
        bare, full = [], []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for i, P in enumerate(mdps):
                play(P, 100 + i, buf)
            bare.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            E.run_agent(ts, agent, progress=False)
            full.append(time.perf_counter() - t0)
        b, f = statistics.median(bare), statistics.median(full)
        rows.append({"algorithm": alg, "T": T, "n_mdps": ts.n_mdps,
                     "bare_s": round(b, 4), "run_agent_s": round(f, 4),
                     "overhead_pct": round(100 * (f - b) / b, 2)})
        print(f"{alg:8s} bare {b:.3f} s, run_agent {f:.3f} s: "
              f"{100 * (f - b) / b:+.1f} %", flush=True)
    return rows


def size() -> list[dict]:
    p, prior = _problem()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for what, kw in (("continuing T=10^6", {"horizon": 1_000_000}),
                         ("episodic E=10^4, H=20", {"horizon": 200_000,
                                                     "episode_length": 20})):
            T = kw.pop("horizon")
            ts = E.new_test_set(p.test, 100, 0.95, T, 0, **kw)
            agent = E.train_agent("random", {}, prior, progress=False)
            t = E.run_agent(ts, agent, progress=False)
            path = Path(d) / "run.parquet"
            E.write_run(t, path, {"n_mdps": ts.n_mdps})
            mb = path.stat().st_size / 1e6
            rows.append({"setting": what, "n_mdps": 100, "T": T,
                         "checkpoint_every": ts.checkpoint_every,
                         "file_mb": round(mb, 2),
                         "in_memory_mb": round(t.estimated_size() / 1e6, 2)})
            print(f"{what}: {mb:.2f} MB on disk, {t.estimated_size() / 1e6:.2f} MB in "
                  "memory", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("speed", "overhead", "size"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-o", "--output", default=str(HERE / "results" / "long.json"))
    args = ap.parse_args()
    out_path = Path(args.output)
    out = json.loads(out_path.read_text()) if out_path.exists() else {}
    out["problem"] = f"{PROBLEM[0]} {PROBLEM[1]}"
    out["date"] = time.strftime("%Y-%m-%d")
    if args.only in (None, "speed"):
        out["speed"] = speed(args.rounds)
    if args.only in (None, "overhead"):
        out["overhead"] = overhead(args.rounds)
    if args.only in (None, "size"):
        out["size"] = size()
    out_path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
