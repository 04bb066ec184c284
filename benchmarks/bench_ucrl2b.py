"""UCRL2 against UCRL2-B on DeepSea, episodic (issue 43): who finds the treasure.

With the published L1 width, every DeepSea pair stays fully optimistic for thousands of
visits, whole rows of actions tie under the optimistic values and UCRL2 plays at random;
UCRL2-B's empirical-Bernstein sets (``--param bound=bernstein``) narrow after some tens of
visits of a pair. For each size N, ``--mdps`` test MDPs of DeepSea-N (seed 0), the
uniform prior, ``--episodes`` episodes of N steps, δ = 0.05: the episodes that found the
treasure (an episode's return above 0.5), the first one, those of the last 1,000, and
the share of steps whose action tied with another (``tied_steps`` / T).

    .venv/bin/python benchmarks/bench_ucrl2b.py [--sizes 10 20 30 40 50] \\
        [--episodes 10000] [--mdps 3]

Writes ``benchmarks/results/ucrl2b_deepsea.json`` and ``ucrl2b_deepsea.md``.
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
from bbrlcore.mdp import families as F

RESULTS = Path(__file__).parent / "results"


def run(size: int, episodes: int, n_mdps: int, bound: str) -> list[dict]:
    p = F.make("deepsea", size=size)
    T = size * episodes
    ts = E.new_test_set(p.test, n_mdps, 1.0, T, seed=0, episode_length=size,
                        references=False)
    alg = agents.get("ucrl2")
    play = alg.make_player(p.prior("uniform"), alg.parse_params({"bound": bound}), None,
                           ts.episode())
    out = []
    for i in range(n_mdps):
        r = np.empty(T)
        t0 = time.perf_counter()
        _, c = play(np.ascontiguousarray(ts.mdps[i]), 1000 + i, r)
        dt = time.perf_counter() - t0
        found = r.reshape(episodes, size).sum(axis=1) > 0.5
        out.append({"size": size, "bound": bound, "mdp": i, "episodes": episodes,
                    "treasures": int(found.sum()),
                    "first": int(np.argmax(found)) if found.any() else None,
                    "last_1000": int(found[-1000:].sum()),
                    "tied_share": float(c[3]) / T, "policies": int(c[0]),
                    "seconds": dt})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 30, 40, 50])
    ap.add_argument("--episodes", type=int, default=10_000)
    ap.add_argument("--mdps", type=int, default=3)
    a = ap.parse_args()
    run(5, 10, 1, "l1")  # compiled (or loaded) outside the timings
    run(5, 10, 1, "bernstein")
    rows = [rec for n in a.sizes for b in ("l1", "bernstein")
            for rec in run(n, a.episodes, a.mdps, b)]
    RESULTS.mkdir(exist_ok=True)
    meta = {"bbrlcore": __version__, "machine": platform.machine(),
            "date": time.strftime("%Y-%m-%d"), "calibration": False}
    (RESULTS / "ucrl2b_deepsea.json").write_text(json.dumps({**meta, "rows": rows},
                                                            indent=1) + "\n")
    lines = [f"# UCRL2 against UCRL2-B on DeepSea (issue 43), {meta['date']}", "",
             f"bbrlcore {__version__}, {meta['machine']}. Written by "
             "`benchmarks/bench_ucrl2b.py`: uniform prior, δ = 0.05, episodes of N steps, "
             "test MDPs of seed 0.", "",
             "| N | bound | MDP | episodes | treasures | first | in the last 1,000 | "
             "tied steps | s |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        first = "" if r["first"] is None else f"{r['first']:,}"
        lines.append(f"| {r['size']} | {r['bound']} | {r['mdp']} | {r['episodes']:,} | "
                     f"{r['treasures']:,} | {first} | {r['last_1000']:,} | "
                     f"{r['tied_share']:.1%} | {r['seconds']:.2f} |")
    (RESULTS / "ucrl2b_deepsea.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
