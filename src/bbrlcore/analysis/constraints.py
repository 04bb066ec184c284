r"""What the report shows, computed as tables (everything a figure draws is in Parquet).

* :func:`family` — the report's unit of comparison: an algorithm, with its compat variant
  as a family of its own (``beb`` and ``beb (compat)``), so the published behaviour shows
  beside the algorithm.
* :func:`among_best` — the paper's test: within given time bounds take each family's best
  agent (highest mean); the best of those is the reference; every other family's best
  agent is compared with it by the one-sided paired Z-test (Appendix C of the paper),
  each comparison on its own; a family is *among the best* unless the reference is
  significantly better than its best agent. ``correction="holm"`` replaces the
  per-comparison decisions by Holm's step-down procedure over the m comparisons
  (:func:`bbrlcore.analysis.stats.holm`): family-wise error at most α instead of min(1, m·α).
* :func:`constraint_map` — the time-constraint map: for every (offline bound, online bound)
  cell of a log-spaced grid covering the smallest and largest observed times, the
  families among the best with agents within both bounds.
* :func:`constraint_sequence` — one row of the map read the paper's way (§5.3): the offline
  bound just below OPPS-DS's minimal offline time, the online bound growing; the sequence
  of sets of algorithms among the best, each change a step. :func:`reversed_pairs`
  compares two such sequences by the order in which algorithms first appear.
* :func:`hardness` — beyond the paper: for each test MDP, the optimal value from the
  initial state and the diameter (largest, over ordered pairs of states reachable from
  the initial state, of the least expected number of steps from one to the other).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping

import numpy as np
import polars as pl

from bbrlcore.analysis import stats
from bbrlcore.errors import BBRLError

# ---------------------------------------------------------------------------------------
# Families and scores

NICE = {
    "random": "Random",
    "e-greedy": "e-Greedy",
    "soft-max": "Soft-max",
    "opps-ds": "OPPS-DS",
    "formula": "Formula",
    "bamcp": "BAMCP",
    "bfs3": "BFS3",
    "sboss": "SBOSS",
    "beb": "BEB",
    # beyond the paper
    "psrl": "PSRL",
    "boss": "BOSS",
    "bolt": "BOLT",
    "mbie-eb": "MBIE-EB",
    # the exploration baselines (issue 34): their modules declare the same display names
    "ucrl2": "UCRL2",
    "q-learning-ucb": "Q-learning-UCB",
    "optimal": "Optimal",
}
ORDER = list(NICE)


#: Display names of other algorithms (plugins' ``display_name``), while
#: :func:`display_names` is in force.
_SHOWN: dict[str, str] = {}


def display_name(algorithm: str) -> str:
    """The name the report shows for ``algorithm``: a plugin's declared display name
    (:func:`display_names`), the built-ins' (:data:`NICE`), else the algorithm's name."""
    return _SHOWN.get(algorithm) or NICE.get(algorithm, algorithm)


@contextlib.contextmanager
def display_names(names: Mapping[str, str]) -> Iterator[None]:
    """Within the block, the report shows ``names[algorithm]`` for these algorithms (the
    display names plugins declare). A name that another algorithm already shows (a
    built-in's, or another plugin's) is refused: two algorithms would become one family.

    >>> with display_names({"bucbq": "Bayes-UCB-Q"}):
    ...     family("bucbq", False), family("beb", True)
    ('Bayes-UCB-Q', 'BEB (compat)')
    >>> family("bucbq", False)
    'bucbq'
    """
    global _SHOWN
    taken = {v: k for k, v in NICE.items()}
    for alg, shown in sorted(names.items()):
        if not shown or shown == NICE.get(alg):
            continue
        other = taken.get(shown, taken.get(shown.removesuffix(" (compat)")))
        if other is not None and other != alg:
            raise BBRLError(f"algorithm {alg!r}: display name {shown!r} is already the name "
                            f"of algorithm {other!r} in the report; choose another")
        taken[shown] = alg
    before = _SHOWN
    _SHOWN = {**before, **{a: v for a, v in names.items() if v}}
    try:
        yield
    finally:
        _SHOWN = before


def family(algorithm: str, compat: bool) -> str:
    """``BEB`` or ``BEB (compat)``."""
    name = display_name(algorithm)
    return f"{name} (compat)" if compat else name


def family_order(families: list[str]) -> list[str]:
    def key(f: str) -> tuple[int, int, str]:
        base = f.replace(" (compat)", "")
        idx = [NICE[a] for a in ORDER].index(base) if base in NICE.values() else 99
        return (idx, int(f.endswith("(compat)")), f)

    return sorted(set(families), key=key)


def with_family(summary: pl.DataFrame) -> pl.DataFrame:
    """``summary`` with the column ``family``: :func:`family` of each row's ``algorithm``
    and ``compat`` (a null ``compat``: not compat), computed by a polars expression (the
    display name of each distinct algorithm looked up once, no Python call per row)."""
    names = {a: display_name(a) for a in summary["algorithm"].unique().to_list()
             if a is not None}
    shown = pl.col("algorithm").replace_strict(names, default=None, return_dtype=pl.Utf8)
    return summary.with_columns(
        pl.when(pl.col("compat").fill_null(False))
        .then(shown + pl.lit(" (compat)"))
        .otherwise(shown)
        .alias("family")
    )


# ---------------------------------------------------------------------------------------
# Among the best


def among_best(
    scores: pl.DataFrame,
    returns: dict[str, np.ndarray],
    alpha: float = 0.05,
    offline_bound: float = math.inf,
    online_bound: float = math.inf,
    correction: str = "none",
) -> pl.DataFrame:
    """Each family's best agent within the bounds, the paired Z against the reference
    and whether it is among the best.

    ``scores`` has one row per agent with ``family``, ``agent``, ``mean``,
    ``offline_time_s`` and ``online_time_per_decision_s`` (and ``validation_mean`` when
    each family's agent is chosen on validation MDPs:
    :func:`bbrlcore.analysis.selection.selection_key`; the reference and the Z-tests
    are on the test MDPs either way); ``returns`` maps each agent to
    its per-MDP returns (paired across agents by test-MDP index). ``correction`` is
    ``"none"`` (the paper: each family at level ``alpha`` on its own, ``z >
    Φ⁻¹(1 − α)``) or ``"holm"`` (Holm's step-down over the one-sided p-values
    ``1 − Φ(z)`` of the m non-reference families; family-wise error at most ``alpha``).
    """
    stats.check_correction(correction)
    ok = scores.filter(
        (pl.col("offline_time_s") <= offline_bound)
        & (pl.col("online_time_per_decision_s") <= online_bound)
    )
    if ok.is_empty():
        return pl.DataFrame(
            schema={"family": pl.Utf8, "agent": pl.Utf8, "mean": pl.Float64,
                    "z": pl.Float64, "among_best": pl.Boolean, "reference": pl.Boolean}
        )
    from bbrlcore.analysis.choice import selection_key

    best = (
        ok.sort([selection_key(ok), pl.col("agent")], descending=[True, False])
        .group_by("family", maintain_order=True)
        .first()
        .sort(["mean", "family"], descending=[True, False])
    )
    ref_agent = best["agent"][0]
    ref = returns[ref_agent]
    t = stats.z_threshold(alpha)
    zs, flags = [], []
    for agent in best["agent"]:
        if agent == ref_agent:
            zs.append(0.0)
            flags.append(True)
            continue
        z = stats.paired_z(ref, returns[agent])
        zs.append(float(z))
        flags.append(not (z > t))
    if correction == "holm":
        others = [i for i, a in enumerate(best["agent"]) if a != ref_agent]
        rejected = stats.holm([stats.z_pvalue(zs[i]) for i in others], alpha)
        for i, r in zip(others, rejected, strict=True):
            flags[i] = not bool(r)
    return best.select(["family", "agent", "mean"]).with_columns(
        pl.Series("z", zs, dtype=pl.Float64),
        pl.Series("among_best", flags, dtype=pl.Boolean),
        (pl.col("agent") == ref_agent).alias("reference"),
    )


def log_bounds(values: np.ndarray, n: int) -> np.ndarray:
    """``n`` log-spaced bounds from the smallest positive value to the largest one
    (both included, so the fastest and the slowest agents can appear)."""
    v = np.asarray(values, dtype=np.float64)
    pos = v[v > 0]
    if pos.size == 0:
        return np.array([0.0])
    lo, hi = float(pos.min()), float(pos.max())
    if hi <= lo * (1 + 1e-12):
        return np.array([hi])
    b = np.geomspace(lo, hi, n)
    b[0], b[-1] = lo, hi
    return b


def constraint_map(
    scores: pl.DataFrame,
    returns: dict[str, np.ndarray],
    alpha: float = 0.05,
    n_bounds: int = 8,
    correction: str = "none",
) -> pl.DataFrame:
    """The time-constraint map as a tidy table: one row per cell and admissible family
    (``family`` null for a cell where no agent fits the bounds); ``correction`` as in
    :func:`among_best`, applied within each cell."""
    off = log_bounds(scores["offline_time_s"].to_numpy(), n_bounds)
    on = log_bounds(scores["online_time_per_decision_s"].to_numpy(), n_bounds)
    rows = []
    for i, ob in enumerate(off):
        for j, nb in enumerate(on):
            best = among_best(scores, returns, alpha, ob, nb, correction)
            if best.is_empty():
                rows.append({"offline_index": i, "online_index": j, "offline_bound_s": ob,
                             "online_bound_s": nb, "family": None, "agent": None,
                             "mean": None, "z": None, "among_best": None})
                continue
            for r in best.iter_rows(named=True):
                rows.append({"offline_index": i, "online_index": j, "offline_bound_s": ob,
                             "online_bound_s": nb, "family": r["family"], "agent": r["agent"],
                             "mean": r["mean"], "z": r["z"], "among_best": r["among_best"]})
    return pl.DataFrame(rows, schema={
        "offline_index": pl.Int64, "online_index": pl.Int64, "offline_bound_s": pl.Float64,
        "online_bound_s": pl.Float64, "family": pl.Utf8, "agent": pl.Utf8, "mean": pl.Float64,
        "z": pl.Float64, "among_best": pl.Boolean})


# ---------------------------------------------------------------------------------------
# The paper's reading of the map: a sequence of sets as the online bound grows

#: Algorithms left out of :func:`constraint_sequence`: OPPS-DS (it needs offline time), the
#: formula agent (OPPS-DS's learned agent without that offline time) and Optimal (it knows
#: the test MDP).
SEQUENCE_EXCLUDED = ("opps-ds", "formula", "optimal")


def paper_sorted(names: list[str] | set[str]) -> list[str]:
    """Names in the paper's order inside a set: alphabetical, e-Greedy (ϵ) last.

    Examples
    --------
    >>> paper_sorted({"e-Greedy", "SBOSS", "BEB"})
    ['BEB', 'SBOSS', 'e-Greedy']
    """
    return sorted(names, key=lambda n: (n.lower().startswith("e-"), n.lower()))


def sequence_text(sets: list[list[str]]) -> str:
    """``(Random), (SBOSS), (BEB, e-Greedy)``, as the paper writes a sequence."""
    return ", ".join("(" + ", ".join(s) + ")" for s in sets)


def constraint_sequence(
    scores: pl.DataFrame,
    returns: dict[str, np.ndarray],
    alpha: float = 0.05,
    *,
    offline_bound: float | None = None,
    correction: str = "none",
) -> pl.DataFrame:
    """The sets of algorithms among the best as the online bound grows, the offline bound
    fixed just below OPPS-DS's minimal offline time (the paper's §5.3 reading of its maps).

    ``scores`` has one row per agent with ``algorithm``, ``family`` (the name a set shows),
    ``agent``, ``mean``, ``offline_time_s`` and ``online_time_per_decision_s``; agents of
    :data:`SEQUENCE_EXCLUDED` are left out. ``offline_bound`` (default: just below the
    smallest offline time of the ``opps-ds`` agents, no bound without any) keeps the agents
    whose offline time is strictly below it. The online bound takes every distinct online
    time of the agents kept, in increasing order (the finest grid: a coarser one can only
    skip steps); a step is recorded each time the set changes. Returns ``step``,
    ``online_bound_s`` (the smallest bound that shows the set) and ``algorithms`` (a list,
    :func:`paper_sorted`).

    Examples
    --------
    >>> s = pl.DataFrame({"algorithm": ["random", "beb"], "family": ["Random", "BEB"],
    ...                   "agent": ["random", "beb__beta=1"], "mean": [1.0, 2.0],
    ...                   "offline_time_s": [0.0, 0.0],
    ...                   "online_time_per_decision_s": [1e-6, 1e-3]})
    >>> r = {"random": np.array([1.0, 0.9, 1.1]), "beb__beta=1": np.array([2.0, 2.1, 1.9])}
    >>> constraint_sequence(s, r)["algorithms"].to_list()
    [['Random'], ['BEB']]
    """
    opps = scores.filter(pl.col("algorithm") == "opps-ds")["offline_time_s"]
    if offline_bound is None:
        offline_bound = float(opps.min()) if len(opps) else math.inf
    kept = scores.filter(~pl.col("algorithm").is_in(list(SEQUENCE_EXCLUDED))
                         & (pl.col("offline_time_s") < offline_bound))
    schema = {"step": pl.Int64, "online_bound_s": pl.Float64, "algorithms": pl.List(pl.Utf8)}
    rows: list[dict] = []
    last: list[str] | None = None
    for bound in sorted(set(kept["online_time_per_decision_s"].to_list())):
        best = among_best(kept, returns, alpha, math.inf, bound, correction)
        names = paper_sorted(best.filter(pl.col("among_best"))["family"].to_list())
        if names and names != last:
            rows.append({"step": len(rows), "online_bound_s": float(bound), "algorithms": names})
            last = names
    return pl.DataFrame(rows, schema=schema)


def first_appearance(sets: list[list[str]]) -> dict[str, int]:
    """The step at which each algorithm first appears in a sequence."""
    out: dict[str, int] = {}
    for i, s in enumerate(sets):
        for name in s:
            out.setdefault(name, i)
    return out


def reversed_pairs(reference: list[list[str]], other: list[list[str]]) -> list[tuple[str, str]]:
    """Pairs (a, b) of algorithms appearing in both sequences where ``reference`` shows a
    first (strictly earlier step) and ``other`` shows b first: the order disagrees.

    Examples
    --------
    >>> reversed_pairs([["Random"], ["SBOSS"], ["BEB"]], [["Random"], ["BEB"], ["SBOSS"]])
    [('SBOSS', 'BEB')]
    """
    fa, fb = first_appearance(reference), first_appearance(other)
    common = [n for n in fa if n in fb]
    return [(a, b) for a in common for b in common
            if fa[a] < fa[b] and fb[b] < fb[a]]


