"""Point estimators on arrays (rliable's definitions) and the paired stratified bootstrap;
see :mod:`bbrlcore.analysis.aggregate` for the maths."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from bbrlcore.errors import BBRLError

#: The aggregate metrics, in the order of the ``metrics`` table.
METRICS = ("mean", "median", "iqm", "optimality_gap")
#: Default number of bootstrap resamples (the ``bootstrap_resamples`` config key).
DEFAULT_RESAMPLES = 2000
#: Fewest resamples accepted: percentile intervals need the tails of many replicates.
MIN_RESAMPLES = 100
#: Replicates drawn and evaluated together (fixed, so results do not depend on memory).
BLOCK = 256

Strata = Sequence[np.ndarray] | np.ndarray

#: Fraction of the machine's memory a bootstrap may take: of the physical memory, or of
#: a lower limit set on the process (``ulimit -v``, a cgroup's ``memory.max``: a Slurm
#: job's allocation). A bootstrap needing more is refused before it allocates anything
#: (:func:`check_memory`): its replicates are kept in memory for the percentile intervals.
MEMORY_FRACTION = 0.5


def memory_limit() -> tuple[int, str]:
    """The bytes a bootstrap may take (:data:`MEMORY_FRACTION` of the least of the
    physical memory, the address-space limit and the cgroup's memory limit) and a few
    words saying of what.

    Examples
    --------
    >>> limit, what = memory_limit()
    >>> limit > 0 and "memory" in what
    True
    """
    import os
    import resource

    found: list[tuple[int, str]] = []
    try:
        found.append((os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
                      "physical memory"))
    except (ValueError, OSError, AttributeError):
        pass
    try:
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft not in (resource.RLIM_INFINITY, -1) and soft > 0:
            found.append((int(soft), "address-space limit (ulimit -v)"))
    except (ValueError, OSError):
        pass
    for f in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            raw = open(f).read().strip()  # noqa: SIM115 (a one-line pseudo-file)
        except OSError:
            continue
        if raw.isdigit() and 0 < int(raw) < 2**60:
            found.append((int(raw), "memory limit of the process's cgroup"))
        break
    if not found:
        found.append((8 * 2**30, "memory (assumed 8 GiB: the system does not say)"))
    total, what = min(found)
    return int(MEMORY_FRACTION * total), f"{MEMORY_FRACTION:g} of the {what}, {_size(total)}"


def _size(n: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def check_memory(per_resample: float, fixed: float, n_resamples: int, option: str,
                 what: str = "the bootstrap") -> None:
    """Refuse ``n_resamples`` when ``fixed + per_resample * n_resamples`` bytes (what
    ``what`` would allocate, computed by the caller from the table's sizes) exceed
    :func:`memory_limit`: one line naming ``option``, the memory needed, the limit and the
    most resamples that fit.

    Examples
    --------
    >>> check_memory(8_000, 0, 2000, "--resamples")  # 16 MB
    >>> check_memory(8_000, 0, 10**12, "--resamples")
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: --resamples 1000000000000: the bootstrap would need 8e+03 TB
    of memory, above the limit of ...
    """
    limit, of = memory_limit()
    need = fixed + per_resample * float(n_resamples)
    if need <= limit:
        return
    most = int((limit - fixed) // per_resample) if per_resample > 0 and limit > fixed else 0
    fit = (f"at most {most:,} resamples fit" if most >= MIN_RESAMPLES else
           "not even the fewest resamples fit")
    raise BBRLError(f"{option} {n_resamples}: {what} would need {_size(need)} of memory, "
                    f"above the limit of {_size(limit)} ({of}); {fit}")



# ---------------------------------------------------------------------------------------
# Point estimators on arrays (rliable's definitions)


def _as_strata(x: Strata, name: str = "scores") -> list[np.ndarray]:
    """A 1-D array is one stratum; a 2-D array is rliable's (runs x tasks), one stratum
    per column; a sequence of 1-D arrays is one stratum each (sizes may differ)."""
    if isinstance(x, np.ndarray) and x.ndim == 2:
        out = [np.asarray(x[:, j], dtype=np.float64) for j in range(x.shape[1])]
    elif isinstance(x, np.ndarray) and x.ndim == 1:
        out = [np.asarray(x, dtype=np.float64)]
    elif isinstance(x, np.ndarray):
        raise BBRLError(f"{name}: a {x.ndim}-D array, expected 1-D or 2-D (runs x tasks)")
    else:
        out = [np.asarray(s, dtype=np.float64).ravel() for s in x]
    if not out or any(s.size == 0 for s in out):
        raise BBRLError(f"{name}: empty (every stratum needs at least one score)")
    if any(not np.all(np.isfinite(s)) for s in out):
        raise BBRLError(f"{name}: contains NaN or infinite scores")
    return out


def aggregate_mean(scores: Strata) -> float:
    """Mean over strata of the per-stratum mean (rliable ``aggregate_mean``).

    Examples
    --------
    >>> aggregate_mean([np.array([0.0, 1.0]), np.array([1.0, 1.0, 1.0, 1.0])])
    0.75
    """
    return float(np.mean([s.mean() for s in _as_strata(scores)]))


def aggregate_median(scores: Strata) -> float:
    """Median over strata of the per-stratum mean (rliable ``aggregate_median``).

    Examples
    --------
    >>> aggregate_median([np.array([0.0]), np.array([0.2]), np.array([1.0, 0.0])])
    0.2
    """
    return float(np.median([s.mean() for s in _as_strata(scores)]))


def iqm(scores: Strata) -> float:
    """Interquartile mean of the pooled scores: ``scipy.stats.trim_mean(x, 0.25)``,
    the mean after removing ``floor(n/4)`` scores from each end (rliable
    ``aggregate_iqm``).

    Examples
    --------
    n = 10 removes 2 from each end: the mean of 2..7.

    >>> iqm(np.arange(10.0))
    4.5
    >>> iqm(np.array([0.0, 1.0, 2.0, 100.0, 4.0]))  # n = 5: removes 0 and 100
    2.3333333333333335
    """
    # scipy.stats.trim_mean's own computation (a partition, then the mean of the middle),
    # written here: importing scipy.stats costs half a second in every process
    x = np.concatenate(_as_strata(scores))
    if x.size == 0:
        return math.nan
    lo = int(0.25 * x.size)
    hi = x.size - lo
    return float(np.mean(np.partition(x, (lo, hi - 1))[lo:hi]))


def optimality_gap(scores: Strata, gamma: float = 1.0) -> float:
    """``gamma - mean(min(x, gamma))`` over the pooled scores (rliable
    ``aggregate_optimality_gap``; γ = 1 is Optimal's mean).

    Examples
    --------
    >>> round(optimality_gap(np.array([0.5, 1.5, 0.8, 1.0])), 12)
    0.175
    """
    x = np.concatenate(_as_strata(scores))
    return float(gamma - np.mean(np.minimum(x, gamma)))


def performance_profile(scores: Strata, taus: Sequence[float] | np.ndarray) -> np.ndarray:
    """Fraction of the pooled scores strictly above each τ (rliable's score
    distribution, ``run_score_deviation``).

    Examples
    --------
    >>> performance_profile(np.array([0.0, 0.5, 1.0, 1.2]), [0.0, 0.5, 1.1]).tolist()
    [0.75, 0.5, 0.25]
    """
    x = np.sort(np.concatenate(_as_strata(scores)))
    t = np.asarray(taus, dtype=np.float64)
    return (x.size - np.searchsorted(x, t, side="right")) / x.size


def _check_same_strata(x: list[np.ndarray], y: list[np.ndarray], paired: bool) -> None:
    if len(x) != len(y):
        raise BBRLError(f"probability of improvement: {len(x)} and {len(y)} strata")
    if paired and any(a.size != b.size for a, b in zip(x, y, strict=True)):
        raise BBRLError("paired probability of improvement: strata of different sizes")


def probability_of_improvement(x: Strata, y: Strata) -> float:
    """P(X > Y): per stratum, the Mann–Whitney U of X against Y over ``n_x · n_y`` (ties
    count one half), averaged over strata (rliable ``probability_of_improvement``).

    Examples
    --------
    Of the 4 pairs (1 vs 0), (1 vs 2), (3 vs 0), (3 vs 2), three are wins:

    >>> probability_of_improvement(np.array([1.0, 3.0]), np.array([0.0, 2.0]))
    0.75
    """
    xs, ys = _as_strata(x, "x"), _as_strata(y, "y")
    _check_same_strata(xs, ys, paired=False)
    ps = []
    for a, b in zip(xs, ys, strict=True):
        b = np.sort(b)
        lo = np.searchsorted(b, a, side="left")
        hi = np.searchsorted(b, a, side="right")
        ps.append(float(np.sum(lo + 0.5 * (hi - lo))) / (a.size * b.size))
    return float(np.mean(ps))


def paired_probability_of_improvement(x: Strata, y: Strata) -> float:
    """Paired P(X > Y): per stratum, the fraction of test MDPs on which X's score beats
    Y's on the *same* MDP (ties one half), averaged over strata.

    Examples
    --------
    >>> paired_probability_of_improvement(np.array([1.0, 3.0]), np.array([0.0, 3.0]))
    0.75
    """
    xs, ys = _as_strata(x, "x"), _as_strata(y, "y")
    _check_same_strata(xs, ys, paired=True)
    return float(np.mean([np.mean((a > b) + 0.5 * (a == b))
                          for a, b in zip(xs, ys, strict=True)]))


# ---------------------------------------------------------------------------------------
# The stratified bootstrap


def _check_resampling(n_resamples: int, seed: int, confidence: float) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)):
        raise BBRLError(f"n_resamples={n_resamples!r}: expected an integer")
    if n_resamples < MIN_RESAMPLES:
        raise BBRLError(f"n_resamples={n_resamples}: must be >= {MIN_RESAMPLES}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise BBRLError(f"seed={seed!r}: expected an integer >= 0")
    if not (0.0 < confidence < 1.0):
        raise BBRLError(f"confidence={confidence}: must be in (0, 1)")


def _index_blocks(
    sizes: Sequence[int], n_resamples: int, seed: int
) -> Iterator[list[np.ndarray]]:
    """Blocks of at most :data:`BLOCK` replicates: for each stratum, an int array
    (replicates, N_s) of MDP indices drawn uniformly with replacement."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < n_resamples:
        b = min(BLOCK, n_resamples - done)
        yield [rng.integers(0, n, size=(b, n)) for n in sizes]
        done += b


def stratified_indices(
    sizes: Sequence[int], n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> list[np.ndarray]:
    """The resampled indices :func:`compute` uses: one ``(n_resamples, N_s)`` array per
    stratum, each row N_s indices into that stratum drawn uniformly with replacement.

    Parameters
    ----------
    sizes : sequence of int
        Number of observations (test MDPs) in each stratum, each >= 1.
    n_resamples : int
        Number of bootstrap replicates (>= 100).
    seed : int
        Seed of ``numpy.random.default_rng``.

    Examples
    --------
    >>> idx = stratified_indices([3, 5], n_resamples=100, seed=1)
    >>> [a.shape for a in idx]
    [(100, 3), (100, 5)]
    >>> bool(idx[1].max() < 5)
    True
    """
    _check_resampling(n_resamples, seed, 0.95)
    if not sizes or any(int(n) < 1 for n in sizes):
        raise BBRLError(f"sizes={list(sizes)}: every stratum needs at least one observation")
    blocks = list(_index_blocks([int(n) for n in sizes], n_resamples, seed))
    return [np.concatenate([blk[s] for blk in blocks]) for s in range(len(sizes))]


def _counts(idx: np.ndarray) -> np.ndarray:
    """(b, n) indices -> (b, n) float counts of each index in each row."""
    b, n = idx.shape
    flat = (idx + n * np.arange(b)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)


@njit(cache=True)
def _pooled_kernel(cp, order, vals, pos, k, iqm_out, prof_out):  # pragma: no cover (numba)
    """IQM and profile of every family for every replicate, from counts ``cp`` (b, n),
    each family's sort order ``order`` (n, F) and sorted scores ``vals`` (n, F), and the
    profile's thresholds as positions ``pos`` (F, T) in the sorted scores."""
    b, n = cp.shape
    F = order.shape[1]
    T = pos.shape[1]
    hi = n - k
    cum = np.empty(n + 1)
    for f in range(F):
        for r in range(b):
            cum[0] = 0.0
            acc = 0.0
            for j in range(n):
                c = cp[r, order[j, f]]
                before = cum[j]
                after = before + c
                cum[j + 1] = after
                # copies of the j-th smallest score within the ranks [k, n - k)
                inside = min(after, hi) - max(before, k)
                if inside > 0.0:
                    acc += inside * vals[j, f]
            iqm_out[r, f] = acc / (n - 2 * k)
            for t in range(T):
                prof_out[r, f, t] = (n - cum[pos[f, t]]) / n


@njit(cache=True)
def _mw_kernel(c, order, pair_j, lo, hi, out):  # pragma: no cover (numba)
    """Adds each pair's Mann-Whitney probability of one experiment to ``out`` (b, P):
    ``sum_i c_i (C_j(<x_i) + C_j(<=x_i)) / 2 / N^2`` where ``C_j`` counts the resampled
    scores of family j below x_i (``lo``, ``hi``: searchsorted positions, (P, N))."""
    b, N = c.shape
    F = order.shape[1]
    P = pair_j.shape[0]
    cums = np.empty((F, N + 1))
    norm = 0.5 / (N * N)
    for r in range(b):
        for f in range(F):
            cums[f, 0] = 0.0
            for m in range(N):
                cums[f, m + 1] = cums[f, m] + c[r, order[m, f]]
        for q in range(P):
            j = pair_j[q]
            acc = 0.0
            for i in range(N):
                ci = c[r, i]
                if ci != 0.0:
                    acc += ci * (cums[j, lo[q, i]] + cums[j, hi[q, i]])
            out[r, q] += acc * norm


@dataclass
class _Problem:
    """Scores ready for the bootstrap: per experiment an (N_e, F) matrix whose rows are
    the test MDPs (same order for every family) and whose columns are the families."""

    experiments: list[str]
    families: list[str]
    X: list[np.ndarray]
    stratum: list[int]  # resampling stratum of each experiment
    sizes: list[int]  # MDPs of each stratum
    taus: np.ndarray
    # derived (sort orders and searchsorted positions, computed once)
    pooled: np.ndarray = field(init=False)  # (Ntot, F)
    order: np.ndarray = field(init=False)  # (Ntot, F): argsort of each pooled column
    vals: np.ndarray = field(init=False)  # (Ntot, F): sorted pooled scores
    pos: np.ndarray = field(init=False)  # (F, T): thresholds' positions in vals
    pairs: list[tuple[int, int]] = field(init=False)
    pair_j: np.ndarray = field(init=False)
    exp_order: list[np.ndarray] = field(init=False)
    exp_lo: list[np.ndarray] = field(init=False)
    exp_hi: list[np.ndarray] = field(init=False)
    wins: list[np.ndarray] = field(init=False)  # (N_e, P): paired wins (ties 1/2)

    def __post_init__(self) -> None:
        self.pooled = np.ascontiguousarray(np.concatenate(self.X, axis=0))
        self.order = np.ascontiguousarray(np.argsort(self.pooled, axis=0, kind="stable"))
        self.vals = np.ascontiguousarray(np.take_along_axis(self.pooled, self.order, 0))
        F = len(self.families)
        self.pos = np.stack([np.searchsorted(self.vals[:, f], self.taus, side="right")
                             for f in range(F)]).astype(np.int64)
        self.pairs = [(i, j) for i in range(F) for j in range(i + 1, F)]
        self.pair_j = np.array([j for _, j in self.pairs], dtype=np.int64)
        self.exp_order, self.exp_lo, self.exp_hi, self.wins = [], [], [], []
        P = len(self.pairs)
        for x in self.X:
            o = np.argsort(x, axis=0, kind="stable")
            sx = np.take_along_axis(x, o, 0)
            lo = np.empty((P, x.shape[0]), dtype=np.int64)
            hi = np.empty((P, x.shape[0]), dtype=np.int64)
            w = np.empty((x.shape[0], P))
            for q, (i, j) in enumerate(self.pairs):
                lo[q] = np.searchsorted(sx[:, j], x[:, i], side="left")
                hi[q] = np.searchsorted(sx[:, j], x[:, i], side="right")
                w[:, q] = (x[:, i] > x[:, j]) + 0.5 * (x[:, i] == x[:, j])
            self.exp_order.append(np.ascontiguousarray(o))
            self.exp_lo.append(lo)
            self.exp_hi.append(hi)
            self.wins.append(w)


def _evaluate(p: _Problem, counts: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Every statistic for a block of replicates given as per-experiment (b, N_e) counts
    (all ones gives the point estimates). Shapes: metrics (b, F), profile (b, F, T),
    improvement (b, P) and paired (b, P) for the pairs i < j."""
    b = counts[0].shape[0]
    F = len(p.families)
    E = len(p.X)
    means = np.stack([c @ x / x.shape[0] for c, x in zip(counts, p.X, strict=True)], axis=1)
    out: dict[str, np.ndarray] = {
        "mean": means.mean(axis=1),
        "median": np.median(means, axis=1),
    }
    cp = np.ascontiguousarray(np.concatenate(counts, axis=1))  # (b, Ntot)
    n = cp.shape[1]
    out["optimality_gap"] = 1.0 - cp @ np.minimum(p.pooled, 1.0) / n
    iqm_ = np.empty((b, F))
    prof = np.empty((b, F, p.taus.size))
    _pooled_kernel(cp, p.order, p.vals, p.pos, int(0.25 * n), iqm_, prof)  # trim_mean's cut
    out["iqm"] = iqm_
    out["profile"] = prof
    P = len(p.pairs)
    mw = np.zeros((b, P))
    paired = np.zeros((b, P))
    if P:
        for e in range(E):
            c = np.ascontiguousarray(counts[e])
            _mw_kernel(c, p.exp_order[e], p.pair_j, p.exp_lo[e], p.exp_hi[e], mw)
            paired += c @ p.wins[e] / c.shape[1]
    out["improvement"] = mw / E
    out["paired"] = paired / E
    return out


def bootstrap_bytes(p: _Problem) -> tuple[float, float]:
    """``(bytes per resample, fixed bytes)`` :func:`_bootstrap` allocates for ``p``: every
    replicate of every statistic is kept for the percentile intervals (8 bytes each: the
    four metrics and the profile of each family, the two probabilities of improvement of
    each pair), and ``np.concatenate`` and ``np.quantile`` copy the largest; a block of
    :data:`BLOCK` replicates works on counts of every test MDP. (Measured: ``bbrl
    aggregate`` of 8 families and 121 thresholds at 10^5 resamples peaks at 2.72 GB,
    0.37 GB of it the process, against 3.17 GB estimated; numpy's traced allocations
    stay within 0.65-0.75 of it, ``tests/test_report.py``.)"""
    F, T, P = len(p.families), int(p.taus.size), len(p.pairs)
    n = int(p.pooled.shape[0])
    kept = 4 * F + F * T + 2 * P
    return 8.0 * (kept + 3 * max(F * T, P, F)), 8.0 * BLOCK * (4 * n + 2 * kept)


def _bootstrap(
    p: _Problem, n_resamples: int, seed: int, confidence: float,
    option: str = "n_resamples",
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Point estimates and percentile interval bounds (low, high) of every statistic;
    more resamples than memory holds (:func:`bootstrap_bytes`) are refused first, naming
    ``option``."""
    check_memory(*bootstrap_bytes(p), n_resamples, option)
    point = _evaluate(p, [np.ones((1, x.shape[0])) for x in p.X])
    point = {k: v[0] for k, v in point.items()}
    reps: dict[str, list[np.ndarray]] = {k: [] for k in point}
    for blk in _index_blocks(p.sizes, n_resamples, seed):
        strata_counts = [_counts(i) for i in blk]
        res = _evaluate(p, [strata_counts[s] for s in p.stratum])
        for k, v in res.items():
            reps[k].append(v)
    a = (1.0 - confidence) / 2.0
    low, high = {}, {}
    for k, v in reps.items():
        arr = np.concatenate(v, axis=0)
        low[k], high[k] = np.quantile(arr, [a, 1.0 - a], axis=0)
    return point, low, high


def _experiment_seed(seed: int, experiment: str) -> int:
    """The bootstrap seed of one experiment's replicates (the learning curves' bands,
    the DeepSea scores' intervals): from the user's seed and the
    experiment's name (not its position among the experiments given)."""
    from bbrlcore.seeds import id_hash64

    return int((int(seed) + id_hash64(f"curves/{experiment}")) % (2**63))
