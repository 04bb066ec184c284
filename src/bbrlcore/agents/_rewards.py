r"""numba building blocks of agents that learn the rewards (a prior whose rewards are
unknown, :mod:`bbrlcore.mdp.reward_prior`).

``rpar`` is the reward prior as the kernels take it
(:meth:`~bbrlcore.mdp.reward_prior.RewardPrior.array`: ``[code, p0, p1, p2, p3]``, code 0
known, 1 beta ``(a0, b0, lo, hi)``, 2 nig ``(mu0, lambda0, alpha0, beta0)``). The
posterior of every state–action pair is ``rstat[x, u, :]`` (float64, (nX, nU, 4)):
beta ``(a, b, ·, ·)``, nig ``(mu, lambda, alpha, beta)``; ``rsum`` / ``rcount`` in
``rstat[x, u, 2:4]`` for beta (the observed rewards' sum and number: the empirical mean).

The agents that build optimism on the empirical mean reward (UCRL2, MBIE-EB, BEB,
Q-learning-UCB) use :func:`empirical_init` / :func:`empirical_update`: ``emp[x, u, 0]``
the sum of the rewards observed after (x, u), ``emp[x, u, 1]`` their number.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.agents._rng import gamma_s, normal_s, uniform_s

KNOWN, BETA, NIG = 0, 1, 2


@njit(cache=True, error_model="numpy")
def reward_posterior_init(nX, nU, rpar):
    """The reward posterior at the prior, (nX, nU, 4) (module docstring)."""
    out = np.zeros((nX, nU, 4))
    code = int(rpar[0])
    for x in range(nX):
        for u in range(nU):
            if code == BETA:
                out[x, u, 0] = rpar[1]
                out[x, u, 1] = rpar[2]
            elif code == NIG:
                out[x, u, 0] = rpar[1]
                out[x, u, 1] = rpar[2]
                out[x, u, 2] = rpar[3]
                out[x, u, 3] = rpar[4]
    return out


@njit(cache=True, error_model="numpy")
def reward_posterior_update(rstat, rpar, x, u, r, rs):
    r"""Bayes' rule for one reward ``r`` observed after (x, u). Beta: the Bernoulli trick
    (Agrawal & Goyal 2012): :math:`z = (r - lo)/(hi - lo)` clipped to [0, 1], a success
    with probability z (one uniform of the generator ``rs`` when 0 < z < 1). NIG:
    Colosseum's ``N_NIG.update_sa`` for one sample."""
    code = int(rpar[0])
    if code == BETA:
        lo, hi = rpar[3], rpar[4]
        z = (r - lo) / (hi - lo)
        if z >= 1.0:
            rstat[x, u, 0] += 1.0
        elif z <= 0.0:
            rstat[x, u, 1] += 1.0
        else:
            s0, s1, s2, s3 = rs[0], rs[1], rs[2], rs[3]
            v, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
            rs[0], rs[1], rs[2], rs[3] = s0, s1, s2, s3
            if v < z:
                rstat[x, u, 0] += 1.0
            else:
                rstat[x, u, 1] += 1.0
        rstat[x, u, 2] += r
        rstat[x, u, 3] += 1.0
    elif code == NIG:
        mu0, l0, a0, b0 = rstat[x, u, 0], rstat[x, u, 1], rstat[x, u, 2], rstat[x, u, 3]
        l1 = l0 + 1.0
        rstat[x, u, 0] = (l0 * mu0 + r) / l1
        rstat[x, u, 1] = l1
        rstat[x, u, 2] = a0 + 0.5
        rstat[x, u, 3] = b0 + 0.5 * l0 * (r - mu0) ** 2 / l1


@njit(cache=True, error_model="numpy")
def reward_posterior_mean(rstat, rpar, x, u):
    """The posterior mean of the expected reward of (x, u)."""
    code = int(rpar[0])
    if code == BETA:
        a, b = rstat[x, u, 0], rstat[x, u, 1]
        return rpar[3] + (rpar[4] - rpar[3]) * a / (a + b)
    return rstat[x, u, 0]


@njit(cache=True, error_model="numpy")
def reward_posterior_sample(rstat, rpar, x, u, rs):
    """One draw of the expected reward of (x, u) from its posterior with the generator
    ``rs``: beta ``lo + (hi - lo)·X``, X ~ Beta(a, b) as G_a / (G_a + G_b); nig
    :math:`\\tau` ~ Gamma(alpha, 1/beta), then N(mu, 1/(lambda·tau))."""
    code = int(rpar[0])
    s0, s1, s2, s3 = rs[0], rs[1], rs[2], rs[3]
    if code == BETA:
        ga, s0, s1, s2, s3 = gamma_s(rstat[x, u, 0], s0, s1, s2, s3)
        gb, s0, s1, s2, s3 = gamma_s(rstat[x, u, 1], s0, s1, s2, s3)
        t = ga + gb
        f = ga / t if t > 0.0 else 0.5
        out = rpar[3] + (rpar[4] - rpar[3]) * f
    else:
        g, s0, s1, s2, s3 = gamma_s(rstat[x, u, 2], s0, s1, s2, s3)
        tau = g / rstat[x, u, 3]
        z, s0, s1, s2, s3 = normal_s(s0, s1, s2, s3)
        if tau > 0.0:
            out = rstat[x, u, 0] + z / np.sqrt(rstat[x, u, 1] * tau)
        else:
            out = rstat[x, u, 0]
    rs[0], rs[1], rs[2], rs[3] = s0, s1, s2, s3
    return out


