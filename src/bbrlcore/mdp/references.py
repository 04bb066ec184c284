r"""Reference values of a test MDP: what regret and the field's scores are measured against.

A long interaction is scored by its **regret**: how much less reward the agent collected
than the best policy would have, knowing the MDP. Colosseum (Conserva & Rauber 2022,
App. C) normalises it by the gap between the best and the *worst* policy, and draws the
uniformly random policy beside it. This module computes the six numbers that takes, per
test MDP, **exactly** (no tolerance on a value: exact linear solves and backward
induction; a tolerance of 10⁻¹⁰ relative only decides whether two actions tie):

=============================  =========================================================
continuing (average reward)    episodic (H steps from the initial state)
=============================  =========================================================
ρ* ``optimal_average_reward``  V*_H(s₀) ``optimal_episode_value``
ρ⁻ ``worst_average_reward``    V⁻_H(s₀) ``worst_episode_value``
ρᵘ ``random_average_reward``   Vᵘ_H(s₀) ``random_episode_value``
=============================  =========================================================

**Average reward (gain).** A stationary policy π has the gain
:math:`g_\pi = P^*_\pi r_\pi` (:math:`P^*_\pi` the Cesàro limit of its transition
matrix): the reward per step it collects in the long run from each state. The optimal
gain :math:`g^*(s) = \max_\pi g_\pi(s)` is found by **multichain policy iteration**
(Puterman 1994, §9.2): each policy is evaluated exactly — its recurrent classes (the
closed strongly connected components of its transition graph), the gain and bias of
each class by one sparse linear solve, the transient states' by another (sparse LU,
:func:`scipy.sparse.linalg.splu`), the bias normalised by :math:`P^*_\pi h = 0` — then
improved first on the gain (:math:`\max_u \sum_y P(y|x,u)\,g(y)`), then, among the
actions that keep it, on the bias (:math:`r(x,u) + \sum_y P(y|x,u)\,h(y)`), keeping the
current action on ties, until nothing changes (:func:`average_reward_rows`). The
minimum (Colosseum's ρ⁻, the *worst* policy) is the maximum of the negated rewards. The
uniformly random policy is evaluated the same way (:func:`policy_gain_rows`).

In a **weakly communicating** MDP (every problem family of bbrl) the optimal gain is the
same from every state and ρ* is that number. Otherwise (an absorbing trap, several
closed regions) it depends on where the interaction starts: ρ* is then the gain **of the
start state** (the mean over the states when the start is uniform), which is what an
interaction from there can reach — and :attr:`References.constant_gain` says so (False).

**Episodic.** With H steps per episode from the initial state s₀ (each episode's
return undiscounted), :math:`V^*_H(s_0)` is the largest expected return, by backward
induction (:math:`V_H = 0`, :math:`V_t(x) = \max_u \sum_y P(y|x,u)(R(x,u,y) +
V_{t+1}(y))`); the minimum gives :math:`V^-_H(s_0)`, the mean over the actions the
uniform policy's :math:`V^u_H(s_0)` (:func:`episode_values_rows`).

**Regret**, from them (:mod:`bbrlcore.analysis.curves`): after t steps of a continuing
interaction :math:`t\rho^* - \sum_{s<t} r_s`; after e episodes
:math:`\sum_{k<e}(V^*_H(s_0) - G_k) = e V^*_H(s_0) - \sum_{s<eH} r_s`. Colosseum's
per-step normalised regret divides each step's (episode's) regret by
:math:`\rho^* - \rho^-` (:math:`V^*_H - V^-_H`).

References
----------
M. L. Puterman, "Markov Decision Processes", Wiley 1994, §8.6 (unichain policy
iteration), §9.2 (multichain policy iteration), §4.5 (backward induction).
M. Conserva, P. Rauber, "Hardness in Markov decision processes: theory and practice",
NeurIPS 2022, App. C (the normalisation).

Examples
--------
Two states: staying in state 0 pays 1 a step; moving to state 1 pays nothing once, then
3 a step forever. In the long run the best policy earns 3 a step, the worst 1 (staying
for ever), the uniform policy 3 (it moves sooner or later). Over episodes of 2 steps from
state 0 the best return is 3 (move, then 3), the worst 1 (stay, then move), the uniform
policy's (1 + 1/2 + 3) / 2 = 2.25.

>>> import numpy as np
>>> P = np.zeros((2, 2, 2)); R = np.zeros((2, 2, 2))
>>> P[0, 0, 0] = 1.0; R[0, 0, 0] = 1.0   # stay
>>> P[0, 1, 1] = 1.0                      # move
>>> P[1, :, 1] = 1.0; R[1, :, 1] = 3.0
>>> ref = references(P, R, initial_state=0, episode_length=2)
>>> ref.optimal_average_reward, ref.worst_average_reward, ref.random_average_reward
(3.0, 1.0, 3.0)
>>> ref.optimal_episode_value, ref.worst_episode_value, ref.random_episode_value
(3.0, 1.0, 2.25)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from bbrlcore.errors import BBRLError

#: Bias-improvement steps of policy iteration in a row without a change of the gain
#: after which the gain is taken as final (:func:`average_reward_rows`): in exact
#: arithmetic such steps end in a few; more are round-off of a nearly decomposable chain.
STALL_STEPS = 50

#: Relative tolerance under which two actions' values tie in policy iteration (the
#: current action is kept): far above the round-off of the exact solves, far below any
#: difference of values of the problems' rewards.
TIE_RTOL = 1e-10
#: Work (states x episode length, or transitions x improvement steps) above which
#: :func:`references_rows` leaves a value undefined (NaN) rather than spend minutes on it.
MAX_REFERENCE_WORK = 4e9


class Gain(NamedTuple):
    """The average reward of a policy: ``gain`` (nX,) and ``bias`` (nX,) (:math:`P^* h =
    0`), the policy (nX,) int64 (None for the uniform policy) and the policy iterations
    it took."""

    gain: np.ndarray
    bias: np.ndarray
    policy: np.ndarray | None
    iterations: int


class References(NamedTuple):
    """A test MDP's reference values (module docstring); an undefined one is NaN (no
    episodic value in a continuing setting)."""

    optimal_average_reward: float
    worst_average_reward: float
    random_average_reward: float
    optimal_episode_value: float
    worst_episode_value: float
    random_episode_value: float
    #: whether the optimal gain is the same from every state (False: ρ* is the start's)
    constant_gain: bool = True


#: The names of :class:`References`' values, in order (the test-set columns).
REFERENCE_NAMES = References._fields[:6]


# ---------------------------------------------------------------------------------------
# Markov chains on sparse rows


def _rbar(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Expected rewards (nX, nU): :math:`\\sum_k P(x,u,k) R(x,u,k)` over each row."""
    mask = np.arange(succ.shape[2]) < nsucc[..., None]
    return np.where(mask, P * R, 0.0).sum(axis=2)


