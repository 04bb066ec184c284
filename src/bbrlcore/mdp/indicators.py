r"""Colosseum's performance indicators, computed exactly as Colosseum computes them.

Colosseum (Conserva & Rauber 2022; ``colosseum/experiment/agent_mdp_interaction.py``,
class ``MDPLoop``) scores an agent by the **expected** regret of its *current* policy,
not by the rewards it collected. This module reproduces that computation on bbrl's
sparse-row MDPs, from the sequence of an agent's current policies, with exact
evaluations (:mod:`bbrlcore.mdp.evaluation`) in place of Colosseum's float32 ones.

**When Colosseum evaluates.** An interaction of T steps ``t = 0 … T-1`` with ``log_every``
= L (100 in Colosseum's benchmark) writes a **row** at every ``t = L, 2L, …`` (``t > 0``,
``t % L == 0``), *after* the agent's update of step t, and one more row after the last
step, with ``steps = T - 1`` (when ``T - 1`` is a multiple of L that step has two rows).
At each row the agent's current policy π (its ``current_optimal_stochastic_policy``) is
evaluated on the true MDP, and its per-step numbers are added to the running sums with
the **weight of the steps since the previous row**: L for every in-loop row (the first
one covers steps 0 … L-1: no evaluation happens at step 0, so the policy played before
the first row is never evaluated, and each evaluation stands for the L steps *before*
it), ``T - kL`` for the final row (k in-loop rows). The weights add up to T
(:func:`log_rows`).

**The per-step numbers of a row** (:meth:`Evaluator.evaluate`):

* *episodic*, horizon H, starting distribution μ₀: :math:`\Delta(s) =
  \max(V^*_0(s) - V^\pi_0(s), 0)` for the starting state s **of the episode in
  progress** (Colosseum's ``last_starting_node``); regret :math:`\Delta(s)/H`,
  normalised regret :math:`\Delta(s) / (V^*_0(s) - V^-_0(s))` (per episode, so the sums
  are episodes' worth of normalised regret per step), the agent's expected reward per
  step :math:`\sum_x \mu_0(x) V^\pi_0(x) / H`;
* *continuing*: the gain :math:`\rho^\pi` of π's chain **from the current state**
  (Colosseum's ``cur_node``; :func:`~bbrlcore.mdp.evaluation.policy_gain`); regret
  :math:`r = \rho^* - \rho^\pi`, set to 0 when :math:`|r| \le 10^{-3}` or :math:`r < 0`;
  normalised regret :math:`r / (\rho^* - \rho^-)`; expected reward :math:`\rho^\pi`
  (unclipped).

**The columns of a row** (bbrl's names; Colosseum's in :data:`COLOSSEUM_NAMES`), all
cumulative, with t the row's ``steps``:

=============================== ============================================================
``expected_regret``             Σ weight × regret
``normalised_expected_regret``  Σ weight × normalised regret (Colosseum's table metric)
``expected_reward``             Σ weight × expected reward per step
``normalised_expected_reward``  (expected_reward − t ρ⁻) / (ρ* − ρ⁻)
``reward``                      the rewards collected (steps 0 … t-1; all T at the last row)
``normalised_reward``           (reward − t ρ⁻) / (ρ* − ρ⁻)
=============================== ============================================================

with, episodic, :math:`\rho^* = \sum_s \mu_0(s) V^*_0(s)/H` and the same for ρ⁻ (per step).
Note the final row's t = T − 1 while its sums cover T steps: Colosseum's off-by-one,
kept. Colosseum's **tables** (Tables 11-14 of its paper; ``analysis/tables.py``) report
the final row's value divided by T (:meth:`Indicators.table_value`).

**When Colosseum stops training.** At every in-loop row with ``t > 0.2 T``, if the last
10 rows' normalised regrets are all within :math:`10^{-4}` (episodic; :math:`10^{-5}`
continuing) of 0 and the current one within :math:`10^{-8}`, Colosseum decides the
policy is optimal and **stops training** the agent (no more updates) — also when its
time limit runs out (``frozen_from_step`` here). From the next row on it evaluates the
policy once more and reuses that evaluation (episodic: per starting state; continuing:
the regret from the state of that row, for every later row). :attr:`Indicators.stopped_training_at`
says where it happened; an agent wired to this layer must stop learning there too to
play what Colosseum's agent plays.

**What differs from Colosseum, and by how much.** Colosseum evaluates in float32 (its
value iteration, policy evaluation and transition arrays): its values carry relative
errors around 10⁻⁷, bbrl's exact float64 evaluations none beyond round-off; the tests
hold the two within 10⁻⁶ relative (``tests/test_indicators.py``). When the start reaches
several closed classes of a policy's chain, Colosseum's gain weights only the first one
networkx lists; bbrl's is the exact gain (:mod:`bbrlcore.mdp.evaluation`). The reference
values (ρ*, ρ⁻, V*, V⁻) are bbrl's exact ones (:mod:`bbrlcore.mdp.references`) unless
given: Colosseum's continuing ρ* and ρ⁻ are the gains of the greedy policies of a
γ = 0.99 discounted value iteration (tolerance 10⁻³); they equal the exact optimal and
worst gains on the fixtures' RiverSwims, not checked elsewhere (pass Colosseum's values as
``optimal`` and ``worst`` to reproduce an MDP where they would differ).

**bbrl's own regret** (the run tables' ``regret`` columns, :mod:`bbrlcore.analysis.curves`)
is the *realised* regret — the optimum's expected reward minus the rewards actually
collected — and keeps its name; divided by the steps (episodes) it equals
1 − ``normalised_reward`` / t, not ``normalised_expected_regret`` / t.

**Wired into the runs** (``bbrl run --indicators``): Random, Optimal, PSRL, UCRL2 and
Q-learning-UCB evaluate their current policy inside their trajectory kernels with the
row functions below (:mod:`bbrlcore.agents._indicators`); a Python plugin exposes its
current best policy by a method ``policy(self) -> np.ndarray`` returning a stochastic
``(nX, nU)`` (or episodic ``(H, nX, nU)``) or deterministic ``(nX,)`` / ``(H, nX)``
array (:func:`bbrlcore.mdp.evaluation.as_policy`; :mod:`bbrlcore.agents.api`), which the
runner calls at Colosseum's rows only (every ``log_every`` steps, and once at the end);
a compiled plugin by an ``@njit`` function ``policy(state, out)`` writing its stochastic
policy into a preallocated float64 array ``out`` of shape (1, nX, nU) (continuing) or
(H, nX, nU) (episodic), called, checked and evaluated at the same rows inside its
compiled loop (:func:`bbrlcore.agents.api.indicator_kernel`). Not yet: the other
built-ins. An agent without a policy has no expected indicators (said once for the run,
never guessed from its actions).

Examples
--------
Use it now from Python, with the policies an agent had at Colosseum's rows:

>>> import numpy as np
>>> from bbrlcore.mdp import rows
>>> P = np.zeros((2, 2, 2)); R = np.zeros((2, 2, 2))
>>> P[0, 0, 0] = 1.0; R[0, 0, 0] = 0.05; P[0, 1, 1] = 1.0      # stay (0.05) or go right
>>> P[1, 0, 0] = 1.0; P[1, 1, 1] = 0.9; P[1, 1, 0] = 0.1; R[1, 1, 1] = 1.0
>>> lay = rows.full(2, 2)
>>> ev = Evaluator(lay.succ, lay.nsucc, P, R, start=0)
>>> round(ev.optimal, 6), ev.worst
(0.818182, 0.0)
>>> steps, weights = log_rows(250, 100)
>>> steps.tolist(), weights.tolist()
([100, 200, 249], [100, 100, 50])
>>> pols = [np.array([0, 0]), np.array([1, 1]), np.array([1, 1])]   # learns at row 2
>>> out = ev.accumulate(pols, states=[0, 1, 1], T=250, log_every=100)
>>> round(float(out["normalised_expected_regret"][-1]), 4), round(out.table_value(), 4)
(93.8889, 0.3756)

Only the first row has regret: staying gains 0.05 a step against 0.818182, a normalised
regret of (0.818182 - 0.05) / 0.818182 = 0.938889 a step, over its 100 steps; Colosseum's
table shows 93.8889 / 250.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from bbrlcore.errors import BBRLError
from bbrlcore.mdp import evaluation as ev_

#: Colosseum's benchmark logging interval (``log_every``).
LOG_EVERY = 100
#: Continuing regret within this of 0 counts as 0 (``np.isclose(r, 0, atol=1e-3)``).
CLIP_ATOL = 1e-3
#: Rows in the window of Colosseum's "policy is optimal" check, and its tolerances.
OPTIMALITY_WINDOW = 10
OPTIMALITY_ATOL_EPISODIC = 1e-4
OPTIMALITY_ATOL_CONTINUING = 1e-5
#: The check looks only after this fraction of the interaction (``t > 0.2 T``).
OPTIMALITY_AFTER = 0.2

#: bbrl's names of Colosseum's indicators → Colosseum's (``MDPLoop.get_indicators()``).
COLOSSEUM_NAMES: dict[str, str] = {
    "expected_regret": "cumulative_regret",
    "normalised_expected_regret": "normalized_cumulative_regret",
    "expected_reward": "cumulative_expected_reward",
    "normalised_expected_reward": "normalized_cumulative_expected_reward",
    "reward": "cumulative_reward",
    "normalised_reward": "normalized_cumulative_reward",
}


def log_rows(T: int, log_every: int = LOG_EVERY) -> tuple[np.ndarray, np.ndarray]:
    """Colosseum's rows of an interaction of ``T`` steps: their ``steps`` (the step index
    t after which each is written) and weights (the steps each evaluation stands for).
    ``log_every`` ≤ 0 means the final row only (Colosseum's ``log_every=-1``).

    >>> [a.tolist() for a in log_rows(201, 100)]
    [[100, 200, 200], [100, 100, 1]]
    >>> [a.tolist() for a in log_rows(50, 100)]
    [[49], [50]]
    """
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 1:
        raise BBRLError(f"T={T!r}: the number of steps must be an integer >= 1")
    if isinstance(log_every, bool) or not isinstance(log_every, (int, np.integer)):
        raise BBRLError(f"log_every={log_every!r}: must be an integer")
    T, L = int(T), int(log_every)
    inner = np.arange(L, T, L, dtype=np.int64) if L > 0 else np.zeros(0, np.int64)
    steps = np.append(inner, T - 1)
    weights = np.append(np.full(inner.size, L, np.int64), T - (inner[-1] if inner.size else 0))
    return steps, weights


@dataclass
class Indicators:
    """Colosseum's indicators of one interaction: ``columns`` (one value per row: ``steps``,
    ``weight``, the per-step ``row_regret``, ``row_normalised_regret``,
    ``row_expected_reward``, ``training`` and the cumulative columns of the module
    docstring), ``T`` and ``stopped_training_at`` (the step from which Colosseum no longer
    trains the agent, None if it trains throughout)."""

    columns: dict[str, np.ndarray]
    T: int
    stopped_training_at: int | None = None

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.columns[name]
        except KeyError:
            raise BBRLError(f"indicator {name!r}: not computed (columns: "
                            f"{', '.join(self.columns)})") from None

    def table_value(self, name: str = "normalised_expected_regret") -> float:
        """The number Colosseum's tables report: the final row's value divided by T."""
        return float(self[name][-1]) / self.T

    def to_polars(self):
        """The rows as a polars table."""
        import polars as pl

        return pl.DataFrame({k: v for k, v in self.columns.items()})


@njit(cache=True, error_model="numpy")
def episodic_row(V, optimal_start, worst_start, start_distribution, s, H):
    """Kernel: Colosseum's per-step ``(regret, normalised regret, expected reward)`` of an
    episodic row (module docstring): ``V`` the policy's :math:`V^\\pi_0` (nX,), ``s`` the
    episode's starting state."""
    gap = optimal_start[s] - V[s]
    if gap < 0.0:
        gap = 0.0
    avg = 0.0
    for x in range(V.shape[0]):
        avg += start_distribution[x] * V[x]
    return gap / H, gap / (optimal_start[s] - worst_start[s]), avg / H


