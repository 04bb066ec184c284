"""What recording every step costs (issue 28): run-table size and online time.

**Size** (``size``): real trajectories (N = 500 test MDPs, T = 250, γ = 0.95) of a spread
of agents on the paper's six experiments, written as the workflow writes them
(:func:`bbrlcore.formats.artefacts.write_artefact`: Parquet, zstd): one run table per
agent and experiment (a run job's chunk of 500 MDPs) and one merged table per
experiment, without the new columns (``rewards``, ``undiscounted_return``: the tables of
before) and with them, in several encodings of ``rewards`` (the default, zstd levels,
float64, without dictionary, byte-stream-split). The full configuration's tables
(1,560 agent configurations × 6 experiments × 500 MDPs) are extrapolated from the bytes
per row; the same on some problem families and on Gaussian rewards, whose rewards are
not a handful of values.

**Online time** (``overhead --before SRC``): the mean online time per trajectory (the
run tables' ``online_time_s``) and the wall time of ``run_agent`` of cheap agents, where
an overhead would show (Random, e-Greedy, Soft-max, BEB), on the six experiments (N =
100, T = 250), in alternating processes of the source tree ``SRC`` (before recording)
and this one, best of ``--rounds`` rounds each (the machine's speed drifts)::

    .venv/bin/python benchmarks/bench_rewards.py size
    git worktree add /tmp/before <commit-before>   # or any copy of the old src/
    .venv/bin/python benchmarks/bench_rewards.py overhead --before /tmp/before/src

Writes ``benchmarks/results/rewards_recording.json`` (its ``size`` or ``overhead`` part;
not a calibration record).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXPERIMENTS = [("GC", "GC"), ("GDL", "GDL"), ("Grid", "Grid"), ("GC", "UGC"),
               ("GDL", "UGDL"), ("Grid", "UGrid")]
#: Agents whose trajectories fill the simulated tables (learning, random and optimal
#: behaviour: regular and irregular reward sequences).
SIZE_AGENTS: list[tuple[str, dict]] = [
    ("random", {}), ("optimal", {}), ("e-greedy", {"epsilon": 0.1}),
    ("e-greedy", {"epsilon": 0.0}), ("soft-max", {"tau": 0.1}), ("beb", {"beta": 0.5}),
    ("sboss", {"epsilon": 1.0, "delta": 1.0}), ("formula", {"formula": "Q2/Q0"}),
    ("bamcp", {"K": 50, "D": 15}), ("psrl", {}), ("bolt", {"eta": 5.0}),
    ("mbie-eb", {"beta": 2.5}),
]
#: Problem families (and their priors) measured beside the paper's problems.
FAMILIES = [("DeepSea-10", "uniform"), ("RiverSwim-6", "uniform"),
            ("SimpleGrid-5", "uniform"), ("SixArms", "uniform")]
FAMILY_AGENTS = [("random", {}), ("optimal", {}), ("e-greedy", {"epsilon": 0.1}),
                 ("soft-max", {"tau": 0.1}), ("psrl", {})]
OVERHEAD_AGENTS: list[tuple[str, dict]] = [
    ("random", {}), ("e-greedy", {"epsilon": 0.1}), ("soft-max", {"tau": 0.1}),
    ("beb", {"beta": 0.5}),
]
FULL_AGENTS = 1560  # agent-experiments of the full config.yaml (260 configurations x 6)
N_MDPS, HORIZON, GAMMA = 500, 250, 0.95
OUT = Path(__file__).parent / "results" / "rewards_recording.json"

#: Encodings of the rewards column tried: name -> (pyarrow write_table options, float64).
#: The first is what bbrl writes (:func:`bbrlcore.formats.artefacts.write_artefact`,
#: ``ZSTD_LEVELS``); the tables of before were written at Arrow's default zstd level (1).
ENCODINGS: dict[str, tuple[dict, bool]] = {
    "float32, dictionary, zstd 9 (bbrl)": ({"compression_level": 9}, False),
    "float32, dictionary, zstd 1": ({"compression_level": 1}, False),
    "float32, dictionary, zstd 19": ({"compression_level": 19}, False),
    "float32, no dictionary, zstd 9": ({"use_dictionary": False, "compression_level": 9},
                                       False),
    "float32, byte-stream-split, zstd 9": (
        {"use_dictionary": False, "compression_level": 9,
         "column_encoding": {"rewards.list.element": "BYTE_STREAM_SPLIT"}}, False),
    "float64, dictionary, zstd 9": ({"compression_level": 9}, True),
}
BEFORE = {"compression_level": 1}  # the tables of before: write_artefact's level then


def _write(path: Path, table, **options) -> int:
    """Bytes of ``table`` written like :func:`write_artefact` (zstd, bbrl metadata),
    with the pyarrow ``options`` given."""
    import pyarrow.parquet as pq

    from bbrlcore.formats import artefacts

    arrow = table.to_arrow()
    meta = dict(arrow.schema.metadata or {})
    meta[artefacts.META_KEY] = json.dumps({"kind": "run", "n_mdps": N_MDPS}).encode()
    arrow = arrow.replace_schema_metadata(meta)
    pq.write_table(arrow, path, compression="zstd", **options)
    return path.stat().st_size


def _runs(pairs, agents_list, n_mdps, horizon, families=False):
    """Run tables (with rewards) of every agent on every (test, prior)."""
    from bbrlcore import protocol as E
    from bbrlcore.mdp import distributions as D
    from bbrlcore.mdp import families as F

    out = {}
    for test, prior in pairs:
        if families:
            spec, params, _ = F.parse_name(test)
            problem = F.make(spec.name, **params)
            test_d, prior_d, name = problem.test, problem.prior(prior), problem.short_name
        else:
            test_d, prior_d, name = D.builtin(test), D.builtin(prior), f"{test}-{prior}"
        ts = E.new_test_set(test_d, n_mdps, GAMMA, horizon, seed=0)
        tables = []
        for alg, params in agents_list:
            try:
                agent = E.train_agent(alg, dict(params), prior_d, seed=0, gamma=GAMMA,
                                      horizon=horizon, progress=False)
                tables.append(E.run_agent(ts, agent, progress=False))
            except Exception as exc:  # noqa: BLE001 - a configuration that cannot run here
                print(f"skip {alg} on {name}: {exc}", file=sys.stderr)
        out[name] = tables
        print(f"ran {name}: {len(tables)} agents", file=sys.stderr, flush=True)
    return out


def _gaussian(name: str):
    """The paper's distribution ``name`` with Gaussian rewards of variance 1."""
    import numpy as np

    from bbrlcore.mdp import distributions as D

    d = D.builtin(name)
    return D.FDMDistribution(f"{d.name} (Gaussian)", f"{name}g", d.theta, d.reward,
                             d.initial_state, "gaussian", np.ones_like(d.reward))


