r"""The framework shared by the problem families: parameters, names, drawn structure, priors.

A **family** (:class:`Family`) is a parametrised problem (DeepSea of size N, RiverSwim of
length n, ...). :func:`bbrlcore.mdp.families.make` validates its parameters and returns a
:class:`Problem`: the **test distribution** the test MDPs are drawn from, and two priors,
both :class:`~bbrlcore.mdp.distributions.FDMDistribution` so that every agent runs on every
family unchanged.

Test distributions
------------------
Every family has a *nominal* transition kernel :math:`K` (the published problem), to which
Colosseum's controls are applied (Conserva & Rauber, "Hardness in Markov decision
processes: theory and practice", NeurIPS 2022, App. A.3): with probability ``p_rand`` the
environment plays a uniformly random action instead of the chosen one, and with
probability ``p_lazy`` the agent stays put,

.. math::

    K'(y \mid x,u) = (1-l)\Bigl[(1-r)\,K(y \mid x,u) + \tfrac{r}{|U|}\sum_a K(y \mid x,a)\Bigr]
                     + l\,\mathbb 1[y=x].

A drawn MDP's row is then a Dirichlet centred on the controlled row,
:math:`P(x,u,\cdot) \sim \mathrm{Dir}(c\,K'(x,u,\cdot))` with ``c = concentration``
(larger: closer to the nominal MDP; deterministic rows stay deterministic, impossible
transitions stay impossible).

* Where the structure is fixed, the test distribution simply **is** that FDM
  (:meth:`FDMDistribution.centred_on`).
* Where the structure itself is drawn (DeepSea's action mapping, FrozenLake's holes,
  MiniGrid's start and goal, Taxi's pick-up locations), the test distribution is a
  :class:`FamilyDistribution`: :meth:`~FamilyDistribution.draw_mdp` first draws the
  structure, then the Dirichlet rows, using only the generator it is given, so a seed gives
  the same MDP on every machine. It offers exactly what a test set needs (names, sizes,
  rewards, initial state, ``draw_mdp``, ``mean_model``, ``to_dict``) plus
  :meth:`~FamilyDistribution.support`.

Rewards are a function of the transition :math:`(x,u,y)` that is the same in every drawn
MDP (agents know the reward function and learn transitions only); each family module says
how it keeps them fixed when the structure varies.

Priors
------
* **uniform**: one pseudo-count on every transition the family allows: :math:`\theta = 1`
  on :func:`support`, 0 elsewhere (for the paper's GC, GDL and Grid: on every transition, as
  the paper's UGC, UGDL and UGrid).
* **accurate**: the Dirichlet an agent would fit to the test distribution. For a fixed
  structure it is the test distribution itself. For a drawn structure each row
  :math:`(x,u)` gets the mean :math:`m = E[P(x,u,\cdot)]` of the test distribution (the
  average of the controlled kernels over the structure draws) and the total count
  :math:`a` that **matches the test distribution's spread** (Dirichlet moment matching,
  Minka 2000, "Estimating a Dirichlet distribution"): with
  :math:`V = \sum_y \mathrm{Var}_s[K'_s(y)]` the variance due to the structure and
  :math:`M = 1-\sum_y m_y^2`, the test rows have total variance
  :math:`(M-V)/(c+1) + V`, and a :math:`\mathrm{Dir}(a\,m)` has :math:`M/(a+1)`, so
  :math:`a = M / ((M-V)/(c+1)+V) - 1 \in [0, c]`. Rows the structure never changes get
  :math:`a = c`: the test distribution's own Dirichlet. Rows it decides alone (DeepSea's
  left/right mapping, deterministic in each MDP but unknown) would get :math:`a \to 0`, a
  degenerate Dirichlet: the total is kept at least :math:`\min(c, k/2)` for a row with
  ``k`` possible successors, i.e. at least the Jeffreys prior :math:`\mathrm{Dir}(\tfrac12,
  \ldots,\tfrac12)` when the mean is uniform. (The plain choice :math:`\theta = c\,m` would
  give DeepSea's rows Beta(5, 5) at c = 10: an "accurate" prior that learns a
  deterministic mapping more slowly than the uniform prior's Beta(1, 1).) :math:`\theta =
  a\,m` is zero exactly where no drawn MDP has the transition. :math:`m` and :math:`V`
  are exact (enumerated per row) for every family but FrozenLake, whose path condition
  couples the holes: there they are the average over :data:`PRIOR_DRAWS` seeded lakes plus
  one pseudo-draw uniform on the support (so :math:`\theta > 0` exactly on
  :func:`support`), a deterministic Monte-Carlo estimate.

Storage
-------
A family builds nothing dense: its kernels, support (:func:`support_keys`), rewards
(:class:`Rewards`), moments and priors live on the transitions that exist (flat indices
``(x·nU + u)·nX + y``), in the arithmetic of the dense arrays they replace (the same
values, bit for bit); a :class:`Problem` builds its test distribution and the values of
its priors (:meth:`FDMDistribution.lazy`) when first read. The dense views
(``reward``, :meth:`~FamilyDistribution.mean_model`, :meth:`~FamilyDistribution.support`,
a prior's ``theta``) are for small instances; the size limit (``MAX_ENTRIES``) keeps them
possible. A reward is stored on the transitions that can happen and, where the published
problem pays it so, a few beside them (RiverSwim's last state pays its right move
whatever the successor).

Examples
--------
>>> from bbrlcore.mdp.families import make
>>> p = make("deepsea", size=4)
>>> p.short_name, p.test.n_states, p.test.n_actions
('DeepSea-4', 18, 2)
>>> P = p.test.draw_mdp(np.random.default_rng(0))
>>> bool(np.allclose(P.sum(axis=2), 1.0)), bool((P[~p.test.support()] == 0).all())
(True, True)
>>> p.prior("uniform").short_name, p.prior("accurate").short_name
('UDeepSea-4', 'DeepSea-4')
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from bbrlcore.errors import BBRLError
from bbrlcore.mdp import rows
from bbrlcore.mdp.distributions import (
    CHUNK_ENTRIES,
    MAX_ENTRIES,
    FDMDistribution,
    check_concentration,
    describe_environment,
)
from bbrlcore.mdp.rows import Layout
from bbrlcore.seeds import id_hash64

#: Range of a family's ``concentration``: above, a row's total nears FDM's 1e15 limit;
#: below, gamma draws and probabilities times the concentration underflow.
MIN_FAMILY_CONCENTRATION, MAX_FAMILY_CONCENTRATION = 1e-6, 1e12
#: Structure draws behind a Monte-Carlo accurate prior (FrozenLake).
PRIOR_DRAWS = 4000
#: Root of the seeds of those draws: ``SeedSequence([PRIOR_SEED, id_hash64(short_name)])``.
PRIOR_SEED = 20160601
#: Below this, a row's structure variance counts as zero (the row never varies).
_VAR_EPS = 1e-12

#: What :meth:`Problem.prior` accepts.
PRIOR_KINDS = ("accurate", "uniform")

Kernel = tuple[np.ndarray, np.ndarray]
"""A sparse transition kernel: successors ``succ`` (nX, nU, K) int64 and their
probabilities ``prob`` (nX, nU, K) float64 (entries of probability 0 are ignored; a
successor may repeat)."""


def fmt(v: int | float) -> str:
    """A parameter value in names: integers as integers, floats as ``.12g``.

    >>> fmt(20), fmt(0.05), fmt(10.0), fmt(1e-5)
    ('20', '0.05', '10', '1e-05')
    """
    if isinstance(v, int):
        return str(v)
    return format(float(v), ".12g")


# ---------------------------------------------------------------------------------------
# Parameters


@dataclass(frozen=True)
class Param:
    """One parameter of a family: name, type (``int`` or ``float``), default, valid range
    ``[lo, hi]`` (ends open when ``lo_open`` / ``hi_open``), documentation, and the tag it
    has in names (``p_rand=0.05`` appears as ``prand0.05``).

    >>> q = Param("p_rand", float, 0.0, 0.0, 1.0, "random-action probability", hi_open=True)
    >>> q.coerce(0.1), q.coerce(1), q.coerce(1.0), q.coerce(True), q.coerce(float("nan"))
    (0.1, None, None, None, None)
    >>> q.range_text(), q.tag
    ('a number in [0, 1)', 'prand')
    """

    name: str
    kind: type
    default: int | float
    lo: float
    hi: float
    doc: str
    lo_open: bool = False
    hi_open: bool = False
    short: str | None = None

    @property
    def tag(self) -> str:
        return self.short if self.short is not None else self.name.replace("_", "")

    def range_text(self) -> str:
        what = "an integer" if self.kind is int else "a number"
        lo, hi = ("(" if self.lo_open else "["), (")" if self.hi_open else "]")
        return f"{what} in {lo}{fmt(self.lo)}, {fmt(self.hi)}{hi}"

    def coerce(self, value: Any) -> int | float | None:
        """The value as ``kind`` if it is valid, else None. An integer is accepted for a
        float, an integral float for an integer; booleans, strings, NaN and infinities
        never."""
        if isinstance(value, (bool, np.bool_)) or not isinstance(
                value, (int, float, np.integer, np.floating)):
            return None
        try:
            f = float(value)
        except OverflowError:
            return None
        if not math.isfinite(f):
            return None
        if self.kind is int:
            if isinstance(value, (float, np.floating)) and not f.is_integer():
                return None
            v: int | float = int(value)
        else:
            v = f + 0.0  # -0.0 is 0.0 (its name)
        if v < self.lo or v > self.hi or (self.lo_open and v == self.lo) or (
                self.hi_open and v == self.hi):
            return None
        return v

    def above(self, value: Any) -> bool:
        """Whether ``value`` is an integer above the range (a size too large)."""
        return (self.kind is int and not isinstance(value, (bool, np.bool_))
                and isinstance(value, (int, np.integer)) and value > self.hi)


def size_param(default: int, lo: int, hi: int, doc: str) -> Param:
    return Param("size", int, default, lo, hi, doc)


def p_rand_param(default: float = 0.0) -> Param:
    return Param("p_rand", float, default, 0.0, 1.0,
                 "probability that the environment plays a uniformly random action instead "
                 "of the chosen one (Colosseum)", hi_open=True)


def p_lazy_param(default: float = 0.0) -> Param:
    return Param("p_lazy", float, default, 0.0, 1.0,
                 "probability that the agent stays put whatever it does (Colosseum)",
                 hi_open=True)


def concentration_param(default: float = 10.0, doc: str | None = None) -> Param:
    return Param("concentration", float, default, MIN_FAMILY_CONCENTRATION,
                 MAX_FAMILY_CONCENTRATION,
                 doc or "total Dirichlet count of each row around the nominal MDP: "
                 "theta = concentration x nominal P (larger: drawn MDPs closer to nominal)",
                 short="c")


#: Every family's parameter of stochastic rewards (:func:`bbrlcore.mdp.environment.beta_laws`):
#: 0, the default, keeps the rewards deterministic (the paper's; no change of name).
REWARD_NOISE = Param(
    "reward_noise", float, 0.0, 0.0, 1e6,
    "stochastic rewards as Colosseum's make_reward_stochastic: c > 0 draws each "
    "transition's reward from Beta(c, c(1/m - 1)) on the family's reward range, m its "
    "expected reward there (Colosseum's reward_variance_multiplier; larger: less noise; "
    "rewards at the range's ends stay constant); 0: deterministic rewards",
    short="rnoise")


def max_size(shape: Callable[[int], tuple[int, int]], lo: int) -> int:
    """The largest size whose (nX, nU) keeps nX·nU·nX within ``MAX_ENTRIES``."""
    hi = lo
    while True:
        nX, nU = shape(hi + 1)
        if nX * nU * nX > MAX_ENTRIES:
            return hi
        hi += 1


# ---------------------------------------------------------------------------------------
# Families and problems


@dataclass(frozen=True)
class Family:
    """A problem family.

    Parameters
    ----------
    name
        Lower-case id used in configurations (``"deepsea"``).
    display
        Display name, the start of short names (``"DeepSea"``).
    long_name
        Start of long names (``"DeepSea"`` → ``"DeepSea distribution (size=10)"``).
    params
        The parameters, in the order names list them.
    build
        ``build(params, short_name, name)`` → the test distribution (an FDM or a
        :class:`FamilyDistribution`); ``params`` are complete and validated.
    shape
        ``shape(params)`` → ``(nX, nU)``.
    reference
        The problem's paper (one line).
    paper
        The BBRL paper's own families (GC, GDL, Grid): their default parameters are named
        as the built-ins, and their uniform prior covers every transition.
    episode_length
        ``episode_length(params)`` → the natural episode length H of the family's
        **episodic form** (Colosseum's or bsuite's, said in the family's docstring): what
        an episodic experiment (``episodes: E``) plays when it does not set H. None: the
        family has no episodic form (continuing only), and ``episodes`` is refused.
    check
        ``check(params)`` → None, or the text of what is wrong with a combination of
        (individually valid, complete) parameters, such as SimpleGrid's ``start`` 1 for
        an odd size or MiniGrid-Rooms' ``n_rooms`` 6 (not a perfect square);
        :meth:`validate` raises it as one :class:`BBRLError` line.
    """

    name: str
    display: str
    long_name: str
    params: tuple[Param, ...]
    build: Callable[[dict[str, Any], str, str], Any]
    shape: Callable[[Mapping[str, Any]], tuple[int, int]]
    reference: str
    paper: bool = False
    episode_length: Callable[[Mapping[str, Any]], int] | None = None
    check: Callable[[Mapping[str, Any]], str | None] | None = None

    def __post_init__(self) -> None:
        # every family takes reward_noise, last (its tag after the family's own)
        if all(p.name != REWARD_NOISE.name for p in self.params):
            object.__setattr__(self, "params", (*self.params, REWARD_NOISE))

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    @property
    def max_size(self) -> int | None:
        """The largest ``size`` (None for a family without one)."""
        p = self.param("size")
        return None if p is None else int(p.hi)

    def validate(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The complete parameters (defaults filled in), or one :class:`BBRLError` line
        naming the family and the parameter. A float must be what its name says (12
        significant digits, :func:`fmt`), so that a name is one distribution wherever
        the parameters come from (configuration, ``bbrl distribution new --param``, a
        file):

        >>> from bbrlcore.mdp.families import get_family
        >>> get_family("riverswim").validate({"p_rand": 0.1})["p_rand"]
        0.1
        >>> get_family("riverswim").validate({"p_rand": 0.1000000000001})
        Traceback (most recent call last):
        ...
        bbrlcore.errors.BBRLError: family riverswim: p_rand=0.1000000000001: names keep ...
        """
        for key in params:
            if not isinstance(key, str) or self.param(key) is None:
                known = ", ".join(p.name for p in self.params)
                raise BBRLError(f"family {self.name}: unknown parameter {key!r} "
                                f"(parameters: {known})")
        full = self.defaults()
        for p in self.params:
            if p.name not in params:
                continue
            raw = params[p.name]
            v = p.coerce(raw)
            if v is None:
                msg = f"family {self.name}: {p.name}={raw!r}: must be {p.range_text()}"
                if p.name == "size" and p.above(raw):
                    msg += self._memory_note(int(raw))
                raise BBRLError(msg)
            if p.kind is float and float(fmt(v)) != v:  # one name, one distribution
                raise BBRLError(
                    f"family {self.name}: {p.name}={raw!r}: names keep 12 significant "
                    f"digits, so its name would say {p.tag}{fmt(v)}, another value: round it")
            full[p.name] = v
        if self.check is not None:
            problem = self.check(full)
            if problem:
                raise BBRLError(f"family {self.name}: {problem}")
        return full

    def _memory_note(self, size: int) -> str:
        nX, nU = self.shape({**self.defaults(), "size": size})
        n = nX * nU * nX
        limit = f"the limit is {MAX_ENTRIES:,} transitions, {_bytes(8 * MAX_ENTRIES)}"
        if n > 10**15:
            return f" (more than 10^15 transitions; {limit})"
        return (f" (size {size} means {nX:,} states x {nU} actions = {n:,} transitions, "
                f"{_bytes(8 * n)} per dense array; {limit})")

    def names(self, params: Mapping[str, Any]) -> tuple[str, str]:
        """``(short_name, name)`` of the problem with these (complete) parameters.

        The short name is the display name, then ``-size``, then ``-{tag}{value}`` for
        each other parameter that differs from its default, in declaration order
        (``DeepSea-20-prand0.05``); the paper's families omit a default size, so their
        defaults give the paper's names (``GC``, ``GC-7``, ``GC-c2``).
        """
        shown = [p for p in self.params if p.name == "size" and not self.paper
                 or params[p.name] != p.default]
        short = "-".join([self.display] + [
            fmt(params[p.name]) if p.name == "size" else p.tag + fmt(params[p.name])
            for p in shown])
        name = f"{self.long_name} distribution"
        if shown:
            name += " (" + ", ".join(f"{p.name}={fmt(params[p.name])}" for p in shown) + ")"
        return short, name

    def describe(self) -> str:
        """The family's parameters, one per line."""
        lines = [f"{self.name} ({self.display}): {self.reference}"]
        for p in self.params:
            lines.append(f"  {p.name} = {fmt(p.default)}: {p.range_text()}; {p.doc}")
        return "\n".join(lines)


def _bytes(n: int) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


class Problem:
    """A family with its parameters: the test distribution and its two priors.

    Attributes
    ----------
    family
        The family id (``"deepsea"``).
    params
        Every parameter, defaults included.
    short_name, name
        The test distribution's names.
    test
        The test distribution: an :class:`FDMDistribution` (fixed structure) or a
        :class:`FamilyDistribution` (drawn structure), built when first asked for.

    Nothing is built until it is needed: a configuration's ladder of problems is checked
    from the parameters (names, sizes), and a prior's values
    (:meth:`FDMDistribution.lazy`) are computed when an agent or the cost model reads
    them.

    Examples
    --------
    >>> from bbrlcore.mdp.families import make
    >>> p = make("riverswim", size=4, p_rand=0.1)
    >>> p.short_name, p.params["concentration"]
    ('RiverSwim-4-prand0.1', 10.0)
    >>> p.prior("uniform").name
    'Uniform RiverSwim distribution (size=4, p_rand=0.1)'
    """

    def __init__(self, spec: Family, params: dict[str, Any]) -> None:
        self.spec = spec
        self.family = spec.name
        self.params = dict(params)
        self.short_name, self.name = spec.names(params)
        self.n_states, self.n_actions = (int(v) for v in spec.shape(self.params))
        self._priors: dict[str, FDMDistribution] = {}

    def __repr__(self) -> str:
        return f"Problem({self.short_name!r})"

    @cached_property
    def test(self) -> Any:
        """The test distribution (built on first use)."""
        params = dict(self.params)
        noise = float(params.pop(REWARD_NOISE.name, 0.0))
        test = self.spec.build(params, self.short_name, self.name)
        if noise > 0:
            from bbrlcore.mdp.environment import beta_laws, with_environment

            test = with_environment(test, beta_laws(test, noise))
            if isinstance(test, FamilyDistribution):  # (its parameters rebuild it)
                test.params = {**test.params, REWARD_NOISE.name: noise}
        return test

    @property
    def initial_state(self) -> int:
        return int(self.test.initial_state)

    def prior(self, kind: str) -> FDMDistribution:
        """The ``"accurate"`` prior (named like the test distribution) or the
        ``"uniform"`` one (named ``U`` + the test's short name); its values are computed
        when first read (:meth:`FDMDistribution.lazy`)."""
        if kind not in PRIOR_KINDS:
            raise BBRLError(f"prior kind {kind!r}: must be one of {', '.join(PRIOR_KINDS)}")
        if kind not in self._priors:
            t = self.test
            if kind == "accurate":
                d = t if isinstance(t, FDMDistribution) else t.accurate_prior()
            else:
                d = FDMDistribution.lazy(
                    "Uniform " + t.name, "U" + t.short_name, t.n_states, t.n_actions,
                    t.initial_state, lambda: uniform_prior(t, self.spec.paper),
                    None if self.spec.paper else (lambda: t.support_layout))
            self._priors[kind] = d
        return self._priors[kind]


def uniform_prior(test: Any, every: bool = False) -> FDMDistribution:
    """The uniform prior of a test distribution: one pseudo-count on each transition of
    its support (on every transition when ``every``: the paper's UGC, UGDL, UGrid), its
    rewards, named ``U`` + its short name."""
    nX, nU = test.n_states, test.n_actions
    rk, rv = reward_entries(test)
    if every:
        keys = np.arange(nX * nU * nX, dtype=np.int64)
    else:
        keys = support_keys(test)
    allk = np.union1d(keys, rk)
    theta = np.zeros(allk.size)
    theta[np.searchsorted(allk, keys)] = 1.0
    reward = np.zeros(allk.size)
    reward[np.searchsorted(allk, rk)] = rv
    return FDMDistribution.from_entries("Uniform " + test.name, "U" + test.short_name, nX, nU,
                                        allk, theta, reward, test.initial_state)


def support(dist: Any) -> np.ndarray:
    """Boolean (nX, nU, nX): the transitions some MDP drawn from ``dist`` can have
    (``theta > 0`` for an FDM); dense, for small problems (:func:`support_keys` is the
    same without the dense array).

    >>> from bbrlcore.mdp.distributions import builtin
    >>> int(support(builtin("GC")).sum())
    30
    """
    if isinstance(dist, FDMDistribution):
        return dist.theta > 0
    return dist.support()


def support_keys(dist: Any) -> np.ndarray:
    """The flat indices ``(x·nU + u)·nX + y`` of :func:`support`'s transitions, increasing.

    >>> from bbrlcore.mdp.distributions import builtin
    >>> support_keys(builtin("GC"))[:4].tolist()
    [0, 1, 5, 6]
    """
    if isinstance(dist, FDMDistribution):
        e = dist.entry_keys
        return e[np.asarray(dist._data.theta) > 0]
    return dist.support_keys()


def reward_entries(dist: Any) -> tuple[np.ndarray, np.ndarray]:
    """The non-zero mean rewards of a test distribution: flat indices (increasing) and
    values (an FDM's stored rewards; a family's :class:`Rewards`)."""
    if isinstance(dist, FDMDistribution):
        e = dist._data
        nz = e.reward != 0
        return e.keys[nz], e.reward[nz]
    r = dist.rewards
    return r.keys, r.values


# ---------------------------------------------------------------------------------------
# Rewards


@dataclass(frozen=True, eq=False)
class Rewards:
    """A reward function of the transitions (x, u, y), sparse: its non-zero values
    ``values`` at the flat indices ``keys`` (``(x·nU + u)·nX + y``, increasing); every
    other transition pays 0. A family gives its rewards on the transitions that can
    happen, and (where the published problem pays them so) on a few beside them.

    >>> r = Rewards.assign(2, 1, (0, 0, [0, 1], 1.0), (0, 0, 1, 5.0))
    >>> r.keys.tolist(), r.values.tolist(), r.dense()[0, 0].tolist()
    ([0, 1], [1.0, 5.0], [1.0, 5.0])
    """

    n_states: int
    n_actions: int
    keys: np.ndarray
    values: np.ndarray

    @classmethod
    def assign(cls, n_states: int, n_actions: int, *parts: tuple[Any, Any, Any, Any]
               ) -> Rewards:
        """The rewards of ``R[x, u, y] = v`` for each part ``(x, u, y, v)`` in turn
        (broadcast index arrays; a later part overrides an earlier one), from all zeros."""
        nX, nU = int(n_states), int(n_actions)
        ks, vs = [], []
        for x, u, y, v in parts:
            x, u, y, v = np.broadcast_arrays(np.asarray(x, np.int64), np.asarray(u, np.int64),
                                             np.asarray(y, np.int64),
                                             np.asarray(v, np.float64))
            ks.append(((x * nU + u) * nX + y).reshape(-1))
            vs.append(v.reshape(-1))
        k = np.concatenate(ks) if ks else np.zeros(0, np.int64)
        v = np.concatenate(vs) if vs else np.zeros(0)
        # the last assignment of each transition: the first in reversed order
        uniq, first = np.unique(k[::-1], return_index=True)
        vals = v[::-1][first]
        keep = vals != 0
        return cls(nX, nU, uniq[keep], vals[keep])

    @classmethod
    def on_keys(cls, n_states: int, n_actions: int, keys: np.ndarray,
                values: np.ndarray) -> Rewards:
        """The rewards ``values`` at ``keys`` (increasing), zeros dropped."""
        keys = np.asarray(keys, np.int64)
        values = np.asarray(values, np.float64)
        keep = values != 0
        return cls(int(n_states), int(n_actions), keys[keep], values[keep])

    def at(self, keys: np.ndarray) -> np.ndarray:
        """The rewards of the transitions ``keys`` (0 where none is given)."""
        keys = np.asarray(keys, np.int64)
        if self.keys.size == 0:
            return np.zeros(keys.size)
        pos = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
        return np.where(self.keys[pos] == keys, self.values[pos], 0.0)

    def extreme(self, fn: Callable[..., Any]) -> float:
        """``fn`` (np.min, np.max) over every transition's reward."""
        total = self.n_states * self.n_actions * self.n_states
        if self.values.size < total:
            return float(fn(self.values, initial=0.0))
        return float(fn(self.values))

    def dense(self) -> np.ndarray:
        """The (nX, nU, nX) array (small problems)."""
        nX, nU = self.n_states, self.n_actions
        R = np.zeros(nX * nU * nX)
        R[self.keys] = self.values
        return R.reshape(nX, nU, nX)


def transition_keys(n_states: int, n_actions: int, *parts: tuple[Any, Any, Any]
                    ) -> np.ndarray:
    """The flat indices ``(x·nU + u)·nX + y`` (increasing, each once) of the transitions
    ``(x, u, y)`` of each part (broadcast index arrays).

    >>> transition_keys(3, 2, (0, [0, 1], 2), (1, 0, 1)).tolist()
    [2, 5, 7]
    """
    return Rewards.assign(n_states, n_actions, *((x, u, y, 1.0) for x, u, y in parts)).keys


def paper_family(name: str, short_name: str, n_states: int, n_actions: int,
                 allowed: np.ndarray, rewards: Rewards,
                 concentration: float) -> FDMDistribution:
    """A paper family's test distribution (GC, GDL, Grid): ``concentration`` on each
    allowed transition (flat indices), and the rewards."""
    keys = np.union1d(allowed, rewards.keys)
    theta = np.zeros(keys.size)
    theta[np.searchsorted(keys, allowed)] = float(concentration)
    return FDMDistribution.from_entries(name, short_name, n_states, n_actions, keys, theta,
                                        rewards.at(keys), 0)


# ---------------------------------------------------------------------------------------
# Kernels


def controlled(kernel: Kernel, p_rand: float, p_lazy: float,
               states: np.ndarray | None = None) -> Kernel:
    """The kernel with Colosseum's ``p_rand`` and ``p_lazy`` applied (still sparse);
    ``states``: the states its rows belong to (default: all, in order)."""
    succ, prob = kernel
    nX, nU, K = succ.shape
    s_parts, p_parts = [succ], [prob * (1.0 - p_rand)]
    if p_rand > 0:
        s_parts.append(np.broadcast_to(succ.reshape(nX, 1, nU * K), (nX, nU, nU * K)))
        p_parts.append(np.broadcast_to(prob.reshape(nX, 1, nU * K) * (p_rand / nU),
                                       (nX, nU, nU * K)))
    if p_lazy > 0:
        p_parts = [p * (1.0 - p_lazy) for p in p_parts]
        xs = np.arange(nX) if states is None else np.asarray(states, dtype=np.int64)
        s_parts.append(np.broadcast_to(xs.reshape(nX, 1, 1), (nX, nU, 1)))
        p_parts.append(np.full((nX, nU, 1), p_lazy))
    if len(s_parts) == 1:
        return succ, p_parts[0]
    return np.concatenate(s_parts, axis=2), np.concatenate(p_parts, axis=2)


def merged(kernel: Kernel, n_states: int,
           states: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(key, value)``: the kernel's distinct transitions as sorted flat indices
    ``(x·nU + u)·nX + y`` into a dense (nX, nU, nX) array, with their summed
    probabilities. ``states``: the states the kernel's rows belong to (default: all)."""
    succ, prob = kernel
    n, nU, K = succ.shape
    xs = np.arange(n, dtype=np.int64) if states is None else np.asarray(states, np.int64)
    rows = (xs[:, None] * nU + np.arange(nU)).reshape(-1).repeat(K)
    key = rows * n_states + succ.reshape(-1).astype(np.int64)
    p = prob.reshape(-1)
    keep = p > 0
    uniq, inv = np.unique(key[keep], return_inverse=True)
    return uniq, np.bincount(inv, weights=p[keep], minlength=len(uniq))


def dense(kernel: Kernel) -> np.ndarray:
    """The kernel as a dense (nX, nU, nX) array."""
    nX, nU, _ = kernel[0].shape
    key, val = merged(kernel, nX)
    P = np.zeros(nX * nU * nX)
    P[key] = val
    return P.reshape(nX, nU, nX)


def centred(params: Mapping[str, Any], short_name: str, name: str, kernel: Kernel,
            rewards: Rewards, initial_state: int = 0) -> FDMDistribution:
    """The test distribution of a fixed-structure family: the FDM centred on the kernel
    with ``p_rand`` and ``p_lazy`` applied, ``theta = concentration · P``
    (:meth:`FDMDistribution.centred_on`, without the dense array), and its rewards."""
    nX, nU, _ = kernel[0].shape
    key, val = merged(controlled(kernel, params.get("p_rand", 0.0), params.get("p_lazy", 0.0)),
                      nX)
    c = check_concentration(float(params["concentration"]), short_name)
    sums = np.bincount(key // nX, weights=val, minlength=nX * nU)
    if not np.allclose(sums, 1.0, atol=1e-9):
        raise AssertionError(f"{short_name}: the nominal kernel's rows do not sum to one")
    keys = np.union1d(key, rewards.keys)
    theta = np.zeros(keys.size)
    theta[np.searchsorted(keys, key)] = c * val
    return FDMDistribution.from_entries(name, short_name, nX, nU, keys, theta,
                                        rewards.at(keys), initial_state)


def dirichlet_rows(rng: np.random.Generator, key: np.ndarray, val: np.ndarray,
                   concentration: float, nX: int, nU: int) -> np.ndarray:
    """A dense MDP whose row (x, u) is drawn from Dir(concentration · row) over the
    transitions ``key`` (sorted, as :func:`merged` gives them). A row whose gamma draws
    all underflow puts all its mass on one entry chosen uniformly, as
    :meth:`FDMDistribution.draw_mdp` does."""
    P = np.zeros(nX * nU * nX)
    P[key] = dirichlet_values(rng, key, val, concentration, nX, nU)
    return P.reshape(nX, nU, nX)


def dirichlet_values(rng: np.random.Generator, key: np.ndarray, val: np.ndarray,
                     concentration: float, nX: int, nU: int) -> np.ndarray:
    """The probabilities of the transitions ``key`` drawn by :func:`dirichlet_rows`
    (the same draws), without the dense array."""
    g = rng.standard_gamma(concentration * val)
    row = key // nX
    s = np.bincount(row, weights=g, minlength=nX * nU)
    tiny = np.flatnonzero(s < 1e-300)
    for r in tiny:
        lo, hi = np.searchsorted(row, [r, r + 1])
        g[lo:hi] = 0.0
        g[lo + int(rng.integers(hi - lo))] = 1.0
        s[r] = 1.0
    return g / s[row]


class Moments:
    """Accumulates, per row, the mean ``m`` and ``s2`` = E[Σ_y P(y)²] (nX, nU) of a
    mixture of kernels (for the accurate prior); ``m`` is kept on the transitions the
    kernels have (sparse), in the arithmetic of a dense (nX, nU, nX) array. Given the
    transitions every kernel stays within (``support``, flat indices), it adds a kernel
    in one compiled pass (Monte-Carlo moments: thousands of kernels)."""

    def __init__(self, nX: int, nU: int, support: np.ndarray | None = None) -> None:
        self.nX, self.nU = nX, nU
        self.fixed = support is not None
        self.keys = (np.zeros(0, dtype=np.int64) if support is None
                     else np.asarray(support, dtype=np.int64))
        self.m = np.zeros(self.keys.size)
        self.s2 = np.zeros(nX * nU)
        self.indptr = np.zeros(nX * nU + 1, dtype=np.int64)
        if support is not None:
            np.cumsum(np.bincount(self.keys // nX, minlength=nX * nU), out=self.indptr[1:])

    def add(self, kernel: Kernel, weight: float | np.ndarray,
            states: np.ndarray | None = None) -> None:
        """Add ``weight`` × the (controlled) kernel; ``weight`` per state (array over
        ``states``, or over all states) or one number; ``states`` as in :func:`merged`."""
        if not self.fixed:
            key, val = merged(kernel, self.nX, states)
            self.add_flat(key, val, weight, states)
            return
        succ, prob = kernel
        n = succ.shape[0]
        xs = np.arange(n, dtype=np.int64) if states is None else np.asarray(states, np.int64)
        w = np.broadcast_to(np.asarray(weight, dtype=np.float64), (n,)).copy()
        if _add_kernel(np.ascontiguousarray(succ, dtype=np.int64),
                       np.ascontiguousarray(prob, dtype=np.float64), xs, w, self.keys,
                       self.indptr, self.nX, self.m, self.s2) < 0:
            raise AssertionError("Moments.add: a transition outside the given support")

    def add_flat(self, key: np.ndarray, val: np.ndarray, weight: float | np.ndarray,
                 states: np.ndarray | None = None) -> None:
        row = key // self.nX
        if np.ndim(weight):
            w = np.asarray(weight, dtype=np.float64)
            if states is not None:
                full = np.zeros(self.nX)
                full[np.asarray(states)] = w
                w = full
            w = w[row // self.nU]
        else:
            w = float(weight)
        pos = np.searchsorted(self.keys, key)
        known = pos < self.keys.size
        known[known] = self.keys[pos[known]] == key[known]
        if not known.all():  # new transitions join the accumulator (zero so far)
            if self.fixed:
                raise AssertionError("Moments.add_flat: a transition outside the support")
            keys = np.union1d(self.keys, key)
            m = np.zeros(keys.size)
            m[np.searchsorted(keys, self.keys)] = self.m
            self.keys, self.m = keys, m
            pos = np.searchsorted(keys, key)
        self.m[pos] += w * val
        self.s2 += np.bincount(row, weights=w * val * val, minlength=self.nX * self.nU)

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(keys, m, s2)``: the transitions seen (flat indices, increasing), the mean on
        them, and ``s2`` (nX, nU)."""
        return self.keys, self.m, self.s2.reshape(self.nX, self.nU)

    def dense(self) -> tuple[np.ndarray, np.ndarray]:
        """``(m, s2)`` with ``m`` as a dense (nX, nU, nX) array (small problems)."""
        m = np.zeros(self.nX * self.nU * self.nX)
        m[self.keys] = self.m
        return m.reshape(self.nX, self.nU, self.nX), self.s2.reshape(self.nX, self.nU)


@njit(cache=True, error_model="numpy")
def _add_kernel(succ, prob, xs, w, keys, indptr, n_states, m, s2):
    """:meth:`Moments.add` on a fixed support, in :func:`merged`'s and
    :meth:`Moments.add_flat`'s arithmetic: each row's probabilities summed per successor
    in the kernel's order, then per successor in increasing order ``m += w·val`` and the
    row's ``Σ (w·val)·val`` added to ``s2``. -1 if a transition is not in ``keys`` (whose
    row ``r`` is ``keys[indptr[r]:indptr[r + 1]]``)."""
    n, nU, K = succ.shape
    ys = np.empty(K, dtype=np.int64)
    vs = np.empty(K)
    for i in range(n):
        x = xs[i]
        for u in range(nU):
            cnt = 0
            for k in range(K):
                p = prob[i, u, k]
                if p > 0:
                    y = succ[i, u, k]
                    j = 0
                    while j < cnt and ys[j] != y:
                        j += 1
                    if j == cnt:
                        ys[cnt] = y
                        vs[cnt] = 0.0
                        cnt += 1
                    vs[j] += p
            for a in range(1, cnt):  # increasing successors
                yv, vv = ys[a], vs[a]
                b = a - 1
                while b >= 0 and ys[b] > yv:
                    ys[b + 1] = ys[b]
                    vs[b + 1] = vs[b]
                    b -= 1
                ys[b + 1] = yv
                vs[b + 1] = vv
            row = x * nU + u
            total = 0.0
            pos = indptr[row]  # the row's transitions: keys[indptr[row]:indptr[row + 1]]
            for j in range(cnt):
                key = row * n_states + ys[j]
                while pos < indptr[row + 1] and keys[pos] < key:
                    pos += 1
                if pos >= indptr[row + 1] or keys[pos] != key:
                    return -1
                wv = w[i] * vs[j]
                m[pos] += wv
                total += wv * vs[j]
            s2[row] += total
    return 0


def moment_matched(m: np.ndarray, s2: np.ndarray, concentration: float) -> np.ndarray:
    """The accurate prior's concentrations from the per-row mean ``m`` (dense) and
    ``s2`` (module docstring): :math:`\\theta = a\\,m` with the moment-matched total
    ``a``; :func:`moment_matched_keys` is the same on sparse means."""
    sum_m2 = np.einsum("xuy,xuy->xu", m, m)
    a = _matched_totals(sum_m2, s2, (m > 0).sum(axis=2), concentration)
    return a[..., None] * m


def moment_matched_keys(keys: np.ndarray, m: np.ndarray, s2: np.ndarray,
                        concentration: float, nX: int, nU: int) -> np.ndarray:
    """:func:`moment_matched` on a mean given at the flat indices ``keys`` (0
    elsewhere), bit for bit: the concentrations at ``keys``. The sums of squares follow
    the dense array's arithmetic, a block of rows at a time."""
    sum_m2 = np.empty((nX, nU))
    per_x = nU * nX
    step = max(1, CHUNK_ENTRIES // per_x)
    for x0 in range(0, nX, step):
        x1 = min(nX, x0 + step)
        lo, hi = np.searchsorted(keys, [x0 * per_x, x1 * per_x])
        block = np.zeros((x1 - x0) * per_x)
        block[keys[lo:hi] - x0 * per_x] = m[lo:hi]
        block = block.reshape(x1 - x0, nU, nX)
        sum_m2[x0:x1] = np.einsum("xuy,xuy->xu", block, block)
    row = keys // nX
    k = np.bincount(row[m > 0], minlength=nX * nU).reshape(nX, nU)
    a = _matched_totals(sum_m2, s2, k, concentration)
    return a.reshape(-1)[row] * m


def _matched_totals(sum_m2: np.ndarray, s2: np.ndarray, k: np.ndarray,
                    concentration: float) -> np.ndarray:
    c = float(concentration)
    M = np.clip(1.0 - sum_m2, 0.0, None)
    V = np.clip(s2 - sum_m2, 0.0, None)
    a = np.full(M.shape, c)
    varying = V > _VAR_EPS
    tot = np.clip(M - V, 0.0, None) / (c + 1.0) + V
    a[varying] = np.minimum(c, M[varying] / tot[varying] - 1.0)
    return np.maximum(a, np.minimum(c, 0.5 * k))


# ---------------------------------------------------------------------------------------
# Test distributions with a drawn structure


class FamilyDistribution:
    """A test distribution whose MDPs have a drawn structure (module docstring).

    A subclass (one per family) implements :meth:`draw_structure`, :meth:`kernel`
    (the nominal kernel of a structure, before ``p_rand`` and ``p_lazy``),
    :meth:`_moments` (exact or Monte-Carlo mean and spread of the controlled kernel over
    the structures, sparse: :class:`Moments`), its rewards (:class:`Rewards`, given to
    the constructor or by :meth:`_rewards`) and, for small instances, :meth:`structures`
    (every structure with its probability, used to check the rest). It has the interface
    a :class:`~bbrlcore.protocol.TestSet` uses, like an FDM distribution, on the
    transitions that exist: :attr:`support_layout`, :attr:`reward_rows`,
    :meth:`draw_rows`, :meth:`mean_rows` (and, for small instances, the dense views
    :attr:`reward`, :meth:`mean_model`, :meth:`support`, :meth:`draw_mdp`).
    """

    reward_type = "constant"
    reward_variance = None
    #: reward laws and a starting distribution (as an FDM distribution's:
    #: :func:`bbrlcore.mdp.environment.with_environment`)
    reward_laws: Any = None
    starts: Any = None

    def __init__(self, family: str, params: Mapping[str, Any], short_name: str, name: str,
                 n_states: int, n_actions: int, initial_state: int,
                 rewards: Rewards | None = None) -> None:
        self.family = family
        self.params = dict(params)
        self.short_name = short_name
        self.name = name
        self.n_states, self.n_actions = int(n_states), int(n_actions)
        self.initial_state = int(initial_state)
        self.concentration = float(params["concentration"])
        self.p_rand = float(params.get("p_rand", 0.0))
        self.p_lazy = float(params.get("p_lazy", 0.0))
        if rewards is not None:
            self.__dict__["rewards"] = rewards

    # -- the family's part ----------------------------------------------------------------
    def draw_structure(self, rng: np.random.Generator) -> Any:
        raise NotImplementedError

    def kernel(self, structure: Any) -> Kernel:
        raise NotImplementedError

    def structures(self) -> Iterator[tuple[float, Any]]:
        """Every structure with its probability (small instances only)."""
        raise NotImplementedError

    def _moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(keys, m, s2)`` as :meth:`Moments.result` gives them."""
        raise NotImplementedError

    def _rewards(self) -> Rewards:
        """The rewards, when not given to the constructor (they may depend on
        :meth:`support_keys`)."""
        raise NotImplementedError

    def _support_keys(self) -> np.ndarray:
        keys, m, _ = self._moments_cached
        return keys[m > 0]

    # -- the interface --------------------------------------------------------------------
    @cached_property
    def rewards(self) -> Rewards:
        """The rewards of the transitions (:class:`Rewards`), the same in every MDP."""
        return self._rewards()

    @property
    def r_max(self) -> float:
        return self.rewards.extreme(np.max)

    @property
    def r_min(self) -> float:
        return self.rewards.extreme(np.min)

    @cached_property
    def reward(self) -> np.ndarray:
        """Dense (nX, nU, nX) rewards (read-only; built on first use: small instances)."""
        R = self.rewards.dense()
        R.setflags(write=False)
        return R

    @cached_property
    def reward_std(self) -> np.ndarray:
        z = np.zeros((self.n_states, self.n_actions, self.n_states))
        z.setflags(write=False)
        return z

    def controlled_kernel(self, structure: Any) -> Kernel:
        """The structure's kernel with ``p_rand`` and ``p_lazy`` applied."""
        return controlled(self.kernel(structure), self.p_rand, self.p_lazy)

    def nominal(self, structure: Any) -> np.ndarray:
        """The dense nominal MDP of a structure (controls applied, no Dirichlet noise)."""
        return dense(self.controlled_kernel(structure))

    def draw_mdp(self, rng: np.random.Generator) -> np.ndarray:
        """Draw one MDP: its structure, then every row from Dir(concentration · row) (a
        prior ``+dir<α>``: every row from Dir(α) over all S next states,
        :func:`bbrlcore.mdp.transition_prior.draw_dense`)."""
        if getattr(self, "dirichlet_all", None) is not None:
            from bbrlcore.mdp.transition_prior import draw_dense

            return draw_dense(self, rng)
        s = self.draw_structure(rng)
        key, val = merged(self.controlled_kernel(s), self.n_states)
        return dirichlet_rows(rng, key, val, self.concentration, self.n_states,
                              self.n_actions)

    def draw_rows(self, rng: np.random.Generator) -> np.ndarray:
        """:meth:`draw_mdp`'s MDP (the same draws of ``rng``) as its values on
        :attr:`support_layout`, shape (nX, nU, K), without the dense array (a prior
        ``+dir<α>``: refused in one line, its draws can go to any next state)."""
        if getattr(self, "dirichlet_all", None) is not None:
            from bbrlcore.mdp.transition_prior import refuse_rows

            refuse_rows(self)
        s = self.draw_structure(rng)
        key, val = merged(self.controlled_kernel(s), self.n_states)
        p = dirichlet_values(rng, key, val, self.concentration, self.n_states,
                             self.n_actions)
        slots, keys = self._layout_keys
        pos = np.searchsorted(keys, key)
        if (pos >= keys.size).any() or (keys[np.minimum(pos, keys.size - 1)] != key).any():
            raise AssertionError(f"{self.short_name}: a drawn transition outside the support")
        out = np.zeros(self.support_layout.succ.shape)
        out.reshape(-1)[slots[pos]] = p
        return out

    @cached_property
    def support_layout(self) -> Layout:
        """:meth:`support` as padded rows (:mod:`bbrlcore.mdp.rows`)."""
        return rows.from_keys(self.support_keys(), self.n_states, self.n_actions)

    @cached_property
    def _layout_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """The flat slots of the layout's transitions and their dense flat indices
        ``(x·nU + u)·nX + y`` (both in increasing order)."""
        return np.flatnonzero(self.support_layout.mask), self.support_keys()

    def _on_layout(self, values: np.ndarray) -> np.ndarray:
        lay = self.support_layout
        out = np.zeros(lay.succ.shape)
        out[lay.mask] = values
        out.setflags(write=False)
        return out

    @cached_property
    def reward_rows(self) -> np.ndarray:
        """The rewards on :attr:`support_layout` (read-only)."""
        return self._on_layout(self.rewards.at(self.support_keys()))

    @cached_property
    def reward_std_rows(self) -> np.ndarray:
        z = np.zeros(self.support_layout.succ.shape)
        z.setflags(write=False)
        return z

    @cached_property
    def _moments_cached(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        keys, m, s2 = self._moments()
        for a in (keys, m, s2):
            a.setflags(write=False)
        return keys, m, s2

    def mean_model(self) -> np.ndarray:
        """E[P]: the expected transition probabilities of a drawn MDP, dense (small
        instances; :meth:`mean_rows` on the support)."""
        keys, m, _ = self._moments_cached
        out = np.zeros(self.n_states * self.n_actions * self.n_states)
        out[keys] = m
        return out.reshape(self.n_states, self.n_actions, self.n_states)

    def mean_rows(self) -> np.ndarray:
        """E[P] on :attr:`support_layout` (the mean is zero outside the support)."""
        keys, m, _ = self._moments_cached
        sk = self.support_keys()
        pos = np.minimum(np.searchsorted(keys, sk), max(keys.size - 1, 0))
        return self._on_layout(np.where(keys[pos] == sk, m[pos], 0.0))

    @cached_property
    def _support_cached(self) -> np.ndarray:
        s = np.asarray(self._support_keys(), dtype=np.int64)
        s.setflags(write=False)
        return s

    def support_keys(self) -> np.ndarray:
        """The flat indices ``(x·nU + u)·nX + y`` (increasing) of every transition some
        drawn MDP can have (read-only)."""
        return self._support_cached

    def support(self) -> np.ndarray:
        """Boolean (nX, nU, nX): every transition some drawn MDP can have (dense, small
        instances; :meth:`support_keys` without the dense array)."""
        out = np.zeros(self.n_states * self.n_actions * self.n_states, dtype=bool)
        out[self.support_keys()] = True
        return out.reshape(self.n_states, self.n_actions, self.n_states)

    def _accurate_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """The accurate prior's concentrations at the transitions of the moments."""
        keys, m, s2 = self._moments_cached
        return keys, moment_matched_keys(keys, m, s2, self.concentration, self.n_states,
                                         self.n_actions)

    def accurate_theta(self) -> np.ndarray:
        """The accurate prior's concentrations (module docstring), dense (small
        instances)."""
        keys, theta = self._accurate_keys()
        out = np.zeros(self.n_states * self.n_actions * self.n_states)
        out[keys] = theta
        return out.reshape(self.n_states, self.n_actions, self.n_states)

    def accurate_prior(self) -> FDMDistribution:
        """The accurate prior as an FDM named like this distribution (its values
        computed once, when first read): ``theta`` = :meth:`accurate_theta`, so its mean
        model is :meth:`mean_model` and it is positive exactly on :meth:`support`."""
        return self._accurate_prior_cached

    @cached_property
    def _accurate_prior_cached(self) -> FDMDistribution:
        return FDMDistribution.lazy(self.name, self.short_name, self.n_states,
                                    self.n_actions, self.initial_state,
                                    self._build_accurate_prior,
                                    lambda: self.support_layout)

    def _build_accurate_prior(self) -> FDMDistribution:
        tk, tv = self._accurate_keys()
        r = self.rewards
        keys = np.union1d(tk, r.keys)
        theta = np.zeros(keys.size)
        theta[np.searchsorted(keys, tk)] = tv
        return FDMDistribution.from_entries(self.name, self.short_name, self.n_states,
                                            self.n_actions, keys, theta, r.at(keys),
                                            self.initial_state)

    def mc_moments(self, draws: int = PRIOR_DRAWS) -> tuple[np.ndarray, np.ndarray,
                                                            np.ndarray]:
        """Monte-Carlo :meth:`_moments`: ``draws`` structures from the generator seeded
        ``SeedSequence([PRIOR_SEED, id_hash64(short_name)])``, plus one pseudo-draw
        uniform over each row's :meth:`support`, all weighted equally."""
        path = _moments_path(self.short_name, draws)
        if path is not None:
            try:
                with np.load(path, allow_pickle=False) as z:
                    return z["keys"], z["m"], z["s2"]
            except (OSError, ValueError, KeyError):
                pass
        rng = np.random.default_rng(np.random.SeedSequence(
            [PRIOR_SEED, id_hash64(self.short_name)]))
        key = self.support_keys()
        acc = Moments(self.n_states, self.n_actions, key)
        w = 1.0 / (draws + 1)
        for _ in range(draws):
            acc.add(self.controlled_kernel(self.draw_structure(rng)), w)
        row = key // self.n_states
        acc.add_flat(key, 1.0 / np.bincount(row)[row], w)
        keys, m, s2 = acc.result()
        if path is not None:
            _store_npz(path, keys=keys, m=m, s2=s2)
        return keys, m, s2

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form; :func:`bbrlcore.mdp.families.from_dict` rebuilds it from the
        family and its parameters."""
        from bbrlcore.mdp.environment import environment_dict

        env = environment_dict(self)  # (laws and starts given besides the parameters)
        if self.params.get(REWARD_NOISE.name, 0.0) > 0:
            env.pop("reward_laws", None)  # (reward_noise makes them)
        return {"family": self.family, "params": dict(self.params),
                "short_name": self.short_name, "name": self.name,
                "n_states": self.n_states, "n_actions": self.n_actions,
                "initial_state": self.initial_state, **env}

    def same_as(self, other: Any) -> bool:
        """Same family, parameters and names."""
        return isinstance(other, FamilyDistribution) and self.to_dict() == other.to_dict()

    def describe(self) -> str:
        """A few human-readable lines."""
        nX, nU = self.n_states, self.n_actions
        sk = self.support_keys()
        det = int((np.bincount(sk // nX, minlength=nX * nU) == 1).sum())
        params = ", ".join(f"{k}={fmt(v)}" for k, v in self.params.items())
        return "\n".join([
            f"{self.short_name}: {self.name}",
            f"  family {self.family} ({params}); structure drawn per MDP",
            f"  states {nX}, actions {nU}, initial state {self.initial_state}",
            f"  rewards {self.reward_type}, Rmax {self.r_max:g}",
            f"  possible transitions {sk.size} of {nX * nU * nX}; "
            f"{det} (x,u) rows of {nX * nU} deterministic in every MDP",
            *describe_environment(self),
        ])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.short_name!r})"


def _moments_path(short_name: str, draws: int) -> Path | None:
    """Where the Monte-Carlo moments of a family's distribution are kept
    (``cache_base()/moments-<sources>/<key>.npz``): a pure function of the name (the
    parameters), the draws and the code, which a workflow's every start would otherwise
    recompute (FrozenLake-59: 4,000 lakes, seconds). ``BBRL_COST_CACHE=0``: none."""
    if os.environ.get("BBRL_COST_CACHE", "1") == "0":
        return None
    import hashlib

    from bbrlcore import cache_base, source_digest

    h = hashlib.sha256(f"{source_digest()}:{np.__version__}:{short_name}:{draws}".encode())
    return Path(cache_base()) / f"moments-{source_digest()[:12]}" / f"{h.hexdigest()[:32]}.npz"


def _store_npz(path: Path, **arrays: np.ndarray) -> None:
    """Written to a temporary file, then renamed; a cache that cannot be written is
    skipped."""
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp.npz")
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    except OSError:
        pass


def exact_mean(dist: FamilyDistribution) -> np.ndarray:
    """E[nominal P] by enumerating :meth:`FamilyDistribution.structures` (small instances;
    used to check :meth:`FamilyDistribution.mean_model`)."""
    total = np.zeros((dist.n_states, dist.n_actions, dist.n_states))
    for w, s in dist.structures():
        total += w * dist.nominal(s)
    return total
