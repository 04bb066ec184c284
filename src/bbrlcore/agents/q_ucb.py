r"""Q-learning with UCB-Hoeffding bonuses (Jin, Allen-Zhu, Bubeck & Jordan 2018).

Beyond the paper (Castronovo et al. 2016 does not have it): the model-free optimistic
baseline of the episodic setting, the one the exploration literature and Colosseum
compare against. It uses neither the prior's concentrations nor its model: only the
largest reward of the prior's reward table (the scale below) and the rewards it observes.

**Episodic only.** The agent learns one Q-function per step of the episode,
:math:`Q_h(x,u)` for h = 1, ..., H (here h = 0, ..., H-1), so it needs an episodic
experiment (episodes of H steps, ``episode_length`` H > 0; the environment returns to the
initial state after every H steps); a continuing one is refused in one line. Its tables
start from the prior-free optimism of the paper and are kept across episodes.

The algorithm (the paper's Algorithm 1, rewards in [0, 1]): :math:`Q_h(x,u) = H` and
:math:`N_h(x,u) = 0` at the start of the interaction, :math:`V_{H}(x) = 0` (:math:`V_{H+1}`
in the paper's numbering). At step h of an episode in state x the agent plays
:math:`u = \arg\max_{u'} Q_h(x, u')` (exact ties broken uniformly at random, so the first
visits of a state, where every Q is H, are uniform draws), observes r and y, and with
:math:`t = N_h(x,u) \leftarrow N_h(x,u) + 1`,

.. math::  \alpha_t = \frac{H+1}{H+t}, \qquad b_t = c\,\sqrt{H^3 \iota / t}, \qquad
   \iota = \log(S A T / p),

.. math::  Q_h(x,u) \leftarrow (1-\alpha_t)\,Q_h(x,u) + \alpha_t\,\bigl(r + V_{h+1}(y) +
   b_t\bigr), \qquad V_h(x) \leftarrow \min\{H, \max_{u'} Q_h(x,u')\},

with S, A the numbers of states and actions and T = the interaction's total steps
(episodes × H). :math:`V_h(x) = H` until (x, h) is first updated. The learning rate
weights the new target by :math:`\alpha_t` (α₁ = 1: the first visit replaces the
optimistic H); Colosseum's ``QLearningEpisodic`` weights the *old* value by it, which is
not the paper's rule (its form is ``form=colosseum``, below). Rewards beyond 1: every H
above (the initial values, the cap of V, the bonus) is multiplied by the scale ρ = the
largest absolute reward of the prior's reward table on its support, or 1 if that is
smaller (so ρ = 1 on the families, whose rewards lie within [-1, 1]: exactly the
paper's algorithm; 10 on GC), the value range :math:`H\rho` that the paper's H stands
for.
The update uses the observed reward (noisy under Gaussian rewards), as the paper does.

**Rewards.** The agent never reads the prior's rewards beyond the scale ρ: it learns from
the observed ones whatever the prior says. Under a prior whose rewards are unknown
(``+rbeta``, ``+rnig``, :mod:`bbrlcore.mdp.reward_prior`; their hyper-parameters play no
part) ρ comes from the reward range instead,
:func:`~bbrlcore.mdp.reward_prior.reward_range` (the same ρ on every family and on GC);
the algorithm is otherwise the same.

Parameters: ``c`` (bonus constant, > 0, default 1) and ``p`` (failure probability, in
(0, 1), default 0.05); ``form`` (``jin``, default, or ``colosseum``) and the latter's
own (below). The paper proves its bound for "some absolute constant c" and
reports no experiment; Colosseum's agent requires ``c`` (tuned in (0.001, 1.1), no
default) and its benchmark fixes p = 0.05, the default here; c = 1 is the plain reading
of the paper's bonus.

**The constant c decides what it learns** (measured on DeepSea with the uniform prior,
10,000 episodes, two test MDPs per size): with c = 1 it finds the treasure in no episode
of any size from 10 to 50 (nor in 3,000 episodes of DeepSea-6, where Random finds it
about 50 times): the bonus :math:`c\sqrt{H^3\iota/t}`, 60 at a first visit of
DeepSea-6, swamps the values it learns; with c = 0.1 in 750 episodes of DeepSea-10 and
none beyond; with c = 0.01 in 7,900, 440 and 67 episodes of DeepSea 10, 20 and 30. The
``exploration`` preset therefore chooses c among 1, 0.1 and 0.01 on its validation MDPs.

**Q-learning as Colosseum computes it** (``form=colosseum``; Jin et al.'s form above
stays the default). Colosseum's ``QLearningEpisodic`` (its ``QValuesModel``, in
``colosseum/agent/agents/episodic/q_learning.py``) cites the same paper but updates
otherwise, and this form reproduces it: the counts start at **1** (the first update has t = 2), the
values :math:`V_h` at **0** for every h (not H), :math:`Q_h = H`; with
:math:`t = N_h(x,u) \leftarrow N_h(x,u) + 1` and
:math:`\alpha_t = \max\{\alpha_{\min}, (H+1)/(H+t)\}`,

.. math::  Q_h(x,u) \leftarrow \alpha_t\,Q_h(x,u) + (1-\alpha_t)\,\bigl(r +
   V_{h+1}(y) + b_t\bigr), \qquad V_h(x) \leftarrow \min\{H, \max_{u'} Q_h(x,u')\}

(α weights the **old** value), and the bonus either Hoeffding's,
:math:`b_t = c\sqrt{H^3\iota/t}` (``bonus=hoeffding``), or Colosseum's Bernstein-type
one (``bonus=bernstein``, its benchmark's): with :math:`\mu`, :math:`\sigma` the sums
of :math:`V_{h+1}(y)` and of its square over the pair's updates,

.. math::  \beta_t = \min\Bigl\{c\Bigl(\sqrt{\bigl(H(\sigma - \mu)^2/t^2 + H\bigr)
   \iota} + \sqrt{H^7 S A}\,\iota/t\Bigr),\; c_2\sqrt{H^3\iota/t}\Bigr\},
   \qquad b_t = \frac{\beta_t - (1-\alpha_t)\,\beta_{t-1}}{2\,\alpha_t},

exactly as its code computes them (:math:`(\sigma - \mu)^2` included, where Jin et al.'s
Bernstein bonus has the variance :math:`\sigma/t - (\mu/t)^2`). ι = log(SAT/p) as above;
actions are the arg max of :math:`Q_h(x, \cdot)`, ties broken uniformly, as Colosseum's
``QValuesActor`` does. bbrl computes in float64 where Colosseum stores Q and V in
float32: on Colosseum's own update run over 180 fixed transitions the two agree to a
relative 1e-6 (``tests/fixtures/colosseum_qlearning.json``, held to 1e-5). Rewards beyond
[-1, 1]: the form runs on the rewards divided by ρ (above), so on the families (ρ = 1) it
is Colosseum's arithmetic exactly. Parameters of this form: ``c`` (Colosseum's
``c_1``), ``p``, ``bonus`` (``hoeffding``, default, or ``bernstein``), ``c2`` (the
Bernstein bonus's cap, required with it) and ``min_at`` (:math:`\alpha_{\min}`, in
[0, 0.99), default 0); ``bonus``, ``c2`` and ``min_at`` are refused with ``form=jin`` in
one line. Colosseum's benchmark configuration (``QLearningEpisodic.gin`` in its
``colosseum/benchmark/cached_hyperparameters/agent_configs``) is
:data:`COLOSSEUM_BENCHMARK`: ``--param form=colosseum --param bonus=bernstein --param
c=0.9415278732894797 --param c2=0.013873778519317169 --param min_at=0.07263563483119442``
(p = 0.05, the default).

Paper: C. Jin, Z. Allen-Zhu, S. Bubeck and M. I. Jordan, "Is Q-learning provably
efficient?", NeurIPS 2018.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from bbrlcore.agents._indicators import (
    Request,
    final_weight,
    finish,
    ind_alloc,
    is_row,
    needs_evaluation,
    row_episodic,
)
from bbrlcore.agents._kernels import (
    argmax_random_tie,
    env_reset,
    env_reward_rows,
    env_step_rows,
)
from bbrlcore.agents.base import (
    FLOAT64,
    MAX_AGENT_MEMORY_BYTES,
    Algorithm,
    Episode,
    Param,
    Trained,
    positive,
    reward_buffer,
)
from bbrlcore.errors import BBRLError
from bbrlcore.mdp.evaluation import episode_values_stochastic

_NO_COUNTERS = np.zeros(0, dtype=np.int64)


@njit(cache=True, error_model="numpy")
def q_ucb_tables(nX, nU, H, scale):
    """``(Q, V, N)`` at the start of the interaction: :math:`Q_h = H\\rho`,
    :math:`V_h = H\\rho` for h < H and :math:`V_H = 0`, no visits."""
    Q = np.full((H, nX, nU), H * scale)
    V = np.full((H + 1, nX), H * scale)
    V[H, :] = 0.0
    N = np.zeros((H, nX, nU), dtype=np.int64)
    return Q, V, N


@njit(cache=True, error_model="numpy")
def q_ucb_update(Q, V, N, h, x, u, r, y, H, c, iota, scale):
    """The paper's update of :math:`Q_h(x,u)` and :math:`V_h(x)` after (x, u, r, y) at
    step h of an episode."""
    N[h, x, u] += 1
    t = N[h, x, u]
    alpha = (H + 1.0) / (H + t)
    bonus = c * scale * math.sqrt(H * H * H * iota / t)
    Q[h, x, u] = (1.0 - alpha) * Q[h, x, u] + alpha * (r + V[h + 1, y] + bonus)
    m = Q[h, x, 0]
    for a in range(1, Q.shape[2]):
        if Q[h, x, a] > m:
            m = Q[h, x, a]
    V[h, x] = min(H * scale, m)


@njit(cache=True, error_model="numpy")
def colosseum_tables(nX, nU, H):
    """``(Q, V, N, M, S2, B)`` at the start of the interaction as Colosseum's
    ``QValuesModel`` sets them: :math:`Q_h = H`, :math:`V_h = 0` for every h (also
    h < H), every count 1; ``M``, ``S2`` (sums of :math:`V_{h+1}(y)` and of its square)
    and ``B`` (the last β) 0, for its Bernstein bonus."""
    Q = np.full((H, nX, nU), float(H))
    V = np.zeros((H + 1, nX))
    N = np.ones((H, nX, nU), dtype=np.int64)
    M = np.zeros((H, nX, nU))
    S2 = np.zeros((H, nX, nU))
    B = np.zeros((H, nX, nU))
    return Q, V, N, M, S2, B


@njit(cache=True, error_model="numpy")
def colosseum_update(Q, V, N, M, S2, B, h, x, u, r, y, H, c1, c2, min_at, bernstein, iota):
    """Colosseum's update of :math:`Q_h(x,u)` and :math:`V_h(x)` after (x, u, r, y) at
    step h of an episode (``QValuesModel.step_update`` of its ``QLearningEpisodic``,
    transcribed; the module docstring states it): returns the bonus :math:`b_t`."""
    N[h, x, u] += 1
    t = N[h, x, u]
    alpha = max(min_at, (H + 1.0) / (H + t))
    if bernstein:
        vy = V[h + 1, y]
        M[h, x, u] += vy
        S2[h, x, u] += vy * vy
        old = B[h, x, u]
        d = S2[h, x, u] - M[h, x, u]
        nS, nA = Q.shape[1], Q.shape[2]
        B[h, x, u] = min(
            c1 * (math.sqrt((H * (d * d) / (t * t) + H) * iota)
                  + math.sqrt(float(H) ** 7 * nS * nA) * iota / t),
            c2 * math.sqrt(float(H) ** 3 * iota / t))
        b = (B[h, x, u] - (1.0 - alpha) * old) / 2.0 / alpha
    else:
        b = c1 * math.sqrt(float(H) ** 3 * iota / t)
    Q[h, x, u] = alpha * Q[h, x, u] + (1.0 - alpha) * (r + V[h + 1, y] + b)
    m = Q[h, x, 0]
    for a in range(1, Q.shape[2]):
        if Q[h, x, a] > m:
            m = Q[h, x, a]
    V[h, x] = min(float(H), m)
    return b


@njit(cache=True, error_model="numpy")
def _trajectory(P, R, Rstd, gaussian, initial_state, gamma, horizon, H, seed, succ, nsucc,
                c, iota, scale, rewards, colosseum, bernstein, c2, min_at):
    np.random.seed(seed)
    nX, nU, _ = P.shape
    if colosseum:
        Q, V, N, M, S2, B = colosseum_tables(nX, nU, H)
    else:
        Q, V, N = q_ucb_tables(nX, nU, H, scale)
        M = S2 = B = np.empty((0, 0, 0))
    ret = 0.0
    disc = 1.0
    x = 0
    for t in range(horizon):
        h = t % H
        if h == 0:
            x = env_reset(initial_state, nX)
        u = argmax_random_tie(Q[h, x])
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        y = succ[x, u, k]
        if colosseum:  # (in units of the scale: exactly Colosseum's numbers when it is 1)
            colosseum_update(Q, V, N, M, S2, B, h, x, u, r / scale, y, H, c, c2, min_at,
                             bernstein, iota)
        else:
            q_ucb_update(Q, V, N, h, x, u, r, y, H, c, iota, scale)
        x = y
    return ret


@njit(cache=True, error_model="numpy")
def greedy_ties(Q, pol):
    """``pol`` (H, nX, nU) ← the greedy policy of ``Q`` (H, nX, nU), exact ties uniform
    (the agent's own tie-breaking, :func:`argmax_random_tie`)."""
    Hq, nX, nU = Q.shape
    for h in range(Hq):
        for x in range(nX):
            best = Q[h, x, 0]
            for u in range(1, nU):
                if Q[h, x, u] > best:
                    best = Q[h, x, u]
            n = 0
            for u in range(nU):
                if Q[h, x, u] == best:
                    n += 1
            for u in range(nU):
                pol[h, x, u] = 1.0 / n if Q[h, x, u] == best else 0.0
    return pol


@njit(cache=True, error_model="numpy")
def _trajectory_ind(P, R, Rstd, gaussian, initial_state, gamma, horizon, H, seed, succ,
                    nsucc, c, iota, scale, rewards, colosseum, bernstein, c2, min_at, L,
                    rbar, refs_s, refs_w, mu0, Hr, opt, worst):
    """:func:`_trajectory` with Colosseum's indicators every ``L`` steps
    (:mod:`._indicators`), the current policy being greedy on the agent's Q (one per
    step of the episode), exact ties uniform: its :math:`V^\\pi_0` over the episodes.
    The same trajectory."""
    np.random.seed(seed)
    nX, nU, _ = P.shape
    if colosseum:
        Q, V, N, M, S2, B = colosseum_tables(nX, nU, H)
    else:
        Q, V, N = q_ucb_tables(nX, nU, H, scale)
        M = S2 = B = np.empty((0, 0, 0))
    acc, hist = ind_alloc(horizon, L)
    pol = np.zeros((H, nX, nU))
    V0 = np.zeros(nX)
    Vc = np.zeros(nX)
    ret = 0.0
    disc = 1.0
    x = 0
    s = 0
    for t in range(horizon):
        h = t % H
        if h == 0:
            x = env_reset(initial_state, nX)
            s = x
        u = argmax_random_tie(Q[h, x])
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        y = succ[x, u, k]
        if colosseum:
            colosseum_update(Q, V, N, M, S2, B, h, x, u, r / scale, y, H, c, c2, min_at,
                             bernstein, iota)
        else:
            q_ucb_update(Q, V, N, h, x, u, r, y, H, c, iota, scale)
        x = y
        if is_row(t, L):
            if needs_evaluation(acc):
                greedy_ties(Q, pol)
                episode_values_stochastic(succ, nsucc, P, rbar, pol, Hr, V0)
            row_episodic(acc, hist, t, horizon, L, False, V0, s, refs_s, refs_w, mu0, Hr,
                         Vc)
    if horizon % H == 0:  # the last step ended an episode: the next one's start
        s = env_reset(initial_state, nX)
    if needs_evaluation(acc):
        greedy_ties(Q, pol)
        episode_values_stochastic(succ, nsucc, P, rbar, pol, Hr, V0)
    row_episodic(acc, hist, horizon - 1, horizon, final_weight(horizon, L), True, V0, s,
                 refs_s, refs_w, mu0, Hr, Vc)
    return ret, acc


def make_indicator_player(prior: Any, params: dict, trained: Trained | None, ep: Episode,
                          log_every: int):
    """:func:`make_player`'s player with Colosseum's indicators of its greedy policy
    (:func:`_trajectory_ind`): ``play(P, seed, rewards) -> (return, counters, values)``."""
    make_player(prior, params, trained, ep)  # (its checks; it learns the rewards always)
    H = int(ep.episode_length)
    req = Request(ep, log_every)
    succ, nsucc = req.succ, req.nsucc
    nX, nU = int(nsucc.shape[0]), int(nsucc.shape[1])
    R = np.array(ep.R, dtype=np.float64)
    Rstd = np.array(ep.Rstd, dtype=np.float64)
    gaussian, x0 = int(ep.gaussian), ep.start
    gamma, horizon = float(ep.gamma), int(ep.horizon)
    c = float(params["c"])
    colosseum = params.get("form", "jin") == "colosseum"
    bernstein = params.get("bonus", "hoeffding") == "bernstein"
    c2 = float(params.get("c2") or 0.0)
    min_at = float(params.get("min_at") or 0.0)
    scale = reward_scale(prior)
    io = iota(nX, nU, horizon, float(params["p"]))

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None):
        rewards = reward_buffer(rewards, horizon)
        P = np.ascontiguousarray(P, dtype=np.float64)
        evr = req.evaluator(P)
        ret, acc = _trajectory_ind(P, R, Rstd, gaussian, x0, gamma, horizon, H, int(seed),
                                   succ, nsucc, c, io, scale, rewards, colosseum, bernstein,
                                   c2, min_at, req.log_every, np.ascontiguousarray(evr.rbar),
                                   *req.refs(evr))
        return float(ret), _NO_COUNTERS, finish(acc, evr, rewards, horizon)

    return play


