r"""FDM distributions: Dirichlet priors over MDPs with known rewards.

An FDM ("flat Dirichlet multinomial") distribution over MDPs with ``nX`` states and
``nU`` actions draws, for every state-action pair :math:`(x,u)` independently, a
transition row

.. math::  P(x,u,\cdot) \sim \mathrm{Dir}\bigl(\theta(x,u,\cdot)\bigr),

with a zero concentration giving a transition of probability exactly zero. The reward of
a transition :math:`x \xrightarrow{u} y` is :math:`R(x,u,y)`, the same in every drawn MDP
(constant; or Gaussian with mean R and variance V). The *mean model* is the posterior mean
:math:`\theta/\sum_y\theta`.

The six distributions of the paper are built in (:data:`BUILTINS`): GC (Generalised
Chain), GDL (Generalised Double-Loop), Grid, and their "uniform prior" variants UGC, UGDL,
UGrid in which every concentration is 1. They equal the original library's files
(``shared/data/distributions``, checked by the test suite).

References
----------
Castronovo, Ernst, Couëtoux, Fonteneau, "Benchmarking for Bayesian Reinforcement
Learning", PLOS ONE 11(6), 2016, §5.1.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts, dat
from bbrlcore.mdp import rows
from bbrlcore.mdp.rows import Layout

REWARD_TYPES = ("constant", "gaussian")

#: Largest total concentration of a row: a Dirichlet beyond it is numerically a point
#: mass, and posterior variances (n^2 (n + 1) in SBOSS) must stay far from overflow.
MAX_CONCENTRATION = 1e15
#: Largest |reward|: returns and value bounds (Rmax / (1 - gamma)) must stay finite.
MAX_REWARD = 1e12
#: Largest number of transitions nX * nU * nX of a distribution (8 bytes each per array).
MAX_ENTRIES = 50_000_000


@dataclass(frozen=True, eq=False)
class Entries:
    """What an FDM distribution stores: its **entries**, the transitions with a non-zero
    concentration, mean reward or reward variance, as flat indices ``keys`` (``(x·nU + u)
    ·nX + y``, strictly increasing) with the values aligned with them (``variance`` None:
    constant rewards, or no variance given). Every other transition has a zero
    concentration, reward and variance. A family's distribution has its support and the
    few rewards beside it; the paper's files add the rewards they give to impossible
    transitions; only a distribution with every transition possible stores them all."""

    keys: np.ndarray
    theta: np.ndarray
    reward: np.ndarray
    variance: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(self.keys.size)


#: Entries of a dense (nX, nU, nX) block handled at once where a computation must follow
#: the dense arrays' arithmetic exactly (draws, row sums): 16 MB per float64 array.
CHUNK_ENTRIES = 1 << 21


class FDMDistribution:
    """A Dirichlet distribution over MDPs with known rewards.

    Parameters
    ----------
    name, short_name
        Long name (``"GChain distribution"``) and short name (``"GC"``).
    theta
        Dirichlet concentrations, shape (nX, nU, nX), non-negative, each (x, u) row with
        at least one positive entry.
    reward
        Mean reward R(x, u, y) of each transition, shape (nX, nU, nX).
    initial_state
        The initial state of every trajectory, or -1 for a uniformly drawn one.
    reward_type
        ``"constant"`` or ``"gaussian"`` (reward ~ Normal(R, variance)).
    reward_variance
        Variances for Gaussian rewards (None: zero).

    A distribution is held as its **entries** (:class:`Entries`: the transitions with a
    non-zero concentration, reward or variance, and their values), so that a large
    problem whose rows have few successors costs memory in proportion to the transitions
    that exist. Built from dense arrays (above), it keeps them; built from its entries
    (:meth:`from_entries`, :meth:`from_rows`: every problem family, every file read back)
    it never holds a dense array unless one is asked for: :attr:`theta`, :attr:`reward`,
    :attr:`reward_variance`, :attr:`reward_std`, :meth:`mean_model` and :meth:`draw_mdp`
    are the dense (nX, nU, nX) views, for small problems and code written for them;
    :attr:`support_layout`, :attr:`theta_rows`, :attr:`reward_rows`,
    :attr:`reward_std_rows`, :meth:`rewards_on` and :meth:`draw_rows` are what the
    test sets, the agents and the cost model use. A distribution is immutable.

    Examples
    --------
    >>> gc = builtin("GC")
    >>> gc.n_states, gc.n_actions, gc.initial_state
    (5, 3, 0)
    >>> P = gc.draw_mdp(np.random.default_rng(0))
    >>> bool(np.allclose(P.sum(axis=2), 1.0)), bool((P[gc.theta == 0] == 0).all())
    (True, True)
    >>> gc.entries.nnz, gc.support_layout.nnz  # the support, and rewards beside it
    (39, 30)
    """

    name: str
    short_name: str
    initial_state: int
    reward_type: str
    #: reward laws and a starting distribution (:mod:`bbrlcore.mdp.environment`; None:
    #: the rewards are ``reward``'s, the start ``initial_state``);
    #: :func:`~bbrlcore.mdp.environment.with_environment` gives them
    reward_laws: Any = None
    starts: Any = None
    #: what the prior says about the rewards (:mod:`bbrlcore.mdp.reward_prior`; None:
    #: known, the paper's protocol); a name suffix ``+rbeta`` / ``+rnig`` gives it
    reward_prior: Any = None
    #: the concentration α of a Dirichlet on every next state, replacing ``theta`` as the
    #: transition prior (:mod:`bbrlcore.mdp.transition_prior`; None: ``theta``, the
    #: paper's); a name suffix ``+dir<α>`` gives it
    dirichlet_all: Any = None

    def __init__(
        self, name: str, short_name: str, theta: Any, reward: Any, initial_state: int = 0,
        reward_type: str = "constant", reward_variance: Any = None,
    ) -> None:
        _set_fields(self, name, short_name, initial_state, reward_type)
        src = f"distribution {self.short_name!r}"
        th = as_real_array(theta, f"{src}: theta")
        r = as_real_array(reward, f"{src}: reward")
        var = None if reward_variance is None else as_real_array(
            reward_variance, f"{src}: reward_variance")
        _validate_dense(self, th, r, var, src)
        keep = (th > 0) | (r != 0)
        if var is not None:
            keep |= var != 0
        keys = np.flatnonzero(keep)
        d = self.__dict__
        d["n_states"], d["n_actions"] = int(th.shape[0]), int(th.shape[1])
        d["_data"] = Entries(keys, th.ravel()[keys], r.ravel()[keys],
                             None if var is None else var.ravel()[keys])
        d["theta"], d["reward"], d["reward_variance"] = th, r, var

    # -- other constructors ------------------------------------------------------------
    @classmethod
    def from_entries(
        cls, name: str, short_name: str, n_states: int, n_actions: int, keys: Any,
        theta: Any, reward: Any, initial_state: int = 0, reward_type: str = "constant",
        reward_variance: Any = None,
    ) -> FDMDistribution:
        """A distribution given by its entries: ``keys`` the flat indices ``(x·nU + u)·nX
        + y`` of the transitions it stores (strictly increasing), ``theta``, ``reward``
        (and ``reward_variance``) their values; every other transition has a zero
        concentration, reward and variance. Checked as the dense constructor checks its
        arrays (one :class:`BBRLError` naming the distribution and the transition).

        >>> d = FDMDistribution.from_entries("two states", "Two", 2, 1, [0, 1, 3],
        ...                                  [2.0, 6.0, 1.0], [0.0, 1.0, 0.0])
        >>> d.theta[:, 0].tolist(), d.support_layout.nnz
        ([[2.0, 6.0], [0.0, 1.0]], 3)
        """
        self = cls.__new__(cls)
        _set_fields(self, name, short_name, initial_state, reward_type)
        src = f"distribution {self.short_name!r}"
        nX, nU = _check_size(n_states, n_actions, src)
        k = np.asarray(keys)
        if k.ndim != 1 or (k.size and k.dtype.kind not in "iu"):
            raise BBRLError(f"{src}: entries must be a list of integer indices")
        k = np.array(k, dtype=np.int64)  # (copies: the distribution's own, read-only)
        vals = []
        for what, v in (("theta", theta), ("reward", reward), ("reward_variance",
                                                                reward_variance)):
            if v is None:
                vals.append(None)
                continue
            a = (np.array(as_real_array(v, f"{src}: {what}")).reshape(-1) if np.ndim(v)
                 else None)
            if a is None or a.shape != k.shape:
                raise BBRLError(f"{src}: {what} holds {0 if a is None else a.size} values, "
                                f"expected {k.size} (one per entry)")
            vals.append(a)
        th, r, var = vals
        if len(k) and (k[0] < 0 or k[-1] >= nX * nU * nX or (np.diff(k) <= 0).any()):
            raise BBRLError(f"{src}: entries must be increasing transition indices in "
                            f"[0, {nX * nU * nX}) ({nX} states x {nU} actions)")
        _validate_entries(self, nX, nU, k, th, r, var, src)
        keep = (th > 0) | (r != 0)
        if var is not None:
            keep |= var != 0
        if not keep.all():
            k, th, r = k[keep], th[keep], r[keep]
            var = None if var is None else var[keep]
        d = self.__dict__
        d["n_states"], d["n_actions"] = nX, nU
        d["_data"] = Entries(_frozen(k), _frozen(th), _frozen(r),
                             None if var is None else _frozen(var))
        return self

    @classmethod
    def from_rows(
        cls, name: str, short_name: str, layout: Layout, theta: Any, reward: Any,
        initial_state: int = 0, reward_type: str = "constant", reward_variance: Any = None,
    ) -> FDMDistribution:
        """A distribution given by its values on padded rows ``layout``
        (:mod:`bbrlcore.mdp.rows`): concentrations ``theta``, rewards ``reward`` (and
        variances), each of the layout's shape (nX, nU, K); every transition outside the
        layout has a zero concentration, reward and variance.

        >>> from bbrlcore.mdp import rows
        >>> lay = builtin("GC").support_layout
        >>> u = FDMDistribution.from_rows("ones", "Ones", lay, lay.mask * 1.0, lay.mask * 0.0)
        >>> u.support_layout.same_as(lay), float(u.theta.sum())
        (True, 30.0)
        """
        src = f"distribution {short_name!r}"
        vals = [None if v is None else rows.check_values(as_real_array(v, src), layout, src)
                for v in (theta, reward, reward_variance)]
        keys = rows.keys_of(layout)
        m = layout.mask
        return cls.from_entries(name, short_name, layout.n_states, layout.n_actions, keys,
                                vals[0][m], vals[1][m], initial_state, reward_type,
                                None if vals[2] is None else vals[2][m])

    @classmethod
    def lazy(
        cls, name: str, short_name: str, n_states: int, n_actions: int, initial_state: int,
        build: Any, support: Any = None,
    ) -> FDMDistribution:
        """A distribution whose names and sizes are known now and whose entries are
        computed by ``build()`` (an :class:`FDMDistribution` of the same names and sizes)
        when first needed: a problem family's priors, so that checking a configuration
        of many ladder points builds none of them. ``support()``, if given, gives
        :attr:`support_layout` (which must be that of ``build()``) without the values."""
        self = cls.__new__(cls)
        _set_fields(self, name, short_name, initial_state, "constant")
        d = self.__dict__
        d["n_states"], d["n_actions"] = int(n_states), int(n_actions)
        d["_build"], d["_support_fn"] = build, support
        return self

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"FDMDistribution is immutable (cannot set {key!r})")

    def __delattr__(self, key: str) -> None:
        raise AttributeError(f"FDMDistribution is immutable (cannot delete {key!r})")

    def __repr__(self) -> str:
        return f"FDMDistribution({self.short_name!r}, {self.n_states} states, " \
               f"{self.n_actions} actions)"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if "_build" in state:  # (a function need not pickle: build now)
            state["_data"] = self._data
            state.pop("_build")
            state.pop("_support_fn", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @cached_property
    def _data(self) -> Entries:
        built = self.__dict__["_build"]()
        if (built.n_states, built.n_actions, built.short_name) != (
                self.n_states, self.n_actions, self.short_name):
            raise AssertionError(f"{self.short_name}: the lazy distribution built another")
        return built._data

    # ----------------------------------------------------------------------------------
    @property
    def entry_keys(self) -> np.ndarray:
        """The flat indices ``(x·nU + u)·nX + y`` of the stored transitions (read-only)."""
        return self._data.keys

    @cached_property
    def entries(self) -> Layout:
        """The transitions the distribution stores (:class:`Entries`) as padded rows:
        every one with a non-zero concentration, mean reward or reward variance (its
        support, plus the rewards the original files give to impossible transitions);
        what :meth:`to_dict` and :meth:`to_table` write. (Padded to the widest row: a
        row with a reward on every successor makes it as wide as a dense array; the
        package itself uses :attr:`entry_keys`.)"""
        return rows.from_keys(self._data.keys, self.n_states, self.n_actions)

    @property
    def r_max(self) -> float:
        """The largest mean reward over every transition (used for horizons and bounds)."""
        return self._extreme(np.max)

    @property
    def r_min(self) -> float:
        """The smallest mean reward over every transition."""
        return self._extreme(np.min)

    def _extreme(self, fn: Any) -> float:
        r = self._data.reward
        total = self.n_states * self.n_actions * self.n_states
        if r.size < total:  # a transition not stored has reward 0
            return float(fn(r, initial=0.0))
        return float(fn(r))

    @cached_property
    def theta(self) -> np.ndarray:
        """Dense (nX, nU, nX) concentrations (built on first use for a distribution given
        by its entries: nX²·nU values; the package works on :attr:`theta_rows`)."""
        return _frozen(self._dense(self._data.theta))

    @cached_property
    def reward(self) -> np.ndarray:
        """Dense (nX, nU, nX) mean rewards (see :attr:`theta`)."""
        return _frozen(self._dense(self._data.reward))

    @cached_property
    def reward_variance(self) -> np.ndarray | None:
        """Dense (nX, nU, nX) reward variances, or None (see :attr:`theta`)."""
        v = self._data.variance
        return None if v is None else _frozen(self._dense(v))

    @cached_property
    def reward_std(self) -> np.ndarray:
        """Standard deviation of each transition's reward (zeros for constant rewards),
        dense (see :attr:`theta`)."""
        if self.reward_variance is None:
            return _frozen(np.zeros((self.n_states, self.n_actions, self.n_states)))
        return _frozen(np.sqrt(self.reward_variance))

    def _dense(self, values: np.ndarray) -> np.ndarray:
        nX, nU = self.n_states, self.n_actions
        out = np.zeros(nX * nU * nX)
        out[self._data.keys] = values
        return out.reshape(nX, nU, nX)

    def mean_model(self) -> np.ndarray:
        """The posterior mean :math:`\\theta/\\sum_y \\theta` (the prior's mean MDP),
        dense."""
        return self.theta / self.theta.sum(axis=2, keepdims=True)

    def draw_mdp(self, rng: np.random.Generator) -> np.ndarray:
        """Draw one transition matrix P[x, u, y] (a Dirichlet per (x, u) row), dense;
        :meth:`draw_rows` draws the same MDP on the support. A prior ``+dir<α>`` draws
        every row from Dir(α) over all S next states, the prior the agents are told
        (:func:`bbrlcore.mdp.transition_prior.draw_dense`)."""
        if self.dirichlet_all is not None:
            from bbrlcore.mdp.transition_prior import draw_dense

            return draw_dense(self, rng)
        theta = self.theta
        pos = theta > 0
        g = np.where(pos, rng.standard_gamma(np.where(pos, theta, 1.0)), 0.0)
        s = g.sum(axis=2, keepdims=True)
        tiny = s[..., 0] < 1e-300
        if tiny.any():  # all mass on one uniformly chosen entry of the support
            for x, u in zip(*np.nonzero(tiny), strict=True):
                support = np.flatnonzero(pos[x, u])
                g[x, u] = 0.0
                g[x, u, rng.choice(support)] = 1.0
            s = g.sum(axis=2, keepdims=True)
        return g / s

    # ----------------------------------------------------------------------------------
    # Sparse rows (bbrlcore.mdp.rows): what the test sets and the agents' kernels use

    @cached_property
    def _support(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions in the entries of the support's transitions (``theta > 0``), and
        their flat indices."""
        e = self._data
        at = np.flatnonzero(e.theta > 0)
        return at, e.keys[at]

    @cached_property
    def support_layout(self) -> Layout:
        """The Dirichlet's support as padded rows: the transitions with ``theta > 0``
        (every transition a drawn MDP can have), increasing in each row."""
        fn = self.__dict__.get("_support_fn")
        if fn is not None and "_data" not in self.__dict__:
            return fn()
        return rows.from_keys(self._support[1], self.n_states, self.n_actions)

    def _on_support(self, values: np.ndarray) -> np.ndarray:
        lay = self.support_layout
        out = np.zeros(lay.succ.shape)
        out[lay.mask] = values[self._support[0]]
        return _frozen(out)

    @cached_property
    def theta_rows(self) -> np.ndarray:
        """``theta`` on :attr:`support_layout` (read-only)."""
        return self._on_support(self._data.theta)

    @cached_property
    def reward_rows(self) -> np.ndarray:
        """The mean rewards on :attr:`support_layout` (read-only)."""
        return self._on_support(self._data.reward)

    @cached_property
    def reward_std_rows(self) -> np.ndarray:
        """The rewards' standard deviations on :attr:`support_layout` (read-only)."""
        v = self._data.variance
        if v is None:
            return _frozen(np.zeros(self.support_layout.succ.shape))
        return self._on_support(np.sqrt(v))

    def rewards_on(self, layout: Layout) -> np.ndarray:
        """The mean rewards on another layout (of the same sizes), 0 on its padding:
        ``rows.gather(self.reward, layout)`` without the dense array."""
        e = self._data
        keys = rows.keys_of(layout)
        pos = np.minimum(np.searchsorted(e.keys, keys), max(e.keys.size - 1, 0))
        found = e.keys[pos] == keys if e.keys.size else np.zeros(keys.size, dtype=bool)
        out = np.zeros(layout.succ.shape)
        out[layout.mask] = np.where(found, e.reward[pos] if e.keys.size else 0.0, 0.0)
        return out

    @cached_property
    def reward_row_sums(self) -> np.ndarray:
        """:math:`\\sum_y R(x, u, y)` over every successor ``y`` of each (x, u), shape
        (nX, nU) (read-only): the sums of the dense reward array's rows, in its
        arithmetic (computed a block of rows at a time, never the whole array)."""
        nX, nU = self.n_states, self.n_actions
        out = np.empty((nX, nU))
        for x0, x1, block in self.dense_blocks("reward"):
            out[x0:x1] = block.sum(axis=2)
        return _frozen(out)

    def dense_blocks(self, which: str = "theta") -> Iterator[tuple[int, int, np.ndarray]]:
        """The dense array ``which`` (``theta``, ``reward``, ``reward_std``) a block of
        states at a time: ``(x0, x1, block)`` with ``block`` the rows ``x0 <= x < x1``,
        shape (x1 - x0, nU, nX), about :data:`CHUNK_ENTRIES` values each (hash or reduce a
        large distribution's dense arrays in their own arithmetic without holding them).

        >>> gc = builtin("GC")
        >>> b = np.concatenate([blk for _, _, blk in gc.dense_blocks("reward")])
        >>> bool(np.array_equal(b, gc.reward))
        True
        """
        e = self._data
        values = {"theta": e.theta, "reward": e.reward, "reward_std": _std(e)}[which]
        nX, nU = self.n_states, self.n_actions
        per_x = nU * nX
        step = max(1, CHUNK_ENTRIES // per_x)
        for x0 in range(0, nX, step):
            x1 = min(nX, x0 + step)
            lo, hi = np.searchsorted(e.keys, [x0 * per_x, x1 * per_x])
            block = np.zeros((x1 - x0) * per_x)
            block[e.keys[lo:hi] - x0 * per_x] = values[lo:hi]
            yield x0, x1, block.reshape(x1 - x0, nU, nX)

    def draw_rows(self, rng: np.random.Generator) -> np.ndarray:
        """:meth:`draw_mdp`'s MDP (the same draws of ``rng``, bit for bit) as its values on
        :attr:`support_layout`, shape (nX, nU, K). The gamma draws of :meth:`draw_mdp`
        cover every transition (a unit shape where ``theta`` is zero), so they are made
        here too, a block of rows at a time, and only the support's are kept. A prior
        ``+dir<α>`` is refused in one line (its draws can go to any next state:
        :meth:`draw_mdp` draws them, densely)."""
        if self.dirichlet_all is not None:
            from bbrlcore.mdp.transition_prior import refuse_rows

            refuse_rows(self)
        nX, nU = self.n_states, self.n_actions
        at, keys = self._support
        th = self._data.theta[at]
        g = np.empty(keys.size)
        s = np.empty(nX * nU)
        per_x = nU * nX
        step = max(1, CHUNK_ENTRIES // per_x)
        for x0 in range(0, nX, step):
            x1 = min(nX, x0 + step)
            lo, hi = np.searchsorted(keys, [x0 * per_x, x1 * per_x])
            loc = keys[lo:hi] - x0 * per_x
            shape = np.ones((x1 - x0) * per_x)
            shape[loc] = th[lo:hi]
            draws = rng.standard_gamma(shape)
            kept = np.zeros_like(shape)
            kept[loc] = draws[loc]
            g[lo:hi] = kept[loc]
            s[x0 * nU:x1 * nU] = kept.reshape(x1 - x0, nU, nX).sum(axis=2).reshape(-1)
        row = keys // nX
        for r in np.flatnonzero(s < 1e-300):  # all mass on one uniformly chosen entry
            lo, hi = np.searchsorted(row, [r, r + 1])
            support = keys[lo:hi] - r * nX
            g[lo:hi] = 0.0
            g[lo + int(np.searchsorted(support, rng.choice(support)))] = 1.0
            s[r] = 1.0
        lay = self.support_layout
        out = np.zeros(lay.succ.shape)
        out[lay.mask] = g / s[row]
        return out

    @classmethod
    def centred_on(
        cls, name: str, short_name: str, P: np.ndarray, reward: np.ndarray,
        concentration: float, initial_state: int = 0,
    ) -> FDMDistribution:
        r"""A distribution centred on the MDP ``P``: :math:`\theta = c\,P`, so the mean
        model is ``P``, zero probabilities stay impossible, and the larger the
        concentration ``c`` the closer drawn MDPs are to ``P`` (each row's variances are
        :math:`p(1-p)/(c+1)`).

        Examples
        --------
        >>> P = np.zeros((2, 1, 2)); P[0, 0] = [0.25, 0.75]; P[1, 0, 1] = 1.0
        >>> d = FDMDistribution.centred_on("two states", "Two", P, np.ones_like(P), 8.0)
        >>> d.theta[0, 0].tolist(), bool(np.allclose(d.mean_model(), P))
        ([2.0, 6.0], True)
        """
        P = np.asarray(P, dtype=np.float64)
        check_concentration(concentration, short_name)
        if P.ndim != 3 or not np.isfinite(P).all() or (P < 0).any() or not np.allclose(
                P.sum(axis=2), 1.0, atol=1e-9):
            raise BBRLError(f"distribution {short_name!r}: P must have shape (nX, nU, nX) "
                            "with rows of probabilities summing to one")
        return cls(name, short_name, concentration * P, np.asarray(reward, dtype=np.float64),
                   initial_state)

    def same_as(self, other: FDMDistribution) -> bool:
        """Equal names, sizes, initial state, reward type and arrays."""
        a, b = self._data, other._data
        return (
            self.name == other.name
            and self.short_name == other.short_name
            and self.initial_state == other.initial_state
            and self.reward_type == other.reward_type
            and (self.n_states, self.n_actions) == (other.n_states, other.n_actions)
            and np.array_equal(a.keys, b.keys)
            and np.array_equal(a.theta, b.theta)
            and np.array_equal(a.reward, b.reward)
            and np.array_equal(_std(a), _std(b))
            and _environment(self) == _environment(other)
            and self.dirichlet_all == other.dirichlet_all
        )

    def renamed(self, short_name: str) -> FDMDistribution:
        """The same distribution under another short name (no check: see
        :func:`renamed`)."""
        twin = type(self).__new__(type(self))
        twin.__dict__.update(self.__dict__)
        twin.__dict__["short_name"] = short_name
        twin.__dict__.pop("_build", None)
        twin.__dict__["_data"] = self._data
        return twin

    def describe(self) -> str:
        """A few human-readable lines (``bbrl distribution show``)."""
        e = self._data
        nX, nU = self.n_states, self.n_actions
        at, keys = self._support
        nnz = np.bincount(keys // nX, minlength=nX * nU)
        det = int((nnz == 1).sum())
        ini = "uniform at random" if self.initial_state < 0 else str(self.initial_state)
        return "\n".join(
            [
                f"{self.short_name}: {self.name}",
                f"  states {nX}, actions {nU}, initial state {ini}",
                f"  rewards {self.reward_type}, Rmax {self.r_max:g}",
                f"  concentrations: total {e.theta.sum():g}, "
                f"{at.size} non-zero of {nX * nU * nX}; "
                f"{det} deterministic (x,u) rows of {nnz.size}",
            ] + describe_environment(self)
            + ([f"  transitions: Dirichlet({self.dirichlet_all:g}) on every next state "
                "(replaces the concentrations above)"] if self.dirichlet_all is not None
               else [])
            + ([f"  rewards unknown to the agent: {self.reward_prior.kind} prior "
                f"{list(self.reward_prior.params)}"] if self.reward_prior is not None else [])
        )

    # ----------------------------------------------------------------------------------
    # Serialisation

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (embedded in test-set and agent artefacts): the names, sizes and
        the values of the stored transitions (:attr:`entries`, in (x, u, y) order)."""
        e = self._data
        nX, nU = self.n_states, self.n_actions
        d: dict[str, Any] = {
            "name": self.name,
            "short_name": self.short_name,
            "n_states": nX,
            "n_actions": nU,
            "initial_state": self.initial_state,
            "reward_type": self.reward_type,
            "entries": {"nsucc": np.bincount(e.keys // nX, minlength=nX * nU).tolist(),
                        "succ": (e.keys % nX).tolist()},
            "theta": e.theta.tolist(),
            "reward": e.reward.tolist(),
        }
        if e.variance is not None:
            d["reward_variance"] = e.variance.tolist()
        from bbrlcore.mdp.environment import environment_dict

        d.update(environment_dict(self))  # (reward laws and starts, when it has them)
        if self.reward_prior is not None:  # (unknown rewards: the prior over them)
            d["reward_prior"] = self.reward_prior.to_dict()
        if self.dirichlet_all is not None:  # (the support unknown: Dir(α) everywhere)
            d["dirichlet_all"] = self.dirichlet_all
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "distribution") -> FDMDistribution:
        """The inverse of :meth:`to_dict`; any problem is one :class:`BBRLError` naming
        ``source`` (the file the dictionary came from). A dictionary written before
        sparse rows (dense lists of nX·nU·nX values) still reads."""
        if not isinstance(d, dict):
            raise BBRLError(f"{source}: malformed embedded distribution (not a JSON object)")
        try:
            for key in ("n_states", "n_actions", "initial_state"):
                if isinstance(d[key], bool) or not isinstance(d[key], int):
                    raise ValueError(f"{key} must be an integer, got {d[key]!r}")
            for key in ("name", "short_name", "reward_type"):
                if not isinstance(d.get(key, "constant"), str):
                    raise ValueError(f"{key} must be a string")
            nX, nU = d["n_states"], d["n_actions"]
            if not (1 <= nX and 1 <= nU and nX * nU * nX <= MAX_ENTRIES):
                raise ValueError(f"bad size {nX} states x {nU} actions")
            var = d.get("reward_variance")
            if "entries" in d:
                nsucc, succ = rows.decode_csr(d["entries"], nX, nU, f"{source}: entries")
                keys = np.repeat(np.arange(nsucc.size, dtype=np.int64), nsucc) * nX + succ
                n = keys.size
            else:  # (before sparse rows: dense lists)
                keys, n = None, nX * nU * nX

            def arr(v: Any, what: str) -> np.ndarray:
                if not isinstance(v, list):
                    raise ValueError(f"{what} must be a list of numbers")
                a = np.asarray(v, dtype=np.float64)
                if a.shape != (n,):
                    raise ValueError(f"{what} holds {a.size} values, expected {n}")
                return a if keys is not None else a.reshape(nX, nU, nX)

            theta, reward = arr(d["theta"], "theta"), arr(d["reward"], "reward")
            variance = None if var is None else arr(var, "reward_variance")
            common = dict(initial_state=d["initial_state"],
                          reward_type=d.get("reward_type", "constant"),
                          reward_variance=variance)
            if keys is None:
                out = cls(d["name"], d["short_name"], theta, reward, **common)
            else:
                out = cls.from_entries(d["name"], d["short_name"], nX, nU, keys, theta,
                                       reward, **common)
        except (KeyError, ValueError, TypeError) as exc:
            raise BBRLError(f"{source}: malformed embedded distribution ({exc})") from None
        except BBRLError as exc:
            raise BBRLError(f"{source}: {exc}") from None
        from bbrlcore.mdp.environment import from_environment_dict

        out = from_environment_dict(
            out, {k: d[k] for k in ("reward_laws", "starts") if k in d}, source)
        if d.get("reward_prior") is not None:
            from bbrlcore.mdp.reward_prior import RewardPrior

            rp = RewardPrior.from_dict(d["reward_prior"], source)
            if not rp.known:
                out.__dict__["reward_prior"] = rp
        _read_dirichlet_all(out, d, source)
        return out

    def to_dat(self) -> str:
        """The original ``DirMultiDistribution`` text."""
        nX, nU = self.n_states, self.n_actions
        has_v = self.reward_variance is not None
        count = 3 + nX * nU * nX + 1 + nX * nU * nX + 1 + (nX * nU * nX if has_v else 0)
        lines = ["Serializable", "0", "IMDPDistribution", "2", self.name, self.short_name]
        lines += ["MDPDistribution", "0", "DirMultiDistribution", str(count)]
        lines += [str(nX), str(nU), str(self.initial_state)]
        dat.write_matrix(lines, self.theta)
        lines.append(str(REWARD_TYPES.index(self.reward_type)))
        dat.write_matrix(lines, self.reward)
        lines.append("1" if has_v else "0")
        if has_v:
            dat.write_matrix(lines, self.reward_variance)  # type: ignore[arg-type]
        return "\n".join(lines) + "\n"

    def to_table(self) -> pl.DataFrame:
        """Long form: one row per stored transition (x, u, y) (:attr:`entries`; a
        transition left out has a zero concentration, reward and variance)."""
        e = self._data
        nX, nU = self.n_states, self.n_actions
        row, y = np.divmod(e.keys, nX)
        x, u = np.divmod(row, nU)
        cols = {"x": x.astype(np.int64), "u": u.astype(np.int64), "y": y.astype(np.int64),
                "theta": np.array(e.theta), "reward": np.array(e.reward)}
        if e.variance is not None:
            cols["reward_variance"] = np.array(e.variance)
        return pl.DataFrame(cols)


def describe_environment(d: Any) -> list[str]:
    """The lines of ``describe`` on a distribution's reward laws and starts (none when
    it has neither)."""
    from bbrlcore.mdp.environment import KINDS

    out = []
    laws = getattr(d, "reward_laws", None)
    if laws is not None:
        kinds = ", ".join(f"{int((laws.kind == i).sum())} {k}" for i, k in enumerate(KINDS)
                          if (laws.kind == i).any())
        out.append(f"  reward laws: {laws.size} transition{'s' * (laws.size != 1)} with a "
                   f"random reward ({kinds}); the rewards above are their means")
    starts = getattr(d, "starts", None)
    if starts is not None:
        out.append("  starts: " + ", ".join(f"{int(s)} ({p:g})"
                                            for s, p in zip(*starts, strict=True)))
    return out


def _read_dirichlet_all(out: FDMDistribution, d: dict[str, Any], source: str) -> None:
    """Set ``out``'s every-next-state concentration from ``d["dirichlet_all"]`` (checked:
    one :class:`BBRLError` naming ``source``), when given."""
    if d.get("dirichlet_all") is None:
        return
    from bbrlcore.mdp.transition_prior import check_alpha

    a = d["dirichlet_all"]
    if isinstance(a, str):  # (a number, never text)
        a = math.nan
    out.__dict__["dirichlet_all"] = check_alpha(a, f"{source}: dirichlet_all of prior "
                                                   f"{out.short_name}")


def _environment(d: Any) -> dict[str, Any]:
    from bbrlcore.mdp.environment import environment_dict

    return environment_dict(d)


def _std(e: Entries) -> np.ndarray:
    return np.zeros(e.keys.size) if e.variance is None else np.sqrt(e.variance)


def check_concentration(concentration: Any, short_name: str) -> float:
    """``concentration`` if it is a number > 0 and finite, else one :class:`BBRLError`."""
    if not (isinstance(concentration, (int, float)) and concentration > 0
            and math.isfinite(concentration)):
        raise BBRLError(f"distribution {short_name!r}: concentration must be > 0 and "
                        f"finite, got {concentration!r}")
    return float(concentration)


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _show(v: Any) -> str:
    """A short one-line description of a value for an error message."""
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape}"
    text = repr(v).replace("\n", " ")
    return text if len(text) <= 40 else text[:37] + "..."


def as_real_array(value: Any, what: str) -> np.ndarray:
    """``value`` (an array, or nested lists or tuples of real numbers) as a float64 array;
    anything else (strings, None, complex numbers, ragged lists) is one
    :class:`BBRLError` naming ``what``."""
    try:
        with np.errstate(all="ignore"):
            raw = np.asarray(value)
            kind = raw.dtype.kind
            if kind == "O" and not all(isinstance(x, numbers.Real) for x in raw.flat):
                kind = "U"  # None, strings, other objects
            if kind not in "iufO":
                raise TypeError(f"got {_show(value)}")
            return raw.astype(np.float64, copy=False)
    except (TypeError, ValueError, OverflowError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BBRLError(f"{what} must be an array of real numbers ({why})") from None


def _set_fields(d: FDMDistribution, name: Any, short_name: Any, initial_state: Any,
                reward_type: Any) -> None:
    """Check and set the names, the reward type and the initial state (a NumPy integer
    as an int); anything of the wrong type is one :class:`BBRLError` naming the field (so
    that what is accepted can be written and read back)."""
    for key, v in (("name", name), ("short_name", short_name)):
        if not isinstance(v, str):
            raise BBRLError(f"distribution: {key} must be a string, got {_show(v)}")
        if "\n" in v or "\r" in v:
            raise BBRLError(f"distribution: {key} {v!r} must hold no line break")
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise BBRLError(f"distribution: {key} {v!r} is not valid Unicode text") from None
    src = f"distribution {short_name!r}"
    if not isinstance(reward_type, str):
        raise BBRLError(f"{src}: reward type must be one of {', '.join(REWARD_TYPES)}, got "
                        f"{_show(reward_type)}")
    ini = initial_state
    if isinstance(ini, (bool, np.bool_)) or not isinstance(ini, (int, np.integer)):
        raise BBRLError(f"{src}: initial state must be an integer (-1 for a uniformly drawn "
                        f"one), got {_show(ini)}")
    d.__dict__.update(name=name, short_name=short_name, initial_state=int(ini),
                      reward_type=reward_type)


def _check_size(n_states: Any, n_actions: Any, src: str) -> tuple[int, int]:
    for what, v in (("n_states", n_states), ("n_actions", n_actions)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
            raise BBRLError(f"{src}: {what} must be an integer >= 1, got {_show(v)}")
    nX, nU = int(n_states), int(n_actions)
    if nX * nU * nX > MAX_ENTRIES:
        raise BBRLError(f"{src}: {nX} states x {nU} actions is too large "
                        f"({nX * nU * nX:,} transitions; limit {MAX_ENTRIES:,})")
    return nX, nU


def _validate_dense(d: FDMDistribution, th: np.ndarray, r: np.ndarray,
                    var: np.ndarray | None, src: str) -> None:
    """Check dense arrays' shapes and values; raise :class:`BBRLError` naming the
    problem."""
    if th.ndim != 3 or th.shape[0] != th.shape[2] or th.shape[0] < 1 or th.shape[1] < 1:
        raise BBRLError(f"{src}: concentrations must have shape (nX, nU, nX), got {th.shape}")
    if r.shape != th.shape:
        raise BBRLError(f"{src}: rewards have shape {r.shape}, expected {th.shape}")
    if not np.isfinite(th).all():
        raise BBRLError(f"{src}: non-finite Dirichlet concentration")
    if th.size > MAX_ENTRIES:
        raise BBRLError(
            f"{src}: {th.shape[0]} states x {th.shape[1]} actions is too large "
            f"({th.size:,} transitions; limit {MAX_ENTRIES:,})"
        )
    if (th < 0).any():
        x, u, y = np.argwhere(th < 0)[0]
        raise BBRLError(
            f"{src}: negative Dirichlet concentration theta({x},{u},{y}) = {th[x, u, y]:g}"
        )
    with np.errstate(over="ignore"):
        sums = th.sum(axis=2)
    _check_row_sums(sums, src)
    if not np.isfinite(r).all():
        raise BBRLError(f"{src}: non-finite reward")
    if np.abs(r).max() > MAX_REWARD:
        x, u, y = np.argwhere(np.abs(r) > MAX_REWARD)[0]
        raise BBRLError(
            f"{src}: reward R({x},{u},{y}) = {r[x, u, y]:g} is out of range "
            f"(|R| <= {MAX_REWARD:g})"
        )
    _check_rest(d, var, th.shape, src)


def _check_row_sums(sums: np.ndarray, src: str) -> None:
    empty = sums <= 0
    if empty.any():
        x, u = np.argwhere(empty)[0]
        raise BBRLError(f"{src}: row (x={x}, u={u}) has no positive concentration")
    big = ~(sums <= MAX_CONCENTRATION)
    if big.any():
        x, u = np.argwhere(big)[0]
        raise BBRLError(
            f"{src}: row (x={x}, u={u}) has total concentration {sums[x, u]:g}, above "
            f"{MAX_CONCENTRATION:g} (numerically a point mass; agents' posterior arithmetic "
            "would overflow): scale the row down"
        )


def _check_rest(d: FDMDistribution, var: np.ndarray | None, shape: tuple[int, ...],
                src: str) -> None:
    """The reward type, the variances and the initial state."""
    if d.reward_type not in REWARD_TYPES:
        raise BBRLError(f"{src}: unknown reward type {d.reward_type!r}")
    if var is not None:
        if (var.shape != shape or not np.isfinite(var).all() or (var < 0).any()
                or (var > MAX_REWARD**2).any()):
            raise BBRLError(
                f"{src}: reward variances must be finite, in [0, {MAX_REWARD**2:g}], "
                f"shape {shape}"
            )
    nX = shape[0]
    if not (-1 <= d.initial_state < nX):
        raise BBRLError(f"{src}: initial state {d.initial_state} outside -1..{nX - 1}")


def _validate_entries(d: FDMDistribution, nX: int, nU: int, keys: np.ndarray,
                      th: np.ndarray, r: np.ndarray, var: np.ndarray | None,
                      src: str) -> None:
    """:func:`_validate_dense`'s checks on a distribution's entries (the same messages:
    a transition ``(x, u, y)`` of a flat index ``keys[i]``)."""

    def at(i: int) -> tuple[int, int, int]:
        row, y = divmod(int(keys[i]), nX)
        return row // nU, row % nU, y

    if not np.isfinite(th).all():
        raise BBRLError(f"{src}: non-finite Dirichlet concentration")
    if (th < 0).any():
        i = int(np.flatnonzero(th < 0)[0])
        x, u, y = at(i)
        raise BBRLError(f"{src}: negative Dirichlet concentration theta({x},{u},{y}) = "
                        f"{th[i]:g}")
    with np.errstate(over="ignore", invalid="ignore"):
        sums = np.bincount(keys // nX, weights=th, minlength=nX * nU).reshape(nX, nU)
    _check_row_sums(sums, src)
    if not np.isfinite(r).all():
        raise BBRLError(f"{src}: non-finite reward")
    if r.size and np.abs(r).max() > MAX_REWARD:
        i = int(np.flatnonzero(np.abs(r) > MAX_REWARD)[0])
        x, u, y = at(i)
        raise BBRLError(f"{src}: reward R({x},{u},{y}) = {r[i]:g} is out of range "
                        f"(|R| <= {MAX_REWARD:g})")
    _check_rest(d, var, th.shape, src)


def validate(d: FDMDistribution, source: str | None = None) -> None:
    """Check a distribution's values (its entries: concentrations, rewards, variances,
    initial state); raise :class:`BBRLError` naming the problem. Every distribution is
    checked when built: this checks one again under another name (``source``)."""
    e = d._data
    _validate_entries(d, d.n_states, d.n_actions, e.keys, e.theta, e.reward, e.variance,
                      source or f"distribution {d.short_name!r}")


# ---------------------------------------------------------------------------------------
# The original .dat format


def parse_dat(text: str, source: str = "<text>") -> FDMDistribution:
    """Parse a ``DirMultiDistribution`` file, checking every field count."""
    rd = dat.Reader(text, source)
    if rd.section("Serializable") != 0:
        raise BBRLError(f"{source}: section Serializable must have 0 fields")
    if rd.section("IMDPDistribution") != 2:
        raise BBRLError(f"{source}: section IMDPDistribution must have 2 fields")
    name = rd.line()
    short = rd.line()
    if rd.section("MDPDistribution") != 0:
        raise BBRLError(f"{source}: section MDPDistribution must have 0 fields")
    count = rd.section("DirMultiDistribution")
    nX = rd.integer("number of states")
    nU = rd.integer("number of actions")
    ini = rd.integer("initial state")
    if nX < 1 or nU < 1:
        raise BBRLError(f"{source}: need at least one state and one action (got {nX}, {nU})")
    if nX * nU * nX > MAX_ENTRIES:
        raise BBRLError(f"{source}: {nX} states x {nU} actions is too large "
                        f"({nX * nU * nX:,} transitions; limit {MAX_ENTRIES:,})")
    theta = rd.matrix(nX, nU, "theta")
    rtype = rd.integer("reward type")
    if rtype not in (0, 1):
        raise BBRLError(f"{source}: reward type must be 0 (constant) or 1 (Gaussian), got {rtype}")
    reward = rd.matrix(nX, nU, "reward")
    has_v = rd.integer("variance flag")
    var = rd.matrix(nX, nU, "variance") if has_v == 1 else None
    block = nX * nU * nX
    expected = 3 + block + 1 + block + 1 + (block if has_v == 1 else 0)
    if count != expected:
        raise BBRLError(
            f"{source}: DirMultiDistribution declares {count} fields, but holds {expected}"
        )
    rest = "".join(rd.lines[rd.pos :]).strip()
    if rest:
        raise BBRLError(f"{source}: unexpected content after the distribution (line {rd.pos + 1})")
    try:
        return FDMDistribution(
            name=name,
            short_name=short,
            theta=theta,
            reward=reward,
            initial_state=ini,
            reward_type=REWARD_TYPES[rtype],
            reward_variance=var,
        )
    except BBRLError as exc:
        raise BBRLError(f"{source}: {exc}") from None


def read_dat(path: str | Path) -> FDMDistribution:
    """Read a ``.dat`` distribution file (plain or zlib-compressed)."""
    return parse_dat(dat.read_text(path), str(path))


def write_dat(d: FDMDistribution, path: str | Path, compress: bool = False) -> None:
    """Write the original format (zlib level 9 when ``compress``), atomically."""
    import zlib

    data = d.to_dat().encode()
    if compress:
        data = zlib.compress(data, 9)
    with artefacts.atomic_path(path) as tmp:
        tmp.write_bytes(data)


# ---------------------------------------------------------------------------------------
# Parquet artefact


#: The columns of a distribution artefact: type and meaning (the documentation's column
#: reference is generated from this; a test checks it against a written distribution).
#: The metadata holds the name, the sizes and the initial state.
DISTRIBUTION_COLUMNS: dict[str, tuple[str, str]] = {
    "x": ("Int64", "the state"),
    "u": ("Int64", "the action"),
    "y": ("Int64", "the next state (one row per transition the distribution allows)"),
    "theta": ("Float64", "the Dirichlet concentration of (x, u, y)"),
    "reward": ("Float64", "the known reward of (x, u, y)"),
    "reward_variance": ("Float64", "only for Gaussian rewards (`reward_type` gaussian in the "
                                   "metadata): their variance"),
}


def write_parquet(d: Any, path: str | Path) -> None:
    """Write a distribution artefact.

    An FDM distribution is its table (one row per transition) and its names and sizes. A
    problem family's test distribution that draws its structure
    (:class:`~bbrlcore.mdp.families.FamilyDistribution`) is written as its **accurate
    prior** (an FDM of the same name, so every reader of FDM files takes it as a prior)
    with the family and its parameters under the metadata key ``family``, from which
    :func:`read_test` rebuilds the test distribution itself."""
    family = None
    if not isinstance(d, FDMDistribution):
        family = d.to_dict()
        d = d.accurate_prior()
    meta = {"name": d.name, "short_name": d.short_name, "n_states": d.n_states,
            "n_actions": d.n_actions, "initial_state": d.initial_state,
            "reward_type": d.reward_type}
    if family is not None:
        meta["family"] = family
    else:  # (its reward laws and starts, when it has them)
        meta.update(_environment(d))
    if d.reward_prior is not None:  # (a prior whose rewards are unknown)
        meta["reward_prior"] = d.reward_prior.to_dict()
    if d.dirichlet_all is not None:  # (a prior that does not know the support)
        meta["dirichlet_all"] = d.dirichlet_all
    artefacts.write_artefact(path, d.to_table(), "distribution", meta)


def read_test(path: str | Path) -> Any:
    """The test distribution of a distribution artefact: the family's (rebuilt from its
    parameters, checked against the names and sizes the file records) when the file
    records one (:func:`write_parquet`), else the FDM distribution it holds."""
    meta = artefacts.read_meta(path, "distribution")
    if "family" in meta:
        from bbrlcore.mdp import families

        return families.from_dict(meta["family"], str(path))
    return read_parquet(path)


def read_parquet(path: str | Path) -> FDMDistribution:
    table, meta = artefacts.read_artefact(path, "distribution")
    m = artefacts.MetaReader(path, meta, "distribution")
    nX = m.int("n_states", lo=1, hi=MAX_ENTRIES)
    nU = m.int("n_actions", lo=1, hi=MAX_ENTRIES)
    if nX * nU * nX > MAX_ENTRIES:
        raise m.fail("n_states", f"too large ({nX} states x {nU} actions)")
    if len(table) > nX * nU * nX:
        raise BBRLError(f"{path}: {len(table)} transition rows, more than the "
                        f"{nX * nU * nX} of {nX} states x {nU} actions; "
                        f"{artefacts.REGENERATE['distribution']}")
    try:
        t = table.sort(["x", "u", "y"])
        xs, us, ys = (t[c].to_numpy().astype(np.int64) for c in ("x", "u", "y"))
        if len(t) and (xs.min() < 0 or ys.min() < 0 or us.min() < 0 or xs.max() >= nX
                       or ys.max() >= nX or us.max() >= nU):
            raise BBRLError(f"{path}: an (x, u, y) row outside {nX} states x {nU} actions")
        flat = (xs * nU + us) * nX + ys
        if (np.diff(flat) <= 0).any():
            raise BBRLError(f"{path}: the (x, u, y) columns list a transition of {nX} states "
                            f"x {nU} actions more than once")

        def col(name: str) -> np.ndarray:
            return t[name].to_numpy().astype(np.float64)

        var = col("reward_variance") if "reward_variance" in t.columns else None
        from bbrlcore.mdp.environment import from_environment_dict

        out = from_environment_dict(FDMDistribution.from_entries(
            m.str("name"), m.str("short_name"), nX, nU, flat, col("theta"), col("reward"),
            initial_state=m.int("initial_state", lo=-1, hi=nX - 1),
            reward_type=m.str("reward_type", default="constant"),
            reward_variance=var,
        ), {k: meta[k] for k in ("reward_laws", "starts") if k in meta}, str(path))
        if meta.get("reward_prior") is not None:
            from bbrlcore.mdp.reward_prior import RewardPrior

            rp = RewardPrior.from_dict(meta["reward_prior"], str(path))
            if not rp.known:
                out.__dict__["reward_prior"] = rp
        _read_dirichlet_all(out, meta, str(path))
        return out
    except (KeyError, ValueError, TypeError, pl.exceptions.PolarsError) as exc:
        raise BBRLError(f"{path}: malformed distribution artefact ({exc})") from None
    except BBRLError as exc:
        msg = str(exc)
        raise BBRLError(msg if msg.startswith(str(path)) else f"{path}: {msg}") from None


# ---------------------------------------------------------------------------------------
# Built-ins


def _gc(uniform: bool) -> FDMDistribution:
    nX, nU = 5, 3
    theta = np.zeros((nX, nU, nX))
    for x in range(nX):
        theta[x, :, 0] = 1.0
        theta[x, :, min(x + 1, nX - 1)] = 1.0  # advance; the last state stays
    reward = np.zeros((nX, nU, nX))
    reward[:, :, 0] = 2.0
    reward[:, :, 4] = 10.0
    if uniform:
        theta[:] = 1.0
    name = ("Uniform " if uniform else "") + "GChain distribution"
    return FDMDistribution(name, ("U" if uniform else "") + "GC", theta, reward, 0)


def _gdl(uniform: bool) -> FDMDistribution:
    nX, nU = 9, 2
    theta = np.zeros((nX, nU, nX))
    rows = {0: (1, 5), 1: (2,), 2: (3,), 3: (4,), 4: (0,), 5: (0, 6), 6: (0, 7), 7: (0, 8), 8: (0,)}
    for x, ys in rows.items():
        for y in ys:
            theta[x, :, y] = 1.0
    reward = np.zeros((nX, nU, nX))
    reward[4, :, 0] = 1.0
    reward[8, :, 0] = 2.0
    if uniform:
        theta[:] = 1.0
    name = ("Uniform " if uniform else "") + "GDouble-Loop distribution"
    return FDMDistribution(name, ("U" if uniform else "") + "GDL", theta, reward, 0)


def _grid(uniform: bool) -> FDMDistribution:
    side = 5
    nX, nU = side * side, 4
    theta = np.zeros((nX, nU, nX))
    for x in range(nX):
        row, col = divmod(x, side)
        moves = [(row, col - 1), (row, col + 1), (row - 1, col), (row + 1, col)]
        for u, (r2, c2) in enumerate(moves):
            theta[x, u, x] = 1.0
            if 0 <= r2 < side and 0 <= c2 < side:
                target = r2 * side + c2
                theta[x, u, 0 if target == nX - 1 else target] = 1.0  # the goal sends back
    reward = np.zeros((nX, nU, nX))
    reward[23, 1, 0] = 10.0
    reward[19, 3, 0] = 10.0
    if uniform:
        theta[:] = 1.0
    name = ("Uniform " if uniform else "") + "Grid distribution"
    return FDMDistribution(name, ("U" if uniform else "") + "Grid", theta, reward, 0)


_BUILDERS = {
    "GC": lambda: _gc(False),
    "GDL": lambda: _gdl(False),
    "Grid": lambda: _grid(False),
    "UGC": lambda: _gc(True),
    "UGDL": lambda: _gdl(True),
    "UGrid": lambda: _grid(True),
}

#: Names of the built-in distributions.
BUILTINS: tuple[str, ...] = tuple(_BUILDERS)

#: For each uniform prior, the test distribution it is an inaccurate prior of.
ACCURATE_OF = {"UGC": "GC", "UGDL": "GDL", "UGrid": "Grid"}


def builtin(name: str) -> FDMDistribution:
    """One of the paper's distributions: GC, GDL, Grid, UGC, UGDL, UGrid."""
    try:
        return _BUILDERS[name]()
    except KeyError:
        from bbrlcore.mdp import families

        why = families.name_error(name)
        if why is not None:
            raise BBRLError(f"distribution {name!r}: {why}") from None
        raise BBRLError(
            f"unknown distribution {name!r} (built-ins: {', '.join(BUILTINS)}; a problem "
            "family's name such as DeepSea-20 or UDeepSea-20 (bbrl families); "
            "or give a .dat or distribution .parquet file)"
        ) from None


