r"""Sparse transition rows: each state-action pair's successors, and values aligned with them.

Most problems of the benchmark have few successors per state-action pair: a DeepSea of
size 50 has 2,500 states but at most a handful of successors per row, so a dense
``(nX, nU, nX)`` array is 99.9 % zeros, and a Bellman sweep, a posterior draw or a
transition that walks whole rows pays :math:`n_X^2 n_U` instead of the number of
transitions that exist. bbrl stores every test MDP, and runs every built-in agent, on
**padded rows** (the ELLPACK layout of sparse-matrix libraries):

* ``succ`` — int64 ``(nX, nU, K)``: the successors of row ``(x, u)`` in increasing order
  in ``succ[x, u, :nsucc[x, u]]`` (``K`` is the widest row; the tail of a shorter row is
  padding: state 0 with value 0);
* ``nsucc`` — int64 ``(nX, nU)``: the number of successors of each row;
* values — float64 ``(nX, nU, K)`` aligned with ``succ``: the transition probabilities
  of a test MDP, the Dirichlet concentrations of a prior, the rewards, the counts of a
  posterior.

Why padded rows and not CSR. Padded rows keep what the kernels were written for: the
entries of a row are ``[x, u, :]`` of a 3-d array, a value array has the shape of the
layout whatever it holds, and an agent's posterior counts, its mean model and the
rewards are all indexed by the same ``(x, u, k)``; every loop stops at ``nsucc[x, u]``, so
the work is that of the transitions whatever the padding. The padding costs memory only
where rows are much shorter than the widest: none for the paper's dense UGrid (every row
full: padded rows are then exactly the dense array, ``succ[x, u, k] = k``), little for
DeepSea (1 to 3 successors a row), RiverSwim, the grids; most for Taxi, whose widest
rows (pick-up and drop-off under ``p_rand``) hold 10 successors while most hold one —
Taxi-13 stores 162,240 slots for 18,252 transitions, 130 MB for 100 test MDPs. CSR would
save that padding at the price of an indirection in every kernel; at these sizes it is
not worth it.

A layout is shared by every MDP of a test set (the test distribution's support: every
transition some drawn MDP can have), so a test MDP is stored as its values only. An
agent works on the union of its prior's support and the test distribution's support
(:func:`union`): its posterior counts are zero on a test transition its prior rules out
until it observes one, exactly as a dense count array would be.

A dense array is the layout whose rows are all full: :func:`full` (``K = nX``,
``succ[x, u, k] = k``), so every kernel written on padded rows also runs on the dense
arrays of a small problem unchanged.

Examples
--------
>>> import numpy as np
>>> P = np.zeros((2, 1, 2)); P[0, 0] = [0.25, 0.75]; P[1, 0, 1] = 1.0
>>> lay = layout_of(P > 0)
>>> lay.succ[:, 0].tolist(), lay.nsucc[:, 0].tolist(), lay.width
([[0, 1], [1, 0]], [2, 1], 2)
>>> v = gather(P, lay)
>>> v[:, 0].tolist()
[[0.25, 0.75], [1.0, 0.0]]
>>> bool((scatter(v, lay) == P).all())
True
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numba import njit

from bbrlcore.errors import BBRLError


@dataclass(frozen=True, eq=False)
class Layout:
    """Padded successor rows (module docstring): ``succ`` (nX, nU, K) int64 and
    ``nsucc`` (nX, nU) int64, with ``nX`` states."""

    succ: np.ndarray
    nsucc: np.ndarray
    n_states: int

    @property
    def n_actions(self) -> int:
        return int(self.nsucc.shape[1])

    @property
    def width(self) -> int:
        """K, the widest row (the last axis of every value array)."""
        return int(self.succ.shape[2])

    @cached_property
    def nnz(self) -> int:
        """The number of transitions the layout holds."""
        return int(self.nsucc.sum())

    @cached_property
    def mask(self) -> np.ndarray:
        """Boolean (nX, nU, K): which slots hold a successor (the others are padding)."""
        return np.arange(self.width) < self.nsucc[..., None]

    @property
    def is_full(self) -> bool:
        """Whether every row holds every state (the layout of a dense array)."""
        return self.width == self.n_states and bool((self.nsucc == self.n_states).all())

    def same_as(self, other: Layout) -> bool:
        return (self.n_states == other.n_states and self.succ.shape == other.succ.shape
                and np.array_equal(self.nsucc, other.nsucc)
                and bool((self.succ[self.mask] == other.succ[other.mask]).all()))

    def dense_mask(self) -> np.ndarray:
        """Boolean (nX, nU, nX): the transitions the layout holds."""
        out = np.zeros((self.n_states, self.n_actions, self.n_states), dtype=bool)
        x, u, k = np.nonzero(self.mask)
        out[x, u, self.succ[x, u, k]] = True
        return out

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """``(indptr, indices)`` of the rows ``x * nU + u`` (compressed sparse rows)."""
        indptr = np.zeros(self.nsucc.size + 1, dtype=np.int64)
        np.cumsum(self.nsucc.ravel(), out=indptr[1:])
        return indptr, self.succ[self.mask].astype(np.int64)

    def digest(self) -> str:
        """A short fingerprint (sha256 of the sizes and successor lists)."""
        import hashlib

        h = hashlib.sha256()
        h.update(np.array([self.n_states, self.n_actions, self.width], np.int64).tobytes())
        h.update(np.ascontiguousarray(self.nsucc, np.int64).tobytes())
        h.update(np.ascontiguousarray(self.succ[self.mask], np.int64).tobytes())
        return h.hexdigest()[:16]


def full(n_states: int, n_actions: int) -> Layout:
    """The layout of a dense array: every row holds every state (``succ[x, u, k] = k``).

    >>> full(3, 2).succ[1, 1].tolist()
    [0, 1, 2]
    """
    succ = np.broadcast_to(np.arange(n_states, dtype=np.int64),
                           (n_states, n_actions, n_states)).copy()
    return Layout(succ, np.full((n_states, n_actions), n_states, dtype=np.int64),
                  int(n_states))


def layout_of(mask: np.ndarray) -> Layout:
    """The layout of the ``True`` entries of a boolean ``(nX, nU, nX)`` array."""
    mask = np.asarray(mask, dtype=bool)
    nX, nU, _ = mask.shape
    nsucc = mask.sum(axis=2).astype(np.int64)
    K = int(nsucc.max(initial=0))
    succ = np.zeros((nX, nU, max(K, 1)), dtype=np.int64)
    x, u, y = np.nonzero(mask)  # row-major: increasing y within each row
    succ[x, u, _ranks(nsucc)] = y
    return Layout(succ, nsucc, int(nX))


def from_csr(indptr: np.ndarray, indices: np.ndarray, n_states: int, n_actions: int,
             width: int | None = None) -> Layout:
    """The layout of compressed sparse rows (rows ``x * nU + u``, indices increasing in
    each row); ``width`` pads to at least that many slots."""
    nsucc = np.diff(np.asarray(indptr, dtype=np.int64)).reshape(n_states, n_actions)
    K = max(int(nsucc.max(initial=0)), 1, width or 1)
    succ = np.zeros((n_states, n_actions, K), dtype=np.int64)
    x, u = np.divmod(np.repeat(np.arange(n_states * n_actions), nsucc.ravel()), n_actions)
    succ[x, u, _ranks(nsucc)] = np.asarray(indices, dtype=np.int64)
    return Layout(succ, nsucc, int(n_states))


def _ranks(nsucc: np.ndarray) -> np.ndarray:
    """For the entries of every row in row-major order, their slot in the row."""
    counts = nsucc.ravel()
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(int(counts.sum())) - starts


def read_only(a: np.ndarray) -> np.ndarray:
    """``a`` as a read-only array (a view when ``a`` is writable; ``a`` itself is left
    alone): test MDPs read from files are read-only, so every path hands the kernels
    read-only arrays and numba compiles each for one type only.

    >>> a = np.zeros(2)
    >>> read_only(a).flags.writeable, a.flags.writeable
    (False, True)
    """
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def gather(values: np.ndarray, layout: Layout, dtype: type = np.float64) -> np.ndarray:
    """A dense ``(nX, nU, nX)`` (or ``(..., nX, nU, nX)``) array's values on ``layout``:
    ``out[..., x, u, k] = values[..., x, u, succ[x, u, k]]``, padding 0."""
    values = np.asarray(values)
    nX, nU = layout.n_states, layout.n_actions
    x = np.arange(nX)[:, None, None]
    u = np.arange(nU)[None, :, None]
    out = values[..., x, u, layout.succ].astype(dtype, copy=True)
    out[..., ~layout.mask] = 0
    return out


def scatter(values: np.ndarray, layout: Layout) -> np.ndarray:
    """The dense ``(..., nX, nU, nX)`` array of values on ``layout`` (zeros elsewhere)."""
    values = np.asarray(values)
    nX, nU = layout.n_states, layout.n_actions
    out = np.zeros(values.shape[:-3] + (nX, nU, nX), dtype=values.dtype)
    x, u, k = np.nonzero(layout.mask)
    out[..., x, u, layout.succ[x, u, k]] = values[..., x, u, k]
    return out


def union(a: Layout, b: Layout) -> Layout:
    """The layout holding the transitions of ``a`` and of ``b``; ``a`` itself when it
    already holds ``b``'s."""
    if a.n_states != b.n_states or a.n_actions != b.n_actions:
        raise BBRLError(f"layouts of {a.n_states}x{a.n_actions} and {b.n_states}x"
                        f"{b.n_actions} (states x actions) cannot be joined")
    if contains(a, b):
        return a
    nX, nU = a.n_states, a.n_actions
    ka = (np.arange(nX * nU).repeat(a.nsucc.ravel()) * nX + a.succ[a.mask])
    kb = (np.arange(nX * nU).repeat(b.nsucc.ravel()) * nX + b.succ[b.mask])
    keys = np.union1d(ka, kb)
    row, y = np.divmod(keys, nX)
    indptr = np.zeros(nX * nU + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=nX * nU), out=indptr[1:])
    return from_csr(indptr, y, nX, nU)


