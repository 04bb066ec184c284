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
from bbrlcore.errors import BBRLError, building
from bbrlcore.formats import artefacts
from bbrlcore.mdp import rows
from bbrlcore.mdp.distributions import FDMDistribution
from bbrlcore.mdp.rows import Layout

if TYPE_CHECKING:
    from bbrlcore.mdp.families import FamilyDistribution


@dataclass(frozen=True, eq=False)
class TestSet:
    """N test MDPs drawn from ``test`` with their γ, T and seed.

    ``test`` is an FDM distribution or a problem family's test distribution with a drawn
    structure (:class:`bbrlcore.mdp.families.FamilyDistribution`).

    The MDPs are stored on **sparse rows** (:mod:`bbrlcore.mdp.rows`): ``layout`` is the
    test distribution's support (every transition a drawn MDP can have, the same for all
    of them) and ``mdps`` has shape (N, nX, nU, K), MDP ``i``'s transition probabilities
    on that layout, so a test set costs memory in proportion to the transitions that
    exist. :meth:`dense` gives one MDP as a dense (nX, nU, nX) array. MDP ``i`` is drawn
    with the generator :func:`bbrlcore.seeds.mdp_rng` ``(seed, i)``, so a smaller test set
    with the same seed is a prefix of a larger one.

    Built with ``layout=None`` (as before sparse rows), ``mdps`` are dense (N, nX, nU, nX)
    arrays, converted to the test distribution's layout.
    """

    test: FDMDistribution | FamilyDistribution
    mdps: np.ndarray
    gamma: float
    horizon: int
    seed: int
    layout: Layout | None = None

    __test__ = False  # not a pytest class

    def __post_init__(self) -> None:
        if self.layout is None:
            lay = self.test.support_layout
            dense = np.asarray(self.mdps, dtype=np.float64)
            nX, nU = self.test.n_states, self.test.n_actions
            if dense.ndim != 4 or dense.shape[1:] != (nX, nU, nX):
                raise BBRLError(f"test set {self.test.short_name}: dense MDPs of shape "
                                f"{dense.shape[1:]}, expected {(nX, nU, nX)}")
            outside = (dense > 0) & ~lay.dense_mask()[None]
            if outside.any():
                i, x, u, y = (int(v) for v in np.argwhere(outside)[0])
                raise BBRLError(f"test set {self.test.short_name}: MDP {i} has the "
                                f"transition ({x}, {u}) -> {y}, which the test "
                                "distribution rules out")
            object.__setattr__(self, "mdps", rows.gather(dense, lay))
            object.__setattr__(self, "layout", lay)

    @property
    def n_mdps(self) -> int:
        return int(self.mdps.shape[0])

    def dense(self, i: int) -> np.ndarray:
        """MDP ``i`` as a dense (nX, nU, nX) array of transition probabilities."""
        assert self.layout is not None
        return rows.scatter(self.mdps[i], self.layout)

    def episode(self, horizon: int | None = None, dense: bool = False) -> Episode:
        """What a player needs besides the MDP: the test rewards, initial state, γ, T and
        the layout of the MDPs it is given (``dense=True``: dense arrays, for players
        written before sparse rows, see :attr:`bbrlcore.agents.base.Algorithm.sparse`)."""
        assert self.layout is not None
        T = self.horizon if horizon is None else horizon
        common = dict(gaussian=self.test.reward_type == "gaussian",
                      initial_state=self.test.initial_state, gamma=self.gamma, horizon=T)
        if dense:
            return Episode(R=np.ascontiguousarray(self.test.reward),
                           Rstd=np.ascontiguousarray(self.test.reward_std), **common)
        return Episode(R=np.ascontiguousarray(self.test.reward_rows),
                       Rstd=np.ascontiguousarray(self.test.reward_std_rows),
                       succ=self.layout.succ, nsucc=self.layout.nsucc, **common)


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
    check_fits(test, n_mdps)
    with building(f"the test set of {n_mdps} MDPs of {test.short_name}"):
        lay = test.support_layout
        mdps = np.empty((n_mdps, *lay.succ.shape))
        for i in range(n_mdps):
            mdps[i] = test.draw_rows(seeds.mdp_rng(seed, i))
    return TestSet(test, mdps, float(gamma), int(horizon), int(seed), lay)


