"""Your own problem: RiverSwim as an FDM distribution, built from numpy arrays.

RiverSwim (Strehl & Littman, "An analysis of model-based interval estimation for Markov
decision processes", JCSS 74(8), 2008) is the classic exploration chain: six states, the
agent starts at the left bank (state 0). Swimming **left** (action 0) always moves one
state left (state 0 stays) and pays 0.005 at state 0; swimming **right** (action 1)
against the current moves right with probability 0.35, stays with 0.6 and drifts left with
0.05 (from state 0: right 0.6, stay 0.4; at the right end: stay 0.6, left 0.4, paying 1).
These are the published probabilities with the rewards scaled to [0, 1] as in Osband,
Russo & Van Roy, "(More) efficient reinforcement learning via posterior sampling", NIPS
2013. A myopic agent collects the small reward; only sustained exploration finds the
large one.

As a benchmark distribution: each row is a Dirichlet centred on those probabilities
(``FDMDistribution.centred_on``, concentration ``c``; impossible transitions stay
impossible), so drawn MDPs are RiverSwims with perturbed currents; ``URiverSwim`` is its
uniform (inaccurate) prior, like the paper's UGC, UGDL and UGrid.

    python examples/riverswim.py                    # writes riverswim.parquet, .dat and
                                                    # uriverswim.parquet in the current dir
    python examples/riverswim.py --concentration 20 -o my-dir/

Then, in ``config.yaml``::

    distributions:
      RiverSwim: riverswim.parquet
      URiverSwim: uriverswim.parquet
    experiments:
      - {test: RiverSwim, prior: RiverSwim}
      - {test: RiverSwim, prior: URiverSwim}
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from bbrlcore.mdp import distributions as D

N_STATES = 6
LEFT, RIGHT = 0, 1


def riverswim_model(n: int = N_STATES) -> tuple[np.ndarray, np.ndarray]:
    """RiverSwim's transition probabilities ``P[x, u, y]`` and rewards ``R[x, u, y]``."""
    P = np.zeros((n, 2, n))
    R = np.zeros((n, 2, n))
    for x in range(n):
        P[x, LEFT, max(x - 1, 0)] = 1.0
        if x == 0:
            P[x, RIGHT, 0], P[x, RIGHT, 1] = 0.4, 0.6
        elif x == n - 1:
            P[x, RIGHT, x - 1], P[x, RIGHT, x] = 0.4, 0.6
        else:
            P[x, RIGHT, x - 1], P[x, RIGHT, x], P[x, RIGHT, x + 1] = 0.05, 0.6, 0.35
    R[0, LEFT, 0] = 0.005
    R[n - 1, RIGHT, :] = 1.0
    return P, R


def riverswim(concentration: float = 10.0) -> D.FDMDistribution:
    """RiverSwim as a distribution: Dirichlet rows centred on the published model."""
    P, R = riverswim_model()
    return D.FDMDistribution.centred_on("RiverSwim distribution", "RiverSwim", P, R,
                                        concentration, initial_state=0)


def uniform_riverswim() -> D.FDMDistribution:
    """The uniform prior over RiverSwim's states (every concentration 1)."""
    _, R = riverswim_model()
    return D.FDMDistribution("Uniform RiverSwim distribution", "URiverSwim",
                             np.ones_like(R), R, initial_state=0)


def main() -> None:
    ap = argparse.ArgumentParser(description="Write the RiverSwim distributions.")
    ap.add_argument("--concentration", type=float, default=10.0,
                    help="Dirichlet concentration of each row (10)")
    ap.add_argument("-o", "--output", default=".", help="output directory (.)")
    args = ap.parse_args()
    out = Path(args.output)
    d = riverswim(args.concentration)
    D.write_parquet(d, out / "riverswim.parquet")
    D.write_dat(d, out / "riverswim.dat")  # the original BBRL text format
    D.write_parquet(uniform_riverswim(), out / "uriverswim.parquet")
    print(d.describe())
    print(f"wrote {out / 'riverswim.parquet'}, {out / 'riverswim.dat'}, "
          f"{out / 'uriverswim.parquet'}")


if __name__ == "__main__":
    main()