def load(spec: str | Path) -> FDMDistribution:
    """An FDM distribution (a prior): a built-in name, a problem family's name
    (``DeepSea-20``: its accurate prior; ``UDeepSea-20``: its uniform prior), a ``.dat``
    file (plain or zlib) or a distribution Parquet file (a family test distribution's
    file holds its accurate prior). :func:`load_test` gives test distributions."""
    s = str(spec)
    from bbrlcore.mdp import transition_prior as TP

    if not Path(s).exists():
        base, alpha, rkind = TP.split_suffixes(s)
        if alpha is not None or rkind != "known":
            return TP.with_suffixes(load(base), alpha, rkind)
    if s in _BUILDERS:
        return builtin(s)
    named = _family_named(s)  # like the built-ins' names, before files (./DeepSea-20)
    if named is not None:
        problem, kind = named
        return problem.prior("uniform" if kind == "uniform" else "accurate")
    p = Path(s)
    if not p.exists():
        if p.suffix or "/" in s:
            raise BBRLError(f"{s}: no such file")
        return builtin(s)
    if p.suffix == ".parquet" or _is_parquet(p):
        return read_parquet(p)
    return read_dat(p)


def load_test(spec: str | Path) -> Any:
    """A test distribution, named or read as :func:`load` does, except that a problem
    family's name (``DeepSea-20``) or file gives its test distribution, which may draw
    its structure (:class:`~bbrlcore.mdp.families.FamilyDistribution`, not an FDM). A name
    with a reward-prior suffix (``UGC+rbeta``) is a prior: :func:`load`'s."""
    s = str(spec)
    from bbrlcore.mdp.transition_prior import split_suffixes

    if not Path(s).exists() and split_suffixes(s)[0] != s:
        return load(s)
    if s in _BUILDERS:
        return builtin(s)
    named = _family_named(s)
    if named is not None:
        problem, kind = named
        return problem.prior("uniform") if kind == "uniform" else problem.test
    p = Path(s)
    if not p.exists():
        return load(s)
    if p.suffix == ".parquet" or _is_parquet(p):
        return read_test(p)
    return read_dat(p)


