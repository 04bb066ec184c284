"""PSRL's speed under Colosseum's prior (issue 42): ``+dir0.3235+rnig`` against the uniform
prior on DeepSea, episodic.

Under a Dirichlet on every next state (:mod:`bbrlcore.mdp.transition_prior`) each
episode's sample is held densely: S Gamma variates per row of the states an episode can
need (every state: all are reachable) and a backward induction over the full layout (H·S²·A
terms), where the uniform prior (on the family's support) draws and backs up a few
slots per row. For each size N: DeepSea-N (seed 0), one test MDP, ``--episodes`` episodes
of N steps (fewer under ``+dir`` for large N: ``--dir-episodes``), γ = 1; the wall time
per episode after compilation, and the episodes that found the treasure (return above
0.5; with unknown rewards of prior mean 0, the prior does not point the agent there).

    .venv/bin/python benchmarks/bench_dir_prior.py [--sizes 10 20] [--episodes 10000] \\
        [--dir-episodes 10000 1000] [--part psrl agents search]

``--part agents``: every built-in's trajectory (OPPS-DS: its offline training) on
DeepSea-10 (seed 0, one test MDP), 100 episodes of 10 steps, γ = 0.95, under
``UDeepSea-10`` and ``UDeepSea-10+dir0.3235`` (``AGENTS``: one configuration each; the
thread's CPU time of one trajectory after a first one that compiles, and its wall
time). ``--part search``: BAMCP's and BFS3's trajectories under ``+dir0.3235`` at several
K (and C, and sizes), short
(20 episodes of 10 steps): the cost model's calibration records of their work under a
prior that does not know the support (``dir_prior_search.json``, read by
:mod:`bbrlcore.plan.cost`). A part not run keeps its rows of the previous files.

Writes ``benchmarks/results/dir_prior.json`` and ``dir_prior.md`` (and
``dir_prior_search.json``).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from bbrlcore import __version__, agents
from bbrlcore import protocol as E
from bbrlcore.mdp import distributions as D

RESULTS = Path(__file__).parent / "results"
PRIORS = ("U{}", "U{}+dir0.3235+rnig")


def run(size: int, episodes: int, prior: str) -> dict:
    test = D.load_test(f"DeepSea-{size}")
    p = D.load(prior.format(f"DeepSea-{size}"))
    T = size * episodes
    ts = E.new_test_set(test, 1, 1.0, T, seed=0, episode_length=size, references=False)
    alg = agents.get("psrl")
    params = alg.parse_params({})
    alg.check_setting(params, p, 1.0, T)
    play = alg.make_player(p, params, None, ts.episode())
    r = np.empty(T)
    t0 = time.perf_counter()
    _, c = play(np.ascontiguousarray(ts.mdps[0]), 1000, r)
    dt = time.perf_counter() - t0
    found = r.reshape(episodes, size).sum(axis=1) > 0.5
    return {"size": size, "prior": p.short_name, "episodes": episodes,
            "samples": int(c[0]), "seconds": dt, "ms_per_episode": 1e3 * dt / episodes,
            "treasures": int(found.sum()),
            "first": int(np.argmax(found)) if found.any() else None}


#: One configuration of every built-in for ``--part agents`` (OPPS-DS: offline training
#: of 24 pulls of 50 steps; online it is a formula agent, as ``formula``).
AGENTS = (
    ("random", {}), ("optimal", {}), ("e-greedy", {"epsilon": "0.1"}),
    ("soft-max", {"tau": "0.1"}), ("beb", {"beta": "1"}), ("mbie-eb", {"beta": "1"}),
    ("q-learning-ucb", {}), ("ucrl2", {}), ("ucrl2", {"bound": "bernstein"}),
    ("psrl", {}), ("boss", {"K": "1", "B": "2"}), ("sboss", {"epsilon": "0.01", "delta": "0.5"}),
    ("bolt", {"eta": "10"}), ("bamcp", {"K": "200", "D": "10"}),
    ("bfs3", {"K": "30", "C": "3", "D": "10"}), ("formula", {"formula": "Q2/Q0"}),
    ("opps-ds", {"formula_set": "F2", "n_draws": "24"}),
)
AGENT_PRIORS = ("UDeepSea-10", "UDeepSea-10+dir0.3235")
#: ``--part search``: (algorithm, params, size) under +dir0.3235, 20 episodes of 10 steps.
SEARCH = tuple(
    [("bamcp", {"K": str(k), "D": "10"}, 10) for k in (50, 100, 200, 400)]
    + [("bamcp", {"K": "200", "D": "10"}, n) for n in (6, 14)]
    + [("bfs3", {"K": str(k), "C": "3", "D": "10"}, 10) for k in (15, 30, 60)]
    + [("bfs3", {"K": "30", "C": "6", "D": "10"}, 10)]
    + [("bfs3", {"K": "30", "C": "3", "D": "10"}, n) for n in (6, 14)]
)


def trajectory(algorithm: str, raw: dict, size: int, prior: str, episodes: int,
               H: int = 10, gamma: float = 0.95) -> dict:
    """The time of one trajectory (after one that compiles) of ``algorithm`` on
    DeepSea-``size`` (seed 0) under ``prior``; OPPS-DS: its offline training instead.
    The thread's CPU time (``ms_per_trajectory``, ``offline_s``: what the kernels do, not
    the waits of a shared machine) and the wall time (``wall_ms``)."""
    test = D.load_test(f"DeepSea-{size}")
    p = D.load(prior.format(f"DeepSea-{size}"))
    alg = agents.get(algorithm)
    params = alg.parse_params(raw)
    row = {"algorithm": algorithm, "params": dict(raw), "test": test.short_name,
           "prior": p.short_name, "gamma": gamma}
    if alg.train is not None:  # (OPPS-DS: offline, T = 50)
        E.train_agent(algorithm, raw, p, horizon=50, gamma=gamma, seed=1, progress=False)
        t0, w0 = time.thread_time(), time.perf_counter()
        E.train_agent(algorithm, raw, p, horizon=50, gamma=gamma, seed=0, progress=False)
        return {**row, "horizon": 50, "offline_s": time.thread_time() - t0,
                "wall_ms": 1e3 * (time.perf_counter() - w0)}
    T = H * episodes
    ts = E.new_test_set(test, 1, gamma, T, seed=0, episode_length=H, references=False)
    alg.check_setting(params, p, gamma, T)
    play = alg.make_player(p, params, None, ts.episode())
    r = np.empty(T)
    P = np.ascontiguousarray(ts.mdps[0])
    play(P, 999, r)  # compiled (or loaded) outside the timing
    t0, w0 = time.thread_time(), time.perf_counter()
    play(P, 1000, r)
    dt, wall = time.thread_time() - t0, time.perf_counter() - w0
    return {**row, "horizon": T, "episode_length": H, "ms_per_trajectory": 1e3 * dt,
            "wall_ms": 1e3 * wall}


def _label(r: dict) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in r["params"].items())
    return f"{r['algorithm']}" + (f" ({shown})" if shown else "")


def _agent_lines(rows: list[dict], meta: dict) -> list[str]:
    by: dict[str, dict[str, dict]] = {}
    for r in rows:
        by.setdefault(_label(r), {})["dir" if "+dir" in r["prior"] else "plain"] = r
    out = ["", f"## Every built-in under `+dir0.3235`, {meta['date']}", "",
           f"bbrlcore {meta['bbrlcore']}, {meta['machine']}, {meta['note']}. "
           "`bench_dir_prior.py --part agents`: DeepSea-10 (S = 102, A = 2; seed 0, one "
           "test MDP), 100 episodes of 10 steps (T = 1,000), γ = 0.95, trajectory seed "
           "1000, the thread's CPU time of one trajectory after a first one that "
           "compiles (the wall time is in the JSON); OPPS-DS: "
           "its offline training (24 pulls of 50 steps; online it is a formula agent).", "",
           "| agent | UDeepSea-10 | UDeepSea-10+dir0.3235 | ratio |", "|---|---|---|---|"]

    def shown(r: dict) -> str:
        if "offline_s" in r:
            return f"{r['offline_s']:.3f} s offline"
        ms = r["ms_per_trajectory"]
        return f"{ms:.1f} ms" if ms >= 1 else f"{ms:.2f} ms"

    def value(r: dict) -> float:
        return r["offline_s"] if "offline_s" in r else r["ms_per_trajectory"]

    for label, two in by.items():
        a, b = two.get("plain"), two.get("dir")
        ratio = f"×{value(b) / value(a):.1f}" if a and b else ""
        out.append(f"| {label} | {shown(a) if a else ''} | {shown(b) if b else ''} | "
                   f"{ratio} |")
    return out


def _search_lines(rows: list[dict], meta: dict) -> list[str]:
    out = ["", f"## BAMCP and BFS3 under `+dir0.3235` (cost-model records), {meta['date']}",
           "", f"{meta['note']}. `bench_dir_prior.py --part search` "
           "(`dir_prior_search.json`, calibration records of `bbrl estimate`): DeepSea-N, "
           "20 episodes of 10 steps (T = 200), γ = 0.95, the thread's CPU time.", "",
           "| agent | test | ms / trajectory |", "|---|---|---|"]
    for r in rows:
        out.append(f"| {_label(r)} | {r['test']} | {r['ms_per_trajectory']:.1f} |")
    return out


def _load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 20])
    ap.add_argument("--episodes", type=int, default=10_000)
    ap.add_argument("--dir-episodes", type=int, nargs="+", default=[10_000, 1_000],
                    help="episodes under +dir, one per size")
    ap.add_argument("--part", nargs="+", default=["psrl", "agents", "search"],
                    choices=["psrl", "agents", "search"], help="what to measure")
    a = ap.parse_args()
    RESULTS.mkdir(exist_ok=True)
    old = _load(RESULTS / "dir_prior.json")
    meta = {"bbrlcore": __version__, "machine": platform.machine(),
            "date": time.strftime("%Y-%m-%d"), "calibration": False}
    note = "2-core shared machine (other jobs running)"
    rows = old.get("rows", [])
    psrl_meta = {k: old.get(k, meta[k]) for k in ("bbrlcore", "machine", "date")}
    if "psrl" in a.part:
        for prior in PRIORS:
            run(4, 5, prior)  # compiled (or loaded) outside the timings
        rows = []
        for n, de in zip(a.sizes, a.dir_episodes, strict=True):
            rows.append(run(n, a.episodes, PRIORS[0]))
            rows.append(run(n, de, PRIORS[1]))
        psrl_meta = {k: meta[k] for k in psrl_meta}
    agent_rows, agent_meta = old.get("agents", []), old.get("agents_meta", {})
    if "agents" in a.part:
        agent_rows = [trajectory(alg, raw, 10, prior, 100)
                      for alg, raw in AGENTS for prior in AGENT_PRIORS]
        for r in agent_rows:
            print(_label(r), r["prior"], r.get("ms_per_trajectory", r.get("offline_s")))
        agent_meta = {**meta, "note": note}
    (RESULTS / "dir_prior.json").write_text(json.dumps(
        {**psrl_meta, "calibration": False, "meta": {"calibration": False},  # (not a
         # calibration of the cost model: bbrlcore.plan.cost reads meta.calibration)
         "rows": rows, "agents_meta": agent_meta,
         "agents": agent_rows}, indent=1) + "\n")
    search_path = RESULTS / "dir_prior_search.json"
    search = _load(search_path)
    if "search" in a.part:
        recs = [trajectory(alg, raw, n, "U{}+dir0.3235", 20) for alg, raw, n in SEARCH]
        for r in recs:
            print(_label(r), r["test"], r["ms_per_trajectory"])
        search = {"bbrlcore": __version__, "machine": platform.machine(),
                  "date": meta["date"], "note": note, "records": recs}
        search_path.write_text(json.dumps(search, indent=1) + "\n")
    lines = [f"# PSRL under Colosseum's prior on DeepSea (issue 42), {psrl_meta['date']}", "",
             f"bbrlcore {psrl_meta['bbrlcore']}, {psrl_meta['machine']}. Written by "
             "`benchmarks/bench_dir_prior.py`: PSRL's episodic form, one test MDP of "
             "DeepSea-N (seed 0), episodes of N steps, trajectory seed 1000, wall time "
             "after compilation (2 cores shared with other jobs: ±20 %).", "",
             "| N | prior | episodes | ms / episode | s | treasures | first |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        first = "" if r["first"] is None else f"{r['first']:,}"
        lines.append(f"| {r['size']} | {r['prior']} | {r['episodes']:,} | "
                     f"{r['ms_per_episode']:.3f} | {r['seconds']:.2f} | "
                     f"{r['treasures']:,} | {first} |")
    if agent_rows:
        lines += _agent_lines(agent_rows, agent_meta)
    if search.get("records"):
        lines += _search_lines(search["records"], search)
    (RESULTS / "dir_prior.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
