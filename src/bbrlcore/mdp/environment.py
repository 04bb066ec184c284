r"""What a test MDP's environment is beside its transitions: reward laws and starts.

**Reward laws.** The reward of a transition :math:`x \xrightarrow{u} y` is drawn, at every
step, from its law (Colosseum's ``make_reward_stochastic`` draws Beta rewards; the paper's
rewards are constant):

=========  ====  =============================================  ===========================
kind       code  draw                                           mean
=========  ====  =============================================  ===========================
constant   0     ``loc``                                        ``loc``
gaussian   1     ``loc + scale·Z``, Z ~ N(0, 1)                 ``loc``
bernoulli  2     ``loc + scale·1{U < a}``, U ~ U(0, 1)           ``loc + scale·a``
beta       3     ``loc + scale·X``, X ~ Beta(a, b)               ``loc + scale·a / (a + b)``
=========  ====  =============================================  ===========================

A :class:`RewardLaws` lists the transitions whose reward is random (flat indices
``(x·nU + u)·nX + y``, increasing) with their laws; every other transition pays its
expected reward, the distribution's ``reward``, deterministically. Wherever an exact
value is computed (references, Optimal, hardness, an agent that knows the rewards) the
mean is what counts, so a distribution's ``reward`` is always the expected reward of each
transition.

**Starting distributions.** An episode (and a continuing interaction) starts from a draw
of the starting distribution: a fixed state, every state alike (``initial_state`` -1), or
``(states, probs)`` (:func:`check_start`).

**Per-MDP environments.** Where a drawn MDP's structure decides its rewards or starts
(MiniGrid's goal and starts are drawn with each MDP in Colosseum), a drawn MDP is an
:class:`Environment`: its transition probabilities and, where they are its own, its
expected rewards, laws and starts.

Examples
--------
>>> laws = RewardLaws.make(2, 1, keys=[1], kind=["beta"], loc=[0.0], scale=[1.0],
...                        a=[1.0], b=[3.0])
>>> laws.means().tolist()
[0.25]
>>> check_start(3, [0, 2], [0.5, 0.5], "x")
(array([0, 2]), array([0.5, 0.5]))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bbrlcore.errors import BBRLError

#: The kinds of reward law, by code (the column ``kind``).
KINDS = ("constant", "gaussian", "bernoulli", "beta")
CONSTANT, GAUSSIAN, BERNOULLI, BETA = range(4)
#: Tolerance of a starting distribution's sum.
START_SUM_TOL = 1e-12


def kind_code(kind: Any, what: str) -> int:
    """The code of a law's kind (a name of :data:`KINDS` or its code).

    >>> kind_code("beta", "x"), kind_code(1, "x")
    (3, 1)
    """
    if isinstance(kind, str):
        if kind not in KINDS:
            raise BBRLError(f"{what}: unknown reward law {kind!r}; expected one of "
                            f"{', '.join(KINDS)}")
        return KINDS.index(kind)
    k = int(kind)
    if not 0 <= k < len(KINDS):
        raise BBRLError(f"{what}: unknown reward law code {kind!r}; expected 0-3 "
                        f"({', '.join(KINDS)})")
    return k


@dataclass(frozen=True, eq=False)
class RewardLaws:
    """The transitions whose reward is random, with their laws (module docstring):
    ``keys`` int64 increasing flat indices, ``kind`` int8 codes (:data:`KINDS`),
    ``loc``, ``scale``, ``a``, ``b`` float64 aligned with them. Build with :meth:`make`
    (checked)."""

    n_states: int
    n_actions: int
    keys: np.ndarray
    kind: np.ndarray
    loc: np.ndarray
    scale: np.ndarray
    a: np.ndarray
    b: np.ndarray

    @classmethod
    def make(cls, n_states: int, n_actions: int, keys: Any, kind: Any, loc: Any,
             scale: Any, a: Any = None, b: Any = None, what: str = "reward laws"
             ) -> RewardLaws:
        """Checked laws: one :class:`BBRLError` naming ``what``, the transition and the
        parameter out of range (a Beta with a non-positive parameter, a Bernoulli
        probability outside [0, 1], a negative scale, a value that is not finite).
        Constant laws are dropped (their transitions pay their mean)."""
        nX, nU = int(n_states), int(n_actions)
        k = np.asarray(keys, dtype=np.int64).reshape(-1)
        n = k.size
        codes = np.asarray([kind_code(v, what) for v in np.asarray(kind, dtype=object)
                            .reshape(-1)], dtype=np.int8) if n else np.zeros(0, np.int8)

        def col(v: Any, name: str, default: float) -> np.ndarray:
            arr = np.full(n, default) if v is None else np.asarray(v, np.float64).reshape(-1)
            if arr.size != n:
                raise BBRLError(f"{what}: {name} holds {arr.size} values, expected {n} (one "
                                "per transition)")
            return arr.astype(np.float64)

        lo, sc, pa, pb = (col(loc, "loc", 0.0), col(scale, "scale", 1.0), col(a, "a", 0.0),
                          col(b, "b", 0.0))
        if codes.size != n:
            raise BBRLError(f"{what}: kind holds {codes.size} values, expected {n}")
        if n and (k[0] < 0 or k[-1] >= nX * nU * nX or (np.diff(k) <= 0).any()):
            raise BBRLError(f"{what}: keys must be increasing transition indices in "
                            f"[0, {nX * nU * nX})")

        def where(i: int) -> str:
            x, rest = divmod(int(k[i]), nU * nX)
            u, y = divmod(rest, nX)
            return f"transition ({x}, {u}, {y})"

        checks = [
            (~np.isfinite(lo) | ~np.isfinite(sc) | ~np.isfinite(pa) | ~np.isfinite(pb),
             "loc, scale, a and b must be finite"),
            (sc < 0, "scale must be >= 0"),
            ((codes == BERNOULLI) & ~((pa >= 0) & (pa <= 1)),
             "a Bernoulli's probability a must be in [0, 1]"),
            ((codes == BETA) & ~((pa > 0) & (pb > 0)),
             "a Beta's parameters a and b must be > 0"),
        ]
        for mask, msg in checks:
            if mask.any():
                i = int(np.argmax(mask))
                raise BBRLError(f"{what}: {where(i)} ({KINDS[codes[i]]}, loc {lo[i]:g}, "
                                f"scale {sc[i]:g}, a {pa[i]:g}, b {pb[i]:g}): {msg}")
        keep = codes != CONSTANT
        return cls(nX, nU, k[keep], codes[keep], lo[keep], sc[keep], pa[keep], pb[keep])

    @property
    def size(self) -> int:
        return int(self.keys.size)

    def means(self) -> np.ndarray:
        """The mean of each law, aligned with :attr:`keys` (module docstring)."""
        m = self.loc.copy()
        bern, beta = self.kind == BERNOULLI, self.kind == BETA
        m[bern] += self.scale[bern] * self.a[bern]
        m[beta] += self.scale[beta] * self.a[beta] / (self.a[beta] + self.b[beta])
        return m

    def to_dict(self) -> dict[str, Any]:
        """JSON-able (artefact metadata)."""
        return {"keys": self.keys.tolist(), "kind": self.kind.tolist(),
                "loc": self.loc.tolist(), "scale": self.scale.tolist(),
                "a": self.a.tolist(), "b": self.b.tolist()}

    @classmethod
    def from_dict(cls, n_states: int, n_actions: int, d: dict[str, Any],
                  what: str = "reward laws") -> RewardLaws:
        try:
            return cls.make(n_states, n_actions, d["keys"], d["kind"], d["loc"], d["scale"],
                            d["a"], d["b"], what)
        except KeyError as exc:
            raise BBRLError(f"{what}: lacks {exc.args[0]!r}") from None


def check_start(n_states: int, states: Any, probs: Any, what: str
                ) -> tuple[np.ndarray, np.ndarray]:
    """A checked starting distribution ``(states, probs)``: states in range and distinct
    (returned in increasing order), probabilities in (0, 1] summing to 1 (within
    :data:`START_SUM_TOL`); one :class:`BBRLError` naming ``what`` otherwise.

    >>> check_start(4, [3, 1], [0.25, 0.75], "start")
    (array([1, 3]), array([0.75, 0.25]))
    >>> check_start(4, [1, 2], [0.5, 0.4], "start")
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: start: the starting probabilities sum to 0.9, not 1
    """
    s = np.asarray(states).reshape(-1)
    p = np.asarray(probs, dtype=np.float64).reshape(-1)
    if s.size == 0 or s.size != p.size:
        raise BBRLError(f"{what}: a starting distribution needs one probability per "
                        f"starting state (got {s.size} states and {p.size} probabilities)")
    if s.dtype.kind not in "iu" or (s < 0).any() or (s >= n_states).any():
        raise BBRLError(f"{what}: starting states must be integers in [0, {n_states})")
    if np.unique(s).size != s.size:
        raise BBRLError(f"{what}: a starting state appears twice")
    if not np.isfinite(p).all() or (p <= 0).any() or (p > 1).any():
        raise BBRLError(f"{what}: starting probabilities must be in (0, 1]")
    total = float(p.sum())
    if abs(total - 1.0) > START_SUM_TOL:
        raise BBRLError(f"{what}: the starting probabilities sum to {total:.12g}, not 1")
    order = np.argsort(s, kind="stable")
    return s[order].astype(np.int64), p[order]


def start_array(n_states: int, initial_state: int,
                distribution: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """The starts as the kernels take them: float64 (2, m), the states and their
    cumulative probabilities; m = 0: every state alike (``initial_state`` -1, drawn as
    ``randint(0, nX)`` as always), m = 1: one state, no draw.

    >>> start_array(3, 2, None).tolist(), start_array(3, -1, None).shape
    ([[2.0], [1.0]], (2, 0))
    >>> start_array(3, 0, (np.array([0, 2]), np.array([0.25, 0.75]))).tolist()
    [[0.0, 2.0], [0.25, 1.0]]
    """
    if distribution is None:
        if initial_state < 0:
            return np.zeros((2, 0))
        return np.array([[float(initial_state)], [1.0]])
    s, p = distribution
    if s.size == 1:
        return np.array([[float(s[0])], [1.0]])
    c = np.cumsum(p)
    c[-1] = 1.0
    return np.vstack([s.astype(np.float64), c])


def start_probabilities(n_states: int, initial_state: int,
                        distribution: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """The starting distribution as a dense (nX,) vector (references, hardness).

    >>> start_probabilities(3, -1, None).tolist()
    [0.3333333333333333, 0.3333333333333333, 0.3333333333333333]
    """
    mu = np.zeros(n_states)
    if distribution is not None:
        mu[distribution[0]] = distribution[1]
    elif initial_state < 0:
        mu[:] = 1.0 / n_states
    else:
        mu[initial_state] = 1.0
    return mu


@dataclass(frozen=True, eq=False)
class Environment:
    """A drawn test MDP: its transition probabilities ``P`` (what ``draw_mdp`` returns)
    and, where they are its own rather than its distribution's, its expected rewards
    ``rewards`` (flat keys and values: ``(keys, values)``), reward ``laws`` and starting
    distribution ``start`` (``(states, probs)``); None: the distribution's."""

    P: np.ndarray
    rewards: tuple[np.ndarray, np.ndarray] | None = None
    laws: RewardLaws | None = None
    start: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def own(self) -> bool:
        """Whether anything besides the transitions is its own."""
        return not (self.rewards is None and self.laws is None and self.start is None)


