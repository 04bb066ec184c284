"""Long interactions (issue 34): what a step costs along T, what recording costs, and how
large a run table of 10^6 steps is.

* ``speed``: ns per step of Random and Optimal on DeepSea-20 (accurate prior) along
  T = 10^3, 10^4, 10^5, 10^6 (each trajectory played into a reused buffer of T steps, as
  ``run_agent`` times it; the best of ``--rounds`` rounds alternating between the
  horizons; wall and CPU time). Flat means a long interaction costs per step what a
  short one does.
* ``overhead``: the wall time of ``run_agent`` at T = 10^6 (checkpoints every 100 steps,
  aggregated after each trajectory from the one reused buffer, and the run table built)
  against the same trajectories played by the bare player into that buffer (no
  aggregation, no table), rounds alternating, median of the rounds.
* ``builtins``: ns per step of every built-in at the quick preset's parameters on
  DeepSea-20 (accurate prior) at T = 250 and T = 10^5, continuing (Q-learning-UCB, which
  is episodic only, in episodes of 20 steps), one test MDP per horizon after a compiling
  run; an algorithm whose 10^5-step trajectory is expected (from 10^4 steps) to take more
  than ``--budget`` seconds is measured at 10^4 steps and says so. OPPS-DS is its learned
  agent, the fixed formula ``Q2/Q0`` (``formula``: it plays as OPPS-DS plays the formula
  it selected; its offline search is not a per-step cost).
* ``optimal`` (issue 41): ms per trajectory of Optimal, both criteria, along T = 10^4,
  10^5, 10^6 and 10^7 steps on DeepSea-4 and DeepSea-10 (continuing; the undiscounted
  criterion's backward induction holds (T + 1) × nX values: DeepSea-10 at 10^7 steps,
  8 GB, is left out), and episodic on both (10^5 and 10^6 steps in episodes of N steps):
  the best of ``--rounds`` rounds of this thread's CPU time (the machine is shared; a
  quiet machine's wall time), wall time beside. Written in the cost model's record
  format (``optimal`` below, read by :mod:`bbrlcore.plan.cost`): they calibrate its
  long-horizon prices, and ``tests/test_cost.py`` checks each figure against the model
  fitted without it.
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


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.thread_time()


def speed(rounds: int) -> list[dict]:
    """ns per step: each trajectory played by the player into a reused buffer of T steps
    (what ``run_agent`` times), rounds alternating between the horizons, the best round's
    mean, as wall time and as this thread's CPU time (the machine is shared: a long
    trajectory is preempted, a short one mostly not)."""
    from bbrlcore import agents

    p, prior = _problem()
    rows = []
    for alg in ("random", "optimal"):
        agent = E.train_agent(alg, {}, prior, progress=False)
        setups = {}
        for T in HORIZONS:
            ts = E.new_test_set(p.test, N_OF[T], 0.95, T, 0)
            play = agents.get(alg).make_player(prior, agent.params,
                                               runner._as_trained(agent), ts.episode())
            setups[T] = (play, [np.ascontiguousarray(m) for m in ts.mdps], np.empty(T))
            setups[T][0](setups[T][1][0], 0, setups[T][2])  # (compiled)
        wall: dict[int, list[float]] = {T: [] for T in HORIZONS}
        cpu: dict[int, list[float]] = {T: [] for T in HORIZONS}
        for r in range(rounds):
            for T, (play, mdps, buf) in setups.items():
                w0, c0 = _clock()
                for i, P in enumerate(mdps):
                    play(P, 1000 * r + i, buf)
                w1, c1 = _clock()
                wall[T].append(1e9 * (w1 - w0) / (T * len(mdps)))
                cpu[T].append(1e9 * (c1 - c0) / (T * len(mdps)))
        for T in HORIZONS:
            rows.append({"algorithm": alg, "T": T, "n_mdps": N_OF[T],
                         "ns_per_step_wall": round(min(wall[T]), 2),
                         "ns_per_step_cpu": round(min(cpu[T]), 2),
                         "median_wall": round(statistics.median(wall[T]), 2)})
            print(f"{alg:8s} T={T:>9,}  {min(wall[T]):7.2f} ns/step wall, "
                  f"{min(cpu[T]):7.2f} CPU (median wall {statistics.median(wall[T]):.2f})",
                  flush=True)
    return rows


def overhead(rounds: int) -> list[dict]:
    """``run_agent`` (aggregation after each trajectory, the table built) against the bare
    player into the same buffer, at T = 10^6 (checkpoints every 100 steps), rounds
    alternating; the median round, wall and process CPU time."""
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
        bare: list[tuple[float, float]] = []
        full: list[tuple[float, float]] = []
        for _ in range(rounds):
            w0, c0 = time.perf_counter(), time.process_time()
            for i, P in enumerate(mdps):
                play(P, 100 + i, buf)
            bare.append((time.perf_counter() - w0, time.process_time() - c0))
            w0, c0 = time.perf_counter(), time.process_time()
            E.run_agent(ts, agent, progress=False)
            full.append((time.perf_counter() - w0, time.process_time() - c0))
        out = {"algorithm": alg, "T": T, "n_mdps": ts.n_mdps}
        for k, name in ((0, "wall"), (1, "cpu")):
            b = statistics.median(x[k] for x in bare)
            f = statistics.median(x[k] for x in full)
            out |= {f"bare_{name}_s": round(b, 4), f"run_agent_{name}_s": round(f, 4),
                    f"overhead_{name}_pct": round(100 * (f - b) / b, 2)}
        rows.append(out)
        print(f"{alg:8s} overhead {out['overhead_wall_pct']:+.1f} % wall, "
              f"{out['overhead_cpu_pct']:+.1f} % CPU (bare {out['bare_wall_s']:.3f} s, "
              f"run_agent {out['run_agent_wall_s']:.3f} s)", flush=True)
    return rows


#: every built-in at the quick preset's first configuration (config.yaml)
BUILTINS = {
    "random": {}, "optimal": {}, "e-greedy": {"epsilon": "0.1"}, "soft-max": {"tau": "0.05"},
    "formula": {"formula": "Q2/Q0"}, "bamcp": {"K": "10", "D": "15"},
    "bfs3": {"K": "1", "C": "2", "D": "15"}, "sboss": {"epsilon": "1.0", "delta": "1.0"},
    "beb": {"beta": "2.5"}, "psrl": {}, "boss": {"K": "5", "B": "5"}, "bolt": {"eta": "5.0"},
    "mbie-eb": {"beta": "2.5"}, "ucrl2": {}, "q-learning-ucb": {},
}
EPISODIC_ONLY = {"q-learning-ucb": 20}


def builtins(budget: float) -> list[dict]:
    """ns per step of every built-in at T = 250 and 10^5 on DeepSea-20 (module
    docstring): wall time of one trajectory into a reused buffer, after a compiling one."""
    from bbrlcore import agents

    p, prior = _problem()
    rows = []
    for alg, params in BUILTINS.items():
        agent = E.train_agent(alg, params, prior, progress=False)
        H = EPISODIC_ONLY.get(alg, 0)

        def timed(T: int, seed: int, alg: str = alg, agent=agent, H: int = H) -> float:
            ts = E.new_test_set(p.test, 1, 0.95, T, 0, episode_length=H,
                                references=False)
            play = agents.get(alg).make_player(prior, agent.params,
                                               runner._as_trained(agent), ts.episode())
            P, buf = np.ascontiguousarray(ts.mdps[0]), np.empty(T)
            w0 = time.perf_counter()
            play(P, seed, buf)
            return time.perf_counter() - w0

        timed(1_000 if H else 250, 0)  # (compiled)
        short = timed(1_000 if H else 250, 1)
        T_short = 1_000 if H else 250
        mid = timed(10_000, 2)
        if mid * 10 <= budget:
            T_long, long = 100_000, timed(100_000, 3)
            note = ""
        else:
            T_long, long = 10_000, mid
            note = f"10^5 steps expected to take {mid * 10:.0f} s: measured at 10^4"
        row = {"algorithm": alg, "params": params, "episode_length": H,
               "T_short": T_short, "ns_per_step_short": round(1e9 * short / T_short, 1),
               "T_long": T_long, "ns_per_step_long": round(1e9 * long / T_long, 1),
               "s_long": round(long, 3), "note": note}
        rows.append(row)
        print(f"{alg:15s} T={T_short:>7,}: {row['ns_per_step_short']:>12,.1f} ns/step   "
              f"T={T_long:>7,}: {row['ns_per_step_long']:>12,.1f} ns/step "
              f"({long:.2f} s) {note}", flush=True)
    return rows


#: (DeepSea size, criterion, T, H) of :func:`optimal` (H: 0 continuing, else episodic)
OPTIMAL_CASES = [(n, c, T, 0) for n in (4, 10) for c in ("discounted", "undiscounted")
                 for T in (10_000, 100_000, 1_000_000, 10_000_000)
                 if not (n == 10 and c == "undiscounted" and T == 10_000_000)] + [
    (n, c, T, n) for n in (4, 10) for c in ("discounted", "undiscounted")
    for T in (100_000, 1_000_000)]


def optimal(rounds: int) -> list[dict]:
    """Optimal's ms per trajectory along T (module docstring): one player per case, one
    compiling trajectory, then ``rounds`` rounds over the cases, the best thread CPU time
    and the best wall time of each, as cost-model records."""
    from bbrlcore import agents

    setups = []
    for n, crit, T, H in OPTIMAL_CASES:
        p = families.make("deepsea", size=n)
        prior = p.prior("accurate")
        agent = E.train_agent("optimal", {"criterion": crit}, prior, horizon=T,
                              progress=False)
        ts = E.new_test_set(p.test, 1, 0.95, T, 0, episode_length=H, references=False)
        play = agents.get("optimal").make_player(prior, agent.params,
                                                 runner._as_trained(agent), ts.episode())
        P, buf = np.ascontiguousarray(ts.mdps[0]), np.empty(T)
        play(P, 0, buf)  # (compiled)
        setups.append(((n, crit, T, H), play, P, buf))
    cpu: dict[tuple, list[float]] = {c: [] for c, *_ in setups}
    wall: dict[tuple, list[float]] = {c: [] for c, *_ in setups}
    for r in range(rounds):
        for case, play, P, buf in setups:
            w0, c0 = _clock()
            play(P, 1 + r, buf)
            w1, c1 = _clock()
            cpu[case].append(c1 - c0)
            wall[case].append(w1 - w0)
    rows = []
    for (n, crit, T, H), *_ in setups:
        c, w = min(cpu[(n, crit, T, H)]), min(wall[(n, crit, T, H)])
        rows.append({"algorithm": "optimal", "params": {"criterion": crit},
                     "test": f"DeepSea-{n}", "prior": f"DeepSea-{n}", "horizon": T,
                     "gamma": 0.95, "episode_length": H,
                     "ms_per_trajectory": round(1e3 * c, 4),
                     "clock": f"thread CPU, best of {rounds}",
                     "ms_wall_best": round(1e3 * w, 4)})
        print(f"optimal {crit:12s} DeepSea-{n:<3d} T={T:>11,} H={H:<3d} "
              f"{1e3 * c:10.2f} ms CPU  {1e3 * w:10.2f} ms wall", flush=True)
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
    ap.add_argument("--only", choices=("speed", "overhead", "size", "builtins", "optimal"))
    ap.add_argument("--budget", type=float, default=120.0,
                    help="builtins: seconds a 10^5-step trajectory may take")
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
    if args.only in (None, "builtins"):
        out["builtins"] = builtins(args.budget)
    if args.only in (None, "optimal"):
        out["optimal"] = optimal(min(args.rounds, 3))
    out_path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