def reward_scale(prior: Any) -> float:
    """ρ: the largest absolute reward of the prior's reward table on its support, or 1
    if that is smaller (rewards within [-1, 1]: the paper's scale). Under a prior whose
    rewards are unknown, the largest absolute value of its reward range
    (:func:`~bbrlcore.mdp.reward_prior.reward_range`), or 1 if that is smaller."""
    from bbrlcore.mdp.reward_prior import reward_prior_of, reward_range

    if not reward_prior_of(prior).known:
        return max(1.0, *(abs(v) for v in reward_range(prior)))
    vals = np.abs(np.asarray(prior.reward_rows))[prior.support_layout.mask]
    return max(1.0, float(vals.max()) if vals.size else 0.0)


def iota(n_states: int, n_actions: int, horizon: int, p: float) -> float:
    """:math:`\\iota = \\log(S A T / p)`."""
    return math.log(n_states * n_actions * max(horizon, 1) / p)


def table_bytes(n_states: int, n_actions: int, H: int) -> int:
    """Memory of the tables Q, N (H × S × A each) and V ((H + 1) × S)."""
    return 16 * H * n_states * n_actions + 8 * (H + 1) * n_states


def make_player(prior: Any, params: dict, trained: Trained | None, ep: Episode):
    H = int(getattr(ep, "episode_length", 0) or 0)
    ALGORITHM.check_episodic(H)  # (episodic only: the rule is the Algorithm's)
    lay = ep.layout()
    succ = np.ascontiguousarray(lay.succ, dtype=np.int64)
    nsucc = np.ascontiguousarray(lay.nsucc, dtype=np.int64)
    nX, nU = int(nsucc.shape[0]), int(nsucc.shape[1])
    need = table_bytes(nX, nU, H)
    if need > MAX_AGENT_MEMORY_BYTES:
        raise BBRLError(f"q-learning-ucb: its tables would need {need / 2**30:.1f} GiB "
                        f"(H = {H} steps x {nX} states x {nU} actions; limit "
                        f"{MAX_AGENT_MEMORY_BYTES / 2**30:.0f} GiB)")
    R = np.array(ep.R, dtype=np.float64)
    Rstd = np.array(ep.Rstd, dtype=np.float64)
    gaussian, x0 = int(ep.gaussian), ep.start
    gamma, horizon = float(ep.gamma), int(ep.horizon)
    err = _parameter_check(params)
    if err:
        raise BBRLError(f"{ALGORITHM.agent_id(params)}: {err}")
    c = float(params["c"])
    colosseum = params.get("form", "jin") == "colosseum"
    bernstein = params.get("bonus", "hoeffding") == "bernstein"
    c2 = float(params.get("c2") or 0.0)
    min_at = float(params.get("min_at") or 0.0)
    scale = reward_scale(prior)
    io = iota(nX, nU, horizon, float(params["p"]))
    shape = (horizon,)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is np.ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):
            rewards = reward_buffer(rewards, horizon)
        ret = _trajectory(np.ascontiguousarray(P, dtype=np.float64), R, Rstd, gaussian, x0,
                          gamma, horizon, H, int(seed), succ, nsucc, c, io, scale, rewards,
                          colosseum, bernstein, c2, min_at)
        return float(ret), _NO_COUNTERS

    return play