@njit(cache=True, error_model="numpy")
def continuing_row(g, optimal, worst):
    """Kernel: Colosseum's per-step ``(regret, normalised regret, expected reward)`` of a
    continuing row, ``g`` the policy's gain from the current state: regret within
    :data:`CLIP_ATOL` of 0, or negative, is 0."""
    r = optimal - g
    if abs(r) <= CLIP_ATOL or r < 0.0:
        r = 0.0
    return r, r / (optimal - worst), g


@njit(cache=True, error_model="numpy")
def stops_training(nreg, i, t, T, atol):
    """Kernel: Colosseum's "the policy is optimal" test after the in-loop row ``i`` (step
    ``t``) of an interaction of ``T`` steps, ``nreg`` the rows' normalised regrets: past
    a fifth of the interaction, the last :data:`OPTIMALITY_WINDOW` rows within ``atol``
    of 0 (``np.isclose(0, v, atol)``) and this one within 10⁻⁸."""
    if not t > OPTIMALITY_AFTER * T or i + 1 < OPTIMALITY_WINDOW:
        return False
    for j in range(i + 1 - OPTIMALITY_WINDOW, i + 1):
        v = abs(nreg[j])
        if not v <= atol + 1e-5 * v:
            return False
    return abs(nreg[i]) <= 1e-8