def _sizes(groups: dict, tmp: Path) -> dict:
    """Bytes before and after (each encoding) of the per-agent run tables and the
    merged tables of ``groups`` (name -> run tables)."""
    import polars as pl

    from bbrlcore.analysis import results

    new = ["rewards", "undiscounted_return"]
    tot = {"rows": 0, "chunks": 0, "merged_before": 0, "chunks_before": 0}
    for enc in ENCODINGS:
        tot[f"merged_after::{enc}"] = 0
        tot[f"chunks_after::{enc}"] = 0
    per = {}
    for name, tables in groups.items():
        if not tables:
            continue
        merged = results.merge_tables(tables)
        tot["rows"] += merged.height
        tot["chunks"] += len(tables)
        b = _write(tmp / "m0.parquet", merged.drop(new), **BEFORE)
        tot["merged_before"] += b
        row = {"rows": merged.height, "merged_before": b}
        for t in tables:
            tot["chunks_before"] += _write(tmp / "c0.parquet", t.drop(new), **BEFORE)
        for enc, (opts, f64) in ENCODINGS.items():
            def cast(t, f64=f64):
                return t.with_columns(pl.col("rewards").cast(pl.List(pl.Float64))) if f64 else t
            a = _write(tmp / "m1.parquet", cast(merged), **opts)
            tot[f"merged_after::{enc}"] += a
            row[f"merged_after::{enc}"] = a
            for t in tables:
                tot[f"chunks_after::{enc}"] += _write(tmp / "c1.parquet", cast(t), **opts)
        per[name] = row
        print(f"{name}: {merged.height} rows, merged {b} -> "
              f"{row['merged_after::' + next(iter(ENCODINGS))]} bytes",
              file=sys.stderr, flush=True)
    summary = {}
    for enc in ENCODINGS:
        summary[enc] = {
            "merged_ratio": round(tot[f"merged_after::{enc}"] / tot["merged_before"], 3),
            "chunks_ratio": round(tot[f"chunks_after::{enc}"] / tot["chunks_before"], 3),
            "bytes_per_row_before_merged": round(tot["merged_before"] / tot["rows"], 2),
            "bytes_per_row_after_merged": round(tot[f"merged_after::{enc}"] / tot["rows"], 2),
            "bytes_per_chunk_before": round(tot["chunks_before"] / tot["chunks"]),
            "bytes_per_chunk_after": round(tot[f"chunks_after::{enc}"] / tot["chunks"]),
        }
    return {"totals": tot, "per_experiment": per, "by_encoding": summary}


