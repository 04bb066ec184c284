"""Same returns distribution? The current BAMCP/BFS3 kernel against another revision's.

A kernel change that draws the same distribution by another sampler changes the random
stream, so returns differ trajectory by trajectory; what must not change is their
distribution. This runs both kernels on the same ``--n-mdps`` test MDPs with the same
trajectory seeds and prints both means with their 95% half-widths, the two-sample z
(00-decisions §9: agreement is z < 3) and the paired z over the MDPs.

    .venv/bin/python benchmarks/ab_returns.py bfs3 Grid UGrid --param K=1 --param C=15 \\
        --param D=50 --base befd8b7 [--n-mdps 500]

The other revision's module is read with ``git show <base>:src/bbrlcore/agents/<alg>.py``
and imported under another name (its numba cache goes to a temporary directory).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bbrlcore import agents
from bbrlcore.agents.base import Episode
from bbrlcore.mdp.distributions import builtin

ROOT = Path(__file__).resolve().parents[1]


def load_revision(algorithm: str, rev: str):
    src = subprocess.run(["git", "show", f"{rev}:src/bbrlcore/agents/{algorithm}.py"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for rel, absolute in (("from ..errors", "from bbrlcore.errors"),
                          ("from ._kernels", "from bbrlcore.agents._kernels"),
                          ("from ._rng", "from bbrlcore.agents._rng"),
                          ("from .base", "from bbrlcore.agents.base")):
        src = src.replace(rel, absolute)
    d = Path(tempfile.mkdtemp(prefix="bbrl-ab-"))
    path = d / f"{algorithm}_{rev[:10]}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def returns(module, prior, params, ep, mdps, seed0=1000):
    play = module.make_player(prior, params, None, ep)
    t = time.perf_counter()
    out = np.array([play(P, seed0 + i)[0] for i, P in enumerate(mdps)])
    return out, (time.perf_counter() - t) / len(mdps) * 1000.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("algorithm", choices=["bamcp", "bfs3"])
    ap.add_argument("test")
    ap.add_argument("prior")
    ap.add_argument("--param", action="append", default=[])
    ap.add_argument("--base", required=True, help="git revision of the other kernel")
    ap.add_argument("--n-mdps", type=int, default=500)
    ap.add_argument("--seed", type=int, default=2016)
    args = ap.parse_args()
    algo = agents.get(args.algorithm)
    params = algo.parse_params(dict(kv.split("=", 1) for kv in args.param))
    test, prior = builtin(args.test), builtin(args.prior)
    ep = Episode(test.reward, test.reward_std, test.reward_type == "gaussian",
                 test.initial_state, 0.95, 250)
    rng = np.random.default_rng(args.seed)
    mdps = [test.draw_mdp(rng) for _ in range(args.n_mdps)]
    base = load_revision(args.algorithm, args.base)
    current = sys.modules[f"bbrlcore.agents.{args.algorithm}"]
    base.make_player(prior, params, None, ep)(mdps[0], 0)  # compile
    current.make_player(prior, params, None, ep)(mdps[0], 0)
    r_new, ms_new = returns(current, prior, params, ep, mdps)
    r_old, ms_old = returns(base, prior, params, ep, mdps)
    n = len(mdps)
    h_new = 1.96 * r_new.std(ddof=1) / math.sqrt(n)
    h_old = 1.96 * r_old.std(ddof=1) / math.sqrt(n)
    z = abs(r_new.mean() - r_old.mean()) / math.hypot(h_new / 1.96, h_old / 1.96)
    d = r_new - r_old
    zp = 0.0 if not d.any() else d.mean() / (d.std(ddof=1) / math.sqrt(n))
    identical = bool((r_new == r_old).all())
    print(f"{algo.agent_id(params)} {args.test}-{args.prior}, N = {n}: current "
          f"{r_new.mean():.3f} ± {h_new:.3f} ({ms_new:.1f} ms/traj), {args.base} "
          f"{r_old.mean():.3f} ± {h_old:.3f} ({ms_old:.1f} ms/traj); two-sample z = "
          f"{z:.2f}, paired z = {zp:.2f}; identical returns: {identical}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