class Evaluator:
    """A test MDP prepared for Colosseum's indicators: its sparse rows (``succ``,
    ``nsucc``, ``P``; ``R`` per transition ``(nX, nU, K)`` or expected ``(nX, nU)``),
    ``horizon`` H for the episodic setting (None: continuing), ``start`` (a state or a
    distribution over the states: Colosseum's starting distribution) and the reference
    values — exact (:mod:`bbrlcore.mdp.references`) unless ``optimal`` and ``worst`` are
    given (per step: ρ*, ρ⁻; episodic, ``optimal_start``/``worst_start`` are
    :math:`V^*_0`, :math:`V^-_0` per state (nX,))."""

    def __init__(self, succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray, R: np.ndarray,
                 *, horizon: int | None = None, start: Any = 0,
                 optimal: float | None = None, worst: float | None = None,
                 optimal_start: np.ndarray | None = None,
                 worst_start: np.ndarray | None = None) -> None:
        self.succ, self.nsucc, self.P = ev_._rows(succ, nsucc, P)
        nX, nU = self.nsucc.shape
        self.n_states, self.n_actions = nX, nU
        self.rbar = ev_.expected_rewards(self.succ, self.nsucc, self.P, R)
        if self.rbar.shape != (nX, nU):
            raise BBRLError(f"R: shape {np.shape(R)}; expected ({nX}, {nU}) or {P.shape}")
        self.episodic = horizon is not None
        self.horizon = ev_._horizon(horizon) if self.episodic else None
        states, probs = ev_._start(start, nX)
        self.start_distribution = np.zeros(nX)
        self.start_distribution[states] = probs
        self._scratch = ev_.ChainScratch(nX, int(self.nsucc.sum()))
        self._V = np.zeros(nX)
        if self.episodic:
            from bbrlcore.mdp.references import episode_values_rows

            R3 = self._r3()
            H = self.horizon
            vs = (episode_values_rows(self.succ, self.nsucc, self.P, R3, H, "max")
                  if optimal_start is None else np.asarray(optimal_start, np.float64))
            vw = (episode_values_rows(self.succ, self.nsucc, self.P, R3, H, "min")
                  if worst_start is None else np.asarray(worst_start, np.float64))
            self.optimal_start, self.worst_start = vs, vw
            self.optimal = (float(self.start_distribution @ vs) / H if optimal is None
                            else float(optimal))
            self.worst = (float(self.start_distribution @ vw) / H if worst is None
                          else float(worst))
            flat = np.flatnonzero((self.start_distribution > 0) & (vs - vw <= 0.0))
            if flat.size:
                raise BBRLError(f"episodic MDP: from start state {int(flat[0])} the best and "
                                "the worst episode values are equal; regret cannot be "
                                "normalised")
        else:
            from bbrlcore.mdp.references import average_reward_rows

            if optimal is None or worst is None:
                R3 = self._r3()
                best = average_reward_rows(self.succ, self.nsucc, self.P, R3, "max")
                low = average_reward_rows(self.succ, self.nsucc, self.P, R3, "min")
            self.optimal = (float(self.start_distribution @ best.gain) if optimal is None
                            else float(optimal))
            self.worst = (float(self.start_distribution @ low.gain) if worst is None
                          else float(worst))
            if not self.optimal - self.worst > 0.0002:  # Colosseum's own assertion
                raise BBRLError(f"continuing MDP: optimal gain {self.optimal:.6g} and worst "
                                f"{self.worst:.6g} are too close to normalise regret")

    def _r3(self) -> np.ndarray:
        """Rewards as per-transition values whose expectation is ``rbar``."""
        return np.broadcast_to(self.rbar[..., None], self.P.shape).copy()

    @classmethod
    def from_dense(cls, P: np.ndarray, R: np.ndarray, **kwargs: Any) -> Evaluator:
        """An evaluator of a dense model: ``P`` (nX, nU, nX), ``R`` (nX, nU, nX) or
        expected rewards (nX, nU) (Colosseum's ``mdp.T`` and ``mdp.R``)."""
        from bbrlcore.mdp import rows

        P = np.asarray(P, np.float64)
        lay = rows.layout_of(P > 0)
        Pv = rows.gather(P, lay)
        R = np.asarray(R, np.float64)
        Rv = R if R.ndim == 2 else rows.gather(R, lay)
        return cls(lay.succ, lay.nsucc, Pv, Rv, **kwargs)

    # -- one row ------------------------------------------------------------------------

    def episode_values(self, policy: np.ndarray) -> np.ndarray:
        """:math:`V^\\pi_0` (nX,) of ``policy`` (episodic)."""
        pi = ev_.as_policy(policy, self.n_states, self.n_actions, self.horizon)
        if pi.ndim == 2:
            return ev_.episode_values_deterministic(self.succ, self.nsucc, self.P, self.rbar,
                                                    pi, self.horizon, self._V).copy()
        return ev_.episode_values_stochastic(self.succ, self.nsucc, self.P, self.rbar, pi,
                                             self.horizon, self._V).copy()

    def gain(self, policy: np.ndarray, state: Any) -> float:
        """:math:`\\rho^\\pi` from ``state`` (continuing)."""
        return ev_.policy_gain(self.succ, self.nsucc, self.P, self.rbar, policy, state,
                               rbar=self.rbar, scratch=self._scratch)

    def evaluate(self, policy: np.ndarray, state: int) -> tuple[float, float, float]:
        """Colosseum's per-step numbers of one row (module docstring): ``(regret,
        normalised_regret, expected_reward)`` of ``policy``, ``state`` being the starting
        state of the episode in progress (episodic) or the current state (continuing)."""
        if self.episodic:
            return self._episodic_row(self.episode_values(policy), state)
        return self._continuing_row(self.gain(policy, int(state)))

    def _episodic_row(self, V: np.ndarray, s: int) -> tuple[float, float, float]:
        return episodic_row(V, self.optimal_start, self.worst_start, self.start_distribution,
                            int(s), self.horizon)

    def _continuing_row(self, g: float) -> tuple[float, float, float]:
        return continuing_row(g, self.optimal, self.worst)

    # -- a whole interaction ------------------------------------------------------------

    def accumulate(self, policies: Sequence[np.ndarray] | Callable[[int], np.ndarray],
                   states: Sequence[int] | np.ndarray | None = None, *, T: int,
                   log_every: int = LOG_EVERY, rewards: np.ndarray | None = None,
                   frozen_from_step: int | None = None) -> Indicators:
        """Colosseum's indicators of an interaction of ``T`` steps (module docstring).

        Parameters
        ----------
        policies
            The agent's current policy at each of Colosseum's rows (:func:`log_rows`), in
            order — or a function of the row's index returning it (called only for the
            rows that are evaluated).
        states
            Per row: the starting state of the episode in progress (episodic; at the
            final row an episode that ended at the last step has already been replaced
            by the next one, as in Colosseum) or the current state, reached by the row's
            step (continuing). Episodic with a single starting state: may be omitted.
        rewards
            The T rewards collected (optional): the ``reward`` and ``normalised_reward``
            columns.
        frozen_from_step
            The step from which Colosseum's time limit stopped training (None: never).
        """
        steps, weights = log_rows(T, log_every)
        n = steps.size
        get = policies if callable(policies) else None
        if get is None:
            if len(policies) != n:
                raise BBRLError(f"policies: {len(policies)} given, Colosseum evaluates "
                                f"{n} rows for T={T}, log_every={log_every}")
            get = policies.__getitem__
        if states is None:
            nz = np.flatnonzero(self.start_distribution)
            if not self.episodic or nz.size != 1:
                raise BBRLError("states: required (continuing, or several starting states): "
                                "the state of each row")
            states = np.full(n, int(nz[0]), np.int64)
        states = np.asarray(states, dtype=np.int64)
        if states.shape != (n,) or (states < 0).any() or (states >= self.n_states).any():
            raise BBRLError(f"states: expected {n} states in [0, {self.n_states}), one a row")
        if self.episodic and (self.start_distribution[states] <= 0).any():
            i = int(np.flatnonzero(self.start_distribution[states] <= 0)[0])
            raise BBRLError(f"states: row {i} starts its episode in state {int(states[i])}, "
                            "which the starting distribution never gives")
        reg = np.zeros(n)
        nreg = np.zeros(n)
        avg = np.zeros(n)
        training = np.ones(n, dtype=bool)
        is_training = True
        stopped: int | None = None
        cache: Any = None
        atol = OPTIMALITY_ATOL_EPISODIC if self.episodic else OPTIMALITY_ATOL_CONTINUING
        for i in range(n):
            t = int(steps[i])
            in_loop = i < n - 1
            if (is_training and frozen_from_step is not None and t >= frozen_from_step):
                is_training = False
                stopped = int(frozen_from_step)
            training[i] = is_training
            if is_training:
                reg[i], nreg[i], avg[i] = self.evaluate(get(i), int(states[i]))
            else:
                if cache is None:
                    if self.episodic:
                        cache = self.episode_values(get(i))
                    else:
                        cache = self.evaluate(get(i), int(states[i]))
                if self.episodic:
                    reg[i], nreg[i], avg[i] = self._episodic_row(cache, int(states[i]))
                else:
                    reg[i], nreg[i], avg[i] = cache
            if not in_loop:
                break
            if is_training and stops_training(nreg, i, t, int(T), atol):
                is_training = False
                stopped = t + 1
        cols: dict[str, np.ndarray] = {
            "steps": steps, "weight": weights, "training": training,
            "row_regret": reg, "row_normalised_regret": nreg, "row_expected_reward": avg,
            "expected_regret": np.cumsum(reg * weights),
            "normalised_expected_regret": np.cumsum(nreg * weights),
            "expected_reward": np.cumsum(avg * weights),
        }
        span = self.optimal - self.worst
        cols["normalised_expected_reward"] = (cols["expected_reward"]
                                              - steps * self.worst) / span
        if rewards is not None:
            rw = np.asarray(rewards, dtype=np.float64)
            if rw.shape != (int(T),):
                raise BBRLError(f"rewards: {rw.shape[0] if rw.ndim else 0} given, "
                                f"expected T={T} (one a step)")
            csum = np.concatenate([[0.0], np.cumsum(rw)])
            upto = steps.copy()
            upto[-1] = int(T)  # the final row comes after the last step's reward
            cols["reward"] = csum[upto]
            cols["normalised_reward"] = (cols["reward"] - steps * self.worst) / span
        return Indicators(cols, int(T), stopped)


