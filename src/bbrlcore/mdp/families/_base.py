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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from bbrlcore.errors import BBRLError
from bbrlcore.mdp.distributions import MAX_ENTRIES, FDMDistribution
from bbrlcore.mdp.rows import Layout, gather, layout_of
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
        :class:`FamilyDistribution` (drawn structure).

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
        self.test = spec.build(dict(params), self.short_name, self.name)
        self._priors: dict[str, FDMDistribution] = {}

    def __repr__(self) -> str:
        return f"Problem({self.short_name!r})"

    def prior(self, kind: str) -> FDMDistribution:
        """The ``"accurate"`` prior (named like the test distribution) or the
        ``"uniform"`` one (named ``U`` + the test's short name)."""
        if kind not in PRIOR_KINDS:
            raise BBRLError(f"prior kind {kind!r}: must be one of {', '.join(PRIOR_KINDS)}")
        if kind not in self._priors:
            t = self.test
            if kind == "accurate":
                d = t if isinstance(t, FDMDistribution) else t.accurate_prior()
            else:
                sup = (np.ones((t.n_states, t.n_actions, t.n_states), dtype=bool)
                       if self.spec.paper else support(t))
                d = FDMDistribution("Uniform " + t.name, "U" + t.short_name,
                                    sup.astype(np.float64), np.array(t.reward),
                                    t.initial_state)
            self._priors[kind] = d
        return self._priors[kind]


def support(dist: Any) -> np.ndarray:
    """Boolean (nX, nU, nX): the transitions some MDP drawn from ``dist`` can have
    (``theta > 0`` for an FDM).

    >>> from bbrlcore.mdp.distributions import builtin
    >>> int(support(builtin("GC")).sum())
    30
    """
    if isinstance(dist, FDMDistribution):
        return dist.theta > 0
    return dist.support()


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
            reward: np.ndarray, initial_state: int = 0) -> FDMDistribution:
    """The test distribution of a fixed-structure family: the FDM centred on the kernel
    with ``p_rand`` and ``p_lazy`` applied, ``theta = concentration · P``."""
    P = dense(controlled(kernel, params.get("p_rand", 0.0), params.get("p_lazy", 0.0)))
    return FDMDistribution.centred_on(name, short_name, P, reward,
                                      float(params["concentration"]), initial_state)


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
    """Accumulates, per row, the mean ``m`` (nX, nU, nX) and ``s2`` = E[Σ_y P(y)²]
    (nX, nU) of a mixture of kernels (for the accurate prior)."""

    def __init__(self, nX: int, nU: int) -> None:
        self.nX, self.nU = nX, nU
        self.m = np.zeros(nX * nU * nX)
        self.s2 = np.zeros(nX * nU)

    def add(self, kernel: Kernel, weight: float | np.ndarray,
            states: np.ndarray | None = None) -> None:
        """Add ``weight`` × the (controlled) kernel; ``weight`` per state (array over
        ``states``, or over all states) or one number; ``states`` as in :func:`merged`."""
        key, val = merged(kernel, self.nX, states)
        self.add_flat(key, val, weight, states)

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
        self.m[key] += w * val
        self.s2 += np.bincount(row, weights=w * val * val, minlength=self.nX * self.nU)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        return (self.m.reshape(self.nX, self.nU, self.nX),
                self.s2.reshape(self.nX, self.nU))


def moment_matched(m: np.ndarray, s2: np.ndarray, concentration: float) -> np.ndarray:
    """The accurate prior's concentrations from the per-row mean ``m`` and ``s2`` (module
    docstring): :math:`\\theta = a\\,m` with the moment-matched total ``a``."""
    c = float(concentration)
    sum_m2 = np.einsum("xuy,xuy->xu", m, m)
    M = np.clip(1.0 - sum_m2, 0.0, None)
    V = np.clip(s2 - sum_m2, 0.0, None)
    a = np.full(M.shape, c)
    varying = V > _VAR_EPS
    tot = np.clip(M - V, 0.0, None) / (c + 1.0) + V
    a[varying] = np.minimum(c, M[varying] / tot[varying] - 1.0)
    k = (m > 0).sum(axis=2)
    a = np.maximum(a, np.minimum(c, 0.5 * k))
    return a[..., None] * m


