r"""A prior that does not know the transitions' support: a Dirichlet of concentration α on
**every** next state (Colosseum's PSRL prior).

The paper's FDM priors (``accurate``, ``uniform``) put their Dirichlet pseudo-counts on a
known support: a transition the prior rules out (concentration 0) never occurs in a
drawn MDP. A prior named with the suffix ``+dir<α>`` (``UDeepSea-10+dir0.3235``) keeps
the same distribution (its rewards, its initial state, its entries) but says of the
transitions only

.. math::  P(x,u,\cdot) \sim \mathrm{Dir}(\alpha, \ldots, \alpha)
   \quad \text{over all } S \text{ next states, for every } (x,u),

*replacing* (not adding to) the family's pseudo-counts: the prior of Colosseum's PSRL
(``PSRLContinuous``/``PSRLEpisodic``: ``M_DIR`` with ``transitions_prior_prms =
[alpha]``; its benchmark's tuned α is 0.3235). Every next state is possible.

**Posterior.** After counts :math:`c(x,u,y)` (:math:`n = \sum_y c`), row (x, u) is
:math:`\mathrm{Dir}(\alpha + c(x,u,\cdot))` over the S states; its mean gives a state
never observed :math:`\alpha/(S\alpha + n)` and an observed one :math:`(\alpha + c)/(S\alpha
+ n)`. An agent never holds this as a dense S×A×S array: its sparse rows
(:mod:`bbrlcore.mdp.rows`) hold the test MDPs' transitions (so every observation has a
slot), each slot of concentration α + c, plus a per-row **background**: the
:math:`S - k` states outside the row's k slots, each of concentration α (a background
mass :math:`(S - k)\alpha`). A drawn row is exact in distribution when its slots get
:math:`\mathrm{Gamma}(\alpha + c)` variates and every background state its own
:math:`\mathrm{Gamma}(\alpha)` variate, all normalised together
(:func:`bbrlcore.agents.psrl` states the cost).

**Draws.** ``prior.draw_mdp(rng)`` of a prior ``+dir<α>`` draws every row from
Dir(α, ..., α) over all S next states, dense (:func:`draw_dense`: OPPS-DS's sampler,
reproducible from ``rng``; a draw above the agents' memory limit is refused naming the
prior); ``draw_rows``, which holds a draw on the support's rows (a test set's MDPs),
refuses it in one line (:func:`refuse_rows`).

Naming: the suffix combines with the reward suffix (``UDeepSea-10+dir0.3235+rnig``:
Colosseum's PSRL prior, transitions and rewards unknown); both orders are read, the short
name is always ``<base>+dir<α>+r<kind>``. The concentration is recorded in the
distribution's dictionary, its Parquet file and the agent artefacts' embedded prior
(key ``dirichlet_all``).

Which built-ins take it (:data:`bbrlcore.agents.base.DIRICHLET_ALL_BUILTINS`): PSRL
samples it exactly (:mod:`bbrlcore.agents.psrl`); e-Greedy and Soft-max plan on its
posterior mean (:func:`bbrlcore.agents._kernels.q_iteration_all`: the background's
values enter through :math:`\sum_y V(y)`, once per sweep), and so does BEB, with its
bonus :math:`\beta/(1 + S\alpha + n)` on every transition of the pair
(:func:`bbrlcore.agents._kernels.guez_value_iteration_all`, :mod:`bbrlcore.agents.beb`);
the formula agents and OPPS-DS compute their QMean feature on it (OPPS-DS's training
MDPs are drawn from Dir(α) over every next state, dense: :mod:`bbrlcore.agents.opps_ds`);
UCRL2 and UCRL2-B, which know no support as published, take the distributions over all
S next states into their confidence sets (the full layout, S²·A memory; α does not
enter them, :mod:`bbrlcore.agents.ucrl2`); MBIE-EB, Q-learning-UCB, Random and Optimal
never read the transition prior; BOSS and SBOSS sample it exactly and BOLT plans on its
mean with its imagined transitions to any of the S next states, all three on the full
layout (:mod:`bbrlcore.agents.boss`, :mod:`~bbrlcore.agents.sboss`,
:mod:`~bbrlcore.agents.bolt`); BAMCP and BFS3 simulate from the posterior predictive over
every next state (:mod:`bbrlcore.agents.bamcp`, :mod:`~bbrlcore.agents.bfs3`). Plugins
unless they set ``dirichlet_all = True`` plan on a
support and refuse it in one line before anything runs
(:attr:`bbrlcore.agents.base.Algorithm.dirichlet_all`).

Examples
--------
>>> from bbrlcore.mdp import distributions as D
>>> p = D.load("UDeepSea-4+rnig+dir0.3235")
>>> p.short_name, p.dirichlet_all, p.reward_prior.kind
('UDeepSea-4+dir0.3235+rnig', 0.3235, 'nig')
>>> split_suffixes("GC+dir2")
('GC', 2.0, 'known')
>>> D.load("GC+dir0")
Traceback (most recent call last):
...
bbrlcore.errors.BBRLError: prior 'GC+dir0': the every-next-state concentration ... got '0'
"""