def cost_features(params: dict, prior, test, gamma: float, horizon: int,
                  episode_length: int = 0) -> dict[str, float]:
    """A step is an arg-max over the actions, a transition and one update; the tables
    are allocated once (H × S × A entries). Not calibrated by measurements (the cost
    model prices it by its steps until benchmarks record it)."""
    H = max(int(episode_length), 1)
    return {"trajectory": 1.0, "steps": float(horizon),
            "entries": float(H * prior.n_states * prior.n_actions)}


def _probability(v: float) -> str | None:
    return None if 0.0 < v < 1.0 else "must be in (0, 1)"


#: The update rules of ``form``: Jin et al.'s (the paper's), or Colosseum's.
FORMS = ("jin", "colosseum")
#: The bonuses of ``bonus``: Hoeffding's, or Colosseum's Bernstein-type one
#: (``form=colosseum`` only).
BONUSES = ("hoeffding", "bernstein")


def _one_of(values: tuple[str, ...]):
    def check(v: str) -> str | None:
        return None if v in values else f"must be one of {', '.join(values)}"

    return check


def _min_at_check(v: float) -> str | None:
    return None if 0.0 <= v < 0.99 else "must be in [0, 0.99) (Colosseum's range)"


def _parameter_check(params: dict) -> str | None:
    """The parameters that only Colosseum's form has, with ``form=jin``; Colosseum's
    Bernstein bonus without its cap ``c2``."""
    if params.get("form", "jin") != "colosseum":
        for name, default in (("bonus", "hoeffding"), ("c2", None), ("min_at", 0.0)):
            if params.get(name, default) != default:
                return (f"{name} applies to form=colosseum only (Jin et al.'s form has a "
                        "Hoeffding bonus, no c2 and no minimum learning rate)")
        return None
    if params.get("bonus", "hoeffding") == "bernstein" and params.get("c2") is None:
        return "bonus=bernstein needs c2 (--param c2=x, x > 0: the cap of its bonus)"
    return None