def _full(summary: dict) -> dict:
    """The full configuration's tables, extrapolated: 1,560 agent-experiments (260 agent
    configurations on each of the six experiments), each a run table of 500 rows, and
    six merged tables holding those 1,560 × 500 rows."""
    out = {}
    rows = FULL_AGENTS * N_MDPS
    for enc, s in summary.items():
        out[enc] = {
            "merged_GB_before": round(rows * s["bytes_per_row_before_merged"] / 1e9, 4),
            "merged_GB_after": round(rows * s["bytes_per_row_after_merged"] / 1e9, 4),
            "chunks_GB_before": round(FULL_AGENTS * s["bytes_per_chunk_before"] / 1e9, 4),
            "chunks_GB_after": round(FULL_AGENTS * s["bytes_per_chunk_after"] / 1e9, 4),
        }
    return out


def size(args) -> dict:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        paper = _sizes(_runs(EXPERIMENTS, SIZE_AGENTS, args.n_mdps, HORIZON), tmp)
        paper["full_configuration"] = _full(paper["by_encoding"])
        fam = _sizes(_runs(FAMILIES, FAMILY_AGENTS, args.n_mdps, HORIZON, True), tmp)
        from bbrlcore import protocol as E

        gauss = {}
        for name in ("GC", "Grid"):
            g = _gaussian(name)
            ts = E.new_test_set(g, args.n_mdps, GAMMA, HORIZON, seed=0)
            tables = []
            for alg, params in FAMILY_AGENTS:
                agent = E.train_agent(alg, dict(params), g, seed=0, gamma=GAMMA,
                                      horizon=HORIZON, progress=False)
                tables.append(E.run_agent(ts, agent, progress=False))
            gauss[f"{name}g"] = tables
        gaussian = _sizes(gauss, tmp)
    return {"paper": paper, "families": fam, "gaussian": gaussian,
            "n_mdps": args.n_mdps, "horizon": HORIZON,
            "agents": [f"{a} {p}" for a, p in SIZE_AGENTS]}


# ---------------------------------------------------------------------------------------
# Online time


def _time_here(n_mdps: int) -> dict:
    """Mean online ms per trajectory and wall ms per run_agent call of each agent and
    experiment, in this process's bbrlcore (one pass)."""
    from bbrlcore import protocol as E
    from bbrlcore.mdp import distributions as D

    out = {}
    for test, prior in EXPERIMENTS:
        ts = E.new_test_set(D.builtin(test), n_mdps, GAMMA, HORIZON, seed=1)
        for alg, params in OVERHEAD_AGENTS:
            agent = E.train_agent(alg, dict(params), D.builtin(prior), progress=False)
            E.run_agent(ts, agent, range(2), progress=False)  # compiled, caches warm
            best_online = best_wall = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                run = E.run_agent(ts, agent, progress=False)
                wall = time.perf_counter() - t0
                best_online = min(best_online, 1000 * float(run["online_time_s"].mean()))
                best_wall = min(best_wall, 1000 * wall)
            out[f"{agent.agent_id} {test}-{prior}"] = [best_online, best_wall]
    return out


