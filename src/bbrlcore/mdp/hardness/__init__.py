r"""Colosseum's measures of hardness of an MDP, computed exactly and fast (numba).

An MDP here is a transition array ``P[x, u, y]`` (nX, nU, nX), rewards ``R[x, u, y]``
(or their expectations ``R[x, u]``), a discount factor :math:`\gamma<1` and an initial
state (``-1``: drawn uniformly, so every state is a start). Four measures (Conserva &
Rauber 2022; the appendix, App. A.4 and B, is in ``shared/paper``), each taken on the
states reachable from the initial state, one module per measure as Colosseum's
``hardness/measures`` (each module's docstring has the definition, the algorithm and
the references):

* :mod:`~bbrlcore.mdp.hardness.values` — the **optimal value** :math:`V^*(x_0)` of the
  initial state, and the certified :math:`V^*`, :math:`Q^*` the next two are taken on
  (:func:`optimal_values`, :func:`optimal_values_rows`);
* :mod:`~bbrlcore.mdp.hardness.diameter_measure` — the **diameter**
  :math:`\max_{s \ne e} \min_\pi E[T^\pi_{s\to e}]` (Jaksch, Ortner & Auer 2010), undiscounted
  (:func:`diameter`, :func:`diameter_rows`); its solve of one target's hitting times is
  :mod:`~bbrlcore.mdp.hardness.hitting_times`, its graph kernels
  :mod:`~bbrlcore.mdp.hardness.graph`;
* :mod:`~bbrlcore.mdp.hardness.environmental_value` — the **environmental value norm**
  :math:`\max_{x,u} \lVert V^* \rVert_{P(\cdot\mid x,u)}` (Maillard, Mann & Mannor 2014;
  :func:`value_norm`);
* :mod:`~bbrlcore.mdp.hardness.gaps` — the **sum of the reciprocals of the sub-optimality
  gaps** :math:`\sum_{\Delta(x,u)>0} 1/\Delta(x,u)` (:func:`suboptimality_gaps`);
* :mod:`~bbrlcore.mdp.hardness.table` — all four of an MDP (:func:`measures`,
  :func:`measures_rows`) and of a test set (:func:`hardness_table`,
  :func:`hardness_summary`), where the measures are taken and what γ = 1 leaves out;
* :mod:`~bbrlcore.mdp.hardness.sparse` — the shared kernels: the sparse rows every
  measure works on, reachability (:data:`REACH_TOLERANCE`).

Every public name of these modules is also a name of this package (``from bbrlcore.mdp
import hardness as H; H.diameter(P)``), as when they were one module.

References
----------
Conserva, M. & Rauber, P. (2022). Hardness in Markov decision processes: theory and
practice. NeurIPS 2022 Datasets and Benchmarks track (Colosseum), App. A.4, B.
Jaksch, T., Ortner, R. & Auer, P. (2010). Near-optimal regret bounds for reinforcement
learning. JMLR 11, 1563–1600 (the diameter).
Maillard, O.-A., Mann, T. A. & Mannor, S. (2014). "How hard is my MDP?" The
distribution-norm to the rescue. NeurIPS 27 (the environmental value norm).
Bertsekas, D. P. & Tsitsiklis, J. N. (1991). An analysis of stochastic shortest path
problems. Mathematics of Operations Research 16(3), 580–595.

Examples
--------
A 4-state deterministic chain (action 0 right, action 1 left, the ends stay):

>>> import numpy as np
>>> P = np.zeros((4, 2, 4))
>>> for x in range(4):
...     P[x, 0, min(x + 1, 3)] = 1.0
...     P[x, 1, max(x - 1, 0)] = 1.0
>>> diameter(P, 0).value
3.0
>>> R = np.zeros((4, 2)); R[3, 0] = 1.0  # reward for staying at the right end
>>> m = measures(P, R, 0.5, 0)
>>> round(m.optimal_value, 6), m.value_norm, round(m.suboptimality_gaps, 6)
(0.25, 0.0, 12.666667)
"""

from bbrlcore.mdp.hardness.diameter_measure import (
    BOUND_MEMORY,
    DENSE_MAX_STATES,
    DIAMETER_MAX_RTOL,
    DIAMETER_PICKS,
    DIAMETER_RTOL,
    GS_BUDGET,
    MAX_SWEEPS,
    WARM_STARTS,
    Diameter,
    diameter,
    diameter_rows,
)
from bbrlcore.mdp.hardness.environmental_value import value_norm, value_norm_kernel
from bbrlcore.mdp.hardness.gaps import GAP_RTOL, gaps_kernel, suboptimality_gaps
from bbrlcore.mdp.hardness.hitting_times import PI_SWEEPS, REDUCED_MAX_STATES
from bbrlcore.mdp.hardness.sparse import (
    REACH_TOLERANCE,
    csr_of_rows,
    drop_below,
    expected_rewards,
    reachable_mask,
    reachable_states,
    sparse_rows,
)
from bbrlcore.mdp.hardness.table import _TABLE_SCHEMA as _TABLE_SCHEMA  # docs/_hooks
from bbrlcore.mdp.hardness.table import (
    ANNOUNCE_AFTER_S,
    HARDNESS_COLUMN_DOCS,
    HARDNESS_SUMMARY_COLUMN_DOCS,
    MEASURES,
    UNDEFINED_AT_GAMMA_1,
    Hardness,
    hardness_summary,
    hardness_table,
    measures,
    measures_rows,
)
from bbrlcore.mdp.hardness.values import (
    VALUE_MAX_RTOL,
    VALUE_RTOL,
    VALUE_SWEEP_BUDGET,
    action_values,
    bellman_residual,
    optimal_state_values,
    optimal_values,
    optimal_values_rows,
)

__all__ = [
    "ANNOUNCE_AFTER_S", "BOUND_MEMORY", "DENSE_MAX_STATES", "DIAMETER_MAX_RTOL",
    "DIAMETER_PICKS", "DIAMETER_RTOL", "GAP_RTOL", "GS_BUDGET", "HARDNESS_COLUMN_DOCS",
    "HARDNESS_SUMMARY_COLUMN_DOCS", "MAX_SWEEPS", "MEASURES", "PI_SWEEPS", "REACH_TOLERANCE",
    "REDUCED_MAX_STATES", "UNDEFINED_AT_GAMMA_1", "VALUE_MAX_RTOL", "VALUE_RTOL",
    "VALUE_SWEEP_BUDGET", "WARM_STARTS", "Diameter", "Hardness", "action_values",
    "bellman_residual", "csr_of_rows", "diameter", "diameter_rows", "drop_below",
    "expected_rewards", "gaps_kernel", "hardness_summary", "hardness_table", "measures",
    "measures_rows", "optimal_state_values", "optimal_values", "optimal_values_rows",
    "reachable_mask", "reachable_states", "sparse_rows", "suboptimality_gaps", "value_norm",
    "value_norm_kernel",
]