def contains(a: Layout, b: Layout) -> bool:
    """Whether every transition of ``b`` is in ``a``."""
    if a.same_as(b):
        return True
    return bool((slots_in(a, b) >= 0)[b.mask].all())


def slots_in(a: Layout, b: Layout) -> np.ndarray:
    """For every slot of ``b``, the slot of the same transition in ``a`` (-1: absent;
    padding slots of ``b`` get -1 too)."""
    return _slots_in(a.succ, a.nsucc, b.succ, b.nsucc)


def move(values: np.ndarray, src: Layout, dst: Layout) -> np.ndarray:
    """Values on ``src`` placed on ``dst`` (which must hold every transition of ``src``;
    ``dst``'s other slots get 0). Works on a leading batch axis too."""
    if src is dst or src.same_as(dst):
        return np.array(values, dtype=np.float64, copy=True)
    where = slots_in(dst, src)
    if ((where < 0) & src.mask).any():
        raise BBRLError("move: the destination layout lacks transitions of the source")
    values = np.asarray(values, dtype=np.float64)
    out = np.zeros(values.shape[:-3] + dst.succ.shape)
    x, u, k = np.nonzero(src.mask)
    out[..., x, u, where[x, u, k]] = values[..., x, u, k]
    return out


@njit(cache=True, error_model="numpy")
def _slots_in(sa, na, sb, nb):
    nX, nU, Kb = sb.shape
    out = np.full((nX, nU, Kb), -1, dtype=np.int64)
    for x in range(nX):
        for u in range(nU):
            i = 0
            for j in range(nb[x, u]):
                y = sb[x, u, j]
                while i < na[x, u] and sa[x, u, i] < y:
                    i += 1
                if i < na[x, u] and sa[x, u, i] == y:
                    out[x, u, j] = i
    return out