from __future__ import annotations

import math
import re
from typing import Any

from bbrlcore.errors import BBRLError

#: The name suffix of a prior with a Dirichlet on every next state.
SUFFIX = "+dir"
#: Colosseum's benchmark's tuned concentration (``peer-protocols.md``).
COLOSSEUM_ALPHA = 0.3235

_DIR = re.compile(r"\+dir([^+]*)$")
_REWARD = re.compile(r"\+r(beta|nig[^+]*)$")


def check_alpha(alpha: Any, what: str) -> float:
    """``alpha`` as a float if it is a number > 0 and finite, else one :class:`BBRLError`
    naming ``what``."""
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        a = math.nan
    if isinstance(alpha, bool) or not (a > 0 and math.isfinite(a)):
        shown = alpha if isinstance(alpha, str) else repr(alpha)
        raise BBRLError(f"{what}: the every-next-state concentration of {SUFFIX} must be a "
                        f"number > 0 and finite, got {shown!r}")
    return a


def show_alpha(alpha: float) -> str:
    """The canonical text of α in a name (``0.3235``, ``1``, ``1e-05``)."""
    return format(float(alpha), ".12g")


def split_suffixes(name: str) -> tuple[str, float | None, str]:
    """``(base, α or None, reward kind)`` of a prior's name, its suffixes ``+dir<α>`` and
    ``+r<kind>`` read in either order; a suffix given twice, or a ``+dir`` whose α is
    not > 0, is one :class:`BBRLError`.

    >>> split_suffixes("UGC+rnig+dir0.5"), split_suffixes("UGC")
    (('UGC', 0.5, 'nig'), ('UGC', None, 'known'))
    """
    base, alpha, rkind = name, None, "known"
    while True:
        m = _REWARD.search(base)
        if m and m.start() > 0:
            if rkind != "known":
                raise BBRLError(f"prior {name!r}: two reward suffixes (+rbeta, +rnig)")
            from bbrlcore.mdp.reward_prior import canonical_kind

            rkind = canonical_kind(m.group(1), f"prior {name!r}")
            base = base[:m.start()]
            continue
        m = _DIR.search(base)
        if m and m.start() > 0:
            if alpha is not None:
                raise BBRLError(f"prior {name!r}: {SUFFIX} given twice")
            alpha, base = check_alpha(m.group(1), f"prior {name!r}"), base[:m.start()]
            continue
        return base, alpha, rkind


def suffix_of(alpha: float | None, rkind: str) -> str:
    """The canonical suffixes (``+dir0.3235+rnig``; ``""`` for none)."""
    from bbrlcore.mdp.reward_prior import SUFFIX as RSUFFIX

    return ((f"{SUFFIX}{show_alpha(alpha)}" if alpha is not None else "")
            + (f"{RSUFFIX}{rkind}" if rkind != "known" else ""))


def dirichlet_all_of(dist: Any) -> float | None:
    """The every-next-state concentration α of a prior, None when it knows the support."""
    return getattr(dist, "dirichlet_all", None)


def draw_bytes(n_states: int, n_actions: int) -> int:
    """Memory of a dense draw from a prior ``+dir<α>``: the S×A×S float64 array."""
    return 8 * int(n_states) * int(n_actions) * int(n_states)


