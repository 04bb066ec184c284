r"""The fixed-formula agent: greedy with respect to one given formula, no offline learning.

The original library's ``FormulaAgent`` with its formula given by the user
instead of chosen by OPPS-DS. It scores each action u in state x by
:math:`f(Q_0(x,u), Q_1(x,u), Q_2(x,u))` over the three Q-features of
:mod:`bbrlcore.agents.formula_agent` (QMean, QSelf, QUniform, re-solved after every
step) and plays the highest score, exact ties at random; an action whose formula value is
undefined scores −∞ and is counted in ``formula_failures``. It plays
**exactly** like the agent OPPS-DS learns when OPPS-DS selects the same formula (the same
kernel, :func:`~bbrlcore.agents.formula_agent.play_formula`): give it the formula of a
table and it reproduces that agent without the offline search.

Parameter ``formula``: the paper's notation (``Q2/Q0``, ``max(Q0, Q2)``, ``Q0 + Q2``,
``-Q1``, ``|Q1|``, ``sqrt(Q0)``, ``ln(Q2)``, ``1/Q0``, ``min(Q0, Q1)``...; also the
tables' ``Q_2(x, u)/Q_0(x, u)``) or the original's RPN tokens (``X2 X0 DIV``); see
:func:`bbrlcore.agents.formulas.parse_formula`. It is stored in its canonical form, the RPN
tokens joined by ``_``, which is also how the agent id shows it (ids name files and
Snakemake wildcards): ``formula__formula=X2_X0_DIV``. A malformed formula is one error
naming the token and its position.

Not one of the paper's eight algorithms: the paper's OPPS-DS rows are played by it in the
``paper`` preset (``config.yaml``), so that the published agents can be rerun without
their formula-set search.

**A prior that does not know the support** (``+dir<α>``,
:mod:`bbrlcore.mdp.transition_prior`; issue 42): QMean is the Q-function of the
posterior mean of Dir(α) over every next state (a slot :math:`(\alpha + c)/(S\alpha +
n)`, a background state :math:`\alpha/(S\alpha + n)`, no dense array); QSelf and
QUniform, which never read the prior's concentrations, are unchanged
(:mod:`bbrlcore.agents.formula_agent`).

At an episode's start (an episodic interaction,
:attr:`~bbrlcore.agents.base.Episode.episode_length` H > 0): nothing but the return to
the initial state; the three features' models are kept
(:mod:`bbrlcore.agents.formula_agent`).

Paper: Castronovo, Maes, Fonteneau and Ernst, "Learning exploration/exploitation
strategies for single trajectory reinforcement learning", EWRL 2012 (formula-based E/E
strategies); Castronovo et al., "Benchmarking for Bayesian Reinforcement Learning",
PLOS ONE 2016, §4.1 and §5.3.

Examples
--------
>>> from bbrlcore import agents
>>> alg = agents.get("formula")
>>> alg.agent_id(alg.parse_params({"formula": "Q2/Q0"}))
'formula__formula=X2_X0_DIV'
"""

from __future__ import annotations

from typing import Any

from bbrlcore.agents import formulas as F
from bbrlcore.agents.base import Algorithm, Episode, Param, Trained
from bbrlcore.agents.formula_agent import formula_player, model_sizes
from bbrlcore.mdp.solvers import lu_affordable


def _normalise(value: str, where: str) -> str:
    return F.canonical(F.parse_formula(value, where))


PARAMS = (
    Param("formula", str, required=True, normalise=_normalise,
          doc="the formula: paper notation (Q2/Q0, max(Q0, Q2), ...) or RPN (X2 X0 DIV); "
              "stored as canonical RPN joined by '_'"),
)


def make_player(prior: Any, params: dict[str, Any], trained: Trained | None, ep: Episode):
    """The formula agent as a ``play(P, seed, rewards=None)`` trajectory function (the kernel of the
    agent OPPS-DS learns, :func:`bbrlcore.agents.opps_ds.make_player`), on the test MDPs'
    sparse rows."""
    return formula_player(prior, F.parse_formula(params["formula"], "formula"), ep)


def cost_features(params: dict[str, Any], prior: Any, test: Any, gamma: float,
                  horizon: int) -> dict[str, float]:
    """The features the formula reads, each solved after every step: the terms of one
    sweep of each one's model (:func:`bbrlcore.agents.formula_agent.model_sizes`: QMean
    one per slot of the prior's support, QSelf one per slot of the test distribution's
    support joined with the self-loops; QUniform nX·nU·nX while it is solved densely,
    else one per state-action pair),
    the dense linear solves of the solver's policy iteration (|X|³ each,
    :func:`bbrlcore.mdp.solvers.q_solve_rows`; only where the model affords them:
    :func:`~bbrlcore.mdp.solvers.lu_affordable`, and never for the decomposed QUniform),
    and a part per formula evaluation. Under ``+dir<α>`` QMean is solved by sweeps over
    its slots (the prior's stored entries joined) plus one background term per pair.

    Examples
    --------
    >>> from bbrlcore.mdp import distributions as D
    >>> f = cost_features({"formula": "X0"}, D.builtin("GC"), None, 0.95, 250)
    >>> f["trajectory"], f["steps"], f["backups"] > 0
    (1.0, 250.0, True)
    """
    codes = F.parse_formula(params["formula"], "formula")
    used = F.variables_used(codes)
    nX, nU = prior.n_states, prior.n_actions
    b_mean, b_self, b_uniform, dense = model_sizes(prior, test)
    lu = (lu_affordable(nX, int(b_mean)), lu_affordable(nX, int(b_self)), bool(dense))
    if getattr(prior, "dirichlet_all", None) is not None:
        # +dir<α>: QMean's sweeps (the Q-iteration, never LU) over the slots, the prior's
        # stored entries joined, and one background term per pair
        from bbrlcore.mdp import rows

        b_mean = float(rows.union(prior.support_layout, prior.entries).nnz + nX * nU)
        lu = (False, lu[1], lu[2])
    sizes = (b_mean, b_self, b_uniform)
    backups = sum(b for b, k, d in zip(sizes, used, lu, strict=True) if k and d)
    out = {"trajectory": 1.0, "steps": float(horizon), "backups": horizon * float(backups),
           "dense": horizon * float(sum(k and d for k, d in zip(used, lu, strict=True)))
           * float(nX) ** 3,
           "evaluations": horizon * float(nU) * len(codes)}
    if any(k and not d for k, d in zip(used, lu, strict=True)):
        # models solved by sweeps alone: a solve after each step starts from the last
        # step's values and takes one or two sweeps (e-Greedy's mean model on DeepSea:
        # 1.0-2.0 a step), not a cold solve's N + 1 (which priced a mean-model formula at
        # 7x a self-loop one on DeepSea-10, measured 0.62 against 0.85 ms)
        out["sweep_backups"] = horizon * sum(
            b for b, k, d in zip(sizes, used, lu, strict=True) if k and not d)
    return out


ALGORITHM = Algorithm(
    name="formula",
    params=PARAMS,
    make_player=make_player,
    counters=("formula_failures",),
    doc=__doc__ or "",
    cost_features=cost_features,
    sparse=True,
    episodic=True,
    dirichlet_all=True,
)