def _family_named(name: str) -> Any:
    """``(Problem, "test" | "uniform")`` for a problem family's short name, else None."""
    from bbrlcore.mdp import families

    return families.from_name(name)


#: What a distribution's short name may hold (it names files and experiments).
SHORT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+]*")


def renamed(d: Any, short_name: str) -> Any:
    """The same distribution under another short name (the long name is kept). A problem
    family's test distribution that draws its structure keeps the name its parameters
    give (it is rebuilt from them): renaming it is refused."""
    if short_name == d.short_name:
        return d
    if not isinstance(d, FDMDistribution):
        raise BBRLError(f"--short-name {short_name!r}: {d.short_name} is a problem family's "
                        "test distribution: its name is derived from its parameters and "
                        "cannot change")
    if not SHORT_NAME.fullmatch(short_name):
        raise BBRLError(f"--short-name {short_name!r}: letters, digits, '_', '.' and '+' only")
    why = reserved(short_name)
    if why:
        raise BBRLError(f"--short-name {short_name!r}: {why}; give it another name")
    return d.renamed(short_name)


def reserved(short_name: str) -> str | None:
    """Why ``short_name`` cannot name a distribution of one's own (it would pass for a
    built-in, a problem family's or a Colosseum benchmark instance's distribution, or for
    one of their priors with a suffix such as ``+rbeta``, and its runs would merge with
    theirs; names that differ from those only in case are refused too, since results
    are files named after distributions and some file systems ignore case), or None.

    >>> reserved("GC"), reserved("gc") is not None, reserved("SixArms") is not None
    ("'GC' is a built-in distribution", True, True)
    >>> reserved("RiverSwim7") is None, reserved("MyChain") is None
    (True, True)
    >>> reserved("deepsea-20")
    "'deepsea-20' differs from the problem family's distribution 'DeepSea-20' only in case"
    >>> reserved("UGC+rbeta")
    "'UGC+rbeta' is a prior of the built-in distribution 'UGC' (suffix '+rbeta')"
    """
    head, plus, tail = short_name.partition("+")
    if plus and head:
        found = _reserved_as(head)
        if found is not None:
            return f"{short_name!r} is a prior of the {found[0]} {found[1]!r} (suffix '+{tail}')"
    found = _reserved_as(short_name)
    if found is None:
        return None
    what, name = found
    if name == short_name:
        return (f"{short_name!r} is a built-in distribution" if what == "built-in distribution"
                else f"{short_name!r} is the name of a {what}")
    return f"{short_name!r} differs from the {what} {name!r} only in case"