@njit(cache=True, error_model="numpy")
def reward_sample_rows(rstat, rpar, nsucc, Rm, need, rs):
    """Draw the expected reward of every pair of the states ``need`` (in that order,
    actions in order) and write it to every slot of its row of ``Rm``."""
    nU = rstat.shape[1]
    for i in range(need.shape[0]):
        x = need[i]
        for u in range(nU):
            v = reward_posterior_sample(rstat, rpar, x, u, rs)
            for k in range(nsucc[x, u]):
                Rm[x, u, k] = v


def prior_mean_rows(rpar: np.ndarray, nsucc: np.ndarray, K: int) -> np.ndarray:
    """The reward prior's mean on every slot of the rows (nX, nU, K): what an agent whose
    rewards are unknown starts from instead of the prior's reward table."""
    nX, nU = nsucc.shape
    code = int(rpar[0])
    if code == BETA:
        m = rpar[3] + (rpar[4] - rpar[3]) * rpar[1] / (rpar[1] + rpar[2])
    else:
        m = rpar[1]
    out = np.zeros((nX, nU, K))
    mask = np.arange(K)[None, None, :] < nsucc[:, :, None]
    out[mask] = m
    return out


@njit(cache=True, error_model="numpy")
def empirical_init(nX, nU):
    """The sums and numbers of the observed rewards of every pair, (nX, nU, 2), zeros."""
    return np.zeros((nX, nU, 2))


@njit(cache=True, error_model="numpy")
def empirical_update(emp, x, u, r):
    emp[x, u, 0] += r
    emp[x, u, 1] += 1.0


@njit(cache=True, error_model="numpy")
def empirical_mean(emp, x, u, default):
    """The mean of the rewards observed after (x, u); ``default`` before any."""
    n = emp[x, u, 1]
    return emp[x, u, 0] / n if n > 0.0 else default


@njit(cache=True, error_model="numpy")
def shrunk_mean(emp, x, u, m0, w0):
    r"""The mean of the rewards observed after (x, u) with the reward prior's mean ``m0``
    counted as ``w0`` observations: the NIG posterior mean of the expected reward
    (:math:`w_0 = \lambda_0`), and the Beta prior's posterior mean under fractional
    updates (:math:`a \mathrel{+}= z`, :math:`b \mathrel{+}= 1 - z`; :math:`w_0 = a_0 + b_0`)."""
    return (w0 * m0 + emp[x, u, 0]) / (w0 + emp[x, u, 1])


@njit(cache=True, error_model="numpy")
def ucrl2_rewards(emp, nsucc, lo, hi, logterm, Rm):
    r"""UCRL2's optimistic rewards (Jaksch et al. 2010, the reward half of the confidence
    set, rewards scaled to [0, 1] by the range ``[lo, hi]``): on every slot of row
    (x, u), :math:`\min\{hi, \hat r(x,u) + (hi - lo)\sqrt{7 \log(2SAt_k/\delta) /
    (2\max\{1, N_k(x,u)\})}\}` with :math:`\hat r` the mean of the observed rewards
    (``lo`` before any: the paper's 0); ``logterm`` is :math:`\log(2SAt_k/\delta)`."""
    nX, nU, _ = emp.shape
    span = hi - lo
    for x in range(nX):
        for u in range(nU):
            n = emp[x, u, 1]
            m = emp[x, u, 0] / n if n > 0.0 else lo
            v = min(hi, m + span * np.sqrt(7.0 * logterm / (2.0 * max(1.0, n))))
            for k in range(nsucc[x, u]):
                Rm[x, u, k] = v


def mean_reward_prior(rp) -> np.ndarray:
    """``rr = [learn, m0, w0]`` of the agents that plan with the rewards' posterior mean
    (BEB, e-Greedy, Soft-max): whether the rewards are learned, the reward prior's mean
    :math:`m_0` and its weight :math:`w_0` in observations (NIG :math:`\\lambda_0`, Beta
    :math:`a_0 + b_0`; :func:`shrunk_mean`)."""
    if rp.known:
        return np.zeros(3)
    if rp.kind == "beta":
        a0, b0, _lo, _hi = rp.params
        return np.array([1.0, rp.mean, a0 + b0])
    return np.array([1.0, rp.mean, rp.params[1]])


@njit(cache=True, error_model="numpy")
def mean_reward_update(emp, rr, nsucc, Rm, x, u, r):
    """Observe the reward ``r`` of (x, u) and write the rewards' posterior mean
    (:func:`shrunk_mean` with ``rr``'s prior) on every slot of its row of ``Rm``."""
    empirical_update(emp, x, u, r)
    m = shrunk_mean(emp, x, u, rr[1], rr[2])
    for j in range(nsucc[x, u]):
        Rm[x, u, j] = m


def mean_reward_rows(prior, st) -> tuple[np.ndarray, np.ndarray]:
    """``(Rm, rr)`` of a posterior-mean agent on its setting ``st``: the prior's rewards
    and zeros (known), or the reward prior's mean on every slot and
    :func:`mean_reward_prior` (unknown: the table is never read)."""
    from bbrlcore.mdp.reward_prior import reward_prior_of

    rp = reward_prior_of(prior)
    if rp.known:
        return st.Rm, np.zeros(3)
    return prior_mean_rows(rp.array(), st.nsucc, st.theta.shape[2]), mean_reward_prior(rp)