# ---------------------------------------------------------------------------------------
# A distribution's laws and starts, and what the kernels take

#: The blocks of :func:`law_rows`, in order.
LAW_BLOCKS = ("kind", "loc", "scale", "a", "b")


def _slots(keys: np.ndarray, layout: Any, what: str) -> tuple[np.ndarray, ...]:
    """The (x, u, k) slots of ``layout`` of the transitions ``keys`` (every one in it)."""
    from bbrlcore.mdp import rows

    lk = rows.keys_of(layout)
    pos = np.searchsorted(lk, keys)
    bad = (pos >= lk.size) | (lk[np.minimum(pos, max(lk.size - 1, 0))] != keys) \
        if lk.size else np.ones(keys.size, bool)
    if bad.any():
        key = int(keys[int(np.argmax(bad))])
        nX, nU = layout.n_states, layout.n_actions
        x, rest = divmod(key, nU * nX)
        raise BBRLError(f"{what}: transition ({x}, {rest // nX}, {rest % nX}) has a reward "
                        "law but no probability in any MDP of the distribution")
    x, u, k = np.nonzero(layout.mask)
    return x[pos], u[pos], k[pos]


def law_rows(laws: RewardLaws, layout: Any) -> np.ndarray:
    """The laws as the kernels take them (their ``Rstd`` argument in reward mode 2,
    :func:`bbrlcore.agents._kernels.env_law_reward`): float64 (5·nX, nU, K), the blocks
    :data:`LAW_BLOCKS` (kind code, loc, scale, a, b) stacked, each with ``layout``'s
    slots; slots without a law have kind 0 (their reward is the mean, no draw).

    >>> from bbrlcore.mdp import rows
    >>> laws = RewardLaws.make(2, 1, keys=[1], kind=["bernoulli"], loc=[0.0],
    ...                        scale=[2.0], a=[0.5])
    >>> packed = law_rows(laws, rows.full(2, 1))   # (5·2, 1, 2)
    >>> packed.reshape(5, 2, 1, 2)[:, 0, 0, 1].tolist()  # transition (0, 0, 1)
    [2.0, 0.0, 2.0, 0.5, 0.0]
    """
    nX = layout.n_states
    out = np.zeros((len(LAW_BLOCKS), *layout.succ.shape))
    x, u, k = _slots(laws.keys, layout, "reward laws")
    for i, v in enumerate((laws.kind.astype(np.float64), laws.loc, laws.scale, laws.a,
                           laws.b)):
        out[i, x, u, k] = v
    return out.reshape(len(LAW_BLOCKS) * nX, *layout.succ.shape[1:])


