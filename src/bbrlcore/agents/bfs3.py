r"""BFS3: Bayesian forward search sparse sampling (Asmuth & Littman 2011).

BFS3 plans in the belief MDP: a state of the search is a real state together with the
Dirichlet counts reached along the simulated path, and the next state of a simulated
transition is drawn from the **posterior predictive** (the Dirichlet mean)
:math:`p(s') \propto \theta(s,a,s') + n(s,a,s') + c(s,a,s')`, where ``n`` are the real
counts and ``c`` the pseudo-counts added along the path. No model is ever drawn. Each
node of the belief MDP is searched with FSSS (forward search sparse sampling, Walsh,
Goschin & Littman 2010), which keeps an upper and a lower bound on every value.

One decision at real state ``x``:

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
bounds start at ``[Vmin, Vmax]`` with ``Vmin = min(0, min R)/(1-γ)`` and ``Vmax = max
R/(1-γ)`` (the prior's smallest and largest mean rewards: ``Vmin = 0`` for the paper's
non-negative rewards, as the reference has it; a negative reward, such as DeepSea's move
cost, lowers it so the bounds still hold), and the node is backed up. Then the rollout
takes the action with the largest upper bound (ties uniformly), the recorded successor
with the largest ``(U - L) · multiplicity`` (an unexpanded successor counts ``Vmax - Vmin``; ties
uniformly), adds a pseudo-count for that transition and descends. At depth ``D`` it
stops (that successor stays an unexpanded leaf). On the way back every node on the path
is backed up: :math:`U(s,b) = \sum_{s''} m(s'')\,(R(s,b,s'') + \gamma U(s''))/C`,
likewise for ``L``, with an unexpanded successor worth ``Vmax``/``Vmin``;
:math:`U(s) = \max(V_{min}, \max_b U(s,b))` and the same for ``L``. Bounds do not depend
on the remaining depth. After the real step the agent adds the transition to its real
counts; rewards always come from the prior's known mean reward table. Each trajectory
starts from the prior. Parameters: ``K`` (the budget: ``N = max(1, K // C)`` rollouts per
FSSS tree, so about ``nU·K`` rollouts per decision), ``C`` (the branching factor) and the
depth ``D`` (default: the horizon).

Drawing the successors
----------------------
An expansion records its ``C`` draws per action only as successors with multiplicities
(in increasing state order, the order of every sum over them), so any exact sampler of
the multinomial :math:`\mathrm{Mult}(C, p)`, ``p`` the predictive row, is the algorithm.
Which one is used depends on the number ``k`` of states of the row's support:

* ``k = 1``: no draw.
* ``k = 2`` and ``C <= 4``: the first state's multiplicity is the number of ``C``
  uniforms below its probability (``C`` Bernoulli trials).
* ``k <= max(2, C // 3)`` (the accurate priors' rows; UGC's 5-state rows at C = 15):
  sequential binomials, the state's multiplicity :math:`\mathrm{Bin}(n, w/W)` given the
  ``n`` draws left (``w`` its weight, ``W`` the remaining weight), each by inversion of
  its distribution function with one uniform. That function depends on ``(w, W, n)``
  only and recurs: it is computed once (by the inversion's own recurrence, so the values
  compared are the same numbers) and kept in a hash table keyed by ``(w, W, n)``.
* larger rows (UGrid's 25 states, UGDL's 9): ``C`` categorical draws, each in O(1) from
  the **urn** of the predictive, :math:`\theta(s,b,\cdot) + n(s,b,\cdot) +
  c(s,b,\cdot)`: with probability :math:`\Theta/W` (``Θ`` the prior's row total) a draw
  from the prior's row by a Walker alias table (built once per trajectory), else a
  uniformly chosen ball of a stack holding one entry per count (the real transitions,
  then the path's pseudo-counts, pushed and popped with the path). The same ``C``
  i.i.d. draws from ``p``, without one binomial per state of a 25-state row.

The thresholds are speed choices (measured, see :func:`_workspace`). Along a rollout's
way back only the action it took can have changed at a node, so only that action's
bounds are recomputed (the full backup's values, bit for bit).

Memory
------
Nodes live in a pool preallocated once per trajectory and emptied (a counter reset)
before every FSSS tree: a rollout creates at most one node per depth ``0 .. D-1``, so a
tree holds at most ``N·D`` V-nodes. A V-node stores its state and two bounds (24 bytes)
and, per action, two bounds and a successor count (20 bytes) and up to ``C`` recorded
successors, each a slot of the pair's row (its next state), a multiplicity and a child
index (12 bytes):
:math:`N D\,(24 + n_U (20 + 12 C))` bytes, about 27 MB for Grid (nU = 4) at K = 10 000,
C = 15, D = 50. The kernel checks the bound on every allocation and raises if it would
be exceeded. Besides the pool: the urn's stacks, one 4-byte entry per count, in one
pool of :math:`2 (n_X n_U (3D + 2) + 2T)` entries (:func:`urn_pool_entries`: each
pair's stack starts with room for ``D + 2`` and doubles when full; 10 MB for
DeepSea-50 over bsuite's 500,000 steps, where a stack of ``T + D + 1`` per pair took
10 GB); the counts and the prior's alias tables, on
the agent's **sparse rows** (:mod:`bbrlcore.mdp.rows`: the successors of each pair that
the prior or the test MDPs allow), :math:`n_X n_U W` entries each with ``W`` the widest
row (``n_X`` only for a prior whose rows are full, as UGrid's), so that setting up a
trajectory costs the number of transitions; and the hash table of binomial
distribution functions (1,024 slots of ``C`` doubles and four 8-byte fields: about
150 KB at C = 15).

At an episode's start (an episodic interaction,
:attr:`~bbrlcore.agents.base.Episode.episode_length` H > 0): nothing but the return to
the initial state; the counting model is kept, and each FSSS
tree still looks ``D`` levels ahead with the test set's γ (the episode's end is not part
of the search).

References
----------
J. Asmuth, M. Littman, "Learning is planning: near Bayes-optimal reinforcement learning
via Monte-Carlo tree search", UAI 2011.
T. Walsh, S. Goschin, M. Littman, "Integrating sample-based planning and model-based
reinforcement learning", AAAI 2010 (FSSS).
M. Castronovo et al., "Benchmarking for Bayesian Reinforcement Learning", PLOS ONE 2016
(the BBRL benchmark; its C++ BFS3 is the one reproduced here).

**A prior that does not know the support** (``+dir<α>``,
:mod:`bbrlcore.mdp.transition_prior`): the prior of every row is
:math:`\mathrm{Dir}(\alpha, \ldots, \alpha)` over all S next states, and the predictive
:math:`p(y) = (\alpha + n(s,a,y) + c(s,a,y))/(S\alpha + n(s,a) + c(s,a))` (the Pólya
urn) puts weight on **every** state: the slots of the agent's rows (α each plus their
counts; every real transition has its slot) and each row's **background**, the states
outside its slots, of weight α each plus the path's pseudo-counts on them. A draw (the
root's, :func:`_draw_all`, and the ``C`` of an expansion, always from the urn,
:func:`_expand_all`) takes a uniform: below the slots' weight it picks a slot as before
(alias table of the α's, stack of the counts), else the background: one of the path's
pseudo-counts on the row's background states uniformly (weight 1 each), or a
background state uniformly (weight α each: the ``j``-th state outside the row's sorted
slots). A background successor is recorded with its multiplicity like a slot (as the
index ``W + y``, ``W`` the rows' width; reward 0, the prior's outside its stored
transitions, and ``Rmax`` is taken at least 0); a rollout that descends into it adds its
pseudo-count to a stack of (pair, state) and a count per pair, both restored with the
path's other pseudo-counts. Exact: the same draws from the same predictive, no dense
row. Memory beyond the known-support search: one count per pair (:math:`8 n_X n_U`
bytes) and ``D + 1 + C`` entries. The trees grow wider (almost every state is a
possible successor): DeepSea-10 (100 states, rows of 2 slots), K = 30, C = 3, D = 10,
200 steps in episodes of 10: 133 ms a trajectory under ``UDeepSea-10+dir0.3235``
against 16 ms under ``UDeepSea-10``.

**Rewards.** BFS3 expands its search tree with the prior's rewards; it needs known
rewards, and a prior whose rewards are unknown (``+rbeta``, ``+rnig``:
:mod:`bbrlcore.mdp.reward_prior`) is refused in one line naming it and the prior
(:attr:`~bbrlcore.agents.base.Algorithm.reward_priors`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import (
    argmax_random_tie,
    ctz64,
    env_reset,
    env_reward_rows,
    env_step_rows,
)
from bbrlcore.agents._layout import setting
from bbrlcore.agents._rng import rng_fill_uniform, rng_new
from bbrlcore.agents._tree_search import (
    RBUF,
    U,
    background_draw,
    background_state,
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
from bbrlcore.mdp import rows

#: Slots of the kernel's hash table of binomial distribution functions (a power of 2).
HSLOTS = 1024


@njit(cache=True, error_model="numpy")
def _draw(pc, pcsum, supp, nsupp, s, b, r):
    """Slot of the next state for the uniform ``r`` from the predictive pc(s, b, .) /
    pcsum(s, b) (``supp`` lists the slots of positive count, in increasing order)."""
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
def _draw_all(pc, pcsum, succ, nsucc, nX, a_all, s, b, r):
    r"""Under a prior ``+dir<α>`` (``a_all`` = α, ``nX`` states): the next state for the
    uniform ``r`` from the posterior predictive over **all** states,
    :math:`(\alpha + n(s,b,y))/(S\alpha + n(s,b))`: a slot of the row (``pc``: α plus the
    real counts, every slot positive; returned as is) or, with probability
    :math:`(S - n_{slots})\alpha/(S\alpha + n)`, one of the row's background states
    uniformly (returned as ``KW + y``, ``KW`` the rows' width)."""
    KW = pc.shape[2]
    k = nsucc[s, b]
    nbg = nX - k
    r *= pcsum[s, b] + nbg * a_all
    acc = 0.0
    for i in range(k):
        acc += pc[s, b, i]
        if r < acc:
            return i
    if nbg == 0:
        return k - 1
    return KW + background_state(r - acc, nbg, a_all, succ[s, b], k)


@njit(cache=True, error_model="numpy")
def _expand_all(p, b, sb, C, KW, nX, a_all, gvmax, gvmin, R, succ, nsupp, th_tot, al_k,
                al_scale, al_uni, al_y, al_prob, al_alias, stk, soff, slen, cnt, sslot,
                smult, schild, bgcnt, bgp, bgy, nbgp, tmp_y, tmp_m, rbuf, rp, rs):
    r"""The ``C`` draws of an expansion's action ``b`` at pair ``p`` (flat arrays of
    :func:`_fsss`) under a prior ``+dir<α>`` (``a_all`` = α, ``nX`` states): ``C`` i.i.d.
    draws from the predictive :math:`(\alpha + n + c)/(S\alpha + n + c)` over all
    states, from its urn: the slots' part as :func:`_fsss`'s urn (α on every slot by the
    alias table, one ball per real count and path pseudo-count on the stack), then the
    **background** (the ``S - k`` states outside the row's ``k`` slots), weight
    :math:`(S - k)lpha + m`: one of the path's ``m = bgcnt[p]`` pseudo-counts on it
    (balls ``bgp``/``bgy`` of pair ``p``, uniformly) or, weight α each, a background state
    uniformly (the ``j``-th state outside the row's sorted slots). Records the slots (in
    slot order) then the background states (increasing, as ``KW + y``, reward 0) with
    their multiplicities from ``sb`` on; returns ``(records, C·upper, C·lower, buffer
    position)``."""
    RB = rbuf.shape[0]
    row = p * KW
    k = nsupp[U(p)]
    th = th_tot[U(p)]
    L = slen[U(p)]
    m = bgcnt[U(p)]
    nbg = nX - k
    Wt = th + L + (nbg * a_all + m)
    ktm = al_k[U(p)] - 1
    sc = al_scale[U(p)]
    uni = al_uni[U(p)]
    sk = soff[U(p)]
    cb = b * KW
    if rp + C > RB:
        rng_fill_uniform(rs, rbuf)
        rp = 0
    nt = 0  # distinct background states drawn (sorted in tmp_y, multiplicities tmp_m)
    for c in range(C):
        t = rbuf[U(rp + c)] * Wt
        if t < th or (L == 0 and nbg == 0):
            v = t * sc
            i = int(v)
            if i > ktm:
                i = ktm
            ri = U(row + i)
            y = al_y[ri] if uni or v - i < al_prob[ri] else al_alias[ri]
            cnt[U(cb + y)] += 1
        elif t < th + L or nbg == 0:
            j = int(t - th)
            if j > L - 1:
                j = L - 1
            y = stk[U(sk + j)]
            cnt[U(cb + y)] += 1
        else:
            # one of the path's pseudo-counts on pair p's background or a background
            # state, uniformly
            z = background_draw(t - th - L, m, nbg, a_all, succ[row:row + k], k, p, bgp,
                                bgy, nbgp)
            i = 0
            while i < nt and tmp_y[U(i)] < z:
                i += 1
            if i < nt and tmp_y[U(i)] == z:
                tmp_m[U(i)] += 1
            else:
                for q in range(nt, i, -1):
                    tmp_y[U(q)] = tmp_y[U(q - 1)]
                    tmp_m[U(q)] = tmp_m[U(q - 1)]
                tmp_y[U(i)] = z
                tmp_m[U(i)] = 1
                nt += 1
    rp += C
    n = 0
    su = 0.0
    sl = 0.0
    for i in range(k):
        mm = cnt[U(cb + i)]
        if mm > 0:
            cnt[U(cb + i)] = 0
            sslot[U(sb + n)] = i
            smult[U(sb + n)] = mm
            schild[U(sb + n)] = -1
            r = R[U(row + i)]
            su += mm * (r + gvmax)
            sl += mm * (r + gvmin)
            n += 1
    for i in range(nt):
        mm = tmp_m[U(i)]
        sslot[U(sb + n)] = KW + tmp_y[U(i)]
        smult[U(sb + n)] = mm
        schild[U(sb + n)] = -1
        su += mm * gvmax
        sl += mm * gvmin
        n += 1
    return n, su, sl, rp


@njit(cache=True, error_model="numpy")
def _prior_alias(theta, nsucc):
    """Walker alias tables of the prior's rows (Vose's construction), on the agent's
    sparse rows (``theta`` the prior's concentrations on them, ``nsucc`` their lengths).

    Returns ``(th_tot, al_k, al_scale, al_uni, al_y, al_prob, al_alias)``: for row (s, b),
    ``th_tot`` = sum of theta(s, b, .), ``al_k`` = the number of its positive entries,
    ``al_scale = al_k / th_tot``; entry ``i < al_k`` holds the row's slot ``al_y[s, b,
    i]``, kept with probability ``al_prob[s, b, i]``, else replaced by ``al_alias[s, b,
    i]``. A uniform ``v`` in [0, al_k) then gives slot k with probability theta(s, b, k) /
    th_tot: entry ``int(v)``, kept when ``v - int(v) < al_prob``. ``al_uni`` marks rows
    whose entries are all kept (uniform rows: no alias needed).
    """
    nX, nU, W = theta.shape
    th_tot = np.zeros((nX, nU))
    al_uni = np.zeros((nX, nU), dtype=np.bool_)
    al_k = np.zeros((nX, nU), dtype=np.int64)
    al_scale = np.zeros((nX, nU))
    al_y = np.zeros((nX, nU, W), dtype=np.int32)
    al_prob = np.ones((nX, nU, W))
    al_alias = np.zeros((nX, nU, W), dtype=np.int32)
    w = np.empty(W)
    small = np.empty(W, dtype=np.int64)
    large = np.empty(W, dtype=np.int64)
    for s in range(nX):
        for b in range(nU):
            tot = 0.0
            k = 0
            for y in range(nsucc[s, b]):
                if theta[s, b, y] > 0.0:
                    al_y[s, b, k] = y
                    tot += theta[s, b, y]
                    k += 1
            th_tot[s, b] = tot
            al_k[s, b] = k
            if k == 0:
                continue
            al_scale[s, b] = k / tot
            ns = 0
            nl = 0
            for i in range(k):
                w[i] = theta[s, b, al_y[s, b, i]] * k / tot
                al_alias[s, b, i] = al_y[s, b, i]
                if w[i] < 1.0:
                    small[ns] = i
                    ns += 1
                else:
                    large[nl] = i
                    nl += 1
            while ns > 0 and nl > 0:
                ns -= 1
                i = small[ns]
                j = large[nl - 1]
                al_prob[s, b, i] = w[i]
                al_alias[s, b, i] = al_y[s, b, j]
                w[j] = (w[j] + w[i]) - 1.0
                if w[j] < 1.0:
                    nl -= 1
                    small[ns] = j
                    ns += 1
            # what is left has probability 1 up to rounding
            for t in range(ns):
                al_prob[s, b, small[t]] = 1.0
            for t in range(nl):
                al_prob[s, b, large[t]] = 1.0
            uni = True
            for i in range(k):
                if al_prob[s, b, i] < 1.0:
                    uni = False
            al_uni[s, b] = uni
    return th_tot, al_k, al_scale, al_uni, al_y, al_prob, al_alias


@njit(cache=True, error_model="numpy")
def _fsss(
    x, a, k1, s1, N, C, D, KW, nU, gamma, R, vmin, vmax, pc, pcsum, supp, nsupp, succ,
    vstate, vU, vL, qU, qL, nrec, sslot, smult, schild,
    path_node, path_b, path_s, path_y, path_old, tie, rbuf, rstate, rs,
    th_tot, al_k, al_scale, al_uni, al_y, al_prob, al_alias, stk, soff, slen, cnt, bstep,
    hmask, hw, hW, hn, hflip, hcdf, kseq, cbern, a_all, nXs, bgcnt, bgp, bgy, tmp_y, tmp_m,
):  # fmt: skip
    """N rollouts in a fresh FSSS tree rooted at state ``s1`` (reached by x, a -> s1);
    returns ``(root upper bound, nodes used)``.

    Everything is written out in this one function (the expansion and its draws, the
    bounds, the tie-breaks) because numba does not make calls to small helpers free, on
    flat arrays (one multiply-add per index): pair ``p = s nU + b``; a pair's row (the
    slots of the agent's sparse rows, ``KW`` wide: slot ``k`` is the transition to
    ``succ[p KW + k]``) at ``p KW``, its count stack at ``soff[p]`` (with room for the
    D + 1 pseudo-counts of a rollout beyond its real counts: :func:`_observe`); a node's
    action at
    ``nb = node nU + b``, its recorded successors (slots of the row, with their
    multiplicities) at ``nb C``. The root ``s1`` is slot ``k1`` of row (x, a);
    ``supp``/``nsupp`` list each row's slots of positive count. ``pc``/``pcsum`` (the
    predictive's weights) and ``stk``/``slen`` (its urn of counts) hold the real counts
    on entry and on exit: the path's pseudo-counts are added and restored exactly.
    ``rstate`` = [buffer position]; ``rs`` = the generator that refills the buffer.

    ``a_all`` > 0 (a prior ``+dir<α>`` over ``nXs`` states): the predictive also puts
    weight on every **background** state of a row (outside its slots; α each, plus the
    path's pseudo-counts on it), a recorded successor or a root ``k1`` of at least ``KW``
    is the background state ``k1 - KW`` (reward 0), and its pseudo-counts are kept, while
    the rollout's path holds them, in ``bgcnt`` (per pair) and ``bgp``/``bgy`` (a stack of
    (pair, state)), restored on the way back like the slots' (:func:`_expand_all`).
    """
    cap = vstate.shape[0]
    RB = rbuf.shape[0]
    rp = rstate[0]
    gvmax = gamma * vmax
    gvmin = gamma * vmin
    inv = 1.0 / C
    usemask = KW <= 64
    one = np.uint64(1)
    zero = np.uint64(0)
    used = 0
    root = -1
    pa = x * nU + a
    for _ in range(N):
        # planning counts = real counts + the root's pseudo-count
        nbgp = 0  # (pseudo-counts on background states on the path: +dir<alpha>)
        old_root = 0.0
        old_root_sum = 0.0
        if k1 < KW:
            old_root = pc[U(pa * KW + k1)]
            old_root_sum = pcsum[U(pa)]
            pc[U(pa * KW + k1)] += 1.0
            pcsum[U(pa)] += 1.0
            stk[U(soff[U(pa)] + slen[U(pa)])] = k1
            slen[U(pa)] += 1
        else:
            bgcnt[U(pa)] += 1
            bgp[0] = pa
            bgy[0] = k1 - KW
            nbgp = 1
        node = root
        parent = -1
        pj = 0
        s = s1
        depth = 0
        plen = 0
        while depth < D:
            if node < 0:
                # expand: C predictive successors per action (bounds [Vmin, Vmax])
                if used >= cap:
                    raise RuntimeError("bfs3: node pool overflow")
                node = used
                used += 1
                vstate[U(node)] = s
                best_u = vmin
                best_l = vmin
                for b in range(nU):
                    p = s * nU + b
                    row = p * KW
                    nb = node * nU + b
                    sb = nb * C
                    k = nsupp[U(p)]
                    su = 0.0
                    sl = 0.0
                    n = 0
                    if a_all > 0.0:
                        # +dir<alpha>: C draws from the urn with the row's background
                        n, su, sl, rp = _expand_all(
                            p, b, sb, C, KW, nXs, a_all, gvmax, gvmin, R, succ, nsupp,
                            th_tot, al_k, al_scale, al_uni, al_y, al_prob, al_alias, stk,
                            soff, slen, cnt, sslot, smult, schild, bgcnt, bgp, bgy, nbgp,
                            tmp_y, tmp_m, rbuf, rp, rs,
                        )  # fmt: skip
                    elif k == 1:
                        y = supp[U(row)]
                        sslot[U(sb)] = y
                        smult[U(sb)] = C
                        schild[U(sb)] = -1
                        r = R[U(row + y)]
                        su += C * (r + gvmax)
                        sl += C * (r + gvmin)
                        n = 1
                    elif k == 2 and C <= cbern:
                        # two states, few draws: the first state's multiplicity is the
                        # number of C uniforms below its probability (C Bernoulli trials)
                        if rp + C > RB:
                            rng_fill_uniform(rs, rbuf)
                            rp = 0
                        y = supp[U(row)]
                        w = pc[U(row + y)]
                        W = pcsum[U(p)]
                        m = 0
                        for c in range(C):
                            m += rbuf[U(rp + c)] * W < w
                        rp += C
                        if m > 0:
                            sslot[U(sb)] = y
                            smult[U(sb)] = m
                            schild[U(sb)] = -1
                            r = R[U(row + y)]
                            su += m * (r + gvmax)
                            sl += m * (r + gvmin)
                            n = 1
                        if m < C:
                            y = supp[U(row + 1)]
                            m = C - m
                            sslot[U(sb + n)] = y
                            smult[U(sb + n)] = m
                            schild[U(sb + n)] = -1
                            r = R[U(row + y)]
                            su += m * (r + gvmax)
                            sl += m * (r + gvmin)
                            n += 1
                    elif k <= kseq:
                        # few successors: the multiplicities are multinomial, drawn as
                        # sequential binomials Bin(n, w / W) by inversion (one uniform
                        # each) of their distribution functions, which depend on (w, W, n)
                        # only and are kept in a hash table (keys checked exactly)
                        rest_n = C
                        rest_p = pcsum[U(p)]
                        for i in range(k):
                            y = supp[U(row + i)]
                            w = pc[U(row + y)]
                            if i == k - 1:
                                m = rest_n
                            else:
                                h = (int(w * 4.0) * 40503 + int(rest_p * 4.0) * 7919
                                     + rest_n * 1031) & hmask
                                hb = h * C
                                if hw[U(h)] != w or hW[U(h)] != rest_p or hn[U(h)] != rest_n:
                                    # (the inversion's own recurrence, so that the table
                                    # holds exactly the values it would compare)
                                    hw[U(h)] = w
                                    hW[U(h)] = rest_p
                                    hn[U(h)] = rest_n
                                    pr = w / rest_p if w < rest_p else 1.0
                                    if pr >= 1.0:
                                        hflip[U(h)] = 2  # certain: no draw
                                    else:
                                        flip = pr > 0.5
                                        hflip[U(h)] = 1 if flip else 0
                                        pp = 1.0 - pr if flip else pr
                                        ratio = pp / (1.0 - pp)
                                        pk = (1.0 - pp) ** rest_n
                                        cdf = pk
                                        hcdf[U(hb)] = cdf
                                        bs = rest_n * (C + 1)
                                        for mm in range(rest_n - 1):
                                            # bstep[n, m] = (n - m) / (m + 1)
                                            pk *= ratio * bstep[U(bs + mm)]
                                            cdf += pk
                                            hcdf[U(hb + mm + 1)] = cdf
                                f = hflip[U(h)]
                                if f == 2:
                                    m = rest_n
                                else:
                                    if rp == RB:
                                        rng_fill_uniform(rs, rbuf)
                                        rp = 0
                                    uu = rbuf[U(rp)]
                                    rp += 1
                                    # the first j with u < F(j) (F non-decreasing), or n
                                    m = 0
                                    for j in range(rest_n):
                                        m += hcdf[U(hb + j)] <= uu
                                    if f == 1:
                                        m = rest_n - m
                                rest_p -= w
                            if m > 0:
                                sslot[U(sb + n)] = y
                                smult[U(sb + n)] = m
                                schild[U(sb + n)] = -1
                                r = R[U(row + y)]
                                su += m * (r + gvmax)
                                sl += m * (r + gvmin)
                                n += 1
                                rest_n -= m
                            if rest_n == 0:
                                break
                    else:
                        # C categorical draws, O(1) each, from the urn: the prior's mass
                        # Theta (alias table over theta(s, b, .)), then one ball per
                        # count in stk (real transitions, then the path's pseudo-counts)
                        th = th_tot[U(p)]
                        L = slen[U(p)]
                        W = th + L
                        ktm = al_k[U(p)] - 1
                        sc = al_scale[U(p)]
                        uni = al_uni[U(p)]
                        Lm = L - 1
                        sk = soff[U(p)]
                        cb = b * KW  # (one counter row per action: independent chains)
                        if rp + C > RB:
                            rng_fill_uniform(rs, rbuf)
                            rp = 0
                        mask = zero
                        for c in range(C):
                            t = rbuf[U(rp + c)] * W
                            if t < th:
                                v = t * sc
                                i = int(v)
                                if i > ktm:
                                    i = ktm
                                ri = U(row + i)
                                if uni or v - i < al_prob[ri]:
                                    y = al_y[ri]
                                else:
                                    y = al_alias[ri]
                            else:
                                j = int(t - th)
                                if j > Lm:
                                    j = Lm
                                y = stk[U(sk + j)]
                            cnt[U(cb + y)] += 1
                            mask |= one << np.uint64(y)
                        rp += C
                        # recorded in increasing state order (the support's order)
                        if usemask:
                            while mask != zero:
                                y = ctz64(mask)
                                mask &= mask - one
                                m = cnt[U(cb + y)]
                                cnt[U(cb + y)] = 0
                                sslot[U(sb + n)] = y
                                smult[U(sb + n)] = m
                                schild[U(sb + n)] = -1
                                r = R[U(row + y)]
                                su += m * (r + gvmax)
                                sl += m * (r + gvmin)
                                n += 1
                        else:
                            rest = C
                            for i in range(k):
                                y = supp[U(row + i)]
                                m = cnt[U(cb + y)]
                                if m > 0:
                                    cnt[U(cb + y)] = 0
                                    sslot[U(sb + n)] = y
                                    smult[U(sb + n)] = m
                                    schild[U(sb + n)] = -1
                                    r = R[U(row + y)]
                                    su += m * (r + gvmax)
                                    sl += m * (r + gvmin)
                                    n += 1
                                    rest -= m
                                    if rest == 0:
                                        break
                    nrec[U(nb)] = n
                    # the node's backup (every successor unexpanded), same sums and order
                    # as _backup_action
                    qu = su * inv
                    ql = sl * inv
                    qU[U(nb)] = qu
                    qL[U(nb)] = ql
                    if qu > best_u:
                        best_u = qu
                    if ql > best_l:
                        best_l = ql
                vU[U(node)] = best_u
                vL[U(node)] = best_l
                if parent < 0:
                    root = node
                else:
                    schild[U(pj)] = node
            # action with the largest upper bound, exact ties uniformly
            nb0 = node * nU
            best = qU[U(nb0)]
            tie[0] = 0
            nt = 1
            for b in range(1, nU):
                q = qU[U(nb0 + b)]
                if q > best:
                    best = q
                    tie[0] = b
                    nt = 1
                elif q == best:
                    tie[U(nt)] = b
                    nt += 1
            if nt == 1:
                b = tie[0]
            else:
                if rp == RB:
                    rng_fill_uniform(rs, rbuf)
                    rp = 0
                i = int(rbuf[U(rp)] * nt)
                b = tie[U(i if i < nt else nt - 1)]
                rp += 1
            # successor with the largest gap x multiplicity (best starts at 0), ties
            # uniformly
            sb = (nb0 + b) * C
            ns = nrec[U(nb0 + b)]
            bestg = 0.0
            nt = 0
            for j in range(ns):
                c = schild[U(sb + j)]
                gap = (vmax - vmin) if c < 0 else max(0.0, vU[U(c)] - vL[U(c)])
                g = gap * smult[U(sb + j)]
                if g > bestg:
                    bestg = g
                    tie[0] = j
                    nt = 1
                elif g == bestg:
                    tie[U(nt)] = j
                    nt += 1
            if nt == 1:
                j = tie[0]
            else:
                if rp == RB:
                    rng_fill_uniform(rs, rbuf)
                    rp = 0
                i = int(rbuf[U(rp)] * nt)
                j = tie[U(i if i < nt else nt - 1)]
                rp += 1
            y = sslot[U(sb + j)]
            p = s * nU + b
            path_node[U(plen)] = node
            path_b[U(plen)] = b
            path_s[U(plen)] = p
            path_y[U(plen)] = y
            plen += 1
            if y < KW:
                path_old[U(2 * plen - 2)] = pc[U(p * KW + y)]
                path_old[U(2 * plen - 1)] = pcsum[U(p)]
                pc[U(p * KW + y)] += 1.0
                pcsum[U(p)] += 1.0
                stk[U(soff[U(p)] + slen[U(p)])] = y
                slen[U(p)] += 1
                s = succ[U(p * KW + y)]
            else:  # (a background state, +dir<alpha>)
                bgcnt[U(p)] += 1
                bgp[U(nbgp)] = p
                bgy[U(nbgp)] = y - KW
                nbgp += 1
                s = y - KW
            parent = node
            pj = sb + j
            node = schild[U(sb + j)]
            depth += 1
        # back up the path (deepest first) and restore the counts. Only the action the
        # rollout took can have changed at each node (the other actions' subtrees were
        # not visited), so only its bounds are recomputed: the full backup's result,
        # bit for bit.
        for i in range(plen - 1, -1, -1):
            node = path_node[U(i)]
            b = path_b[U(i)]
            p = path_s[U(i)]
            row = p * KW
            nb0 = node * nU
            sb = (nb0 + b) * C
            su = 0.0
            sl = 0.0
            for j in range(nrec[U(nb0 + b)]):
                y = sslot[U(sb + j)]
                m = smult[U(sb + j)]
                c = schild[U(sb + j)]
                r = R[U(row + y)] if y < KW else 0.0
                if c >= 0:
                    su += m * (r + gamma * vU[U(c)])
                    sl += m * (r + gamma * vL[U(c)])
                else:
                    su += m * (r + gvmax)
                    sl += m * (r + gvmin)
            qU[U(nb0 + b)] = su * inv
            qL[U(nb0 + b)] = sl * inv
            best_u = vmin
            best_l = vmin
            for bb in range(nU):
                if qU[U(nb0 + bb)] > best_u:
                    best_u = qU[U(nb0 + bb)]
                if qL[U(nb0 + bb)] > best_l:
                    best_l = qL[U(nb0 + bb)]
            vU[U(node)] = best_u
            vL[U(node)] = best_l
            if path_y[U(i)] < KW:
                pc[U(row + path_y[U(i)])] = path_old[U(2 * i)]
                pcsum[U(p)] = path_old[U(2 * i + 1)]
                slen[U(p)] -= 1
            else:
                bgcnt[U(p)] -= 1
                nbgp -= 1
        if k1 < KW:
            pc[U(pa * KW + k1)] = old_root
            pcsum[U(pa)] = old_root_sum
            slen[U(pa)] -= 1
        else:
            bgcnt[U(pa)] -= 1
    rstate[0] = rp
    return vU[U(root)], used


@njit(cache=True, error_model="numpy")
def _workspace(succ, nsucc, theta, R, T, N, C, D, a_all):
    """Every array of the search, for trajectories of at most ``T`` real steps and FSSS
    trees of ``N`` rollouts of depth ``D`` (see :func:`_fsss`), on the agent's sparse
    rows ``succ, nsucc`` (``theta``, ``R``: the prior's values on them): the counting
    model (3-D, for the updates, and flat views of it, of ``R`` and of ``succ`` for the
    search) and the search's arrays, in tuples. Everything but the node pool and the
    binomials' table is O(transitions) or, the urn's stacks, O(T + nX nU D)
    (:func:`urn_pool_entries`). ``a_all`` > 0 (+dir<α>): the background's bookkeeping
    (:func:`_expand_all`), in the last tuple with α and the number of states."""
    nX, nU, W = theta.shape
    pc, pcsum, supp, nsupp = support_init(theta, nsucc)
    flat = (R.ravel(), pc.ravel(), pcsum.ravel(), supp.ravel(), nsupp.ravel(), succ.ravel(), W)
    cap = N * D
    nodes = (
        np.empty(cap, dtype=np.int64),  # vstate
        np.empty(cap),  # vU
        np.empty(cap),  # vL
        np.empty(cap * nU),  # qU
        np.empty(cap * nU),  # qL
        np.empty(cap * nU, dtype=np.int32),  # nrec
        np.empty(cap * nU * C, dtype=np.int32),  # sslot
        np.empty(cap * nU * C, dtype=np.int32),  # smult
        np.empty(cap * nU * C, dtype=np.int32),  # schild
    )
    path = (
        np.empty(D, dtype=np.int64),  # path_node
        np.empty(D, dtype=np.int64),  # path_b
        np.empty(D, dtype=np.int64),  # path_s
        np.empty(D, dtype=np.int64),  # path_y
        np.empty(2 * D),  # path_old
        np.empty(max(nU, C), dtype=np.int64),  # tie
    )
    # the predictive's urn: alias tables of the prior's part, stacks of the counts: a
    # pair's stack holds its real transitions (at most T over all pairs) and at most D + 1
    # pseudo-counts of a rollout; each starts with room for D + 2 entries in one pool and
    # moves to the pool's end with twice the room when a real count leaves less than
    # D + 1 free (_observe, _grow), so that the pool
    # needs O(T + nX nU D) entries, not nX nU (T + D + 1) (DeepSea-50's 500,000 steps:
    # 10 MB instead of 10 GB)
    th_tot, al_k, al_scale, al_uni, al_y, al_prob, al_alias = _prior_alias(theta, nsucc)
    n_pairs = nX * nU
    first = D + 2
    urn = (
        th_tot.ravel(), al_k.ravel(), al_scale.ravel(), al_uni.ravel(), al_y.ravel(),
        al_prob.ravel(), al_alias.ravel(),
        np.empty(urn_pool_entries(n_pairs, T, D), dtype=np.int32),  # stk
        np.arange(n_pairs, dtype=np.int64) * first,  # soff
        np.full(n_pairs, first, dtype=np.int64),  # scap
        np.zeros(n_pairs, dtype=np.int64),  # slen
        np.full(1, n_pairs * first, dtype=np.int64),  # stop: the pool's first free entry
        np.zeros(nU * W, dtype=np.int64),  # cnt
        D + 1,  # the room kept free in every stack
    )
    # steps of the binomial inversion: pmf(m + 1) = pmf(m) (p / (1 - p)) (n - m) / (m + 1)
    bstep = np.zeros((C + 1) * (C + 1))
    for n_ in range(C + 1):
        for m_ in range(n_):
            bstep[n_ * (C + 1) + m_] = (n_ - m_) / (m_ + 1.0)
    # rows of up to kseq states: sequential binomials; larger rows: the urn (measured
    # 2026-11-23, GC-UGC and GDL-UGDL K=1 D=25: 5-state rows at C = 15 -16% by the
    # binomials, at C = 2 or 5 +20-35%; 9-state rows at C = 10 or 15 +35-55%)
    kseq = max(2, C // 3)
    # distribution functions of Bin(n, w / W) by (w, W, n): a hash table (keys checked)
    binom = (
        bstep,
        HSLOTS - 1,  # hmask
        np.full(HSLOTS, -1.0),  # hw
        np.full(HSLOTS, -1.0),  # hW
        np.zeros(HSLOTS, dtype=np.int64),  # hn
        np.zeros(HSLOTS, dtype=np.int64),  # hflip
        np.empty(HSLOTS * C),  # hcdf
        kseq,
        # two-state rows at C <= 4: C Bernoulli trials (GC K=10000 C=2 D=50: -15%; at C = 5
        # the cached binomial is as fast, 2026-11-23)
        4,  # cbern
    )
    dall = (
        float(a_all),
        nX,
        np.zeros(nX * nU, dtype=np.int64),  # bgcnt: the path's pseudo-counts per pair
        np.empty(D + 1, dtype=np.int64),  # bgp: their pairs, stacked along the path
        np.empty(D + 1, dtype=np.int64),  # bgy: their states
        np.empty(C, dtype=np.int64),  # tmp_y: an expansion's background states
        np.empty(C, dtype=np.int64),  # tmp_m: their multiplicities
    )
    return (pc, pcsum, supp, nsupp), flat, nodes, path, urn, binom, dall


@njit(cache=True, error_model="numpy")
def _observe(model, urn, x, u, k):
    """A real transition (slot ``k`` of row (x, u)): the counting model and the urn's
    stack of counts."""
    pc, pcsum, supp, nsupp = model
    support_observe(pc, pcsum, supp, nsupp, x, u, k)
    stk, soff, scap, slen, stop = urn[7], urn[8], urn[9], urn[10], urn[11]
    p = x * pc.shape[1] + u
    stk[soff[p] + slen[p]] = k
    slen[p] += 1
    # room for a rollout's pseudo-counts (at most D + 1: the root's, one a level), so that
    # the search pushes without a check (_fsss)
    if slen[p] + urn[13] > scap[p]:
        _grow(stk, soff, scap, slen, stop, p)


@njit(cache=True, error_model="numpy")
def urn_pool_entries(n_pairs, T, D):
    """Entries of the pool of the urn's stacks (:func:`_workspace`, :func:`_grow`) for
    ``n_pairs`` state-action pairs, ``T`` real transitions and rollouts of depth ``D``:
    a pair's stack starts with ``c0 = D + 2`` entries and doubles whenever its ``n`` real
    transitions leave less than ``D + 1`` free (the pseudo-counts of a rollout), so its
    segments sum to less than twice its last size, which is at most ``c0 + 2 (n + D)``;
    over all pairs, ``2 (n_pairs (c0 + 2 D) + 2 T)``.

    >>> urn_pool_entries(5004, 500_000, 15)  # DeepSea-50 (bsuite's 10,000 episodes)
    2470376
    """
    return 2 * (n_pairs * (D + 2 + 2 * D) + 2 * T)


@njit(cache=True, error_model="numpy")
def _grow(stk, soff, scap, slen, stop, p):
    """Pair ``p``'s stack moves to the pool's first free entry with twice the room (its
    entries in the same order, so the same draws)."""
    new = stop[0]
    cap = 2 * scap[p]
    if new + cap > stk.shape[0]:  # (never: urn_pool_entries bounds it)
        raise RuntimeError("bfs3: urn pool overflow")
    old = soff[p]
    for j in range(slen[p]):
        stk[new + j] = stk[old + j]
    soff[p] = new
    scap[p] = cap
    stop[0] = new + cap


@njit(cache=True, error_model="numpy")
def _tree(x, a, k1, s1, N, C, D, nU, gamma, vmin, vmax, flat, nodes, path, urn, binom, rbuf,
          rstate, rs, dall):  # fmt: skip
    """:func:`_fsss` on the workspace's arrays."""
    R_f, pc_f, pcsum_f, supp_f, nsupp_f, succ_f, KW = flat
    vstate, vU, vL, qU, qL, nrec, sslot, smult, schild = nodes
    path_node, path_b, path_s, path_y, path_old, tie = path
    th_f, alk_f, als_f, alu_f, aly_f, alp_f, ala_f, stk, soff, _scap, slen, _stop, cnt, _room = urn
    bstep, hmask, hw, hW, hn, hflip, hcdf, kseq, cbern = binom
    a_all, nXs, bgcnt, bgp, bgy, tmp_y, tmp_m = dall
    return _fsss(
        x, a, k1, s1, N, C, D, KW, nU, gamma, R_f, vmin, vmax, pc_f, pcsum_f, supp_f, nsupp_f,
        succ_f, vstate, vU, vL, qU, qL, nrec, sslot, smult, schild,
        path_node, path_b, path_s, path_y, path_old, tie, rbuf, rstate, rs,
        th_f, alk_f, als_f, alu_f, aly_f, alp_f, ala_f, stk, soff, slen, cnt, bstep,
        hmask, hw, hW, hn, hflip, hcdf, kseq, cbern, a_all, nXs, bgcnt, bgp, bgy, tmp_y, tmp_m,
    )  # fmt: skip


@njit(cache=True, error_model="numpy")
def bfs3_trajectory(
    P, Renv, Rstd, gaussian, initial_state, gamma, T, succ, nsucc, theta, R, rlo, rhi, a_all,
    K, C, D, seed, rewards, episode_length=0
):
    """One whole BFS3 trajectory on test MDP ``P``; the reward of step ``t`` goes to
    ``rewards[t]``. ``P``, ``Renv``, ``Rstd`` (the test MDP), ``theta`` and ``R`` (the
    prior) are values on the agent's sparse rows ``succ, nsucc``; ``rlo``, ``rhi`` the
    prior's smallest and largest mean rewards (of its whole table: :func:`reward_range`);
    ``a_all`` > 0: the prior is a Dirichlet of that concentration on every next state
    (``theta`` = α on every slot; the module docstring), 0: its support is known.
    ``episode_length`` H > 0: back to the initial state after every H steps, the
    posterior kept (0: continuing).

    Returns ``(discounted_return, max_nodes, capacity)``: the largest number of V-nodes
    one FSSS tree used, and the pool size (``N·D``).
    """
    np.random.seed(seed)
    rs = rng_new(seed)
    nX, nU, KW = theta.shape
    N = max(1, K // C)
    vmax = rhi / (1.0 - gamma)
    vmin = min(0.0, rlo) / (1.0 - gamma)
    model, flat, nodes, path, urn, binom, dall = _workspace(succ, nsucc, theta, R, T, N, C, D,
                                                            a_all)
    pc, pcsum, supp, nsupp = model
    rbuf = np.empty(max(RBUF, C))
    rng_fill_uniform(rs, rbuf)
    rstate = np.zeros(1, dtype=np.int64)
    q = np.empty(nU)

    x = env_reset(initial_state, nX)
    ret = 0.0
    disc = 1.0
    max_used = 0
    left = episode_length if episode_length > 0 else -1  # steps left in the episode
    for t in range(T):
        for a in range(nU):
            q[a] = 0.0
            for _c in range(C):
                if a_all > 0.0:  # (+dir<alpha>: k1 >= KW is the background state k1 - KW)
                    k1 = _draw_all(pc, pcsum, succ, nsucc, nX, a_all, x, a, np.random.random())
                else:
                    k1 = _draw(pc, pcsum, supp, nsupp, x, a, np.random.random())
                if k1 < KW:
                    s1 = succ[x, a, k1]
                    r1 = R[x, a, k1]
                else:
                    s1 = k1 - KW
                    r1 = 0.0
                U, used = _tree(x, a, k1, s1, N, C, D, nU, gamma, vmin, vmax, flat, nodes,
                                path, urn, binom, rbuf, rstate, rs, dall)  # fmt: skip
                if used > max_used:
                    max_used = used
                q[a] += (r1 + gamma * U) / C
        u = argmax_random_tie(q)
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(Renv, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        _observe(model, urn, x, u, k)
        x = succ[x, u, k]
        left -= 1
        if left == 0:  # the episode's end: back to the initial state (learning kept)
            left = episode_length
            x = env_reset(initial_state, nX)
    return ret, max_used, N * D


@njit(cache=True, error_model="numpy")
def _expansions(succ, nsucc, theta, R, obs, x, a, k1, C, reps, seed, a_all):
    """:func:`expansion_multiplicities` on sparse rows (``obs``: rows ``x, u, k``, ``k``
    a slot; the root is slot ``k1`` of row (x, a), or the background state ``k1 - KW``
    under ``a_all`` > 0)."""
    nX, nU, KW = theta.shape
    model, flat, nodes, path, urn, binom, dall = _workspace(succ, nsucc, theta, R,
                                                            obs.shape[0], 1, C, 1, a_all)
    for i in range(obs.shape[0]):
        _observe(model, urn, obs[i, 0], obs[i, 1], obs[i, 2])
    rs = rng_new(seed)
    rbuf = np.empty(max(RBUF, C))
    rng_fill_uniform(rs, rbuf)
    rstate = np.zeros(1, dtype=np.int64)
    nrec, sslot, smult = nodes[5], nodes[6], nodes[7]
    s1 = succ[x, a, k1] if k1 < KW else k1 - KW
    out = np.zeros((reps, nU, nX), dtype=np.int64)
    for r in range(reps):
        _tree(x, a, k1, s1, 1, C, 1, nU, 0.95, 0.0, 1.0, flat, nodes, path, urn, binom,
              rbuf, rstate, rs, dall)  # fmt: skip
        for b in range(nU):
            for j in range(nrec[b]):
                k = sslot[b * C + j]
                out[r, b, succ[s1, b, k] if k < KW else k - KW] = smult[b * C + j]
    return out


def expansion_multiplicities(theta: np.ndarray, R: np.ndarray, obs: np.ndarray, x: int,
                             a: int, s1: int, C: int, reps: int, seed: int,
                             dirichlet_all: float | None = None) -> np.ndarray:
    """The successors an expansion records, for tests: ``out[r, b, y]`` = multiplicity of
    ``y`` among the ``C`` draws of action ``b`` in the ``r``-th of ``reps`` fresh FSSS
    trees rooted at ``s1`` (reached by ``x, a -> s1``: one pseudo-count), after the real
    transitions ``obs`` (rows ``x, u, y``). Each tree is one rollout of depth 1, whose
    expansion of the root draws from the predictive rows ``(s1, b)``. ``theta`` and
    ``R`` are dense (a small test prior); the search runs on the sparse rows of the
    prior's support joined with the transitions of ``obs`` and the root's, as an agent's
    does. ``dirichlet_all`` = α (a prior ``+dir<α>``): the slots are the positive entries
    of ``theta`` and the transitions of ``obs``, each of concentration α, every other
    state of a row its background (the root too, when ``x, a -> s1`` is not a slot)."""
    theta = np.asarray(theta, dtype=np.float64)
    obs = np.asarray(obs, dtype=np.int64).reshape(-1, 3)
    mask = theta > 0
    mask[obs[:, 0], obs[:, 1], obs[:, 2]] = True
    root_slot = dirichlet_all is None or bool(mask[x, a, s1])
    mask[x, a, s1] = root_slot
    lay = rows.layout_of(mask)
    slots = np.array([rows.slot_of(lay.succ, lay.nsucc, int(o[0]), int(o[1]), int(o[2]))
                      for o in obs], dtype=np.int64)
    obs_k = np.column_stack([obs[:, :2], slots]).astype(np.int64).reshape(-1, 3)
    if dirichlet_all is not None:
        theta = np.where(mask, float(dirichlet_all), 0.0)
    th = rows.gather(theta, lay)
    k1 = (int(rows.slot_of(lay.succ, lay.nsucc, int(x), int(a), int(s1))) if root_slot
          else th.shape[2] + int(s1))
    return _expansions(lay.succ, lay.nsucc, th,
                       rows.gather(np.asarray(R, dtype=np.float64), lay),
                       np.ascontiguousarray(obs_k), int(x), int(a), k1, int(C), int(reps),
                       int(seed), float(dirichlet_all or 0.0))


@njit(cache=True, error_model="numpy")
def probe_tree_nodes(Pbar, initial_state, gamma, T, succ, nsucc, theta, R, rlo, rhi, a_all, K,
                     C, D, seed, points, trees):
    """Mean number of V-nodes an FSSS tree of :func:`_fsss` creates (its expansions), for
    the cost model: a trajectory of ``T`` random actions on the mean test MDP ``Pbar``
    updates the agent's counting model like the real steps do, and at ``points`` times
    spread over it (the first step included) ``trees`` trees of ``N = max(1, K // C)``
    rollouts are searched from the current state, for random root actions and successors
    drawn like the agent's. The expansions, not the rollouts, are what grows
    sub-linearly in ``N`` (a wide predictive at large ``C`` saturates the tree).
    ``Pbar``, ``theta`` and ``R`` are values on the agent's sparse rows ``succ, nsucc``
    (as :func:`bfs3_trajectory`'s, and ``a_all`` too)."""
    np.random.seed(seed)
    rs = rng_new(seed)
    nX, nU, KW = theta.shape
    N = max(1, K // C)
    vmax = rhi / (1.0 - gamma)
    vmin = min(0.0, rlo) / (1.0 - gamma)
    model, flat, nodes, path, urn, binom, dall = _workspace(succ, nsucc, theta, R, T, N, C, D,
                                                            a_all)
    pc, pcsum, supp, nsupp = model
    rbuf = np.empty(max(RBUF, C))
    rng_fill_uniform(rs, rbuf)
    rstate = np.zeros(1, dtype=np.int64)
    x = env_reset(initial_state, nX)
    total = 0.0
    count = 0
    nxt = 0
    k = 0
    for t in range(T):
        if t == nxt and k < points:
            for _j in range(trees):
                a = np.random.randint(0, nU)
                if a_all > 0.0:
                    k1 = _draw_all(pc, pcsum, succ, nsucc, nX, a_all, x, a, np.random.random())
                else:
                    k1 = _draw(pc, pcsum, supp, nsupp, x, a, np.random.random())
                s1 = succ[x, a, k1] if k1 < KW else k1 - KW
                _U, used = _tree(x, a, k1, s1, N, C, D, nU, gamma, vmin, vmax, flat, nodes,
                                 path, urn, binom, rbuf, rstate, rs, dall)  # fmt: skip
                total += used
                count += 1
            k += 1
            nxt = (k * T) // points
        u = np.random.randint(0, nU)
        ky = env_step_rows(Pbar, nsucc, x, u)
        _observe(model, urn, x, u, ky)
        x = succ[x, u, ky]
    return total / max(count, 1)


# ---------------------------------------------------------------------------------------
# The algorithm


def reward_range(prior: Any) -> tuple[float, float]:
    """The prior's smallest and largest mean rewards, over its whole reward table (the
    bounds' ``Rmin`` and ``Rmax``; once per player: the table is the prior's own; a
    transition the prior does not store pays 0, and so, under ``+dir<α>``, does every
    background state: ``Rmax`` is then at least 0)."""
    lo, hi = float(prior.r_min), float(prior.r_max)
    if getattr(prior, "dirichlet_all", None) is not None:
        hi = max(hi, 0.0)
    return lo, hi


def _dirichlet_all(prior: Any) -> float:
    """α of a prior ``+dir<α>``, else 0.0 (the kernels' ``a_all``)."""
    return float(getattr(prior, "dirichlet_all", None) or 0.0)


def _args(prior: Any, params: dict[str, Any], episode: Episode) -> tuple:
    st, args = episode_args(prior, episode)
    return st, (*args, *reward_range(prior), _dirichlet_all(prior), int(params["K"]),
                int(params["C"]), depth(params, episode, "bfs3"))


def make_player(prior: Any, params: dict[str, Any], trained: Trained | None, episode: Episode):
    """A player running one BFS3 trajectory per call (see the module docstring) on the
    agent's sparse rows (:func:`bbrlcore.agents._layout.setting`)."""
    return search_player(bfs3_trajectory, *_args(prior, params, episode),
                         episode.episode_length)


def play_with_stats(
    prior: Any, params: dict[str, Any], episode: Episode, P: np.ndarray, seed: int
) -> tuple[float, int, int]:
    """One trajectory, returning ``(return, max V-nodes used by an FSSS tree, capacity)``
    (for tests and memory checks)."""
    return with_stats(bfs3_trajectory, *_args(prior, params, episode), P, seed,
                      episode.episode_length)


def pool_bytes(K: int, C: int, D: int, n_actions: int) -> int:
    """Bytes of the node pool (module docstring, Memory)."""
    return max(1, K // C) * D * (24 + n_actions * (20 + 12 * C))


def _setting_check(params: dict, prior, gamma: float, horizon: int) -> str | None:
    if not gamma < 1.0:
        return ("needs a discount factor < 1 (its value bounds are [min(0, Rmin), Rmax] / "
                "(1 - gamma))")
    K, C = int(params["K"]), int(params["C"])
    D = resolve_depth(params, horizon)
    need = pool_bytes(K, C, D, prior.n_actions)
    if need > MAX_AGENT_MEMORY_BYTES:
        return (f"the FSSS node pool would need {need / 2**30:.1f} GiB "
                f"(limit {MAX_AGENT_MEMORY_BYTES / 2**30:.0f} GiB): choose a smaller K or D")
    return None


#: Trajectory points and trees per point of :func:`probe_tree_nodes` in
#: :func:`cost_features`.
COST_PROBE_POINTS = 4
COST_PROBE_TREES = 3


def _mean_test_model(prior: Any, test: Any, gamma: float, horizon: int) -> tuple[Any, np.ndarray]:
    """The agent's :class:`~bbrlcore.agents._layout.Setting` on ``test``'s MDPs, and the
    test distribution's mean MDP on its layout: an FDM's Dirichlet mean from its
    concentrations on its support, a family's (cached) mean model gathered onto it."""
    lay = test.support_layout
    th = getattr(test, "theta_rows", None)
    if th is not None:
        Pm = th / th.sum(axis=2, keepdims=True)
    else:
        Pm = np.array(test.mean_rows())
    ep = Episode(R=np.ascontiguousarray(test.reward_rows),
                 Rstd=np.ascontiguousarray(test.reward_std_rows),
                 gaussian=test.reward_type == "gaussian", initial_state=test.initial_state,
                 gamma=float(gamma), horizon=int(horizon), succ=lay.succ, nsucc=lay.nsucc)
    st = setting(prior, ep)
    return st, np.ascontiguousarray(st.env(np.ascontiguousarray(Pm, dtype=np.float64)))


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    """Per decision nU·C FSSS trees of N = max(1, K // C) rollouts of D levels. A level
    visits a node (the action and successor choices and the backup on the way back) or
    first expands it: C successors drawn for each of the nU actions, over the row's
    support, recorded (at most min(C, support) per action) with fresh bounds, in memory
    no rollout touched yet. Rollouts are counted exactly; expansions are what a probe of
    the kernel's own search measures
    (:func:`probe_tree_nodes`: far fewer than ``N·D`` when a wide predictive saturates
    the tree, e.g. the uniform priors at C = 15). Under a prior ``+dir<α>`` the visits and
    the expansions' draws also have their own prices, ``visits_all`` and
    ``expansion_draws_all`` (zero otherwise): the urn with the background, never the
    cached binomials, and a tree of mostly distinct successors (measured about 0.5 µs a
    visit on DeepSea-10 at C = 3 against 0.07 µs on the known support, thread CPU time,
    the same on DeepSea-6 and -14: ``benchmarks/results/dir_prior.md``; no scan over
    the S states)."""
    K, C = int(params["K"]), int(params["C"])
    D = resolve_depth(params, horizon)
    T, nU = float(horizon), float(prior.n_actions)
    S = float(prior.support_layout.nsucc.mean())
    N = max(1, K // C)
    from bbrlcore.agents._memo import pure_probe  # memoised on disk: every job plans these

    st, Pbar = _mean_test_model(prior, test, gamma, horizon)
    E = pure_probe(
        "bfs3-probes", probe_tree_nodes, Pbar, int(test.initial_state), float(gamma),
        int(horizon), st.succ, st.nsucc, st.theta, st.Rm, *reward_range(prior),
        _dirichlet_all(prior), K, C, D, 0,
        COST_PROBE_POINTS, COST_PROBE_TREES,
    )
    trees = T * nU * C
    visits = trees * N * D
    expansions = trees * E
    out = {"trajectory": 1.0, "decisions": T, "trees": trees, "visits": visits,
           "expansions": expansions, "expansion_draws": expansions * nU * C,
           "expansion_support": expansions * nU * S,
           "expansion_successors": expansions * nU * min(float(C), S)}
    if getattr(prior, "dirichlet_all", None) is not None:
        # (+dir<α>: an expansion's C draws per action always from the urn with the row's
        # background, its background states recorded in order, :func:`_expand_all`; a
        # visit's successor choice among records that are mostly distinct states)
        out["visits_all"] = visits
        out["expansion_draws_all"] = expansions * nU * C
    return out


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
    sparse=True,
    episodic=True,
    dirichlet_all=True,
)