# ---------------------------------------------------------------------------------------
# Test distributions with a drawn structure


class FamilyDistribution:
    """A test distribution whose MDPs have a drawn structure (module docstring).

    A subclass (one per family) implements :meth:`draw_structure`, :meth:`kernel`
    (the nominal kernel of a structure, before ``p_rand`` and ``p_lazy``),
    :meth:`_moments` (exact or Monte-Carlo mean and spread of the controlled kernel over
    the structures) and, for small instances, :meth:`structures` (every structure with its
    probability, used to check the rest). It has the interface a
    :class:`~bbrlcore.protocol.TestSet` uses, like an FDM distribution.
    """

    reward_type = "constant"
    reward_variance = None

    def __init__(self, family: str, params: Mapping[str, Any], short_name: str, name: str,
                 reward: np.ndarray, initial_state: int) -> None:
        self.family = family
        self.params = dict(params)
        self.short_name = short_name
        self.name = name
        self.reward = np.asarray(reward, dtype=np.float64)
        self.reward.setflags(write=False)
        self.initial_state = int(initial_state)
        self.concentration = float(params["concentration"])
        self.p_rand = float(params.get("p_rand", 0.0))
        self.p_lazy = float(params.get("p_lazy", 0.0))

    # -- the family's part ----------------------------------------------------------------
    def draw_structure(self, rng: np.random.Generator) -> Any:
        raise NotImplementedError

    def kernel(self, structure: Any) -> Kernel:
        raise NotImplementedError

    def structures(self) -> Iterator[tuple[float, Any]]:
        """Every structure with its probability (small instances only)."""
        raise NotImplementedError

    def _moments(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _support(self) -> np.ndarray:
        return self.mean_model() > 0

    # -- the interface --------------------------------------------------------------------
    @property
    def n_states(self) -> int:
        return int(self.reward.shape[0])

    @property
    def n_actions(self) -> int:
        return int(self.reward.shape[1])

    @property
    def r_max(self) -> float:
        return float(self.reward.max())

    @cached_property
    def reward_std(self) -> np.ndarray:
        z = np.zeros_like(self.reward)
        z.setflags(write=False)
        return z

    def controlled_kernel(self, structure: Any) -> Kernel:
        """The structure's kernel with ``p_rand`` and ``p_lazy`` applied."""
        return controlled(self.kernel(structure), self.p_rand, self.p_lazy)

    def nominal(self, structure: Any) -> np.ndarray:
        """The dense nominal MDP of a structure (controls applied, no Dirichlet noise)."""
        return dense(self.controlled_kernel(structure))

    def draw_mdp(self, rng: np.random.Generator) -> np.ndarray:
        """Draw one MDP: its structure, then every row from Dir(concentration · row)."""
        s = self.draw_structure(rng)
        key, val = merged(self.controlled_kernel(s), self.n_states)
        return dirichlet_rows(rng, key, val, self.concentration, self.n_states,
                              self.n_actions)

    def draw_rows(self, rng: np.random.Generator) -> np.ndarray:
        """:meth:`draw_mdp`'s MDP (the same draws of ``rng``) as its values on
        :attr:`support_layout`, shape (nX, nU, K), without the dense array."""
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
        return layout_of(self.support())

    @cached_property
    def _layout_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """The flat slots of the layout's transitions and their dense flat indices
        ``(x·nU + u)·nX + y`` (both in increasing order)."""
        lay = self.support_layout
        slots = np.flatnonzero(lay.mask)
        x, u, k = np.unravel_index(slots, lay.mask.shape)
        keys = (x * self.n_actions + u) * self.n_states + lay.succ[x, u, k]
        return slots, keys

    @cached_property
    def reward_rows(self) -> np.ndarray:
        """The rewards on :attr:`support_layout` (read-only)."""
        r = gather(self.reward, self.support_layout)
        r.setflags(write=False)
        return r

    @cached_property
    def reward_std_rows(self) -> np.ndarray:
        z = np.zeros(self.support_layout.succ.shape)
        z.setflags(write=False)
        return z

    @cached_property
    def _moments_cached(self) -> tuple[np.ndarray, np.ndarray]:
        m, s2 = self._moments()
        m.setflags(write=False)
        return m, s2

    def mean_model(self) -> np.ndarray:
        """E[P]: the expected transition probabilities of a drawn MDP (read-only)."""
        return self._moments_cached[0]

    @cached_property
    def _support_cached(self) -> np.ndarray:
        s = np.asarray(self._support(), dtype=bool)
        s.setflags(write=False)
        return s

    def support(self) -> np.ndarray:
        """Boolean (nX, nU, nX): every transition some drawn MDP can have (read-only)."""
        return self._support_cached

    def accurate_theta(self) -> np.ndarray:
        """The accurate prior's concentrations (module docstring)."""
        m, s2 = self._moments_cached
        return moment_matched(m, s2, self.concentration)

    def accurate_prior(self) -> FDMDistribution:
        """The accurate prior as an FDM named like this distribution (computed once):
        ``theta`` = :meth:`accurate_theta`, so its mean model is :meth:`mean_model` and
        it is positive exactly on :meth:`support`."""
        return self._accurate_prior_cached

    @cached_property
    def _accurate_prior_cached(self) -> FDMDistribution:
        return FDMDistribution(self.name, self.short_name, self.accurate_theta(),
                               np.array(self.reward), self.initial_state)

    def mc_moments(self, draws: int = PRIOR_DRAWS) -> tuple[np.ndarray, np.ndarray]:
        """Monte-Carlo :meth:`_moments`: ``draws`` structures from the generator seeded
        ``SeedSequence([PRIOR_SEED, id_hash64(short_name)])``, plus one pseudo-draw
        uniform over each row's :meth:`support`, all weighted equally."""
        rng = np.random.default_rng(np.random.SeedSequence(
            [PRIOR_SEED, id_hash64(self.short_name)]))
        acc = Moments(self.n_states, self.n_actions)
        w = 1.0 / (draws + 1)
        for _ in range(draws):
            acc.add(self.controlled_kernel(self.draw_structure(rng)), w)
        key = np.flatnonzero(self.support())
        row = key // self.n_states
        acc.add_flat(key, 1.0 / np.bincount(row)[row], w)
        return acc.result()

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form; :func:`bbrlcore.mdp.families.from_dict` rebuilds it from the
        family and its parameters."""
        return {"family": self.family, "params": dict(self.params),
                "short_name": self.short_name, "name": self.name,
                "n_states": self.n_states, "n_actions": self.n_actions,
                "initial_state": self.initial_state}

    def same_as(self, other: Any) -> bool:
        """Same family, parameters and names."""
        return isinstance(other, FamilyDistribution) and self.to_dict() == other.to_dict()

    def describe(self) -> str:
        """A few human-readable lines."""
        sup = self.support()
        det = int((sup.sum(axis=2) == 1).sum())
        params = ", ".join(f"{k}={fmt(v)}" for k, v in self.params.items())
        return "\n".join([
            f"{self.short_name}: {self.name}",
            f"  family {self.family} ({params}); structure drawn per MDP",
            f"  states {self.n_states}, actions {self.n_actions}, "
            f"initial state {self.initial_state}",
            f"  rewards {self.reward_type}, Rmax {self.r_max:g}",
            f"  possible transitions {int(sup.sum())} of {sup.size}; "
            f"{det} (x,u) rows of {sup.shape[0] * sup.shape[1]} deterministic in every MDP",
        ])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.short_name!r})"


def exact_mean(dist: FamilyDistribution) -> np.ndarray:
    """E[nominal P] by enumerating :meth:`FamilyDistribution.structures` (small instances;
    used to check :meth:`FamilyDistribution.mean_model`)."""
    total = np.zeros((dist.n_states, dist.n_actions, dist.n_states))
    for w, s in dist.structures():
        total += w * dist.nominal(s)
    return total
