r"""BAMCP: Bayes-adaptive Monte-Carlo planning (Guez, Silver & Dayan 2012).

BAMCP plans in the Bayes-adaptive MDP by Monte-Carlo tree search with **root sampling**:
each of the ``K`` simulations of a decision draws an MDP from the current posterior over
transitions, and runs one UCT simulation on it from the real state. The values in the
tree are then averages over MDPs drawn from the posterior, i.e. estimates of the
Bayes-adaptive values.

One decision at real state ``x``, repeated ``K`` times:

1. *Root sampling, lazily, row integrated out.* Each simulation stands for one MDP
   drawn from the posterior, :math:`P(s,a,\cdot) \sim
   \mathrm{Dir}(\theta(s,a,\cdot) + n(s,a,\cdot))` per pair. Drawing a row only the first
   time the simulation visits its pair (Guez et al.'s lazy sampling; rows are
   independent) gives the same posterior MDP; and since a simulation
   only ever uses the row to draw next states, the row itself can be integrated out:
   the *k*-th visit of (s, a) within the simulation goes to ``y`` with probability
   :math:`(\alpha_y + c_y)/(\sum_z \alpha_z + k - 1)`, where ``c`` counts the
   simulation's earlier moves out of (s, a) (the Pólya urn: the Dirichlet-multinomial is
   exchangeable). The simulated transitions have exactly the joint distribution of root
   sampling, without a single Gamma variate. Each (s, a) carries the stamp of the
   simulation that last used it, so nothing is cleared between simulations. Rewards are
   the prior's known mean rewards ``R(s,a,s')``.
2. *Tree descent.* In a V-node at depth ``d < D`` choose the action by UCB1,
   :math:`\bar Q(a) + c\sqrt{\ln(N_v + 1)/n_a}` with ``c = 3.0``; unvisited actions
   score 1e10 (so they are all tried first, in random order); exact ties are broken
   uniformly. Step the sampled MDP to ``s'``. If the Q-node already has a child V-node
   for ``s'`` descend into it; else, if the Q-node had been visited before, create that
   child (expansion on the second visit of an edge: at most one new node per
   simulation) and descend; else finish with a rollout.
3. *Rollout.* Until the simulation has made ``D`` transitions in total (tree plus
   rollout): with probability 0.5 a uniformly random action, otherwise a uniformly random
   member of ``G(s)``, the greedy set of a Q-learner trained on the **real** transitions
   (rate α = 0.2). No value is added at the cut-off.
4. *Backup.* Every Q-node and V-node on the path adds the discounted return from itself
   onwards, :math:`r_0 + \gamma r_1 + \dots + \gamma^{D-d-1} r_{D-d-1}`.

The action played is the one with the largest mean root Q-value (unvisited actions count
0; exact ties uniformly). After the real step, the agent adds the transition to its
counts ``n``, updates the Q-learner
:math:`Q(s,a) \mathrel{+}= 0.2\,(r + \gamma Q(s', g) - Q(s,a))` with ``g`` the first
greedy action of ``s'``, recomputes ``G(s)``, and **discards the tree** (no subtree
reuse). Each trajectory starts from the prior (``n = 0``, ``Q = 0``, ``G(s)`` = every
action). A rollout step takes one uniform for the ε test, the action and the transition
(conditional on ``r < ε``, ``r/ε`` is uniform, and so on): the same distribution with
fewer draws. Parameters: ``K`` simulations per decision and the depth ``D`` (default: the
horizon). ``K = 1`` is essentially a random first action.

Memory
------
The tree lives in arrays preallocated once per trajectory and reused by every decision
(a counter is reset, nothing is cleared): at most one V-node per simulation plus the
root, so the pool holds ``K + 1`` V-nodes. Each V-node stores its visit count and state
(16 bytes) and a sibling link (4 bytes), and per action a visit count, a return total and
the head of its child list (16 bytes): children are kept **sparsely** as linked lists
(a Q-node has at most as many children as its posterior row has support), not as a dense
``nU·nX`` table. So the tree takes :math:`(K+1)(20 + 16\,n_U)` bytes, about 2.1 MB for
Grid (nU = 4) at K = 25 000. The posterior and the per-simulation urn counts live on
the agent's **sparse rows** (:mod:`bbrlcore.mdp.rows`: the successors of each pair that
the prior or the test MDPs allow), :math:`n_X n_U W` entries each with ``W`` the widest
row (``n_X`` only for a prior whose rows are full, as UGrid's); the stamps, the rollout
policy's Q-learner and greedy sets take :math:`O(n_X n_U)`. So setting up a trajectory
costs the number of transitions, and a simulated transition the width of its row, not
``n_X``. The pool cannot overflow (one node per simulation), and the kernel still checks
it and raises if it would.

At an episode's start (an episodic interaction,
:attr:`~bbrlcore.agents.base.Episode.episode_length` H > 0): nothing but the return to
the initial state; the posterior counts and the rollout policy's
Q-learner are kept, and each search still looks ``D`` steps ahead with the test set's γ
(the episode's end is not part of the search).

References
----------
A. Guez, D. Silver, P. Dayan, "Efficient Bayes-adaptive reinforcement learning using
sample-based search", NIPS 2012.
M. Castronovo et al., "Benchmarking for Bayesian Reinforcement Learning", PLOS ONE 2016
(the BBRL benchmark; its C++ BAMCP is the one reproduced here).

**A prior that does not know the support** (``+dir<α>``,
:mod:`bbrlcore.mdp.transition_prior`): the prior of every row is
:math:`\mathrm{Dir}(\alpha, \ldots, \alpha)` over all S next states, so a lazily drawn row
is :math:`\mathrm{Dir}(\alpha + c)` over all S states (Gamma(α + c) on the slots of the
agent's rows, Gamma(α) on each of the row's **background** states, those outside its
slots, normalised: what PSRL's :func:`~bbrlcore.agents.psrl.sample_rows_all` draws).
Integrated out as above, the *k*-th visit of (s, a) in a simulation goes to ``y`` with
probability :math:`(\alpha + c_y + k_y)/(S\alpha + n + k - 1)` over **all** S states
(``k_y`` the simulation's earlier moves from (s, a) to ``y``): the urn of the slots as
before, plus the background's weight :math:`(S - n_{slots})\alpha + m`, ``m`` the
simulation's earlier moves from (s, a) to background states. A draw there repeats one of
those ``m`` moves uniformly (weight 1 each) or takes a background state uniformly (α
each: the ``j``-th state outside the row's sorted slots); it pays the prior's reward
there, 0 (:func:`_urn_draw_all`). So the simulated transitions still have exactly the
joint law of root sampling with lazily drawn rows, and a background state is a
next-state index like any other in the tree (its V-nodes are keyed by state). Cost:
no dense row, no Gamma variate: per simulated transition the row's width plus, for a
background draw, the simulation's background moves (at most ``D``: their pairs and
states, ``16(D + 1)`` bytes, and one count per pair, :math:`8 n_X n_U` bytes). The tree
grows wider, since almost every state is a possible successor: DeepSea-10 (100 states,
rows of 2 slots), K = 200, D = 10, 200 steps in episodes of 10: 64 ms a trajectory
under ``UDeepSea-10+dir0.3235`` against 20 ms under ``UDeepSea-10``. With a prior whose
rows are full (UGC: one pseudo-count on every next state) there is no background and
``UGC+dir1`` plays as ``UGC``, bit for bit.

**Rewards.** BAMCP simulates in models sampled from the transition posterior with the
prior's rewards; it needs known rewards, and a prior whose rewards are unknown
(``+rbeta``, ``+rnig``: :mod:`bbrlcore.mdp.reward_prior`) is refused in one line naming
it and the prior (:attr:`~bbrlcore.agents.base.Algorithm.reward_priors`).
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
from bbrlcore.agents._rng import rng_fill_uniform, rng_new
from bbrlcore.agents._tree_search import (
    RBUF,
    U,
    background_draw,
    depth,
    episode_args,
    resolve_depth,
    search_player,
    support_init,
    support_observe,
    with_stats,
)
from bbrlcore.agents.base import (
    MAX_AGENT_MEMORY_BYTES,
    Algorithm,
    Episode,
    Param,
    Trained,
    at_least_one,
)

#: UCT exploration constant.
UCT_C = 3.0
#: Probability of a uniformly random rollout action.
ROLLOUT_EPSILON = 0.5
#: Learning rate of the rollout policy's Q-learner.
QL_RATE = 0.2
#: The reference's "infinity" (UCB score of an unvisited action).
INF = 1e10


@njit(cache=True, error_model="numpy")
def _search(
    x, W, nU, K, D, gamma, rsup, acum, supp, nsupp, urn, stamp, sim0, gset, gcount,
    vN, vstate, vsib, qN, qW, qhead, path_node, path_a, path_r, scores, tie, rbuf, rstate, rs,
    clog, isq, inv, a_all, nXs, bgn, ball_p, ball_y, nball,
):  # fmt: skip
    """Run the K simulations of one decision from real state ``x``; return the number of
    V-nodes used. Simulation ids run from ``sim0 + 1`` (stamps of the lazy sampler).

    Everything is written out in this one function (UCB1, the urn draws of root
    sampling, the rollout) because numba does not make calls to small helpers free.
    ``rstate`` = [buffer position] is carried across decisions. The arrays come flat
    (pair p = s nU + a; a pair's support entries at p W + i, ``W`` the width of the
    agent's sparse rows, its widest row; a node's actions at node nU + a): one
    multiply-add per index instead of a stride per dimension. ``supp`` holds the
    support's next states, ``acum``/``rsup`` its cumulative counts and rewards (see
    :func:`_support_order`). ``a_all`` > 0 (a prior ``+dir<α>``, ``nXs`` states): the
    urn draws of :func:`_urn_draw_all` (its background bookkeeping in ``bgn``,
    ``ball_p``, ``ball_y``, ``nball``); 0: the known support's, inline.
    """
    cap = vN.shape[0]
    RB = rbuf.shape[0]
    rp = rstate[0]
    # root
    root = 0
    vN[U(root)] = 0
    vstate[U(root)] = x
    vsib[U(root)] = -1
    for a in range(nU):
        qN[U(root * nU + a)] = 0
        qW[U(root * nU + a)] = 0.0
        qhead[U(root * nU + a)] = -1
    used = 1
    for k in range(K):
        sim = sim0 + 1 + k
        node = root
        s = x
        d = 0
        plen = 0
        tail = 0.0
        disc = 1.0
        in_tree = True
        nball[0] = 0  # (this simulation's draws to background states: none yet)
        while d < D:
            if in_tree:
                # UCB1 (c = 3; unvisited actions 1e10), exact ties uniformly
                # (tables: clog[m] = c sqrt(ln(m + 1)), isq[n] = 1/sqrt(n), inv[n] = 1/n)
                cl = clog[U(vN[U(node)])]
                best = -INF
                nt = 0
                for a in range(nU):
                    n = qN[U(node * nU + a)]
                    if n == 0:
                        sc = INF
                    else:
                        sc = qW[U(node * nU + a)] * inv[U(n)] + cl * isq[U(n)]
                    if sc > best:
                        best = sc
                        tie[0] = a
                        nt = 1
                    elif sc == best:
                        tie[U(nt)] = a
                        nt += 1
                if nt == 1:
                    a = tie[0]
                else:
                    if rp == RB:
                        rng_fill_uniform(rs, rbuf)
                        rp = 0
                    i = int(rbuf[U(rp)] * nt)
                    a = tie[U(i if i < nt else nt - 1)]
                    rp += 1
                if rp == RB:
                    rng_fill_uniform(rs, rbuf)
                    rp = 0
                v = rbuf[U(rp)]
                rp += 1
            else:
                # rollout: one uniform decides the epsilon test, the action and the
                # transition (given r < eps, r/eps is uniform on [0, 1); the fractional
                # part after scaling by the number of choices is again uniform)
                if rp == RB:
                    rng_fill_uniform(rs, rbuf)
                    rp = 0
                r = rbuf[U(rp)]
                rp += 1
                # both candidates, then a select (the test is a coin flip: no branch)
                v1 = r * (nU / ROLLOUT_EPSILON)
                a1 = int(v1)
                if a1 > nU - 1:
                    a1 = nU - 1
                m = gcount[U(s)]
                v2 = (r - ROLLOUT_EPSILON) * (m / (1.0 - ROLLOUT_EPSILON))
                j = int(v2)
                if j > m - 1:
                    j = m - 1
                if j < 0:
                    j = 0
                a2 = gset[U(s * nU + j)]
                eps = r < ROLLOUT_EPSILON
                a = a1 if eps else a2
                v = v1 - a1 if eps else v2 - j
            # root sampling, with the lazily drawn row integrated out (Polya urn): the
            # k-th visit of (s, a) in this simulation goes to y with probability
            # (alpha_y + c_y) / (n + k), c = this simulation's earlier draws from (s, a).
            # urn[base + i] holds the cumulative sums of alpha + c over the support (in
            # support order; refilled from acum, those of alpha, when a simulation first
            # visits the pair): the draw counts the sums at most the target (the first i
            # with target < sum_i) and the update adds 1 from the drawn state on, without
            # a branch on the data
            pa = s * nU + a
            base = pa * W
            if a_all > 0.0:
                # (+dir<alpha>: the urn also holds the row's background, _urn_draw_all)
                idx, s2 = _urn_draw_all(pa, sim, v, W, a_all, nXs, acum, supp, nsupp, urn,
                                        stamp, bgn, ball_p, ball_y, nball)
                rew = rsup[U(base + idx)] if idx >= 0 else 0.0
            else:
                ks = nsupp[U(pa)]
                if stamp[U(pa)] != sim:
                    stamp[U(pa)] = sim
                    for i in range(ks):
                        urn[U(base + i)] = acum[U(base + i)]
                target = v * urn[U(base + ks - 1)]
                idx = 0
                for i in range(ks - 1):
                    idx += urn[U(base + i)] <= target
                for i in range(ks):
                    urn[U(base + i)] += 1.0 if i >= idx else 0.0
                s2 = supp[U(base + idx)]
                rew = rsup[U(base + idx)]
            d += 1
            if not in_tree:
                tail += disc * rew
                disc *= gamma
                s = s2
                continue
            path_node[U(plen)] = node
            path_a[U(plen)] = a
            path_r[U(plen)] = rew
            plen += 1
            # child V-node for s2 (sparse list); expand on the edge's second visit
            child = qhead[U(node * nU + a)]
            while child >= 0 and vstate[U(child)] != s2:
                child = vsib[U(child)]
            if child < 0 and qN[U(node * nU + a)] >= 1:
                if used >= cap:
                    raise RuntimeError("bamcp: node pool overflow")
                child = used
                used += 1
                vN[U(child)] = 0
                vstate[U(child)] = s2
                vsib[U(child)] = qhead[U(node * nU + a)]
                qhead[U(node * nU + a)] = child
                for b in range(nU):
                    qN[U(child * nU + b)] = 0
                    qW[U(child * nU + b)] = 0.0
                    qhead[U(child * nU + b)] = -1
            s = s2
            if child >= 0:
                node = child
            else:
                in_tree = False  # rollout from s at depth d
        # backup
        G = tail
        for i in range(plen - 1, -1, -1):
            G = path_r[U(i)] + gamma * G
            n = path_node[U(i)]
            a = path_a[U(i)]
            qN[U(n * nU + a)] += 1
            qW[U(n * nU + a)] += G
            vN[U(n)] += 1
    rstate[0] = rp
    return used


@njit(cache=True, error_model="numpy")
def _urn_draw_all(pa, sim, v, W, a_all, nX, acum, supp, nsupp, urn, stamp, bgn, ball_p,
                  ball_y, nball):
    r"""One draw of root sampling from pair ``pa`` (row integrated out) under a prior with
    a Dirichlet of concentration ``a_all`` = α on every one of the ``nX`` next states:
    the Pólya urn of :math:`\mathrm{Dir}(\alpha + c)` over **all** states. With ``v``
    uniform, the draw goes to ``y`` with probability :math:`(\alpha + c_y + k_y)/(S\alpha
    + n + k)`, ``c`` the real counts, ``k_y`` this simulation's earlier draws from
    ``pa`` to ``y`` (``k`` in all): a slot of the row (in support order, the cumulative
    sums of ``urn``, as the known-support draw), or a **background** state (outside the
    row's slots; ``S - n_slots`` of them, each of weight α plus its draws in this
    simulation). A background draw either repeats one of the simulation's earlier
    background draws from ``pa`` (their balls ``(ball_p, ball_y)[:nball[0]]``, ``bgn[pa]``
    of them, weight 1 each) or picks one of the background states uniformly (weight α
    each: the ``j``-th state outside the row's sorted slots). The simulation's stamp
    ``sim`` resets ``urn`` and ``bgn`` of a pair at its first visit (nothing is cleared
    between simulations). Returns ``(idx, y)``: ``idx`` the slot's place in support order,
    or -1 for a background state (the prior's reward there: 0), ``y`` the next state.
    """
    base = pa * W
    ks = nsupp[U(pa)]
    if stamp[U(pa)] != sim:
        stamp[U(pa)] = sim
        for i in range(ks):
            urn[U(base + i)] = acum[U(base + i)]
        bgn[U(pa)] = 0
    slots = urn[U(base + ks - 1)]
    nb = bgn[U(pa)]
    nbg = nX - ks
    target = v * (slots + (nbg * a_all + nb))
    if target < slots or nbg == 0:
        idx = 0
        for i in range(ks - 1):
            idx += urn[U(base + i)] <= target
        for i in range(ks):
            urn[U(base + i)] += 1.0 if i >= idx else 0.0
        return idx, supp[U(base + idx)]
    # one of this simulation's balls from pa or a background state, uniformly
    y = background_draw(target - slots, nb, nbg, a_all, supp[base:base + ks], ks, pa,
                        ball_p, ball_y, nball[0])
    ball_p[U(nball[0])] = pa
    ball_y[U(nball[0])] = y
    nball[0] += 1
    bgn[U(pa)] = nb + 1
    return -1, y


@njit(cache=True, error_model="numpy")
def _support_order(alpha, R, succ, supp, nsupp, acum, rsup, sst, s, a):
    """Row (s, a) in support order (``supp`` lists the slots of positive count): the
    cumulative sums of the posterior counts, the rewards and the next states."""
    acc = 0.0
    for i in range(nsupp[s, a]):
        k = supp[s, a, i]
        acc += alpha[s, a, k]
        acum[s, a, i] = acc
        rsup[s, a, i] = R[s, a, k]
        sst[s, a, i] = succ[s, a, k]


@njit(cache=True, error_model="numpy")
def _greedy_root(qN, qW, nU, scores):
    """Final choice: the largest mean root Q (unvisited: 0), ties uniformly."""
    for a in range(nU):
        n = qN[0, a]
        scores[a] = qW[0, a] / n if n > 0 else 0.0
    return argmax_random_tie(scores)


@njit(cache=True, error_model="numpy")
def _ql_update(Qrl, gset, gcount, x, u, y, r, gamma):
    """Q-learning of the rollout policy on a real transition; recompute G(x)."""
    nU = Qrl.shape[1]
    g = gset[y, 0]
    Qrl[x, u] += QL_RATE * (r + gamma * Qrl[y, g] - Qrl[x, u])
    best = -INF
    c = 0
    for b in range(nU):
        q = Qrl[x, b]
        if q > best:
            best = q
            c = 0
            gset[x, c] = b
            c = 1
        elif q == best:
            gset[x, c] = b
            c += 1
    gcount[x] = c


@njit(cache=True, error_model="numpy")
def bamcp_trajectory(P, Renv, Rstd, gaussian, initial_state, gamma, T, succ, nsucc, theta, R,
                     a_all, K, D, seed, rewards, episode_length=0):
    """One whole BAMCP trajectory on test MDP ``P``; the reward of step ``t`` goes to
    ``rewards[t]``. ``P``, ``Renv``, ``Rstd`` (the test MDP), ``theta`` and ``R`` (the
    prior) are values on the agent's sparse rows ``succ, nsucc``; ``a_all`` > 0: the
    prior is a Dirichlet of that concentration on every next state (``theta`` = α on
    every slot; the module docstring), 0: its support is known. ``episode_length`` H >
    0: back to the initial state after every H steps, the posterior kept (0: continuing).

    Returns ``(discounted_return, max_nodes, capacity)``: the largest number of V-nodes
    any decision used, and the pool size (``K + 1``).
    """
    np.random.seed(seed)
    rs = rng_new(seed)
    nX, nU, W = theta.shape
    alpha, Np, supp, nsupp = support_init(theta, nsucc)
    urn = np.empty((nX, nU, W))
    acum = np.empty((nX, nU, W))  # support order: cumulative alpha, R, next states
    rsup = np.empty((nX, nU, W))
    sst = np.empty((nX, nU, W), dtype=np.int64)
    for s in range(nX):
        for b in range(nU):
            _support_order(alpha, R, succ, supp, nsupp, acum, rsup, sst, s, b)
    stamp = np.full((nX, nU), -1, dtype=np.int64)
    Qrl = np.zeros((nX, nU))
    gset = np.empty((nX, nU), dtype=np.int64)
    gcount = np.full(nX, nU, dtype=np.int64)
    for s in range(nX):
        for b in range(nU):
            gset[s, b] = b
    cap = K + 1
    vN = np.empty(cap, dtype=np.int64)
    vstate = np.empty(cap, dtype=np.int64)
    vsib = np.empty(cap, dtype=np.int32)
    qN = np.empty((cap, nU), dtype=np.int32)
    qW = np.empty((cap, nU))
    qhead = np.empty((cap, nU), dtype=np.int32)
    path_node = np.empty(D + 1, dtype=np.int64)
    path_a = np.empty(D + 1, dtype=np.int64)
    path_r = np.empty(D + 1)
    scores = np.empty(nU)
    tie = np.empty(nU, dtype=np.int64)
    rbuf = np.empty(RBUF)
    rng_fill_uniform(rs, rbuf)
    # UCB1 tables (visit counts never exceed K)
    clog = np.empty(K + 1)
    isq = np.empty(K + 1)
    inv = np.empty(K + 1)
    for m in range(K + 1):
        clog[m] = UCT_C * math.sqrt(math.log(m + 1.0))
        isq[m] = 1.0 / math.sqrt(m) if m > 0 else 0.0
        inv[m] = 1.0 / m if m > 0 else 0.0
    rstate = np.zeros(1, dtype=np.int64)
    # (+dir<alpha>: a simulation's draws to background states, at most D: _urn_draw_all)
    bgn = np.zeros(nX * nU, dtype=np.int64)
    ball_p = np.empty(D + 1, dtype=np.int64)
    ball_y = np.empty(D + 1, dtype=np.int64)
    nball = np.zeros(1, dtype=np.int64)

    # flat views for the search (same memory; the 2-D/3-D forms serve the updates)
    rsup_f, acum_f, supp_f = rsup.ravel(), acum.ravel(), sst.ravel()
    nsupp_f, urn_f, stamp_f = nsupp.ravel(), urn.ravel(), stamp.ravel()
    gset_f, qN_f, qW_f, qhead_f = gset.ravel(), qN.ravel(), qW.ravel(), qhead.ravel()

    x = env_reset(initial_state, nX)
    ret = 0.0
    disc = 1.0
    sim0 = 0
    max_used = 0
    left = episode_length if episode_length > 0 else -1  # steps left in the episode
    for t in range(T):
        used = _search(
            x, W, nU, K, D, gamma, rsup_f, acum_f, supp_f, nsupp_f, urn_f,
            stamp_f, sim0, gset_f, gcount, vN, vstate, vsib, qN_f, qW_f, qhead_f, path_node,
            path_a, path_r, scores, tie, rbuf, rstate, rs, clog, isq, inv, a_all, nX, bgn,
            ball_p, ball_y, nball,
        )  # fmt: skip
        sim0 += K
        if used > max_used:
            max_used = used
        u = _greedy_root(qN, qW, nU, scores)
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(Renv, Rstd, gaussian, x, u, k)
        y = succ[x, u, k]
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        support_observe(alpha, Np, supp, nsupp, x, u, k)
        _support_order(alpha, R, succ, supp, nsupp, acum, rsup, sst, x, u)
        _ql_update(Qrl, gset, gcount, x, u, y, r, gamma)
        x = y
        left -= 1
        if left == 0:  # the episode's end: back to the initial state (learning kept)
            left = episode_length
            x = env_reset(initial_state, nX)
    return ret, max_used, cap


# ---------------------------------------------------------------------------------------
# The algorithm


def _args(prior: Any, params: dict[str, Any], episode: Episode) -> tuple:
    st, args = episode_args(prior, episode)
    a_all = float(getattr(prior, "dirichlet_all", None) or 0.0)  # (+dir<α>: α)
    return st, (*args, a_all, int(params["K"]), depth(params, episode, "bamcp"))


def make_player(prior: Any, params: dict[str, Any], trained: Trained | None, episode: Episode):
    """A player running one BAMCP trajectory per call (see the module docstring) on the
    agent's sparse rows (:func:`bbrlcore.agents._layout.setting`)."""
    return search_player(bamcp_trajectory, *_args(prior, params, episode),
                         episode.episode_length)


def play_with_stats(
    prior: Any, params: dict[str, Any], episode: Episode, P: np.ndarray, seed: int
) -> tuple[float, int, int]:
    """One trajectory, returning ``(return, max V-nodes used by a decision, capacity)``
    (for tests and memory checks)."""
    return with_stats(bamcp_trajectory, *_args(prior, params, episode), P, seed,
                      episode.episode_length)


def pool_bytes(K: int, n_actions: int) -> int:
    """Bytes of the tree pool for ``K`` simulations (module docstring, Memory)."""
    return (K + 1) * (20 + 16 * n_actions)


def _setting_check(params: dict, prior, gamma: float, horizon: int) -> str | None:
    K = int(params["K"])
    D = resolve_depth(params, horizon)
    need = pool_bytes(K, prior.n_actions) + 24 * (K + D + 1)  # tree, UCB tables, path
    if need > MAX_AGENT_MEMORY_BYTES:
        return (f"the search tree would need {need / 2**30:.1f} GiB "
                f"(limit {MAX_AGENT_MEMORY_BYTES / 2**30:.0f} GiB): choose a smaller K")
    return None


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    """Per decision K simulations of exactly D transitions each (tree descent, then
    rollout); a simulated transition is an urn draw over the row's support. Under a prior
    ``+dir<α>`` each simulated transition also has its own price, ``sim_steps_all``
    (zero otherwise): its urn holds the row's background (:func:`_urn_draw_all`: the
    background's weight, the simulation's earlier background moves, the ``j``-th state
    outside the slots; no scan over the S states) and, almost every state being a
    possible successor, the tree is wider (longer child lists, more nodes, earlier
    rollouts): measured about 50 ns more a simulated transition than the known support's
    30 on DeepSea-10 (K = 50 to 400, thread CPU time), the same on DeepSea-6 and -14 (it
    does not grow with S; ``benchmarks/results/dir_prior.md``)."""
    K = float(params["K"])
    D = float(resolve_depth(params, horizon))
    T = float(horizon)
    S = float(prior.support_layout.nsucc.mean())
    out = {"trajectory": 1.0, "decisions": T, "simulations": T * K,
           "sim_steps": T * K * D, "sim_steps_support": T * K * D * S}
    if getattr(prior, "dirichlet_all", None) is not None:
        out["sim_steps_all"] = T * K * D
    return out


ALGORITHM = Algorithm(
    name="bamcp",
    params=(
        Param("K", int, required=True, check=at_least_one, doc="simulations per decision"),
        Param(
            "D",
            int,
            default=None,
            check=at_least_one,
            doc="maximum depth of a simulation (default: the horizon)",
        ),
    ),
    make_player=make_player,
    train=None,
    doc="BAMCP (Guez, Silver, Dayan 2012): Monte-Carlo tree search with root sampling",
    setting_check=_setting_check,
    cost_features=cost_features,
    sparse=True,
    episodic=True,
    dirichlet_all=True,
)
