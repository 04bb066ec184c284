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
not the paper's rule. Rewards beyond 1: every H above (the initial values, the cap of
V, the bonus) is multiplied by the scale ρ = the largest absolute reward of the prior's
reward table on its support, or 1 if that is smaller (so ρ = 1 on the families, whose
rewards lie within [-1, 1]: exactly the paper's algorithm; 10 on GC), the value range
:math:`H\rho` that the paper's H stands for.
The update uses the observed reward (noisy under Gaussian rewards), as the paper does.

**Rewards.** The agent never reads the prior's rewards beyond the scale ρ: it learns from
the observed ones whatever the prior says. Under a prior whose rewards are unknown
(``+rbeta``, ``+rnig``, :mod:`bbrlcore.mdp.reward_prior`; their hyper-parameters play no
part) ρ comes from the reward range instead,
:func:`~bbrlcore.mdp.reward_prior.reward_range` (the same ρ on every family and on GC);
the algorithm is otherwise the same.

Parameters: ``c`` (bonus constant, > 0, default 1) and ``p`` (failure probability, in
(0, 1), default 0.05). The paper proves its bound for "some absolute constant c" and
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

Paper: C. Jin, Z. Allen-Zhu, S. Bubeck and M. I. Jordan, "Is Q-learning provably
efficient?", NeurIPS 2018.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

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
def _trajectory(P, R, Rstd, gaussian, initial_state, gamma, horizon, H, seed, succ, nsucc,
                c, iota, scale, rewards):
    np.random.seed(seed)
    nX, nU, _ = P.shape
    Q, V, N = q_ucb_tables(nX, nU, H, scale)
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
        q_ucb_update(Q, V, N, h, x, u, r, y, H, c, iota, scale)
        x = y
    return ret


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
    c = float(params["c"])
    scale = reward_scale(prior)
    io = iota(nX, nU, horizon, float(params["p"]))
    shape = (horizon,)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is np.ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):
            rewards = reward_buffer(rewards, horizon)
        ret = _trajectory(np.ascontiguousarray(P, dtype=np.float64), R, Rstd, gaussian, x0,
                          gamma, horizon, H, int(seed), succ, nsucc, c, io, scale, rewards)
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


ALGORITHM = Algorithm(
    name="q-learning-ucb",
    params=(
        Param("c", float, default=1.0, check=positive,
              doc="bonus constant: b_t = c sqrt(H^3 iota / t)"),
        Param("p", float, default=0.05, check=_probability,
              doc="failure probability in iota = log(S A T / p) (Colosseum's 0.05)"),
    ),
    make_player=make_player,
    doc=__doc__ or "",
    cost_features=cost_features,
    display_name="Q-learning-UCB",
    sparse=True,
    episodic=True,
    episodic_only="it learns one Q-function per step of an episode, Jin et al. 2018",
    reward_priors=("known", "beta", "nig"),
)
