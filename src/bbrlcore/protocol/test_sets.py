"""Test sets and the experiment protocol: drawing, storing and running.

A **test set** is N MDPs drawn from a test distribution, with the discount factor γ, the
horizon T and the seed that drew them. An **experiment** pairs a test set with the prior
an agent was trained on, named ``{test}-{prior}`` (``GC-GC`` accurate, ``GC-UGC``
inaccurate); both experiments of a test distribution share its test set, so agents are
paired across priors too.

Running an agent plays **one trajectory per test MDP**: the agent is reset to its prior,
then acts for exactly T steps; the trajectory's return is
:math:`\\sum_{t=0}^{T-1} \\gamma^t r_t`. Agents know the reward function and learn
transitions only. Each trajectory runs inside one numba call; its wall time (reset, every
decision and every environment step; not compilation, generator construction nor I/O) is
the trajectory's ``online_time_s``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from bbrlcore import seeds
from bbrlcore.agents.base import Episode
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.mdp.distributions import FDMDistribution

if TYPE_CHECKING:
    from bbrlcore.mdp.families import FamilyDistribution


@dataclass(frozen=True, eq=False)
class TestSet:
    """N test MDPs drawn from ``test`` with their γ, T and seed.

    ``test`` is an FDM distribution or a problem family's test distribution with a drawn
    structure (:class:`bbrlcore.mdp.families.FamilyDistribution`).

    ``mdps`` has shape (N, nX, nU, nX); MDP ``i`` is drawn with the generator
    :func:`bbrlcore.seeds.mdp_rng` ``(seed, i)``, so a smaller test set with the same seed
    is a prefix of a larger one.
    """

    test: FDMDistribution | FamilyDistribution
    mdps: np.ndarray
    gamma: float
    horizon: int
    seed: int

    __test__ = False  # not a pytest class

    @property
    def n_mdps(self) -> int:
        return int(self.mdps.shape[0])

    def episode(self, horizon: int | None = None) -> Episode:
        return Episode(
            R=np.ascontiguousarray(self.test.reward),
            Rstd=np.ascontiguousarray(self.test.reward_std),
            gaussian=self.test.reward_type == "gaussian",
            initial_state=self.test.initial_state,
            gamma=self.gamma,
            horizon=self.horizon if horizon is None else horizon,
        )


def new_test_set(
    test: FDMDistribution | FamilyDistribution, n_mdps: int, gamma: float, horizon: int,
    seed: int
) -> TestSet:
    """Draw a test set (checks the parameters with clear errors)."""
    if not 1 <= n_mdps <= MAX_MDPS:
        raise BBRLError(f"--n-mdps must be in [1, {MAX_MDPS}], got {n_mdps}")
    if not (0 < gamma <= 1):
        raise BBRLError(f"--gamma must be in (0, 1], got {gamma}")
    if not 1 <= horizon <= MAX_HORIZON:
        raise BBRLError(f"--horizon must be in [1, {MAX_HORIZON}], got {horizon}")
    seeds.check_seed(seed, "--seed")
    mdps = np.stack([test.draw_mdp(seeds.mdp_rng(seed, i)) for i in range(n_mdps)])
    return TestSet(test, mdps, float(gamma), int(horizon), int(seed))


def write_test_set(ts: TestSet, path: str | Path) -> None:
    nX, nU = ts.test.n_states, ts.test.n_actions
    table = pl.DataFrame(
        {
            "mdp_index": np.arange(ts.n_mdps, dtype=np.int64),
            "P": ts.mdps.reshape(ts.n_mdps, nX * nU * nX),
        }
    )
    meta = {
        "test": ts.test.short_name,
        "test_distribution": ts.test.to_dict(),
        "n_mdps": ts.n_mdps,
        "gamma": ts.gamma,
        "horizon": ts.horizon,
        "seed": ts.seed,
    }
    artefacts.write_artefact(path, table, "test-set", meta)


def read_test_set(path: str | Path) -> TestSet:
    """Read a test-set artefact, validating its contents: the embedded test distribution,
    γ, T and seed, one row per MDP index ``0..N-1``, and every MDP row a probability
    distribution (finite, non-negative, summing to one within :data:`ROW_SUM_TOLERANCE`).
    Any problem is one :class:`BBRLError` naming the file (and the MDP and row)."""
    table, meta = artefacts.read_artefact(path, "test-set")
    m = artefacts.MetaReader(path, meta, "test-set")
    regen = artefacts.REGENERATE["test-set"]
    test = _embedded_test_distribution(m.dict("test_distribution"), str(path))
    n = m.int("n_mdps", lo=1, hi=MAX_MDPS)
    gamma = m.float("gamma", lo=0.0, hi=1.0, lo_open=True)
    horizon = m.int("horizon", lo=1, hi=MAX_HORIZON)
    seed = m.int("seed", lo=0, hi=seeds.MAX_SEED)
    nX, nU = test.n_states, test.n_actions
    if set(table.columns) < {"mdp_index", "P"}:
        raise BBRLError(f"{path}: test-set table lacks the mdp_index or P column; {regen}")
    if len(table) != n:
        raise BBRLError(f"{path}: {len(table)} MDP rows, but the metadata says n_mdps={n}; "
                        f"{regen}")
    try:
        table = table.sort("mdp_index")
        idx = table["mdp_index"].to_numpy()
        if not np.array_equal(idx, np.arange(n)):
            raise BBRLError(f"{path}: mdp_index is not 0..{n - 1} (each once); {regen}")
        P = np.asarray(table["P"].to_numpy(), dtype=np.float64)
        if P.shape != (n, nX * nU * nX):
            raise BBRLError(f"{path}: MDP rows hold {P.shape[1:] or 'ragged'} values, expected "
                            f"{nX * nU * nX} ({nX} states x {nU} actions); {regen}")
    except (ValueError, TypeError, pl.exceptions.PolarsError) as exc:
        raise BBRLError(f"{path}: malformed test-set artefact ({exc}); {regen}") from None
    mdps = P.reshape(n, nX, nU, nX)
    check_mdps(mdps, str(path))
    return TestSet(test, mdps, gamma, horizon, seed)


def _embedded_test_distribution(
    d: dict[str, Any], source: str
) -> FDMDistribution | FamilyDistribution:
    """The embedded test distribution: a problem family's (a ``"family"`` key: rebuilt from
    the family and its parameters) or an FDM."""
    if "family" in d:
        from bbrlcore.mdp.families import from_dict

        return from_dict(d, source)
    return FDMDistribution.from_dict(d, source)


#: Tolerance on the sum of each transition row of a test MDP.
ROW_SUM_TOLERANCE = 1e-9
#: Limits of a test set (larger values are refused with a clear error).
MAX_MDPS = 10_000_000
MAX_HORIZON = 100_000_000


def check_mdps(mdps: np.ndarray, source: str) -> None:
    """Every row ``P[i, x, u, :]`` finite, non-negative and summing to one; else one
    :class:`BBRLError` naming ``source``, the MDP and the row."""
    bad_val = ~np.isfinite(mdps) | (mdps < 0)
    if bad_val.any():
        i, x, u, y = (int(v) for v in np.argwhere(bad_val)[0])
        raise BBRLError(f"{source}: MDP {i}, row (x={x}, u={u}): P(y={y}) = {mdps[i, x, u, y]} "
                        "is not a probability; " + artefacts.REGENERATE["test-set"])
    err = np.abs(mdps.sum(axis=3) - 1.0)
    if (err > ROW_SUM_TOLERANCE).any():
        i, x, u = (int(v) for v in np.argwhere(err > ROW_SUM_TOLERANCE)[0])
        raise BBRLError(f"{source}: MDP {i}, row (x={x}, u={u}) sums to "
                        f"{mdps[i, x, u].sum():.12g}, not 1; " + artefacts.REGENERATE["test-set"])