def _reserved_as(short_name: str) -> tuple[str, str] | None:
    """(what, its exact name) of the built-in, Colosseum instance or problem family's
    distribution whose name equals ``short_name`` up to case, or None."""
    low = short_name.lower()
    for b in BUILTINS:
        if b.lower() == low:
            return "built-in distribution", b
    from bbrlcore.mdp import families
    from bbrlcore.mdp.families import colosseum_instances

    for inst in colosseum_instances.INSTANCES:
        for name in (inst, "U" + inst):
            if name.lower() == low:
                return "Colosseum benchmark instance", name
    candidates = [short_name]
    for spec in families.FAMILIES.values():
        for head in (spec.display, "U" + spec.display):
            if low.startswith(head.lower()) and not short_name.startswith(head):
                candidates.append(head + short_name[len(head):])
    for candidate in candidates:
        try:
            named = families.from_name(candidate)
        except BBRLError:
            named = None
        if named is not None:
            return "problem family's distribution", candidate
    return None


def _is_parquet(p: Path) -> bool:
    try:
        with open(p, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def horizon_for_epsilon(epsilon: float, gamma: float, r_max: float) -> int:
    r"""Horizon guaranteeing a truncation error below ``epsilon`` (paper §3.2):

    .. math:: T = \left\lceil \frac{\log(\epsilon (1-\gamma)/R_{max})}{\log\gamma} \right\rceil

    Examples
    --------
    >>> horizon_for_epsilon(0.01, 0.95, 10.0)
    194
    """
    if not (0 < gamma < 1):
        raise BBRLError(f"--epsilon needs a discount factor in (0, 1), got {gamma}")
    if not (0 < epsilon and math.isfinite(epsilon)):
        raise BBRLError(f"--epsilon {epsilon}: must be a finite number > 0")
    if not (0 < r_max and math.isfinite(r_max)):
        raise BBRLError(f"--epsilon: the largest reward must be > 0 and finite, got {r_max}")
    x = epsilon * (1 - gamma) / r_max
    if 0 < x < math.inf:
        t = math.log(x) / math.log(gamma)
    else:  # underflow or overflow: the same in logarithms
        t = (math.log(epsilon) + math.log1p(-gamma) - math.log(r_max)) / math.log(gamma)
    return max(1, math.ceil(t))


def dumps(d: FDMDistribution) -> str:
    """Compact JSON of the distribution (for artefact metadata)."""
    return json.dumps(d.to_dict())