#: Largest test set held in memory (its MDPs' values, 8 bytes each): a bigger one is
#: refused up front with its size.
MAX_TEST_SET_BYTES = 8 * 2**30


def test_set_bytes(test: FDMDistribution | FamilyDistribution, n_mdps: int) -> int:
    """Memory of ``n_mdps`` MDPs of ``test`` on its layout (8 bytes a value)."""
    return 8 * n_mdps * int(np.prod(test.support_layout.succ.shape))


def check_fits(test: FDMDistribution | FamilyDistribution, n_mdps: int) -> None:
    """Refuse, with the estimated size, a test set that would not fit in memory."""
    need = test_set_bytes(test, n_mdps)
    if need > MAX_TEST_SET_BYTES:
        raise BBRLError(f"test set of {n_mdps} MDPs of {test.short_name}: "
                        f"{need / 2**30:.1f} GiB on its sparse rows "
                        f"({test.support_layout.width} successors per row at most), more "
                        f"than the {MAX_TEST_SET_BYTES / 2**30:.0f} GiB limit; use fewer "
                        "MDPs or a smaller size")


def validation_set(ts: TestSet, n_mdps: int) -> TestSet:
    """The **validation set** of the test set ``ts``: ``n_mdps`` MDPs of the same test
    distribution, with the same γ and T, drawn with the seed
    :func:`bbrlcore.seeds.validation_seed` ``(ts.seed)`` (another branch of the seed tree:
    never one of the test set's MDPs). Each algorithm's configuration is chosen on it
    (``selection: validation``) and its score reported on ``ts``.

    >>> from bbrlcore.mdp import distributions as D
    >>> ts = new_test_set(D.builtin("GC"), 3, 0.95, 20, 0)
    >>> v = validation_set(ts, 2)
    >>> v.n_mdps, v.seed == seeds.validation_seed(0), bool((v.mdps[0] != ts.mdps[0]).any())
    (2, True, True)
    """
    return new_test_set(ts.test, n_mdps, ts.gamma, ts.horizon, seeds.validation_seed(ts.seed))


def validation_meta(ts: TestSet) -> dict[str, Any]:
    """What a validation set's artefact records besides a test set's (``split`` and the
    test set it validates: its seed and size), for :func:`write_test_set`."""
    return {"split": "validation", "validation_of": {"seed": ts.seed, "n_mdps": ts.n_mdps}}


def write_test_set(ts: TestSet, path: str | Path,
                   extra: dict[str, Any] | None = None) -> None:
    """Write a test-set artefact: one row per MDP, its probabilities on the test
    distribution's layout (``P``, flattened (nX, nU, K); the layout's digest is in the
    metadata). ``extra``: more metadata (a validation set's, :func:`validation_meta`)."""
    assert ts.layout is not None
    table = pl.DataFrame(
        {
            "mdp_index": np.arange(ts.n_mdps, dtype=np.int64),
            "P": ts.mdps.reshape(ts.n_mdps, -1),
        }
    )
    meta = {
        "test": ts.test.short_name,
        "test_distribution": ts.test.to_dict(),
        "n_mdps": ts.n_mdps,
        "gamma": ts.gamma,
        "horizon": ts.horizon,
        "seed": ts.seed,
        "layout": "rows",
        "layout_digest": ts.layout.digest(),
    }
    meta.update(extra or {})
    artefacts.write_artefact(path, table, "test-set", meta)