def expected_at(dist: Any, keys: np.ndarray) -> np.ndarray:
    """A distribution's expected rewards of the transitions ``keys`` (in its support)."""
    lay = dist.support_layout
    x, u, k = _slots(np.asarray(keys, np.int64), lay, "reward laws")
    return np.asarray(dist.reward_rows)[x, u, k]


def reward_mode(dist: Any) -> int:
    """The kernels' reward mode of a distribution (:class:`~bbrlcore.agents.base.Episode`'s
    ``gaussian``): 2 with reward laws, 1 Gaussian rewards, 0 constant ones."""
    if getattr(dist, "reward_laws", None) is not None:
        return 2
    return int(dist.reward_type == "gaussian")


def episode_rewards(dist: Any, layout: Any, dense: bool = False
                    ) -> tuple[int, np.ndarray, np.ndarray]:
    """``(mode, R, Rstd)`` of an :class:`~bbrlcore.agents.base.Episode` on the
    distribution's support layout (``dense``: on the full layout, dense arrays)."""
    from bbrlcore.mdp import rows

    mode = reward_mode(dist)
    R = np.ascontiguousarray(dist.reward if dense else dist.reward_rows)
    if mode == 2:
        lay = rows.full(dist.n_states, dist.n_actions) if dense else layout
        return mode, R, law_rows(dist.reward_laws, lay)
    return mode, R, np.ascontiguousarray(dist.reward_std if dense else dist.reward_std_rows)