def _chain(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray, rbar: np.ndarray,
           policy: np.ndarray | None):
    """The transition matrix (scipy CSR, nX × nX, duplicates summed) and reward vector of
    the deterministic ``policy`` (nX,), or of the uniform one (None)."""
    from scipy.sparse import csr_matrix

    nX, nU, K = succ.shape
    if policy is None:
        x, u, k = np.nonzero((np.arange(K) < nsucc[..., None]) & (P > 0))
        data = P[x, u, k] / nU
        r = rbar.mean(axis=1)
    else:
        pu = np.asarray(policy, dtype=np.int64)
        rows_n = nsucc[np.arange(nX), pu]
        x = np.repeat(np.arange(nX), rows_n)
        k = np.arange(int(rows_n.sum())) - np.repeat(np.cumsum(rows_n) - rows_n, rows_n)
        u = pu[x]
        keep = P[x, u, k] > 0
        x, u, k = x[keep], u[keep], k[keep]
        data = P[x, u, k]
        r = rbar[np.arange(nX), pu]
    M = csr_matrix((data, (x, succ[x, u, k])), shape=(nX, nX))
    M.sum_duplicates()
    return M, np.ascontiguousarray(r, dtype=np.float64)


def chain_gain(M, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gain and bias of the Markov reward process (``M`` nX × nX row-stochastic, scipy
    sparse; ``r`` its rewards), exactly: its recurrent classes (closed strongly connected
    components) each by one sparse solve of :math:`g + (I-P_C)h = r_C` with :math:`h` 0
    in its first state, the bias then shifted to :math:`\\mu_C h = 0` (:math:`\\mu_C` the
    class's stationary distribution, one more solve); the transient states by
    :math:`(I - P_{TT}) g_T = P_{TR} g_R` and :math:`(I - P_{TT}) h_T = r_T - g_T + P_{TR}
    h_R` (one LU).

    Examples
    --------
    A two-state cycle paying 1 then 0: gain 1/2 everywhere, bias ±1/4.

    >>> from scipy.sparse import csr_matrix
    >>> g, h = chain_gain(csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]])), np.array([1.0, 0.0]))
    >>> g.tolist(), h.tolist()
    ([0.5, 0.5], [0.25, -0.25])
    """
    from scipy.sparse import csc_matrix, identity
    from scipy.sparse.csgraph import connected_components
    from scipy.sparse.linalg import splu

    M = M.tocsr()
    n = M.shape[0]
    pattern = M.copy()
    pattern.data = (pattern.data > 0).astype(np.float64)
    pattern.eliminate_zeros()
    n_comp, labels = connected_components(pattern, directed=True, connection="strong")
    coo = pattern.tocoo()
    closed = np.ones(n_comp, dtype=bool)
    leaving = labels[coo.row] != labels[coo.col]
    closed[labels[coo.row[leaving]]] = False
    recurrent = closed[labels]
    g = np.zeros(n)
    h = np.zeros(n)
    sizes = np.bincount(labels, minlength=n_comp)
    single = closed & (sizes == 1)
    s_states = np.flatnonzero(single[labels])
    g[s_states] = r[s_states]  # an absorbing state: its reward every step, bias 0
    for c in np.flatnonzero(closed & (sizes > 1)):
        idx = np.flatnonzero(labels == c)
        m = idx.size
        A = (identity(m, format="csc") - csc_matrix(M[idx][:, idx])).tolil()
        # unknowns (g, h[1:]) with h[0] = 0: the column of h[0] carries g
        A[:, 0] = np.ones((m, 1))
        z = splu(csc_matrix(A)).solve(r[idx].astype(np.float64))
        gc = z[0]
        hc = z.copy()
        hc[0] = 0.0
        # stationary distribution: mu (I - P_C) = 0, sum(mu) = 1
        B = (identity(m, format="csc") - csc_matrix(M[idx][:, idx])).T.tolil()
        B[0, :] = np.ones((1, m))
        e0 = np.zeros(m)
        e0[0] = 1.0
        mu = splu(csc_matrix(B)).solve(e0)
        g[idx] = gc
        h[idx] = hc - float(mu @ hc)
    T = np.flatnonzero(~recurrent)
    if T.size:
        Rs = np.flatnonzero(recurrent)
        MT = M[T]
        Ptt = csc_matrix(MT[:, T])
        Ptr = MT[:, Rs]
        lu = splu(csc_matrix(identity(T.size, format="csc") - Ptt))
        gR = g[Rs]
        lo, hi = float(gR.min()), float(gR.max())
        if hi - lo <= TIE_RTOL * (1.0 + max(abs(lo), abs(hi))):
            # one gain in every recurrent class (unichain, or classes of equal gain):
            # the transient states have it too, exactly (their solve would add the
            # round-off of a possibly ill-conditioned system)
            gT = np.full(T.size, gR[0] if gR.size else 0.0)
            g[Rs] = gR[0]
        else:
            gT = lu.solve(Ptr @ gR)
        hT = lu.solve(r[T] - gT + Ptr @ h[Rs])
        g[T] = gT
        h[T] = hT
    return g, h


def policy_gain_rows(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray, R: np.ndarray,
                     policy: np.ndarray | None = None) -> Gain:
    """The exact gain and bias of a deterministic ``policy`` (nX,) — or, ``None``, of the
    uniformly random policy — of the MDP on sparse rows (:mod:`bbrlcore.mdp.rows`:
    ``P[x, u, k]``, ``R[x, u, k]`` for the successor ``succ[x, u, k]``, ``k <
    nsucc[x, u]``); :func:`chain_gain`.

    >>> import numpy as np
    >>> from bbrlcore.mdp import rows
    >>> P = np.zeros((2, 2, 2)); R = np.zeros((2, 2, 2))
    >>> P[0, 0, 0] = 1.0; R[0, 0, 0] = 1.0; P[0, 1, 1] = 1.0
    >>> P[1, :, 1] = 1.0; R[1, :, 1] = 3.0
    >>> lay = rows.full(2, 2)
    >>> policy_gain_rows(lay.succ, lay.nsucc, P, R, np.array([0, 0])).gain.tolist()
    [1.0, 3.0]
    """
    succ, nsucc, P, R = _as_rows(succ, nsucc, P, R)
    rbar = _rbar(succ, nsucc, P, R)
    M, r = _chain(succ, nsucc, P, rbar, policy)
    g, h = chain_gain(M, r)
    pol = None if policy is None else np.asarray(policy, dtype=np.int64).copy()
    return Gain(g, h, pol, 0)


def _as_rows(succ, nsucc, P, R):
    succ = np.ascontiguousarray(succ, dtype=np.int64)
    nsucc = np.ascontiguousarray(nsucc, dtype=np.int64)
    P = np.ascontiguousarray(P, dtype=np.float64)
    R = np.ascontiguousarray(np.broadcast_to(R, P.shape), dtype=np.float64)
    if succ.ndim != 3 or P.shape != succ.shape or nsucc.shape != succ.shape[:2]:
        raise BBRLError(f"sparse rows of shapes succ {succ.shape}, nsucc {nsucc.shape}, "
                        f"P {P.shape}: expected (nX, nU, K), (nX, nU), (nX, nU, K)")
    return succ, nsucc, P, R


def _row_sums(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray, v: np.ndarray
              ) -> np.ndarray:
    """(nX, nU): :math:`\\sum_k P(x,u,k)\\,v(succ(x,u,k))` (padding has P = 0)."""
    return np.einsum("xuk,xuk->xu", P, v[succ])


def _discounted_policy(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray, rbar: np.ndarray,
                       gamma: float, limit: int) -> np.ndarray:
    """An optimal policy of the γ-discounted MDP (policy iteration from the greedy policy
    of the expected rewards, exact sparse evaluations, lowest index on ties)."""
    from scipy.sparse import identity
    from scipy.sparse.linalg import splu

    nX = succ.shape[0]
    idx = np.arange(nX)
    pi = np.argmax(rbar, axis=1).astype(np.int64)
    seen: set[bytes] = set()
    for _ in range(limit):
        if pi.tobytes() in seen:  # a cycle of round-off ties: a start policy is enough
            break
        seen.add(pi.tobytes())
        M, r = _chain(succ, nsucc, P, rbar, pi)
        V = splu((identity(nX, format="csc") - gamma * M).tocsc()).solve(r)
        Q = rbar + gamma * _row_sums(succ, nsucc, P, V)
        best = Q.max(axis=1)
        tol = TIE_RTOL * (1.0 + float(np.abs(V).max(initial=0.0)))
        improve = best > Q[idx, pi] + tol
        if not improve.any():
            break
        pi = np.where(improve, np.argmax(Q >= best[:, None] - tol, axis=1), pi)
    return pi


def average_reward_rows(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray, R: np.ndarray,
                        sense: str = "max", max_iterations: int | None = None) -> Gain:
    """The optimal (``sense="max"``) or worst (``"min"``) gain of every state of the MDP
    on sparse rows, by multichain policy iteration with exact evaluations (module
    docstring): ``Gain(gain, bias, policy, iterations)``, ``policy`` a deterministic
    policy reaching it from every state (its lowest-index actions on exact ties).

    Parameters
    ----------
    succ, nsucc, P, R
        The MDP on sparse rows (:mod:`bbrlcore.mdp.rows`): successors, their number, and
        the transition probabilities and (mean) rewards aligned with them.
    sense
        ``"max"``: the optimal gain ρ*; ``"min"``: the least gain any policy has
        (Colosseum's ρ⁻).
    max_iterations
        A safeguard (default 10 nX + 100); reaching it is an error (policy iteration
        ends in far fewer: it never revisits a policy).

    Examples
    --------
    RiverSwim-like: swimming right (action 1) from state 0 reaches state 1, which pays
    1 a step while one keeps swimming (with 0.1 a step back); staying left pays 0.05.

    >>> import numpy as np
    >>> from bbrlcore.mdp import rows
    >>> P = np.zeros((2, 2, 2)); R = np.zeros((2, 2, 2))
    >>> P[0, 0, 0] = 1.0; R[0, 0, 0] = 0.05
    >>> P[0, 1, 1] = 1.0
    >>> P[1, 0, 0] = 1.0
    >>> P[1, 1, 1] = 0.9; P[1, 1, 0] = 0.1; R[1, 1, 1] = 1.0
    >>> lay = rows.full(2, 2)
    >>> best = average_reward_rows(lay.succ, lay.nsucc, P, R)
    >>> [round(float(v), 6) for v in best.gain], best.policy.tolist()
    ([0.818182, 0.818182], [1, 1])
    >>> worst = average_reward_rows(lay.succ, lay.nsucc, P, R, "min")
    >>> worst.gain.tolist(), worst.policy.tolist()
    ([0.0, 0.0], [1, 0])
    """
    if sense not in ("max", "min"):
        raise BBRLError(f"average_reward_rows: sense={sense!r}: expected 'max' or 'min'")
    succ, nsucc, P, R = _as_rows(succ, nsucc, P, R)
    sign = 1.0 if sense == "max" else -1.0
    rbar = sign * _rbar(succ, nsucc, P, R)
    nX, nU, K = succ.shape
    valid = (nsucc > 0)
    if not valid.all():
        x, u = (int(v) for v in np.argwhere(~valid)[0])
        raise BBRLError(f"average_reward_rows: row (x={x}, u={u}) has no successor")
    limit = 10 * nX + 100 if max_iterations is None else int(max_iterations)
    # start: the discounted optimal policy for a discount close to 1 (well-conditioned
    # solves; for a discount close enough to 1 it is gain-optimal already, Blackwell), so
    # that the exact average-reward iterations start near the end and rarely meet a
    # nearly decomposable chain (whose bias, and round-off, can reach 1e11)
    pi = _discounted_policy(succ, nsucc, P, rbar, 1.0 - 1.0 / (100.0 * nX + 100.0), limit)
    scale = 1.0 + float(np.abs(rbar).max(initial=0.0))
    seen: set[bytes] = set()
    last_g: np.ndarray | None = None
    stalled = 0
    for it in range(1, limit + 1):
        M, r = _chain(succ, nsucc, P, rbar, pi)
        g, h = chain_gain(M, r)
        key = pi.tobytes()
        if key in seen:
            # back to a policy already evaluated: in exact arithmetic policy iteration
            # never cycles (the gain, then the bias, strictly improves), so the policies
            # of the cycle differ only by round-off of an ill-conditioned bias (a nearly
            # decomposable chain, e.g. Taxi's worst policy: bias 1e23): their gains agree
            # within the tolerance and this one is gain-optimal (its bias is not used)
            return Gain(sign * g + 0.0, sign * h + 0.0, pi, it)
        seen.add(key)
        idx = np.arange(nX)
        tol_g = TIE_RTOL * (scale + float(np.abs(g).max(initial=0.0)))
        Pg = _row_sums(succ, nsucc, P, g)
        best_g = Pg.max(axis=1)
        improve = best_g > Pg[idx, pi] + tol_g
        if improve.any():  # a better gain: the first action within tolerance of the best
            pi = np.where(improve, np.argmax(Pg >= best_g[:, None] - tol_g, axis=1), pi)
            continue
        tol_h = TIE_RTOL * (scale + float(np.abs(g).max(initial=0.0))
                            + float(np.abs(h).max(initial=0.0)))
        keep_g = Pg >= best_g[:, None] - tol_g  # the actions that keep the gain
        q = np.where(keep_g, rbar + _row_sums(succ, nsucc, P, h), -np.inf)
        best_q = q.max(axis=1)
        improve = best_q > q[idx, pi] + tol_h
        if not improve.any():
            return Gain(sign * g + 0.0, sign * h + 0.0, pi, it)  # (no -0.0)
        # a bias step: when the gain has stayed the same (within the tolerance) for
        # STALL_STEPS of them in a row, the bias steps are moving between policies of
        # one gain on the round-off of a nearly decomposable chain (SimpleGrid-40's
        # worst policies: bias up to 1e11, hundreds of such steps); the gain is returned
        if last_g is not None and np.abs(g - last_g).max() <= tol_g:
            stalled += 1
            if stalled >= STALL_STEPS:
                return Gain(sign * g + 0.0, sign * h + 0.0, pi, it)
        else:
            stalled, last_g = 0, g
        pi = np.where(improve, np.argmax(q >= best_q[:, None] - tol_h, axis=1), pi)
    raise BBRLError(f"average_reward_rows: policy iteration did not end within {limit} "
                    f"iterations ({nX} states); please report this MDP")


def average_reward(P: np.ndarray, R: np.ndarray, sense: str = "max") -> Gain:
    """:func:`average_reward_rows` of a dense model, ``P`` and ``R`` (nX, nU, nX).

    >>> import numpy as np
    >>> P = np.zeros((2, 1, 2)); P[0, 0, 1] = P[1, 0, 0] = 1.0
    >>> R = np.zeros((2, 1, 2)); R[0, 0, 1] = 2.0
    >>> average_reward(P, R).gain.tolist()
    [1.0, 1.0]
    """
    from bbrlcore.mdp import rows

    P = np.asarray(P, dtype=np.float64)
    lay = rows.full(P.shape[0], P.shape[1])
    return average_reward_rows(lay.succ, lay.nsucc, P, np.asarray(R, dtype=np.float64),
                               sense)


def episode_values_rows(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray,
                        R: np.ndarray, episode_length: int, which: str = "max"
                        ) -> np.ndarray:
    r"""The exact values of an episode of H = ``episode_length`` steps from every state
    (nX,), undiscounted, by backward induction: ``which="max"`` the optimal
    :math:`V^*_H`, ``"min"`` the worst :math:`V^-_H`, ``"random"`` the uniform policy's
    (the mean over the actions at every step).

    >>> import numpy as np
    >>> from bbrlcore.mdp import rows
    >>> P = np.zeros((2, 2, 2)); R = np.zeros((2, 2, 2))
    >>> P[0, 0, 0] = 1.0; R[0, 0, 0] = 1.0; P[0, 1, 1] = 1.0
    >>> P[1, :, 1] = 1.0; R[1, :, 1] = 3.0
    >>> lay = rows.full(2, 2)
    >>> [float(episode_values_rows(lay.succ, lay.nsucc, P, R, 3, w)[0])
    ...  for w in ("max", "min", "random")]
    [6.0, 2.0, 4.625]
    """
    if which not in ("max", "min", "random"):
        raise BBRLError(f"episode_values_rows: which={which!r}: expected max, min or random")
    H = episode_length
    if isinstance(H, bool) or int(H) != H or H < 0:
        raise BBRLError(f"episode_values_rows: episode_length={H}: must be an integer >= 0")
    succ, nsucc, P, R = _as_rows(succ, nsucc, P, R)
    rbar = _rbar(succ, nsucc, P, R)
    V = np.zeros(succ.shape[0])
    for _ in range(int(H)):
        Q = rbar + _row_sums(succ, nsucc, P, V)
        V = Q.max(axis=1) if which == "max" else (Q.min(axis=1) if which == "min"
                                                  else Q.mean(axis=1))
    return V


def _at_start(v: np.ndarray, initial_state: int, starts: Any = None) -> float:
    """``v`` at the initial state (its mean over the states when the start is uniform,
    ``initial_state`` -1), or its expectation under the starting distribution ``starts``
    ``(states, probs)`` (:mod:`bbrlcore.mdp.environment`)."""
    if starts is not None:
        s, p = starts
        return float(np.dot(np.asarray(p, np.float64), v[np.asarray(s, np.int64)]))
    return float(v.mean()) if initial_state < 0 else float(v[initial_state])


def references_rows(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray, R: np.ndarray,
                    initial_state: int, episode_length: int = 0,
                    continuing: bool = True, starts: Any = None) -> References:
    """The reference values of one MDP on sparse rows (module docstring): the continuing
    ones (``continuing``; NaN otherwise) and, when ``episode_length`` H > 0, the episodic
    ones from ``initial_state`` (-1: uniform over the states; NaN when H = 0). With a
    starting distribution ``starts`` ``(states, probs)`` every value from the start is its
    expectation over the starting states (ρ*, V*_H(s₀), ...: the optimal policy knows the
    state drawn, so the best value is the mean of the states' best values). A value
    whose computation would exceed :data:`MAX_REFERENCE_WORK` is NaN."""
    succ, nsucc, P, R = _as_rows(succ, nsucc, P, R)
    nan = float("nan")
    rho = [nan, nan, nan]
    constant = True
    nX = succ.shape[0]
    nnz = int(nsucc.sum())
    if continuing and nnz * nX <= MAX_REFERENCE_WORK:
        best = average_reward_rows(succ, nsucc, P, R, "max")
        worst = average_reward_rows(succ, nsucc, P, R, "min")
        rand = policy_gain_rows(succ, nsucc, P, R, None)
        g = best.gain
        constant = bool(np.ptp(g) <= TIE_RTOL * (1.0 + float(np.abs(g).max(initial=0.0))))
        rho = [_at_start(v.gain, initial_state, starts) for v in (best, worst, rand)]
    vals = [nan, nan, nan]
    H = int(episode_length)
    if H > 0 and H * nnz <= MAX_REFERENCE_WORK:
        vals = [_at_start(episode_values_rows(succ, nsucc, P, R, H, w), initial_state,
                          starts) for w in ("max", "min", "random")]
    return References(*rho, *vals, constant_gain=constant)


def references(P: np.ndarray, R: np.ndarray, initial_state: int = 0,
               episode_length: int = 0, starts: Any = None) -> References:
    """:func:`references_rows` of a dense model, ``P`` and ``R`` (nX, nU, nX) (the
    module docstring has an example)."""
    from bbrlcore.mdp import rows

    P = np.asarray(P, dtype=np.float64)
    lay = rows.full(P.shape[0], P.shape[1])
    return references_rows(lay.succ, lay.nsucc, P, np.asarray(R, dtype=np.float64),
                           initial_state, episode_length, starts=starts)


#: The reference columns of a test set (one row per MDP): the six values of
#: :class:`References` (null where undefined: the continuing ones in an episodic test set
#: and the other way round) and whether the optimal gain is the same from every state.
REFERENCE_COLUMNS: dict[str, str] = {
    "optimal_average_reward": "ρ*, the optimal gain (average reward per step) from the "
                              "initial state, exact (continuing test sets)",
    "worst_average_reward": "ρ⁻, the least gain of any policy from the initial state "
                            "(Colosseum's normalisation; continuing test sets)",
    "random_average_reward": "the uniformly random policy's gain from the initial state "
                             "(continuing test sets)",
    "optimal_episode_value": "V*_H(s₀), the largest expected return of an episode of H "
                             "steps, by backward induction (episodic test sets)",
    "worst_episode_value": "V⁻_H(s₀), the least expected return of an episode (episodic)",
    "random_episode_value": "the uniformly random policy's expected return of an episode "
                            "(episodic)",
    "constant_gain": "whether the optimal gain is the same from every state (weakly "
                     "communicating MDPs; False: ρ* is the initial state's)",
}


def reference_table(succ: np.ndarray, nsucc: np.ndarray, mdps: np.ndarray, R: np.ndarray,
                    initial_state: int, episode_length: int = 0, starts: Any = None):
    """The references of every MDP of ``mdps`` (N, nX, nU, K) on one layout, as a polars
    table of one row per MDP (``mdp_index`` and :data:`REFERENCE_COLUMNS`): the
    continuing ones when ``episode_length`` is 0, the episodic ones otherwise (from
    ``starts``, a starting distribution, when given: :func:`references_rows`).

    >>> import numpy as np
    >>> from bbrlcore.mdp import families
    >>> t = families.make("deepsea", size=4).test
    >>> lay = t.support_layout
    >>> mdps = np.stack([t.draw_rows(np.random.default_rng(i)) for i in range(2)])
    >>> tab = reference_table(lay.succ, lay.nsucc, mdps, t.reward_rows, 0, 4)
    >>> tab["optimal_episode_value"].round(12).to_list(), tab["optimal_average_reward"].to_list()
    ([0.99, 0.99], [None, None])
    """
    import polars as pl

    H = int(episode_length)
    out: dict[str, list] = {name: [] for name in REFERENCE_COLUMNS}
    for P in mdps:
        ref = references_rows(succ, nsucc, P, R, initial_state, H, continuing=H == 0,
                              starts=starts)
        for name in REFERENCE_NAMES:
            v = getattr(ref, name)
            out[name].append(None if np.isnan(v) else v)
        out["constant_gain"].append(bool(ref.constant_gain) if H == 0 else None)
    cols: dict[str, pl.Series] = {
        "mdp_index": pl.Series(np.arange(len(mdps), dtype=np.int64))}
    for name, vals in out.items():
        cols[name] = pl.Series(vals, dtype=pl.Boolean if name == "constant_gain"
                               else pl.Float64)
    return pl.DataFrame(cols)