def evaluate_policies(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray, R: np.ndarray,
                      policies: Sequence[np.ndarray], *, T: int,
                      log_every: int = LOG_EVERY, horizon: int | None = None,
                      start: Any = 0, states: Sequence[int] | None = None,
                      rewards: np.ndarray | None = None) -> Indicators:
    """Colosseum's indicators of an interaction of ``T`` steps in which the agent's
    current policy at Colosseum's rows (:func:`log_rows`) was ``policies``: the one-call
    form of :class:`Evaluator` and :meth:`Evaluator.accumulate` (the module docstring
    has the definitions).

    >>> import numpy as np
    >>> from bbrlcore.mdp import families
    >>> t = families.make("deepsea", size=4).test
    >>> lay = t.support_layout
    >>> P = t.draw_rows(np.random.default_rng(0))
    >>> right = np.ones(t.n_states, dtype=np.int64)          # always action 1
    >>> out = evaluate_policies(lay.succ, lay.nsucc, P, t.reward_rows, [right] * 3,
    ...                         T=40, log_every=16, horizon=4, start=t.initial_state)
    >>> out["steps"].tolist(), out["weight"].tolist()
    ([16, 32, 39], [16, 16, 8])
    """
    ev = Evaluator(succ, nsucc, P, R, horizon=horizon, start=start)
    return ev.accumulate(policies, states, T=T, log_every=log_every, rewards=rewards)