def with_environment(dist: Any, reward_laws: RewardLaws | None = None,
                     starts: tuple[Any, Any] | None = None, what: str | None = None) -> Any:
    """A copy of an FDM or family distribution whose rewards are drawn from
    ``reward_laws`` and whose episodes start from ``starts`` ``(states, probs)``
    (:func:`check_start`); None keeps the distribution's own. The laws' means must be the
    distribution's (expected) rewards of their transitions, and their transitions in its
    support; its rewards must be constant otherwise (not ``reward_type`` gaussian). One
    :class:`BBRLError` naming ``what`` (default: the distribution's short name) and the
    transition or parameter otherwise.

    >>> from bbrlcore.mdp import families
    >>> d = families.make("chain", size=3).test
    >>> e = with_environment(d, starts=([0, 1], [0.5, 0.5]))
    >>> e.starts[0].tolist(), d.starts
    ([0, 1], None)
    """
    import copy

    what = what or str(dist.short_name)
    nX, nU = int(dist.n_states), int(dist.n_actions)
    if reward_laws is not None:
        if (reward_laws.n_states, reward_laws.n_actions) != (nX, nU):
            raise BBRLError(f"{what}: reward laws of {reward_laws.n_states}x"
                            f"{reward_laws.n_actions} (states x actions) for a distribution "
                            f"of {nX}x{nU}")
        if dist.reward_type != "constant":
            raise BBRLError(f"{what}: reward laws need constant expected rewards "
                            f"(reward_type {dist.reward_type!r}); give Gaussian rewards as "
                            "gaussian laws")
        mean = reward_laws.means()
        have = expected_at(dist, reward_laws.keys)
        off = ~np.isclose(mean, have, rtol=1e-12, atol=1e-12)
        if off.any():
            i = int(np.argmax(off))
            x, rest = divmod(int(reward_laws.keys[i]), nU * nX)
            raise BBRLError(f"{what}: the reward law of transition ({x}, {rest // nX}, "
                            f"{rest % nX}) has mean {mean[i]:.12g} but the distribution's "
                            f"(expected) reward is {have[i]:.12g}")
        if reward_laws.size == 0:
            reward_laws = None
    if starts is not None:
        starts = check_start(nX, starts[0], starts[1], f"{what}: starts")
    out = copy.copy(dist)
    out.__dict__["reward_laws"] = reward_laws if reward_laws is not None else getattr(
        dist, "reward_laws", None)
    out.__dict__["starts"] = starts if starts is not None else getattr(dist, "starts", None)
    return out