def read_test_set(path: str | Path) -> TestSet:
    """Read a test-set artefact, validating its contents: the embedded test distribution,
    γ, T and seed, one row per MDP index ``0..N-1``, and every MDP row a probability
    distribution (finite, non-negative, summing to one within :data:`ROW_SUM_TOLERANCE`)
    on the test distribution's support. Any problem is one :class:`BBRLError` naming the
    file (and the MDP and row). Files written before sparse rows (dense ``P``) still
    read."""
    with building(f"the test set of {path}"):
        return _read_test_set(path)


def _read_test_set(path: str | Path) -> TestSet:
    table, meta = artefacts.read_artefact(path, "test-set")
    m = artefacts.MetaReader(path, meta, "test-set")
    regen = artefacts.REGENERATE["test-set"]
    test = _embedded_test_distribution(m.dict("test_distribution"), str(path))
    n = m.int("n_mdps", lo=1, hi=MAX_MDPS)
    gamma = m.float("gamma", lo=0.0, hi=1.0, lo_open=True)
    horizon = m.int("horizon", lo=1, hi=MAX_HORIZON)
    seed = m.int("seed", lo=0, hi=seeds.MAX_SEED)
    nX, nU = test.n_states, test.n_actions
    sparse = meta.get("layout") == "rows"
    lay = test.support_layout
    if sparse and meta.get("layout_digest") != lay.digest():
        raise BBRLError(f"{path}: its MDPs are stored on another layout than the support of "
                        f"{test.short_name} (written by another version?); {regen}")
    width = int(np.prod(lay.succ.shape)) if sparse else nX * nU * nX
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
        if P.shape != (n, width):
            raise BBRLError(f"{path}: MDP rows hold {P.shape[1:] or 'ragged'} values, expected "
                            f"{width} ({nX} states x {nU} actions"
                            + (f" x {lay.width} successors)" if sparse else ")") + f"; {regen}")
    except (ValueError, TypeError, pl.exceptions.PolarsError) as exc:
        raise BBRLError(f"{path}: malformed test-set artefact ({exc}); {regen}") from None
    if sparse:
        mdps = P.reshape(n, *lay.succ.shape)
        check_mdps(mdps, str(path), lay)
        return TestSet(test, mdps, gamma, horizon, seed, lay)
    dense = P.reshape(n, nX, nU, nX)
    check_mdps(dense, str(path))
    try:
        return TestSet(test, dense, gamma, horizon, seed)
    except BBRLError as exc:
        raise BBRLError(f"{path}: {exc}; {regen}") from None


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


def check_mdps(mdps: np.ndarray, source: str, layout: Layout | None = None) -> None:
    """Every row ``P[i, x, u, :]`` finite, non-negative and summing to one (and zero on
    the padding of ``layout``: MDPs on sparse rows); else one :class:`BBRLError` naming
    ``source``, the MDP and the row."""
    bad_val = ~np.isfinite(mdps) | (mdps < 0)
    if layout is not None:
        bad_val |= (mdps != 0) & ~layout.mask[None]
    if bad_val.any():
        i, x, u, y = (int(v) for v in np.argwhere(bad_val)[0])
        if layout is not None:
            y = int(layout.succ[x, u, y]) if layout.mask[x, u, y] else -1
        what = f"P(y={y})" if y >= 0 else "a padding value"
        v = mdps[tuple(int(a) for a in np.argwhere(bad_val)[0])]
        raise BBRLError(f"{source}: MDP {i}, row (x={x}, u={u}): {what} = {v} "
                        "is not a probability; " + artefacts.REGENERATE["test-set"])
    err = np.abs(mdps.sum(axis=3) - 1.0)
    if (err > ROW_SUM_TOLERANCE).any():
        i, x, u = (int(v) for v in np.argwhere(err > ROW_SUM_TOLERANCE)[0])
        raise BBRLError(f"{source}: MDP {i}, row (x={x}, u={u}) sums to "
                        f"{mdps[i, x, u].sum():.12g}, not 1; " + artefacts.REGENERATE["test-set"])