def overhead(args) -> dict:
    here = str(Path(__file__).resolve().parents[1] / "src")
    trees = {"before": args.before, "after": here}
    best: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    for r in range(args.rounds):
        for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
            env = dict(os.environ, PYTHONPATH=trees[side])
            out = subprocess.run([sys.executable, __file__, "_time", "--n-mdps",
                                  str(args.n_mdps)], env=env, check=True,
                                 capture_output=True, text=True).stdout
            for key, (online, wall) in json.loads(out).items():
                b = best[side].setdefault(key, [float("inf"), float("inf")])
                best[side][key] = [min(b[0], online), min(b[1], wall)]
            print(f"round {r + 1} {side} done", file=sys.stderr, flush=True)
    rows = []
    for key in best["after"]:
        b, a = best["before"][key], best["after"][key]
        agent, exp = key.split(" ")
        rows.append({"agent": agent, "experiment": exp,
                     "online_ms_before": round(b[0], 5), "online_ms_after": round(a[0], 5),
                     "online_ratio": round(a[0] / b[0], 4),
                     "run_wall_ms_before": round(b[1], 3), "run_wall_ms_after": round(a[1], 3),
                     "run_wall_ratio": round(a[1] / b[1], 4)})
        print(f"{agent:28s} {exp:10s} online {b[0]:8.4f} -> {a[0]:8.4f} ms "
              f"(x{a[0] / b[0]:.3f}); run_agent {b[1]:7.1f} -> {a[1]:7.1f} ms "
              f"(x{a[1] / b[1]:.3f})")
    import statistics

    return {"rows": rows, "rounds": args.rounds, "n_mdps": args.n_mdps, "horizon": HORIZON,
            "statistic": "best of rounds (each round: best of 3 passes in one process)",
            "online_ratio_median": round(statistics.median(r["online_ratio"] for r in rows), 4),
            "online_ratio_max": max(r["online_ratio"] for r in rows),
            "run_wall_ratio_median": round(statistics.median(r["run_wall_ratio"]
                                                             for r in rows), 4)}