def environment_dict(dist: Any) -> dict[str, Any]:
    """The laws and starts of a distribution, JSON-able (artefacts' metadata; empty when
    it has neither: the artefacts of the paper's protocol do not change)."""
    out: dict[str, Any] = {}
    laws = getattr(dist, "reward_laws", None)
    if laws is not None:
        out["reward_laws"] = laws.to_dict()
    starts = getattr(dist, "starts", None)
    if starts is not None:
        out["starts"] = {"states": starts[0].tolist(), "probs": starts[1].tolist()}
    return out


def from_environment_dict(dist: Any, d: dict[str, Any] | None, what: str) -> Any:
    """``dist`` with the laws and starts of :func:`environment_dict`'s ``d`` (checked)."""
    if not d:
        return dist
    laws = d.get("reward_laws")
    st = d.get("starts")
    try:
        starts = None if st is None else (st["states"], st["probs"])
    except (KeyError, TypeError):
        raise BBRLError(f"{what}: starts must hold 'states' and 'probs'") from None
    return with_environment(
        dist, None if laws is None else RewardLaws.from_dict(
            dist.n_states, dist.n_actions, laws, f"{what}: reward laws"), starts, what)


def beta_laws(dist: Any, c: float, lo: float | None = None, hi: float | None = None
              ) -> RewardLaws:
    """Colosseum's stochastic rewards (``make_reward_stochastic`` with
    ``reward_variance_multiplier`` c) around a distribution's expected rewards: each
    transition of its support whose expected reward μ lies strictly inside the reward
    range [lo, hi] (default: the distribution's smallest and largest reward) pays
    ``lo + (hi − lo)·X``, X ~ Beta(c, c(1/m − 1)), m = (μ − lo)/(hi − lo), so its mean is
    μ; rewards at the range's ends stay constant (a Beta cannot have mean 0 or 1).

    >>> from bbrlcore.mdp import families
    >>> d = families.make("riverswim", size=3).test
    >>> laws = beta_laws(d, 2.0)
    >>> bool(np.allclose(laws.means(), expected_at(d, laws.keys)))
    True
    """
    from bbrlcore.mdp import rows

    c = float(c)
    if not (np.isfinite(c) and c > 0):
        raise BBRLError(f"reward_noise: must be a number > 0, got {c!r}")
    lay = dist.support_layout
    keys = rows.keys_of(lay)
    mu = np.asarray(dist.reward_rows)[lay.mask]
    lo = float(mu.min(initial=0.0)) if lo is None else float(lo)
    hi = float(mu.max(initial=0.0)) if hi is None else float(hi)
    if not hi > lo:
        return RewardLaws.make(dist.n_states, dist.n_actions, [], [], [], [])
    m = (mu - lo) / (hi - lo)
    inside = (m > 0) & (m < 1)
    n = int(inside.sum())
    a = np.full(n, c)
    b = c * (1.0 / m[inside] - 1.0)
    # (its means equal μ to rounding; every exact value uses μ, the distribution's reward)
    return RewardLaws.make(dist.n_states, dist.n_actions, keys[inside], ["beta"] * n,
                           np.full(n, lo), np.full(n, hi - lo), a, b)