def draw_dense(dist: Any, rng: Any) -> Any:
    """One MDP drawn from the transition prior of ``dist``, a prior ``+dir<α>``: every
    row (x, u) from Dir(α, ..., α) over all S next
    states, dense (S, A, S). The draws are OPPS-DS's (its training MDPs under ``+dir``:
    :func:`bbrlcore.mdp._dense.dirichlet_all_rows`, numba's generator seeded with
    one 32-bit integer drawn from ``rng``: the same ``rng`` state gives the same MDP; it
    reseeds numba's generator of the calling thread, which every built-in kernel seeds
    itself). The rewards are not drawn: the prior's, known or not, as without ``+dir``.
    A draw larger than the agents' memory limit
    (:data:`bbrlcore.mdp._dense.MAX_AGENT_MEMORY_BYTES`) is one :class:`BBRLError`
    naming the prior.

    >>> import numpy as np
    >>> from bbrlcore.mdp import distributions as D
    >>> P = D.load("UGC+dir0.5").draw_mdp(np.random.default_rng(0))
    >>> P.shape, bool((P > 0).all()), bool(np.allclose(P.sum(axis=2), 1.0))
    ((5, 3, 5), True, True)
    """
    import numpy as np

    from bbrlcore.mdp._dense import MAX_AGENT_MEMORY_BYTES, dirichlet_all_rows

    alpha = dirichlet_all_of(dist)
    if alpha is None:
        raise BBRLError(f"prior {dist.short_name}: no {SUFFIX}<alpha> transition prior")
    nX, nU = int(dist.n_states), int(dist.n_actions)
    need = draw_bytes(nX, nU)
    if need > MAX_AGENT_MEMORY_BYTES:
        raise BBRLError(f"prior {dist.short_name}: a draw from Dir({show_alpha(alpha)}) on "
                        f"every next state is held densely, {need / 2**30:.1f} GB for "
                        f"{nX} states, above {MAX_AGENT_MEMORY_BYTES / 2**30:.0f} GB")
    out = np.empty((nX, nU, nX))
    dirichlet_all_rows(np.int64(rng.integers(0, 2**32)), float(alpha), out)
    return out


def refuse_rows(dist: Any) -> None:
    """One :class:`BBRLError` naming the prior ``+dir<α>`` ``dist``: a draw from it can
    go to any next state, which its support's rows (``draw_rows``, a test set's MDPs)
    cannot hold."""
    alpha = show_alpha(dirichlet_all_of(dist))
    raise BBRLError(f"prior {dist.short_name}: a draw from Dir({alpha}) "
                    "on every next state can go to any state, not only to its support's "
                    "rows (draw_rows, a test set's MDPs); draw it densely with draw_mdp, "
                    f"or draw test MDPs from {split_suffixes(dist.short_name)[0]}")


def with_dirichlet_all(dist: Any, alpha: float) -> Any:
    """``dist`` (an FDM prior, its rewards known) whose transition prior is
    :math:`\\mathrm{Dir}(\\alpha)` on every next state, named with the suffix
    ``+dir<α>``."""
    a = check_alpha(alpha, f"prior {dist.short_name}{SUFFIX}{alpha}")
    if dirichlet_all_of(dist) is not None or getattr(dist, "reward_prior", None) is not None:
        raise BBRLError(f"prior {dist.short_name}: {SUFFIX} applies to a prior without "
                        "suffixes")
    out = dist.renamed(f"{dist.short_name}{SUFFIX}{show_alpha(a)}")
    out.__dict__["dirichlet_all"] = a
    out.__dict__["name"] = f"{dist.name}, Dirichlet({show_alpha(a)}) on every next state"
    return out


def with_suffixes(dist: Any, alpha: float | None, rkind: str) -> Any:
    """``dist`` with the every-next-state prior (``alpha`` not None) and then the reward
    prior ``rkind``: the canonical name ``<base>+dir<α>+r<kind>``."""
    from bbrlcore.mdp.reward_prior import with_reward_prior

    if alpha is not None:
        dist = with_dirichlet_all(dist, alpha)
    return with_reward_prior(dist, rkind)
