r"""All four measures of an MDP (:func:`measures`, :func:`measures_rows`), and of every MDP
of a test set as a table (:func:`hardness_table`, ``bbrl hardness``) with its summary
(:func:`hardness_summary`): Colosseum's hardness report (``hardness/analysis``), on
the states an agent can meet.

**Where the measures are taken.** :func:`measures` and :func:`hardness_table` take the
diameter, the value norm and the gaps on the states **reachable from the initial state**
(all states when it is -1): the states an agent can meet, as Colosseum's measures are
defined on the MDP's states; the padding cells of a family's grid (DeepSea's lower
triangle, walls) never count. For reachability and the diameter a transition of
probability below :data:`REACH_TOLERANCE` (1e-12) counts as absent: an event rarer than
the diameter's own accuracy can neither make a state reachable nor the diameter
infinite. :func:`~bbrlcore.mdp.hardness.environmental_value.value_norm` and
:func:`~bbrlcore.mdp.hardness.gaps.suboptimality_gaps` take every state unless given
``reachable_from``.

**γ.** The value measures need γ < 1; at γ = 1 (an undiscounted test set)
:func:`hardness_table` leaves them undefined (null, :data:`UNDEFINED_AT_GAMMA_1`) and
measures the diameter, which has no γ. A γ so close to 1 that float64 cannot resolve the
values (certified relative error above :data:`VALUE_MAX_RTOL`) is refused with a
:class:`bbrlcore.errors.BBRLError`, as is a diameter whose hitting times exceed float64's
precision: no measure is ever returned unconverged.

When a test set's measures would take more than :data:`ANNOUNCE_AFTER_S`,
:func:`hardness_table` announces its estimate after the first MDP.

References
----------
Conserva, M. & Rauber, P. (2022). Hardness in Markov decision processes: theory and
practice. NeurIPS 2022 Datasets and Benchmarks track (Colosseum), App. A.4, B.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import polars as pl

from bbrlcore.errors import BBRLError
from bbrlcore.mdp.hardness.diameter_measure import DIAMETER_MAX_RTOL, diameter_rows
from bbrlcore.mdp.hardness.environmental_value import value_norm_kernel
from bbrlcore.mdp.hardness.gaps import GAP_RTOL, gaps_kernel
from bbrlcore.mdp.hardness.sparse import _EPS, csr_of_rows, reachable_mask
from bbrlcore.mdp.hardness.values import VALUE_RTOL, _check_gamma, _solve, optimal_values_rows


class Hardness(NamedTuple):
    """The four measures of one MDP, on the states reachable from its initial state (see
    the module docstring); the value measures are None when undefined (γ = 1)."""

    optimal_value: float | None
    diameter: float
    unreachable_states: int
    value_norm: float | None
    suboptimality_gaps: float | None



def measures(
    P: np.ndarray, R: np.ndarray, gamma: float, initial_state: int = 0
) -> Hardness:
    """All four measures of one MDP, sharing the sparse rows and the optimal values,
    **on the states reachable from** ``initial_state`` (every state when it is -1;
    transitions below :data:`REACH_TOLERANCE` count as zero).

    The optimal value is :math:`V^*` of ``initial_state`` (the mean over the states when
    it is -1); the diameter, the value norm and the gaps are over the reachable states
    (the padding cells of a family's grid, never entered, do not count).

    Examples
    --------
    >>> import numpy as np
    >>> P = np.ones((1, 2, 1)); R = np.array([[1.0, 0.5]])
    >>> measures(P, R, 0.9).diameter
    0.0
    """
    P, rows, V, Q, bound = _solve(P, R, gamma)
    if not -1 <= initial_state < P.shape[0]:
        raise ValueError(f"initial_state {initial_state} outside -1..{P.shape[0] - 1}")
    return _measures(rows, P.shape[1], (V, Q, bound), initial_state)



def measures_rows(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray, R: np.ndarray,
                  gamma: float | None, initial_state: int = 0, what: str = "the MDP",
                  ) -> Hardness:
    """:func:`measures` of a model on padded rows (:mod:`bbrlcore.mdp.rows`: ``P`` and
    ``R`` on the slots of ``succ``, ``nsucc``), without its dense array: what
    :func:`hardness_table` uses, in time and memory proportional to the transitions.
    ``gamma=None``: the diameter only (the value measures are None: undefined at
    γ = 1). ``what`` names the MDP in a refusal."""
    indptr, indices, probs, rbar = csr_of_rows(succ, nsucc, np.ascontiguousarray(P),
                                               np.ascontiguousarray(R))
    rows = (indptr, indices, probs)
    if not -1 <= initial_state < rbar.shape[0]:
        raise ValueError(f"initial_state {initial_state} outside -1..{rbar.shape[0] - 1}")
    values = None
    if gamma is not None:
        values = optimal_values_rows(*rows, rbar, _check_gamma(gamma), VALUE_RTOL, what)
    return _measures(rows, rbar.shape[1], values, initial_state, what)



def _measures(rows: tuple, nU: int, values: tuple | None, initial_state: int,
              what: str = "the MDP") -> Hardness:
    d = diameter_rows(*rows, nU, int(initial_state))
    if not (np.isfinite(d.relative_error)
            and d.relative_error <= max(DIAMETER_MAX_RTOL, 64.0 * _EPS * d.value)):
        size = f"about {d.value:.3g} steps or more, " if np.isfinite(d.value) else ""
        raise BBRLError(f"{what}: the diameter cannot be computed in float64 ({size}not "
                        "certified: expected hitting times this long exceed its precision)")
    if values is None:
        return Hardness(None, d.value, d.unreachable_states, None, None)
    V, Q, bound = values
    mask = reachable_mask(*rows, nU, int(initial_state))
    norm = value_norm_kernel(*rows, nU, V, Q, mask, False)
    gaps, _ = gaps_kernel(Q, mask, GAP_RTOL, 0.0, 2.0 * bound)
    v0 = float(V.mean()) if initial_state < 0 else float(V[initial_state])
    return Hardness(v0, d.value, d.unreachable_states, float(norm), float(gaps))



#: The measures of :func:`hardness_table`, in column order.
MEASURES = ("optimal_value", "diameter", "unreachable_states", "value_norm",
            "suboptimality_gaps")

_TABLE_SCHEMA = {"test": pl.Utf8, "mdp_index": pl.Int64, "optimal_value": pl.Float64,
                 "diameter": pl.Float64, "unreachable_states": pl.Int64,
                 "value_norm": pl.Float64, "suboptimality_gaps": pl.Float64}

#: What each column of :func:`hardness_table` (`bbrl hardness -o`) holds (the
#: documentation's column reference is generated from this and the table's types).
HARDNESS_COLUMN_DOCS: dict[str, str] = {
    "test": "the test distribution's name",
    "mdp_index": "the test MDP's index in its test set",
    "optimal_value": "V* of the initial state, the optimal discounted value (the mean over "
                     "the states when the initial state is drawn)",
    "diameter": "the largest, over ordered pairs of states reachable from the initial state, "
                "of the least expected number of steps from one to the other (undiscounted)",
    "unreachable_states": "states that cannot be reached from the initial state (left out of "
                          "every measure)",
    "value_norm": "the environmental value norm: the largest standard deviation of V* over a "
                  "transition's next state",
    "suboptimality_gaps": "Σ 1/Δ(x, u) over the sub-optimal state-action pairs (Δ the gap of "
                          "Q* to the best action)",
}

#: What each column of :func:`hardness_summary` (`bbrl hardness --summary`) holds.
HARDNESS_SUMMARY_COLUMN_DOCS: dict[str, str] = {
    "test": "the test distribution's name",
    "measure": "the measure (a column of the hardness table)",
    "n_mdps": "test MDPs measured",
    "n_infinite": "MDPs whose measure is infinite",
    "mean": "its mean",
    "median": "its median",
    "q05": "its 5 % quantile (linear interpolation)",
    "q95": "its 95 % quantile (linear interpolation)",
    "min": "its smallest value",
    "max": "its largest value",
}

#: Why :func:`hardness_table` leaves the value measures out at γ = 1.
UNDEFINED_AT_GAMMA_1 = ("at gamma = 1 the optimal value, value norm and sub-optimality gaps "
                        "are undefined (the undiscounted values of an infinite horizon "
                        "diverge); the diameter is undiscounted")

#: :func:`hardness_table` announces its estimated time when the rest of a test set is
#: expected to take longer than this (seconds).
ANNOUNCE_AFTER_S = 10.0



def hardness_table(ts, gamma: float | None = None,
                   progress: Callable[[str], None] | None = None) -> pl.DataFrame:
    """The measures of every test MDP of a :class:`bbrlcore.protocol.TestSet`, on the
    states reachable from its initial state (:func:`measures`).

    Columns ``test``, ``mdp_index``, ``optimal_value``, ``diameter``,
    ``unreachable_states``, ``value_norm``, ``suboptimality_gaps``. The value measures
    use ``gamma`` (default: the test set's γ); at γ = 1 they are undefined and left
    null (:data:`UNDEFINED_AT_GAMMA_1`). The diameter is undiscounted. ``progress``,
    when given, receives one line with the estimated time of the rest when it exceeds
    :data:`ANNOUNCE_AFTER_S` (measured on the first MDP). An MDP whose measures cannot
    be certified (γ too close to 1) is refused (:class:`bbrlcore.errors.BBRLError`).

    Examples
    --------
    >>> from bbrlcore import protocol as E
    >>> from bbrlcore.mdp import distributions as D
    >>> ts = E.new_test_set(D.builtin("GC"), 2, 0.95, 10, seed=1)
    >>> hardness_table(ts).columns[:4]
    ['test', 'mdp_index', 'optimal_value', 'diameter']
    >>> ts1 = E.new_test_set(D.builtin("GC"), 2, 1.0, 10, seed=1)
    >>> hardness_table(ts1)["optimal_value"].to_list()  # γ = 1: undefined
    [None, None]
    """
    if gamma is None:
        gamma = ts.gamma
    g = None if gamma >= 1.0 else float(gamma)
    R = np.ascontiguousarray(ts.test.reward_rows, dtype=np.float64)
    x0 = int(ts.test.initial_state)
    lay = ts.layout
    name = ts.test.short_name
    rows = []
    t0 = time.perf_counter()
    for i in range(ts.n_mdps):
        m = measures_rows(lay.succ, lay.nsucc, ts.mdps[i], R, g, x0,
                          what=f"test set {name}, MDP {i}")
        rows.append({"test": name, "mdp_index": i, **m._asdict()})
        if i == 0 and progress is not None and ts.n_mdps > 1:
            rest = (time.perf_counter() - t0) * (ts.n_mdps - 1)
            if rest > ANNOUNCE_AFTER_S:
                progress(f"hardness of {name}: {time.perf_counter() - t0:.1f} s for its "
                         f"first MDP; about {_duration(rest)} more for the other "
                         f"{ts.n_mdps - 1}")
    return pl.DataFrame(rows, schema=_TABLE_SCHEMA)



def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"



def hardness_summary(table: pl.DataFrame) -> pl.DataFrame:
    """Per test set and measure: ``n_mdps``, ``n_infinite``, ``mean``, ``median``,
    ``q05``, ``q95`` (5 % and 95 % quantiles, linear interpolation), ``min``, ``max``.

    Test sets keep their order in ``table``; measures follow :data:`MEASURES`.

    Examples
    --------
    >>> t = pl.DataFrame({"test": ["GC", "GC"], "mdp_index": [0, 1],
    ...                   "optimal_value": [1.0, 3.0], "diameter": [2.0, 4.0],
    ...                   "unreachable_states": [0, 0], "value_norm": [0.5, 0.5],
    ...                   "suboptimality_gaps": [1.0, 2.0]})
    >>> hardness_summary(t).filter(pl.col("measure") == "diameter")["median"].item()
    3.0
    """
    schema = {"test": pl.Utf8, "measure": pl.Utf8, "n_mdps": pl.Int64,
              "n_infinite": pl.Int64, "mean": pl.Float64, "median": pl.Float64,
              "q05": pl.Float64, "q95": pl.Float64, "min": pl.Float64, "max": pl.Float64}
    rows = []
    for test in table["test"].unique(maintain_order=True).to_list():
        sub = table.filter(pl.col("test") == test)
        for name in MEASURES:
            c = sub[name].cast(pl.Float64)
            rows.append({"test": test, "measure": name, "n_mdps": sub.height,
                         "n_infinite": int(c.is_infinite().sum()), "mean": c.mean(),
                         "median": c.median(), "q05": c.quantile(0.05, "linear"),
                         "q95": c.quantile(0.95, "linear"), "min": c.min(), "max": c.max()})
    return pl.DataFrame(rows, schema=schema)
