r"""BFS3: Bayesian forward search sparse sampling (Asmuth & Littman 2011).

BFS3 plans in the belief MDP: a state of the search is a real state together with the
Dirichlet counts reached along the simulated path, and the next state of a simulated
transition is drawn from the **posterior predictive** (the Dirichlet mean)
:math:`p(s') \propto \theta(s,a,s') + n(s,a,s') + c(s,a,s')`, where ``n`` are the real
counts and ``c`` the pseudo-counts added along the path. No model is ever drawn. Each
node of the belief MDP is searched with FSSS (forward search sparse sampling, Walsh,
Goschin & Littman 2010), which keeps an upper and a lower bound on every value.

One decision at real state ``x`` (spec 02 §5, 00-decisions §7):

* for each action ``a``, draw ``C`` successors ``s'`` from the predictive of
  ``(x, a)``; for each, build a fresh FSSS tree rooted at ``s'`` (with one pseudo-count
  added for ``x, a -> s'``), run ``N = max(1, K // C)`` FSSS rollouts in it, and add
  :math:`(R(x,a,s') + \gamma U(s'))/C` to ``q(a)``, where ``U`` is the root's **upper
  bound**;
* play the argmax of ``q`` (exact ties uniformly at random).

An FSSS rollout of depth ``D`` starts from the root with the planning counts reset to the
real counts plus the root pseudo-count. At a node (depth ``< D``): if the node does not
exist yet it is **expanded**: for every action ``b``, ``C`` successors are drawn from the
predictive with the current planning counts and recorded with their multiplicities, all
bounds start at ``[Vmin, Vmax]`` with ``Vmin = 0`` and ``Vmax = max R/(1-γ)`` (the prior's
largest mean reward), and the node is backed up. Then the rollout takes the action with
the largest upper bound (ties uniformly), the recorded successor with the largest
``(U - L) · multiplicity`` (an unexpanded successor counts ``Vmax - Vmin``; ties
uniformly), adds a pseudo-count for that transition and descends. At depth ``D`` it
stops (that successor stays an unexpanded leaf). On the way back every node on the path
is backed up: :math:`U(s,b) = \sum_{s''} m(s'')\,(R(s,b,s'') + \gamma U(s''))/C`,
likewise for ``L``, with an unexpanded successor worth ``Vmax``/``Vmin``;
:math:`U(s) = \max(V_{min}, \max_b U(s,b))` and the same for ``L``. Bounds do not depend
on the remaining depth. After the real step the agent adds the transition to its real
counts; rewards always come from the prior's known mean reward table. Each trajectory
starts from the prior. The ``C`` draws of an expansion are recorded only as successors
with multiplicities, so they are drawn directly as a multinomial (sequential binomials by
inversion): the same distribution as ``C`` single draws, at a fraction of the cost.
Parameters: ``K`` (the budget: ``N = max(1, K // C)`` rollouts per
FSSS tree, so about ``nU·K`` rollouts per decision), ``C`` (the branching factor) and the
depth ``D`` (default: the horizon).

Memory
------
Nodes live in a pool preallocated once per trajectory and emptied (a counter reset)
before every FSSS tree: a rollout creates at most one node per depth ``0 .. D-1``, so a
tree holds at most ``N·D`` V-nodes. A V-node stores its state and two bounds (24 bytes)
and, per action, two bounds and a successor count (20 bytes) and up to ``C`` recorded
successors, each a state, a multiplicity and a child index (12 bytes):
:math:`N D\,(24 + n_U (20 + 12 C))` bytes, about 27 MB for Grid (nU = 4) at K = 10 000,
C = 15, D = 50. The kernel checks the bound on every allocation and raises if it would
be exceeded.

References
----------
J. Asmuth, M. Littman, "Learning is planning: near Bayes-optimal reinforcement learning
via Monte-Carlo tree search", UAI 2011.
T. Walsh, S. Goschin, M. Littman, "Integrating sample-based planning and model-based
reinforcement learning", AAAI 2010 (FSSS).
M. Castronovo et al., "Benchmarking for Bayesian Reinforcement Learning", PLOS ONE 2016
(the BBRL benchmark; its C++ BFS3 is the one specified in spec 02 §5).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from ..errors import BBRLError
from ._kernels import argmax_random_tie, env_reset, env_reward, env_step, model_init, model_update
from ._rng import rng_fill_uniform, rng_new
from .base import (
    MAX_AGENT_MEMORY_BYTES,
    Algorithm,
    Episode,
    Param,
    Trained,
    at_least_one,
    support_sizes,
)

#: Largest number of trials drawn by inversion (beyond, (1 - p)**n may underflow).
BINOMIAL_INVERSION_MAX = 200

#: Uniforms drawn at once into the kernel's buffer: the search's hot loops read them from
#: there (the kernel's own xoshiro256** generator, ``_rng``, fills it).
RBUF = 4096


@njit(cache=True, error_model="numpy")
def _draw(pc, pcsum, supp, nsupp, s, b, r):
    """Next state for the uniform ``r`` from the predictive pc(s, b, .) / pcsum(s, b)."""
    r *= pcsum[s, b]
    k = nsupp[s, b]
    acc = 0.0
    for i in range(k - 1):
        y = supp[s, b, i]
        acc += pc[s, b, y]
        if r < acc:
            return y
    return supp[s, b, k - 1]


@njit(cache=True, error_model="numpy")
def _backup(node, R, gamma, vmin, vmax, vstate, vU, vL, qU, qL, nsucc, sstate, smult, schild, C):
    """Bellman backup of the bounds of ``node`` (spec 02 §5.7)."""
    s = vstate[node]
    nU = qU.shape[1]
    best_u = vmin
    best_l = vmin
    inv = 1.0 / C
    for b in range(nU):
        su = 0.0
        sl = 0.0
        for j in range(nsucc[node, b]):
            y = sstate[node, b, j]
            m = smult[node, b, j]
            c = schild[node, b, j]
            r = R[s, b, y]
            if c >= 0:
                su += m * (r + gamma * vU[c])
                sl += m * (r + gamma * vL[c])
            else:
                su += m * (r + gamma * vmax)
                sl += m * (r + gamma * vmin)
        qU[node, b] = su * inv
        qL[node, b] = sl * inv
        if qU[node, b] > best_u:
            best_u = qU[node, b]
        if qL[node, b] > best_l:
            best_l = qL[node, b]
    vU[node] = best_u
    vL[node] = best_l


@njit(cache=True, error_model="numpy")
def _fsss(
    x, a, s1, N, C, D, gamma, R, vmin, vmax, pc, pcsum, supp, nsupp,
    vstate, vU, vL, qU, qL, nsucc, sstate, smult, schild,
    path_node, path_b, path_s, path_y, path_old, tie, rbuf, rstate, rs, bstep,
):  # fmt: skip
    """N rollouts in a fresh FSSS tree rooted at ``s1`` (reached by x, a -> s1); returns
    ``(root upper bound, nodes used)``. ``pc`` holds the real posterior counts on entry
    and on exit (path pseudo-counts are added and restored exactly). The expansion, the
    predictive draws and the tie-breaks are written out here (numba does not make calls
    to small helpers free); ``rstate`` = [buffer position]; ``rs`` = the generator that
    refills the buffer."""
    nU = qU.shape[1]
    cap = vstate.shape[0]
    RB = rbuf.shape[0]
    rp = rstate[0]
    used = 0
    root = -1
    for _ in range(N):
        old_root = pc[x, a, s1]
        old_root_sum = pcsum[x, a]
        pc[x, a, s1] += 1.0
        pcsum[x, a] += 1.0
        node = root
        parent = -1
        pb = 0
        pj = 0
        s = s1
        depth = 0
        plen = 0
        while depth < D:
            if node < 0:
                # expand: C predictive successors per action, bounds [Vmin, Vmax]
                if used >= cap:
                    raise RuntimeError("bfs3: node pool overflow")
                node = used
                used += 1
                vstate[node] = s
                vU[node] = vmax
                vL[node] = vmin
                for b in range(nU):
                    qU[node, b] = vmax
                    qL[node, b] = vmin
                    # C draws from the predictive, recorded as (successor,
                    # multiplicity): the multiplicities are multinomial, drawn as
                    # sequential binomials by inversion (one uniform each)
                    n = 0
                    k = nsupp[s, b]
                    rest_n = C
                    rest_p = pcsum[s, b]
                    for i in range(k):
                        y = supp[s, b, i]
                        if i == k - 1:
                            m = rest_n
                        else:
                            p = pc[s, b, y] / rest_p if pc[s, b, y] < rest_p else 1.0
                            if p >= 1.0:
                                m = rest_n
                            elif rest_n > BINOMIAL_INVERSION_MAX:  # would underflow
                                m = np.random.binomial(rest_n, p)
                            else:
                                flip = p > 0.5
                                pp = 1.0 - p if flip else p
                                if rp == RB:
                                    rng_fill_uniform(rs, rbuf)
                                    rp = 0
                                uu = rbuf[rp]
                                rp += 1
                                ratio = pp / (1.0 - pp)
                                pk = (1.0 - pp) ** rest_n
                                cdf = pk
                                m = 0
                                while uu >= cdf and m < rest_n:
                                    # bstep[n, m] = (n - m) / (m + 1): no division here
                                    pk *= ratio * bstep[rest_n, m]
                                    m += 1
                                    cdf += pk
                                if flip:
                                    m = rest_n - m
                            rest_p -= pc[s, b, y]
                        if m > 0:
                            sstate[node, b, n] = y
                            smult[node, b, n] = m
                            schild[node, b, n] = -1
                            n += 1
                            rest_n -= m
                        if rest_n == 0:
                            break
                    nsucc[node, b] = n
                if parent < 0:
                    root = node
                else:
                    schild[parent, pb, pj] = node
                _backup(node, R, gamma, vmin, vmax, vstate, vU, vL, qU, qL, nsucc, sstate,
                        smult, schild, C)  # fmt: skip
            # action with the largest upper bound, exact ties uniformly
            best = qU[node, 0]
            tie[0] = 0
            nt = 1
            for b in range(1, nU):
                q = qU[node, b]
                if q > best:
                    best = q
                    tie[0] = b
                    nt = 1
                elif q == best:
                    tie[nt] = b
                    nt += 1
            if nt == 1:
                b = tie[0]
            else:
                if rp == RB:
                    rng_fill_uniform(rs, rbuf)
                    rp = 0
                b = tie[min(int(rbuf[rp] * nt), nt - 1)]
                rp += 1
            # successor with the largest gap x multiplicity (best starts at 0), ties
            # uniformly
            ns = nsucc[node, b]
            bestg = 0.0
            nt = 0
            for j in range(ns):
                c = schild[node, b, j]
                gap = (vmax - vmin) if c < 0 else max(0.0, vU[c] - vL[c])
                g = gap * smult[node, b, j]
                if g > bestg:
                    bestg = g
                    tie[0] = j
                    nt = 1
                elif g == bestg:
                    tie[nt] = j
                    nt += 1
            if nt == 1:
                j = tie[0]
            else:
                if rp == RB:
                    rng_fill_uniform(rs, rbuf)
                    rp = 0
                j = tie[min(int(rbuf[rp] * nt), nt - 1)]
                rp += 1
            y = sstate[node, b, j]
            path_node[plen] = node
            path_s[plen] = s
            path_b[plen] = b
            path_y[plen] = y
            path_old[plen, 0] = pc[s, b, y]
            path_old[plen, 1] = pcsum[s, b]
            plen += 1
            pc[s, b, y] += 1.0
            pcsum[s, b] += 1.0
            parent = node
            pb = b
            pj = j
            node = schild[node, b, j]
            s = y
            depth += 1
        # back up the path (deepest first) and restore the counts
        for i in range(plen - 1, -1, -1):
            _backup(path_node[i], R, gamma, vmin, vmax, vstate, vU, vL, qU, qL, nsucc,
                    sstate, smult, schild, C)  # fmt: skip
            pc[path_s[i], path_b[i], path_y[i]] = path_old[i, 0]
            pcsum[path_s[i], path_b[i]] = path_old[i, 1]
        pc[x, a, s1] = old_root
        pcsum[x, a] = old_root_sum
    rstate[0] = rp
    return vU[root], used


@njit(cache=True, error_model="numpy")
def bfs3_trajectory(P, Renv, Rstd, gaussian, initial_state, gamma, T, theta, R, K, C, D, seed):
    """One whole BFS3 trajectory on test MDP ``P``.

    Returns ``(discounted_return, max_nodes, capacity)``: the largest number of V-nodes
    one FSSS tree used, and the pool size (``N·D``).
    """
    np.random.seed(seed)
    rs = rng_new(seed)
    nX, nU, _ = theta.shape
    N = max(1, K // C)
    vmax = R.max() / (1.0 - gamma)
    vmin = 0.0
    pc, pcsum, _Pm, supp, nsupp = model_init(theta)
    cap = N * D
    vstate = np.empty(cap, dtype=np.int64)
    vU = np.empty(cap)
    vL = np.empty(cap)
    qU = np.empty((cap, nU))
    qL = np.empty((cap, nU))
    nsucc = np.empty((cap, nU), dtype=np.int32)
    sstate = np.empty((cap, nU, C), dtype=np.int32)
    smult = np.empty((cap, nU, C), dtype=np.int32)
    schild = np.empty((cap, nU, C), dtype=np.int32)
    path_node = np.empty(D, dtype=np.int64)
    path_b = np.empty(D, dtype=np.int64)
    path_old = np.empty((D, 2))
    path_s = np.empty(D, dtype=np.int64)
    path_y = np.empty(D, dtype=np.int64)
    tie = np.empty(max(nU, C), dtype=np.int64)
    rbuf = np.empty(RBUF)
    # steps of the binomial inversion: pmf(m + 1) = pmf(m) (p / (1 - p)) (n - m) / (m + 1)
    nb = min(C, BINOMIAL_INVERSION_MAX) + 1
    bstep = np.zeros((nb, nb))
    for n_ in range(nb):
        for m_ in range(n_):
            bstep[n_, m_] = (n_ - m_) / (m_ + 1.0)
    rng_fill_uniform(rs, rbuf)
    rstate = np.zeros(1, dtype=np.int64)
    q = np.empty(nU)

    x = env_reset(initial_state, nX)
    ret = 0.0
    disc = 1.0
    max_used = 0
    for _t in range(T):
        for a in range(nU):
            q[a] = 0.0
            for _c in range(C):
                s1 = _draw(pc, pcsum, supp, nsupp, x, a, np.random.random())
                U, used = _fsss(
                    x, a, s1, N, C, D, gamma, R, vmin, vmax, pc, pcsum, supp, nsupp,
                    vstate, vU, vL, qU, qL, nsucc, sstate, smult, schild,
                    path_node, path_b, path_s, path_y, path_old, tie, rbuf, rstate, rs, bstep,
                )  # fmt: skip
                if used > max_used:
                    max_used = used
                q[a] += (R[x, a, s1] + gamma * U) / C
        u = argmax_random_tie(q)
        y = env_step(P, x, u)
        r = env_reward(Renv, Rstd, gaussian, x, u, y)
        ret += disc * r
        disc *= gamma
        model_update(pc, pcsum, _Pm, supp, nsupp, x, u, y)
        x = y
    return ret, max_used, cap


# ---------------------------------------------------------------------------------------
# The algorithm


def resolve_depth(params: dict[str, Any], episode: Episode) -> int:
    """``D``, or the horizon when it is None."""
    D = params.get("D")
    return int(episode.horizon if D is None else D)


def _args(prior: Any, params: dict[str, Any], episode: Episode) -> tuple:
    K = int(params["K"])
    C = int(params["C"])
    D = resolve_depth(params, episode)
    if D < 1:
        raise BBRLError(f"bfs3 D: must be >= 1 (got {D})")
    return (
        np.ascontiguousarray(episode.R, dtype=np.float64),
        np.ascontiguousarray(episode.Rstd, dtype=np.float64),
        bool(episode.gaussian),
        int(episode.initial_state),
        float(episode.gamma),
        int(episode.horizon),
        np.ascontiguousarray(prior.theta, dtype=np.float64),
        np.ascontiguousarray(prior.reward, dtype=np.float64),
        K,
        C,
        D,
    )


def make_player(prior: Any, params: dict[str, Any], trained: Trained | None, episode: Episode):
    """A player running one BFS3 trajectory per call (see the module docstring)."""
    args = _args(prior, params, episode)
    empty = np.zeros(0, dtype=np.int64)

    def play(P: np.ndarray, seed: int) -> tuple[float, np.ndarray]:
        ret, _used, _cap = bfs3_trajectory(
            np.ascontiguousarray(P, dtype=np.float64), *args, int(seed)
        )
        return float(ret), empty

    return play


def play_with_stats(
    prior: Any, params: dict[str, Any], episode: Episode, P: np.ndarray, seed: int
) -> tuple[float, int, int]:
    """One trajectory, returning ``(return, max V-nodes used by an FSSS tree, capacity)``
    (for tests and memory checks)."""
    ret, used, cap = bfs3_trajectory(
        np.ascontiguousarray(P, dtype=np.float64), *_args(prior, params, episode), int(seed)
    )
    return float(ret), int(used), int(cap)


def pool_bytes(K: int, C: int, D: int, n_actions: int) -> int:
    """Bytes of the node pool (module docstring, Memory)."""
    return max(1, K // C) * D * (24 + n_actions * (20 + 12 * C))


def _setting_check(params: dict, prior, gamma: float, horizon: int) -> str | None:
    if not gamma < 1.0:
        return "needs a discount factor < 1 (its value bounds are [0, Rmax / (1 - gamma)])"
    if float(prior.reward.min()) < 0.0:
        return ("needs non-negative rewards (its lower value bound is 0, spec 02 §5); "
                "shift the rewards")
    K, C = int(params["K"]), int(params["C"])
    D = int(horizon if params.get("D") is None else params["D"])
    need = max(1, K // C) * D * (24 + prior.n_actions * (20 + 12 * C))
    if need > MAX_AGENT_MEMORY_BYTES:
        return (f"the FSSS node pool would need {need / 2**30:.1f} GiB "
                f"(limit {MAX_AGENT_MEMORY_BYTES / 2**30:.0f} GiB): choose a smaller K or D")
    return None


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    """Per decision nU·C FSSS trees of N = max(1, K // C) rollouts of D levels; a level
    expands a node (C successors drawn for each of the nU actions, over the row's
    support) or backs one up (its nU·C recorded successors)."""
    K, C = float(params["K"]), float(params["C"])
    D = float(horizon if params.get("D") is None else params["D"])
    T, nU = float(horizon), float(prior.n_actions)
    S = float(support_sizes(prior.theta).mean())
    visits = T * nU * C * max(1.0, K // C) * D
    return {"trajectory": 1.0, "decisions": T, "trees": T * nU * C, "visits": visits,
            "visit_draws": visits * nU * C, "visit_support": visits * nU * S}


ALGORITHM = Algorithm(
    name="bfs3",
    params=(
        Param("K", int, required=True, check=at_least_one, doc="budget (N = max(1, K // C))"),
        Param("C", int, required=True, check=at_least_one, doc="branching factor"),
        Param(
            "D",
            int,
            default=None,
            check=at_least_one,
            doc="depth of the FSSS rollouts (default: the horizon)",
        ),
    ),
    make_player=make_player,
    train=None,
    doc="BFS3 (Asmuth & Littman 2011): FSSS in the belief MDP",
    setting_check=_setting_check,
    cost_features=cost_features,
)