@njit(cache=True, error_model="numpy")
def slot_of(succ, nsucc, x, u, y):
    """The slot of successor ``y`` in row ``(x, u)`` (binary search), or -1."""
    lo = 0
    hi = nsucc[x, u]
    while lo < hi:
        mid = (lo + hi) >> 1
        if succ[x, u, mid] < y:
            lo = mid + 1
        else:
            hi = mid
    if lo < nsucc[x, u] and succ[x, u, lo] == y:
        return lo
    return -1


def check_values(values: np.ndarray, layout: Layout, what: str) -> np.ndarray:
    """``values`` as a float64 array of the layout's shape; one error naming ``what``."""
    v = np.asarray(values, dtype=np.float64)
    if v.shape[-3:] != layout.succ.shape:
        raise BBRLError(f"{what}: values of shape {v.shape[-3:]}, expected "
                        f"{layout.succ.shape} (states x actions x widest row)")
    return v


def encode(layout: Layout) -> dict[str, list[int]]:
    """JSON-able form: ``{"nsucc": [...], "succ": [...]}`` (row-major, padding left out)."""
    return {"nsucc": layout.nsucc.ravel().tolist(),
            "succ": layout.succ[layout.mask].tolist()}


def decode_csr(d: dict, n_states: int, n_actions: int,
               source: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`encode`'s ``(nsucc, succ)`` as arrays (row lengths, successors), checked
    (one error naming ``source``), without building the padded layout: a row much wider
    than the others (a distribution's rewards on every successor of one row) costs its
    entries only."""
    try:
        nsucc = np.asarray(d["nsucc"], dtype=np.int64)
        succ = np.asarray(d["succ"], dtype=np.int64)
    except (KeyError, TypeError, ValueError) as exc:
        raise BBRLError(f"{source}: malformed layout ({exc})") from None
    if nsucc.shape != (n_states * n_actions,) or (nsucc < 0).any() or (nsucc > n_states).any():
        raise BBRLError(f"{source}: layout row lengths do not fit {n_states} states x "
                        f"{n_actions} actions")
    if succ.shape != (int(nsucc.sum()),) or (succ < 0).any() or (succ >= n_states).any():
        raise BBRLError(f"{source}: layout successors do not fit {n_states} states")
    row_of = np.repeat(np.arange(nsucc.size), nsucc)
    same_row = row_of[1:] == row_of[:-1]
    if (np.diff(succ)[same_row] <= 0).any():
        raise BBRLError(f"{source}: layout successors are not increasing within a row")
    return nsucc, succ


def decode(d: dict, n_states: int, n_actions: int, source: str) -> Layout:
    """The inverse of :func:`encode`, checked (one error naming ``source``)."""
    nsucc, succ = decode_csr(d, n_states, n_actions, source)
    indptr = np.zeros(nsucc.size + 1, dtype=np.int64)
    np.cumsum(nsucc, out=indptr[1:])
    return from_csr(indptr, succ, n_states, n_actions)


def keys_of(layout: Layout) -> np.ndarray:
    """The flat indices ``(x·nU + u)·nX + y`` of the layout's transitions, in slot order
    (row-major, increasing): the positions they have in a dense (nX, nU, nX) array."""
    x, u, k = np.nonzero(layout.mask)
    return (x * layout.n_actions + u) * layout.n_states + layout.succ[x, u, k]


def from_keys(keys: np.ndarray, n_states: int, n_actions: int) -> Layout:
    """The layout of the transitions with flat indices ``keys`` (strictly increasing,
    as :func:`keys_of` gives them)."""
    keys = np.asarray(keys, dtype=np.int64)
    row, y = np.divmod(keys, n_states)
    indptr = np.zeros(n_states * n_actions + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=n_states * n_actions), out=indptr[1:])
    return from_csr(indptr, y, n_states, n_actions)