def random_overhead(args) -> dict:
    """Random's player with and without recording, interleaved in one process.

    Random's whole trajectory is ≈ 10 µs, so any fixed cost of recording weighs most on
    it; and between processes the machine's speed drifts by more than the 5 % to
    resolve (``overhead``'s control agents, the same code on both sides, spread by
    ±20 % on 2026-11-26). Here the player as the runner calls it (``on_rows(play)`` with a
    row of the run's rewards array) and the player Random would have without recording
    (the same kernel without the ``rewards`` argument and its store:
    :func:`_random_no_recording`, a copy of ``random_agent._trajectory``) alternate
    trajectory by trajectory on the same test MDPs and seeds, ``--rounds`` passes of N
    trajectories each: the best pass of each side, and the median of the passes'
    ratios. Random ignores its prior: GC, GDL and Grid cover the
    six experiments."""
    import numpy as np

    from bbrlcore import protocol as E
    from bbrlcore.agents import random_agent
    from bbrlcore.agents.base import on_rows
    from bbrlcore.mdp import distributions as D

    kernel = _random_no_recording()
    rows = []
    for test in ("GC", "GDL", "Grid"):
        ts = E.new_test_set(D.builtin(test), args.n_mdps, GAMMA, HORIZON, seed=1)
        ep = ts.episode()
        lay = ep.layout()
        # what the runner calls with each row of its rewards table
        play = on_rows(random_agent.make_player(D.builtin(test), {}, None, ep))
        mdps = [np.ascontiguousarray(ts.mdps[i]) for i in range(ts.n_mdps)]
        rewards = np.full((ts.n_mdps, HORIZON), np.nan)

        def player_without(ep=ep, lay=lay):
            """The player Random would have without recording, written as its own is
            (the episode's fields as the closure's variables), minus the row's check."""
            R, Rstd, gaussian, x0 = ep.R, ep.Rstd, ep.gaussian, ep.initial_state
            gamma, horizon, succ, nsucc = ep.gamma, ep.horizon, lay.succ, lay.nsucc

            def norec(mdp, seed):
                return kernel(mdp, R, Rstd, gaussian, x0, gamma, horizon, seed, succ,
                              nsucc), None

            return norec

        without = player_without()

        best = {"with": float("inf"), "without": float("inf")}
        paired = []
        pc = time.perf_counter
        for r in range(args.rounds + 1):  # (the first: compilation, caches)
            tot = {"with": 0.0, "without": 0.0}
            for k, P in enumerate(mdps):
                row = rewards[k]
                # in turn first: the second call finds the MDP in the CPU's caches
                for side in (("with", "without") if (k + r) % 2 else ("without", "with")):
                    t0 = pc()
                    if side == "with":
                        a = play(P, k, row)[0]
                    else:
                        b = without(P, k)[0]
                    tot[side] += pc() - t0
                if a != b:
                    raise SystemExit(f"{test}: the copy of Random's kernel drifted "
                                     f"({a} != {b}); update _random_no_recording")
            if r:
                for side in best:
                    best[side] = min(best[side], tot[side] / len(mdps))
                paired.append(tot["with"] / tot["without"])
        med = float(np.median(paired))
        rows.append({"test": test, "us_without": round(1e6 * best["without"], 4),
                     "us_with": round(1e6 * best["with"], 4),
                     "ratio": round(best["with"] / best["without"], 4),
                     "ratio_median": round(med, 4)})
        print(f"random {test:5s} {1e6 * best['without']:7.3f} -> {1e6 * best['with']:7.3f} "
              f"us per trajectory (x{best['with'] / best['without']:.3f} best of rounds, "
              f"x{med:.3f} median of the rounds' ratios)", file=sys.stderr)
    return {"rows": rows, "rounds": args.rounds, "n_mdps": args.n_mdps, "horizon": HORIZON,
            "statistic": "ratio: best of rounds of each side; ratio_median: the median of "
                         "each round's ratio (the machine's speed drifts between rounds, "
                         "not within one); each round alternates the two players trajectory "
                         "by trajectory",
            "ratio_max": max(r["ratio"] for r in rows),
            "ratio_median_max": max(r["ratio_median"] for r in rows)}


def _random_no_recording():
    """``random_agent._trajectory`` without its ``rewards`` argument and store."""
    import numpy as np
    from numba import njit

    from bbrlcore.agents._kernels import env_reset, env_reward_rows, env_step_rows

    @njit(error_model="numpy")
    def trajectory(P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, succ, nsucc):
        np.random.seed(seed)
        nX, nU, _ = P.shape
        x = env_reset(initial_state, nX)
        ret = 0.0
        disc = 1.0
        for _t in range(horizon):
            u = np.random.randint(0, nU)
            k = env_step_rows(P, nsucc, x, u)
            r = env_reward_rows(R, Rstd, gaussian, x, u, k)
            ret += disc * r
            disc *= gamma
            x = succ[x, u, k]
        return ret

    return trajectory


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("size", "overhead", "random", "_time"))
    ap.add_argument("--before", help="src/ of a bbrlcore tree before recording (overhead)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--n-mdps", type=int, default=None)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    if args.what == "_time":
        print(json.dumps(_time_here(args.n_mdps or 100)))
        return 0
    if args.what == "random":
        args.n_mdps = args.n_mdps or 100
        args.rounds = max(args.rounds, 40)
        part = random_overhead(args)
    elif args.what == "overhead":
        if not args.before:
            ap.error("overhead needs --before SRC (the src/ of a tree before recording)")
        args.n_mdps = args.n_mdps or 100
        part = overhead(args)
    else:
        args.n_mdps = args.n_mdps or N_MDPS
        part = size(args)
    out = Path(args.out)
    data = json.loads(out.read_text()) if out.is_file() else {}
    data.setdefault("meta", {})
    data["meta"].update({"calibration": False, "benchmark": "rewards_recording",
                         "machine": platform.machine(), "cpus": os.cpu_count(),
                         "python": platform.python_version()})
    part["date"] = time.strftime("%Y-%m-%d %H:%M")
    data[args.what] = part
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