def _setting_check(params: dict, prior, gamma: float, horizon: int) -> str | None:
    return _parameter_check(params)


#: Colosseum's benchmark configuration of its ``QLearningEpisodic``
#: (``colosseum/benchmark/cached_hyperparameters/agent_configs/QLearningEpisodic.gin``:
#: ``p=0.05``, ``UCB_type="bernstein"``, ``c_1``, ``c_2``, ``min_at``), as this agent's
#: parameters: ``--param form=colosseum --param bonus=bernstein --param c=... ...``.
COLOSSEUM_BENCHMARK: dict[str, Any] = {
    "c": 0.9415278732894797,
    "p": 0.05,
    "form": "colosseum",
    "bonus": "bernstein",
    "c2": 0.013873778519317169,
    "min_at": 0.07263563483119442,
}


ALGORITHM = Algorithm(
    name="q-learning-ucb",
    params=(
        Param("c", float, default=1.0, check=positive,
              doc="bonus constant: b_t = c sqrt(H^3 iota / t) (Colosseum's c_1)"),
        Param("p", float, default=0.05, check=_probability,
              doc="failure probability in iota = log(S A T / p) (Colosseum's 0.05)"),
        Param("form", str, default="jin", check=_one_of(FORMS), id_omits_default=True,
              doc="update rule: jin (Jin et al. 2018) or colosseum (Colosseum's "
                  "QLearningEpisodic: its learning-rate weights, counts and bonus)"),
        Param("bonus", str, default="hoeffding", check=_one_of(BONUSES),
              id_omits_default=True,
              doc="form=colosseum: hoeffding or bernstein (Colosseum's benchmark)"),
        Param("c2", float, default=None, check=positive,
              doc="form=colosseum, bonus=bernstein: the cap c2 sqrt(H^3 iota / t) of "
                  "the bonus (Colosseum's c_2)"),
        Param("min_at", float, default=0.0, check=_min_at_check, id_omits_default=True,
              doc="form=colosseum: the smallest learning rate (Colosseum's min_at)"),
    ),
    make_player=make_player,
    doc=__doc__ or "",
    setting_check=_setting_check,
    cost_features=cost_features,
    display_name="Q-learning-UCB",
    sparse=True,
    episodic=True,
    episodic_only="it learns one Q-function per step of an episode, Jin et al. 2018",
    indicator_player=make_indicator_player,
    reward_priors=("known", "beta", "nig"),
    dirichlet_all=True,  # (it reads no transition prior)
)
