r"""What a prior says about the rewards: known (the paper's protocol) or unknown under a
conjugate prior.

The paper's FDM priors give the agent the expected reward of every transition; only the
transition probabilities are uncertain. A prior whose rewards are **unknown** keeps the
same transition prior and replaces the reward table by a conjugate prior on the expected
reward :math:`\bar r(x,u)` of each state–action pair (one posterior per pair, updated with
the rewards observed after playing it):

``known`` (the default; today's behaviour, bit for bit)
    The agent is given the expected rewards (the prior's ``reward``).

``beta`` — Beta–Bernoulli
    The reward is taken to lie in the prior's reward range :math:`[lo, hi]` (its smallest
    and largest reward, :attr:`~bbrlcore.mdp.distributions.FDMDistribution.r_min` and
    ``r_max``; [0, 1] when those coincide) and :math:`z = (r - lo)/(hi - lo)` in
    [0, 1]. The prior is :math:`\mathrm{Beta}(1, 1)` on the mean of z; an observed
    reward r is turned into a Bernoulli trial of success probability z (the "Bernoulli
    trick" of Agrawal & Goyal 2012, which makes the Beta posterior exact for fractional
    rewards: a success adds one to a, a failure one to b, with the trial drawn from the
    agent's generator). A Bernoulli reward in {lo, hi} needs no draw (z is 0 or 1).

``nig`` — Normal–inverse-gamma (Colosseum's PSRL reward model, ``N_NIG``)
    :math:`\bar r \mid \tau \sim \mathcal N(\mu_0, 1/(\lambda_0 \tau))`,
    :math:`\tau \sim \mathrm{Gamma}(\alpha_0, \text{rate } \beta_0)`, with Colosseum's
    hyper-parameters ``rewards_prior_prms = [prior_mean, 1, 1, 1]`` (interpretable form
    :math:`\mu, n_\mu, \tau, n_\tau`: :math:`\mu_0 = 0`, :math:`\lambda_0 = 1`,
    :math:`\alpha_0 = n_\tau/2 = 0.5`, :math:`\beta_0 = n_\tau/(2\tau) = 0.5`); the
    prior mean is 0 by default (``+rnig``); Colosseum tunes it (its benchmark's cached value
    for its episodic PSRL is 0.41854463543357456: ``+rnig0.41854463543357456``; any
    finite mean ``m``: ``+rnig<m>``). One observation r updates
    :math:`\lambda_1 = \lambda_0 + 1`, :math:`\mu_1 = (\lambda_0\mu_0 + r)/\lambda_1`,
    :math:`\alpha_1 = \alpha_0 + 1/2`,
    :math:`\beta_1 = \beta_0 + \lambda_0 (r - \mu_0)^2 / (2\lambda_1)` — Colosseum's
    batch update applied one reward at a time (the same posterior); a sample draws
    :math:`\tau \sim \mathrm{Gamma}(\alpha, 1/\beta)` then
    :math:`\bar r \sim \mathcal N(\mu, 1/(\lambda\tau))`.

A prior is named with a suffix: ``UGC+rbeta``, ``URiverSwim-6+rnig``, ``URiverSwim-6+rnig0.5``
(the NIG prior's mean; 0 when not given) (wherever a prior's
name is taken: :func:`bbrlcore.mdp.distributions.load`, experiment configurations, ``bbrl
train --prior``). The suffixed prior is the same distribution with :attr:`reward_prior`
set; it is written into the agent artefact's embedded prior (key ``reward_prior``).

An algorithm that cannot learn rewards is refused in one line before anything runs
(:meth:`bbrlcore.agents.base.Algorithm.check_setting`).

Examples
--------
>>> from bbrlcore.mdp import distributions as D
>>> p = D.load("UGC+rbeta")
>>> p.short_name, p.reward_prior.kind, p.reward_prior.params
('UGC+rbeta', 'beta', (1.0, 1.0, 0.0, 10.0))
>>> reward_prior_of(D.load("UGC")).kind
'known'

Paper: S. Agrawal and N. Goyal, "Analysis of Thompson sampling for the multi-armed bandit
problem", COLT 2012 (the Bernoulli trick for rewards in [0, 1]).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bbrlcore.errors import BBRLError

#: The kinds of reward prior, by code (``rpar[0]`` of the kernels).
REWARD_PRIORS = ("known", "beta", "nig")
KNOWN, BETA, NIG = range(3)
#: The name suffix of each unknown-reward prior.
SUFFIX = "+r"
#: Colosseum's PSRL reward prior, interpretable form ``[prior_mean, n_mu, tau, n_tau]``.
COLOSSEUM_NIG = (0.0, 1.0, 1.0, 1.0)


@dataclass(frozen=True)
class RewardPrior:
    """A prior over the rewards: ``kind`` (:data:`REWARD_PRIORS`) and its hyper-parameters
    ``params``: ``beta``: ``(a0, b0, lo, hi)``; ``nig``: ``(mu0, lambda0, alpha0,
    beta0)``; ``known``: ``()``."""

    kind: str
    params: tuple[float, ...] = ()

    @property
    def known(self) -> bool:
        return self.kind == "known"

    @property
    def mean(self) -> float:
        """The prior mean of an expected reward (beta: ``lo + (hi - lo)·a0/(a0 + b0)``;
        nig: ``mu0``; known: NaN, the table says).

        >>> RewardPrior("beta", (1.0, 1.0, 0.0, 10.0)).mean
        5.0
        """
        if self.kind == "beta":
            a0, b0, lo, hi = self.params
            return lo + (hi - lo) * a0 / (a0 + b0)
        if self.kind == "nig":
            return self.params[0]
        return float("nan")

    def array(self) -> np.ndarray:
        """The kernels' ``rpar``: float64 ``[code, p0, p1, p2, p3]`` (zeros for
        ``known``)."""
        out = np.zeros(5)
        out[0] = REWARD_PRIORS.index(self.kind)
        out[1:1 + len(self.params)] = self.params
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "params": list(self.params)}

    @classmethod
    def from_dict(cls, d: Any, what: str) -> RewardPrior:
        if not isinstance(d, dict) or d.get("kind") not in REWARD_PRIORS:
            raise BBRLError(f"{what}: reward_prior must be an object with a kind among "
                            f"{', '.join(REWARD_PRIORS)}")
        try:
            params = tuple(float(v) for v in d.get("params", []))
        except (TypeError, ValueError):
            raise BBRLError(f"{what}: reward_prior params must be numbers") from None
        if len(params) != {"known": 0, "beta": 4, "nig": 4}[d["kind"]]:
            raise BBRLError(f"{what}: reward_prior {d['kind']} takes "
                            f"{0 if d['kind'] == 'known' else 4} params, got {len(params)}")
        return cls(d["kind"], params)


KNOWN_REWARDS = RewardPrior("known")


def nig_from_colosseum(mu: float, n_mu: float, tau: float, n_tau: float
                       ) -> tuple[float, float, float, float]:
    """Colosseum's interpretable NIG parameters as ``(mu0, lambda0, alpha0, beta0)``.

    >>> nig_from_colosseum(*COLOSSEUM_NIG)
    (0.0, 1.0, 0.5, 0.5)
    """
    return float(mu), float(n_mu), 0.5 * n_tau, 0.5 * n_tau / tau


def reward_prior_of(dist: Any) -> RewardPrior:
    """The reward prior of a distribution (``known`` when it says nothing)."""
    return getattr(dist, "reward_prior", None) or KNOWN_REWARDS


def nig_mean_of(kind: str) -> float | None:
    """The prior mean a name's NIG kind gives (``nig0.5`` -> 0.5, ``nig`` -> 0.0), None
    for another kind."""
    if not kind.startswith("nig"):
        return None
    return float(kind[3:]) if len(kind) > 3 else float(COLOSSEUM_NIG[0])


def canonical_kind(kind: str, what: str) -> str:
    """A reward kind read from a name, canonical: ``beta``, ``nig`` (mean 0) or
    ``nig<m>`` (its mean m, shortest exact text); a mean that is not a finite number is
    one :class:`BBRLError` naming ``what``.

    >>> canonical_kind("nig0.50", "x"), canonical_kind("nig0", "x"), canonical_kind("beta", "x")
    ('nig0.5', 'nig', 'beta')
    """
    import math

    if kind in ("beta", "nig"):
        return kind
    text = kind[3:]
    try:
        m = float(text)
    except ValueError:
        m = math.nan
    if not math.isfinite(m) or text.strip() != text:
        raise BBRLError(f"{what}: the Normal-inverse-gamma prior's mean in +rnig<mean> must "
                        f"be a finite number, got {text!r}")
    if m == 0.0:
        return "nig"
    return f"nig{m!r}"


def split_name(name: str) -> tuple[str, str]:
    """``(base name, kind)`` of a prior's name: ``("UGC", "beta")`` for ``UGC+rbeta``,
    ``(name, "known")`` without a suffix.

    >>> split_name("UGC+rnig"), split_name("GC")
    (('UGC', 'nig'), ('GC', 'known'))
    """
    for kind in REWARD_PRIORS[1:]:
        if name.endswith(SUFFIX + kind) and len(name) > len(SUFFIX + kind):
            return name[: -len(SUFFIX + kind)], kind
    return name, "known"


def reward_range(dist: Any) -> tuple[float, float]:
    """The range ``(lo, hi)`` an agent that does not know the rewards is told they lie in:
    [0, 1] (Colosseum's and bsuite's rewards; the Bernoulli trick's) widened to the prior's
    smallest and largest expected reward and, where the prior has reward laws, to the
    values its Bernoulli and Beta laws can draw (``loc``, ``loc + scale``). The Beta
    prior's range, and the optimistic agents' (UCRL2's clipping, MBIE-EB's untried value,
    Q-learning-UCB's scale). A drawn reward outside it (a Gaussian law's tail) counts as
    its nearest end in the Beta prior's trials and is clipped by UCRL2's.

    >>> from bbrlcore.mdp import distributions as D
    >>> reward_range(D.load("UGC")), reward_range(D.load("URiverSwim-6"))
    ((0.0, 10.0), (0.0, 1.0))
    """
    lo, hi = min(float(dist.r_min), 0.0), max(float(dist.r_max), 1.0)
    laws = getattr(dist, "reward_laws", None)
    if laws is not None and laws.size:
        bounded = laws.kind >= 2  # (bernoulli, beta: loc + scale·[0, 1])
        if bounded.any():
            ends = np.concatenate([laws.loc[bounded], laws.loc[bounded] + laws.scale[bounded]])
            lo, hi = min(lo, float(ends.min())), max(hi, float(ends.max()))
    return lo, hi


def make(kind: str, dist: Any, what: str = "reward prior") -> RewardPrior:
    """The reward prior ``kind`` for the prior distribution ``dist`` (its reward range
    bounds the Beta prior)."""
    if kind == "known":
        return KNOWN_REWARDS
    if kind == "beta":
        return RewardPrior("beta", (1.0, 1.0, *reward_range(dist)))
    mean = nig_mean_of(kind)
    if mean is not None:
        return RewardPrior("nig", nig_from_colosseum(mean, *COLOSSEUM_NIG[1:]))
    raise BBRLError(f"{what} {kind!r}: must be one of {', '.join(REWARD_PRIORS)}")


def with_reward_prior(dist: Any, kind: str) -> Any:
    """``dist`` (an FDM prior) whose rewards are unknown under the prior ``kind``, named
    with the suffix ``+r<kind>`` (``known``: ``dist`` itself)."""
    if kind == "known":
        return dist
    rp = make(kind, dist, f"prior {dist.short_name}")
    out = dist.renamed(f"{dist.short_name}{SUFFIX}{kind}")
    out.__dict__["reward_prior"] = rp
    mean = nig_mean_of(kind)
    shown = "nig" if mean is not None else kind
    out.__dict__["name"] = (f"{dist.name}, rewards unknown ({shown} prior"
                            + (f", mean {mean:g})" if mean else ")"))
    return out
