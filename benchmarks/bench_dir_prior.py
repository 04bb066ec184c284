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
        [--dir-episodes 10000 1000]

Writes ``benchmarks/results/dir_prior.json`` and ``dir_prior.md``.
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 20])
    ap.add_argument("--episodes", type=int, default=10_000)
    ap.add_argument("--dir-episodes", type=int, nargs="+", default=[10_000, 1_000],
                    help="episodes under +dir, one per size")
    a = ap.parse_args()
    for prior in PRIORS:
        run(4, 5, prior)  # compiled (or loaded) outside the timings
    rows = []
    for n, de in zip(a.sizes, a.dir_episodes, strict=True):
        rows.append(run(n, a.episodes, PRIORS[0]))
        rows.append(run(n, de, PRIORS[1]))
    RESULTS.mkdir(exist_ok=True)
    meta = {"bbrlcore": __version__, "machine": platform.machine(),
            "date": time.strftime("%Y-%m-%d"), "calibration": False}
    (RESULTS / "dir_prior.json").write_text(json.dumps({**meta, "rows": rows},
                                                       indent=1) + "\n")
    lines = [f"# PSRL under Colosseum's prior on DeepSea (issue 42), {meta['date']}", "",
             f"bbrlcore {__version__}, {meta['machine']}. Written by "
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
    (RESULTS / "dir_prior.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
