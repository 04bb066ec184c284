r"""The field's scores of exploration: bsuite's DeepSea score (exactly as bsuite computes
it), bbrl's many-MDP DeepSea score with paired intervals, and Colosseum-style normalised
regret across experiments.

**bsuite's DeepSea score** (:func:`bsuite_deepsea_scores`, :func:`bsuite_deepsea_score`):
the number bsuite 0.3.6's ``experiments/deep_sea/analysis.py`` (``score`` and
``find_solution``) computes, from the same runs (Osband et al., "Behaviour Suite for
Reinforcement Learning", ICLR 2020, §2.2). An episode is **bad** when the agent moves
left while on the diagonal (bsuite's ``deep_sea.py``: ``total_bad_episodes``). bsuite
logs a run at the episodes of its logarithmic schedule only (``utils/wrappers.py``,
:func:`bsuite_logged_episodes`: 1, 2, …, 10, 12, 14, 17, 20, 25, 30, 40, 50, …, 1,000,
1,200, …, 10,000) and ignores episodes after 10,000 (:data:`BSUITE_EPISODES`). Per size
N, the **learning time** is the first logged episode e at which a run's fraction of bad
episodes so far, ``total_bad_episodes / e``, is below 0.9 (:data:`THRESHOLD`), the
earliest among the size's runs; a size none of whose runs crosses keeps its last logged
episode and is not solved. The size **beats dithering** when it is solved at a logged
episode below :math:`2^N + 100` (:data:`FORGIVENESS`). The score is the mean of "beats
dithering" over the rows bsuite's ``find_solution`` merges back (one per run logged at
that episode: with the same number of complete runs per size, the fraction of sizes
beating dithering). Sizes: bsuite's sweep, 10, 12, …, 50 (:data:`BSUITE_SIZES`); a
size not run is simply absent from the mean (as in bsuite, which scores what was
logged; the summary names it in ``missing_sizes``), a size off the sweep is left out
(``off_sweep``). ``finished``: every size solved or run for 10,000 episodes (bsuite's
flag). Learning times are rounded up to the schedule: near N = 10's limit of 1,124 the
logged episodes are 1,000 and 1,200.

Bad episodes from bbrl's run tables: on DeepSea without noise (``p_rand`` = 0, bbrl's
default and bsuite's ``deep_sea``), a move left on the diagonal leaves it for good
(the column can only fall behind the row), and the treasure is the only return above 0:
an episode is bad exactly when it misses the treasure, when its return (1 − 0.01 = 0.99
for the treasure, at most 0 otherwise) is below 1/2 (:func:`bad_episodes`), whatever
the drawn action mapping. With ``p_rand`` > 0 a miss may come from the noise, not from a
left move: the run tables cannot tell, the score is not given (the summary says so); a
per-episode column "a left move was chosen on the diagonal" would be what it needs.

Runs scored: each family's best agent of each experiment (bbrl's choice,
:func:`bbrlcore.analysis.aggregate.best_agents`), the very runs of bbrl's score below,
all its test MDPs; bsuite plays one run per size, so with N test MDPs the "earliest among
the runs" takes the first of N crossings (bsuite's code, fed N runs of a size, does just
that; the per-run learning times are in ``run_learning_episodes``).

**bbrl's DeepSea score** (:func:`bbrl_deepsea_scores`; *not* bsuite's number): an agent
plays DeepSea of size N episodically; its **average regret** after e episodes is
:math:`\frac1e\sum_{k<e}(V^*_N(s_0) - G_k)`, where :math:`V^*_N(s_0) = 0.99` and a
missed treasure costs about 1. Its **learning time** is the first episode (every
episode, no logging schedule) at which the average regret falls below 0.9 (bsuite's
threshold, applied to the regret rather than to the bad episodes). The size is
**learned** when the learning time is below :math:`2^N` plus 100 episodes (bsuite's
forgiveness), and the **score** is the fraction of sizes learned.

bbrl plays many test MDPs per size where bsuite plays one: the average regret here is
the mean over the size's test MDPs (each with its own action mapping) of each MDP's
average regret, against each MDP's exact :math:`V^*_N(s_0)` (the test set's
``optimal_episode_value``, :mod:`bbrlcore.mdp.references`), and it comes with a **paired
bootstrap**: a replicate draws the size's test MDPs with replacement (the same draws for
every algorithm, as :mod:`bbrlcore.analysis.curves` does) and finds its own learning
time; ``learning_low``/``learning_high`` are the percentile interval (null: beyond the
last episode), ``learned_probability`` the fraction of replicates that learn, and the
score's interval the percentiles of the fraction of sizes learned in each replicate
(each size resampled on its own: the sizes are independent test sets). An interaction
shorter than :math:`2^N + 100` episodes that has not learned cannot tell "learns later
than dithering" from "learns later": ``decided`` says whether it can
(:func:`undecided_text` says why not). On the same runs the two learning times differ:
bbrl's is the mean's crossing at any episode, bsuite's the earliest run's crossing at a
logged episode.

Each algorithm enters with its best agent of the experiment (the highest mean score, as
everywhere in bbrl: :func:`bbrlcore.analysis.aggregate.best_agents`). The experiments
scored are the episodic experiments of the DeepSea family (``DeepSea-N``, any prior)
whose runs carry the references; their ladders are the problem's other parameters and
the kind of prior (accurate, uniform), as the report's.

**Colosseum-style normalised regret across experiments** (Conserva & Rauber 2022, App. C,
of the rewards collected: not Colosseum's table metric, the expected regret of the
current policy): per test MDP, the regret of the whole interaction divided by its number
of steps (continuing) or episodes (episodic) and by the gap between the optimal and the
worst policy's value: :math:`\frac{T\rho^* - \sum_t r_t}{T(\rho^* - \rho^-)}` or
:math:`\frac{\sum_e (V^*_H - G_e)}{E\,(V^*_H - V^-_H)}`, about 0 for an agent that acts
optimally all along and 1 for one that acts as badly as possible
(:func:`normalised_regrets`); :func:`bbrlcore.analysis.aggregate.compute` aggregates it
over experiments like the normalised score (table ``regret``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from bbrlcore.analysis.estimators import (
    DEFAULT_RESAMPLES,
    _check_resampling,
    _counts,
    _experiment_seed,
    _index_blocks,
)
from bbrlcore.errors import BBRLError
from bbrlcore.protocol.runner import with_settings

#: bsuite's threshold (0.3.6's ``find_solution``): on the fraction of bad episodes in
#: bsuite's score, on the average regret in bbrl's.
THRESHOLD = 0.9
#: bsuite's forgiveness: a size beats dithering when its learning time is below 2^N + this.
FORGIVENESS = 100
#: bsuite's DeepSea sweep (``deep_sea/sweep.py``): sizes 10, 12, ..., 50.
BSUITE_SIZES = tuple(range(10, 51, 2))
#: bsuite's episodes per size (``sweep.NUM_EPISODES``): logged episodes after it are
#: ignored by its analysis.
BSUITE_EPISODES = 10_000
#: bsuite's logging ratios (``utils/wrappers.py``, ``_logarithmic_logging``): an episode
#: is logged when it equals 10^k times one of them, k = floor(log10(episode)).
BSUITE_LOG_RATIOS = (1., 1.2, 1.4, 1.7, 2., 2.5, 3., 4., 5., 6., 7., 8., 9., 10.)
#: A DeepSea episode's return above this took the treasure (0.99); any other is <= 0.
TREASURE_CUTOFF = 0.5


def undecided_text(episodes: int, size: int, forgiveness: int = FORGIVENESS) -> str:
    """Why a DeepSea size not learned is undecided: the interaction's ``episodes`` are
    fewer than the limit 2^N + ``forgiveness`` of bsuite's rule.

    >>> undecided_text(50, 4)
    '50 episodes < 2^4 + 100 = 116'
    """
    return f"{episodes} episodes < 2^{size} + {forgiveness} = {2 ** size + forgiveness}"


_DEEPSEA_SCHEMA: dict[str, Any] = {
    "experiment": pl.Utf8, "test": pl.Utf8, "prior": pl.Utf8, "ladder": pl.Utf8,
    "family": pl.Utf8, "algorithm": pl.Utf8, "agent": pl.Utf8, "size": pl.Int64,
    "n": pl.Int64, "episodes": pl.Int64, "dither_episodes": pl.Float64,
    "learning_episode": pl.Int64, "learning_low": pl.Float64, "learning_high": pl.Float64,
    "learned": pl.Boolean, "learned_probability": pl.Float64, "decided": pl.Boolean,
    "final_average_regret": pl.Float64, "threshold": pl.Float64,
}
_SUMMARY_SCHEMA: dict[str, Any] = {
    "ladder": pl.Utf8, "family": pl.Utf8, "n_sizes": pl.Int64, "sizes": pl.Utf8,
    "n_learned": pl.Int64, "score": pl.Float64, "score_low": pl.Float64,
    "score_high": pl.Float64, "undecided": pl.Int64,
}


def deepsea_ladder(test: str, prior: str) -> tuple[int, str] | None:
    """``(size, ladder)`` of a DeepSea test distribution's name and its prior (None for
    another problem): the ladder names the other parameters and the kind of prior.

    >>> deepsea_ladder("DeepSea-20", "UDeepSea-20"), deepsea_ladder("GC", "GC")
    ((20, 'DeepSea, uniform prior'), None)
    >>> deepsea_ladder("DeepSea-10-prand0.1", "DeepSea-10-prand0.1")
    (10, 'DeepSea (p_rand=0.1), accurate prior')
    """
    from bbrlcore.mdp.families import parse_name
    from bbrlcore.mdp.families._base import fmt

    parsed = parse_name(test)
    if parsed is None or parsed[2] or parsed[0].name != "deepsea":
        return None
    spec, params, _ = parsed
    # (a Colosseum instance's name gives only the parameters it sets: the others default)
    setting = ", ".join(f"{p.name}={fmt(params.get(p.name, p.default))}" for p in spec.params
                        if p.name != "size" and params.get(p.name, p.default) != p.default)
    kind = ("accurate" if prior == test else "uniform" if prior == "U" + test else "other")
    return int(params["size"]), (f"{spec.display}" + (f" ({setting})" if setting else "")
                                 + f", {kind} prior")


def first_below(avg: np.ndarray, threshold: float) -> np.ndarray:
    """Per row of ``avg`` (replicates × episodes), the first episode (1-based) whose
    value is below ``threshold``; 0 where none is.

    >>> first_below(np.array([[1.0, 0.95, 0.5, 0.1], [1.0, 1.0, 1.0, 1.0]]), 0.9).tolist()
    [3, 0]
    """
    below = avg < threshold
    first = np.argmax(below, axis=1) + 1
    return np.where(below.any(axis=1), first, 0)


def bbrl_deepsea_scores(
    merged: pl.DataFrame, best: pl.DataFrame, n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0, confidence: float = 0.95, threshold: float = THRESHOLD,
    forgiveness: int = FORGIVENESS,
) -> dict[str, pl.DataFrame]:
    """bbrl's DeepSea score (module docstring; not bsuite's number, which is
    :func:`bsuite_deepsea_scores`) of each family's best agent (``best``:
    :func:`bbrlcore.analysis.aggregate.best_agents` of ``merged``) in every episodic
    DeepSea experiment of ``merged`` whose runs carry their references and episode
    returns; ``{"deepsea": per experiment and family, "deepsea_summary": per ladder and
    family}`` (empty tables when there is none).

    Examples
    --------
    >>> from bbrlcore.analysis.exploration import _example_runs
    >>> from bbrlcore.analysis.aggregate import best_agents
    >>> m = _example_runs()
    >>> t = bbrl_deepsea_scores(m, best_agents(m, score="undiscounted"), n_resamples=100)
    >>> t["deepsea"].select("family", "size", "learning_episode", "learned").rows()
    [('Random', 10, None, False), ('e-Greedy', 10, 3, True)]
    >>> t["deepsea_summary"].select("family", "score").rows()
    [('Random', 0.0), ('e-Greedy', 1.0)]
    """
    _check_resampling(n_resamples, seed, confidence)
    if not 0 < threshold:
        raise BBRLError(f"threshold={threshold}: must be > 0")
    a = (1.0 - confidence) / 2.0
    t = with_settings(merged)
    rows: list[dict[str, Any]] = []
    learned_reps: dict[tuple[str, str], list[tuple[int, np.ndarray, bool]]] = {}
    exps = (t.filter(pl.col("episode_length") > 0)
            .select("experiment", "test", "prior").unique(maintain_order=True))
    for exp, test, prior in exps.sort("experiment").iter_rows():
        lad = deepsea_ladder(test, prior)
        if lad is None:
            continue
        size, ladder = lad
        m = t.filter(pl.col("experiment") == exp)
        fams = best.filter(pl.col("experiment") == exp)
        if fams.is_empty():
            continue
        W = None
        for r in fams.iter_rows(named=True):
            g = m.filter(pl.col("agent") == r["agent"]).sort("mdp_index")
            if (g["optimal_reference"].null_count() or g["episode_returns"].null_count()
                    or g.is_empty()):
                continue  # (no references or episode returns: not scored)
            E = int(g["episodes"][0])
            G = np.asarray(g["episode_returns"].to_list(), dtype=np.float64)  # (N, E)
            vstar = g["optimal_reference"].to_numpy().astype(np.float64)
            S = np.cumsum(vstar[:, None] - G, axis=1)  # cumulative regret, (N, E)
            N = S.shape[0]
            per_episode = np.arange(1, E + 1, dtype=np.float64)
            avg = S.mean(axis=0) / per_episode
            point = int(first_below(avg[None, :], threshold)[0])
            if W is None:  # (the same replicates for every family: paired)
                W = [_counts(i[0]) for i in _index_blocks([N], n_resamples,
                                                          _experiment_seed(seed, exp))]
            firsts = np.concatenate([first_below((w @ S) / N / per_episode, threshold)
                                     for w in W])
            dither = 2.0 ** size
            limit = dither + forgiveness
            learned_b = (firsts > 0) & (firsts < limit)
            # (a replicate that never learns: after the last episode, E + 1)
            times = np.where(firsts > 0, firsts, E + 1).astype(np.float64)
            lo, hi = (float(v) if v <= E else np.inf
                      for v in np.quantile(times, [a, 1 - a]))
            learned = 0 < point < limit
            decided = learned or E >= limit
            rows.append({
                "experiment": exp, "test": test, "prior": prior, "ladder": ladder,
                "family": r["family"], "algorithm": r["algorithm"], "agent": r["agent"],
                "size": size, "n": N, "episodes": E, "dither_episodes": dither,
                "learning_episode": point or None,
                "learning_low": float(lo) if np.isfinite(lo) else None,
                "learning_high": float(hi) if np.isfinite(hi) else None,
                "learned": bool(learned), "learned_probability": float(learned_b.mean()),
                "decided": bool(decided), "final_average_regret": float(avg[-1]),
                "threshold": float(threshold)})
            learned_reps.setdefault((ladder, r["family"]), []).append(
                (size, learned_b, decided))
    table = pl.DataFrame(rows, schema=_DEEPSEA_SCHEMA)
    summary = []
    for (ladder, fam), items in learned_reps.items():
        items.sort(key=lambda v: v[0])
        B = min(len(b) for _, b, _ in items)
        frac = np.mean([b[:B] for _, b, _ in items], axis=0)
        lo, hi = np.quantile(frac, [a, 1 - a])
        sub = table.filter((pl.col("ladder") == ladder) & (pl.col("family") == fam))
        n_learned = int(sub["learned"].sum())
        summary.append({
            "ladder": ladder, "family": fam, "n_sizes": len(items),
            "sizes": ", ".join(str(s) for s, _, _ in items), "n_learned": n_learned,
            "score": n_learned / len(items), "score_low": float(lo),
            "score_high": float(hi),
            "undecided": int(sum(1 for _, _, d in items if not d))})
    from bbrlcore.analysis.constraints import family_order

    order = {f: i for i, f in enumerate(family_order(list(table["family"].unique())))}
    summary.sort(key=lambda r: (r["ladder"], order.get(r["family"], 99)))
    return {"deepsea": table, "deepsea_summary": pl.DataFrame(summary, schema=_SUMMARY_SCHEMA)}


def bsuite_logged_episodes(last: int) -> np.ndarray:
    """The episodes 1..``last`` bsuite logs (its ``_logarithmic_logging``, computed as it
    computes it: ``episode == 10**floor(log10(episode)) * ratio`` in floating point for
    a ratio of :data:`BSUITE_LOG_RATIOS`).

    >>> bsuite_logged_episodes(60).tolist()
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 17, 20, 25, 30, 40, 50, 60]
    >>> bsuite_logged_episodes(1300)[-3:].tolist()
    [900, 1000, 1200]
    """
    e = np.arange(1, max(int(last), 0) + 1)
    if not e.size:
        return e.astype(np.int64)
    exponent = np.floor(np.log10(np.maximum(1, e)))
    special = (10 ** exponent)[:, None] * np.asarray(BSUITE_LOG_RATIOS)[None, :]
    return e[(e[:, None] == special).any(axis=1)].astype(np.int64)


def bad_episodes(returns: np.ndarray) -> np.ndarray:
    """bsuite's bad episodes of a DeepSea run without noise (``p_rand`` = 0) from its
    episode returns: those that miss the treasure (module docstring), return below
    :data:`TREASURE_CUTOFF`.

    >>> bad_episodes(np.array([-0.005, 0.99, 0.0, 0.99])).tolist()
    [True, False, True, False]
    """
    return np.asarray(returns, dtype=np.float64) < TREASURE_CUTOFF


def bsuite_size_solution(bad_runs: list[np.ndarray], threshold: float = THRESHOLD,
                         num_episodes: int = BSUITE_EPISODES) -> dict[str, Any] | None:
    """bsuite's ``find_solution`` for one size whose runs have the per-episode bad flags
    ``bad_runs`` (module docstring): ``episode`` (the learning time, or the last logged
    episode when not solved), ``solved``, ``finished`` (``find_solution``'s: solved, or
    logged up to ``num_episodes``), ``rows`` (how many rows bsuite merges back: the runs
    logged at that episode, the size's weight in the score), ``run_episodes`` (each
    run's own first crossing, None where it has none) and ``last_logged`` (the last
    episode any run logged, ``num_episodes`` or not: what bsuite's summary calls
    finished); None when no run has a logged episode.

    >>> bad = [np.r_[np.ones(20, bool), np.zeros(80, bool)], np.ones(100, bool)]
    >>> r = bsuite_size_solution(bad)
    >>> r["episode"], r["solved"], r["rows"], r["run_episodes"]
    (25, True, 2, [25, None])
    """
    longest = max((np.asarray(b).size for b in bad_runs), default=0)
    sched = bsuite_logged_episodes(longest)
    firsts: list[int | None] = []
    lasts: list[int] = []
    raw_last = 0
    logged: list[np.ndarray] = []
    for bad in bad_runs:
        b = np.asarray(bad, dtype=bool)
        full = sched[sched <= b.size]
        if full.size:
            raw_last = max(raw_last, int(full[-1]))
        L = full[full <= num_episodes]  # (bsuite's analysis drops the later episodes)
        if not L.size:
            continue
        total = np.cumsum(b, dtype=np.int64)[L - 1]
        below = L[total / L < threshold]
        firsts.append(int(below[0]) if below.size else None)
        lasts.append(int(L[-1]))
        logged.append(L)
    if not logged:
        return None
    crossed = [f for f in firsts if f is not None]
    solved = bool(crossed)
    episode = min(crossed) if solved else max(lasts)
    rows = sum(1 for L in logged if episode in L)
    return {"episode": int(episode), "solved": solved,
            "finished": solved or max(lasts) >= num_episodes, "rows": int(rows),
            "run_episodes": firsts, "last_logged": raw_last}


def bsuite_deepsea_score(runs: pl.DataFrame, threshold: float = THRESHOLD,
                         forgiveness: float = FORGIVENESS,
                         num_episodes: int = BSUITE_EPISODES,
                         sizes: tuple[int, ...] | None = BSUITE_SIZES,
                         ) -> tuple[float | None, pl.DataFrame]:
    """bsuite's DeepSea score (its ``analysis.score``, module docstring) of ``runs``, one
    row per run with ``size`` and ``bad`` (the per-episode bad flags, a list of booleans;
    :func:`bad_episodes` makes them from episode returns): ``(score, per_size)``, the
    score None when no size is scored. ``sizes``: the sizes scored (bsuite's sweep; None:
    every size given, as bsuite's function does with whatever it is fed).

    ``per_size``: ``size, runs, episode, solved, beat_dither, finished, rows,
    last_logged, dither_limit, run_learning_episodes`` (:func:`bsuite_size_solution`).

    >>> ok = [True] * 20 + [False] * 200
    >>> runs = pl.DataFrame({"size": [10, 12, 12], "bad": [ok, [True] * 220, ok]})
    >>> score, t = bsuite_deepsea_score(runs)
    >>> score, t["episode"].to_list(), t["rows"].to_list()
    (1.0, [25, 25], [1, 2])
    """
    if not 0 < threshold:
        raise BBRLError(f"threshold={threshold}: must be > 0")
    if int(num_episodes) < 1:
        raise BBRLError(f"num_episodes={num_episodes}: must be an integer >= 1")
    schema = {"size": pl.Int64, "runs": pl.Int64, "episode": pl.Int64,
              "solved": pl.Boolean, "beat_dither": pl.Boolean, "finished": pl.Boolean,
              "rows": pl.Int64, "last_logged": pl.Int64, "dither_limit": pl.Float64,
              "run_learning_episodes": pl.List(pl.Int64)}
    rows = []
    for size in sorted(set(runs["size"].to_list())):
        if sizes is not None and size not in sizes:
            continue
        bad = [np.asarray(b, dtype=bool) for b in
               runs.filter(pl.col("size") == size)["bad"].to_list()]
        sol = bsuite_size_solution(bad, threshold, int(num_episodes))
        if sol is None:
            continue
        limit = 2.0 ** int(size) + float(forgiveness)
        rows.append({"size": int(size), "runs": len(bad), "episode": sol["episode"],
                     "solved": sol["solved"],
                     "beat_dither": bool(sol["solved"] and sol["episode"] < limit),
                     "finished": bool(sol["finished"]), "rows": sol["rows"],
                     "last_logged": sol["last_logged"], "dither_limit": limit,
                     "run_learning_episodes": sol["run_episodes"]})
    t = pl.DataFrame(rows, schema=schema)
    if t.is_empty():
        return None, t
    w = t["rows"].to_numpy().astype(np.float64)
    return float((w * t["beat_dither"].to_numpy()).sum() / w.sum()), t


def _p_rand(test: str) -> float:
    from bbrlcore.mdp.families import parse_name

    parsed = parse_name(test)
    return float(parsed[1].get("p_rand", 0.0) or 0.0) if parsed else 0.0


_BSUITE_SCHEMA: dict[str, Any] = {
    "ladder": pl.Utf8, "family": pl.Utf8, "algorithm": pl.Utf8, "agents": pl.Utf8,
    "experiments": pl.Utf8, "size": pl.Int64, "runs": pl.Int64, "episodes": pl.Int64,
    "episode": pl.Int64, "solved": pl.Boolean, "beat_dither": pl.Boolean,
    "finished": pl.Boolean, "rows": pl.Int64, "last_logged": pl.Int64,
    "dither_limit": pl.Float64, "run_learning_episodes": pl.List(pl.Int64),
}
_BSUITE_SUMMARY_SCHEMA: dict[str, Any] = {
    "ladder": pl.Utf8, "family": pl.Utf8, "score": pl.Float64, "n_sizes": pl.Int64,
    "sizes": pl.Utf8, "n_beat": pl.Int64, "missing_sizes": pl.Utf8,
    "off_sweep": pl.Utf8, "finished": pl.Boolean, "note": pl.Utf8,
}


def bsuite_deepsea_scores(
    merged: pl.DataFrame, best: pl.DataFrame, threshold: float = THRESHOLD,
    forgiveness: float = FORGIVENESS, num_episodes: int = BSUITE_EPISODES,
    sizes: tuple[int, ...] | None = BSUITE_SIZES,
) -> dict[str, pl.DataFrame]:
    """bsuite's DeepSea score, exactly as bsuite computes it (module docstring), of each
    family's best agents (``best``: :func:`bbrlcore.analysis.aggregate.best_agents` of
    ``merged``, the runs of :func:`bbrl_deepsea_scores`) on every ladder of episodic
    DeepSea experiments of ``merged`` whose runs carry episode returns:
    ``{"bsuite_deepsea": per ladder × family × size, "bsuite_deepsea_summary": per ladder
    × family}`` (empty tables when there is none). A ladder with ``p_rand`` > 0 gets a
    summary row without a score and a note saying why.

    ``bsuite_deepsea``: ``ladder, family, algorithm, agents, experiments, size, runs,
    episodes`` (the longest run's) and the columns of :func:`bsuite_deepsea_score`'s
    per-size table (``episode``: bsuite's learning time when ``solved``).
    ``bsuite_deepsea_summary``: ``ladder, family, score`` (bsuite's), ``n_sizes, sizes``
    (scored), ``n_beat`` (sizes beating dithering), ``missing_sizes`` (of bsuite's
    sweep, not run), ``off_sweep`` (run, not scored), ``finished`` (bsuite's summary
    flag: every size logged up to 10,000 episodes), ``note``.

    Examples
    --------
    >>> from bbrlcore.analysis.exploration import _example_runs
    >>> from bbrlcore.analysis.aggregate import best_agents
    >>> m = _example_runs()
    >>> t = bsuite_deepsea_scores(m, best_agents(m, score="undiscounted"))
    >>> t["bsuite_deepsea"].select("family", "size", "episode", "solved").rows()
    [('Random', 10, 12, False), ('e-Greedy', 10, 3, True)]
    >>> t["bsuite_deepsea_summary"].select("family", "score", "missing_sizes").rows()[1]
    ('e-Greedy', 1.0, '12–50 (20 of 21)')
    """
    t = with_settings(merged)
    empty = {"bsuite_deepsea": pl.DataFrame(schema=_BSUITE_SCHEMA),
             "bsuite_deepsea_summary": pl.DataFrame(schema=_BSUITE_SUMMARY_SCHEMA)}
    if "episode_returns" not in t.columns:
        return empty  # (tables made before bbrl recorded episode returns)
    per: dict[tuple[str, str], dict[str, Any]] = {}
    notes: dict[tuple[str, str], str] = {}
    exps = (t.filter(pl.col("episode_length") > 0)
            .select("experiment", "test", "prior").unique(maintain_order=True))
    for exp, test, prior in exps.sort("experiment").iter_rows():
        lad = deepsea_ladder(test, prior)
        if lad is None:
            continue
        size, ladder = lad
        m = t.filter(pl.col("experiment") == exp)
        for r in best.filter(pl.col("experiment") == exp).iter_rows(named=True):
            key = (ladder, r["family"])
            if _p_rand(test) > 0:
                notes[key] = ("p_rand > 0: a missed treasure may come from the noise, not "
                              "from a left move on the diagonal; the run tables cannot tell "
                              "bsuite's bad episodes")
                continue
            H = int(m["episode_length"][0])
            if H != size:
                notes[key] = (f"{exp}: episodes of {H} steps, not one pass down the grid "
                              f"(N = {size}): not bsuite's episodes, left out")
                continue
            g = m.filter(pl.col("agent") == r["agent"]).sort("mdp_index")
            if g.is_empty() or g["episode_returns"].null_count():
                continue
            d = per.setdefault(key, {"algorithm": r["algorithm"], "runs": []})
            for G in g["episode_returns"].to_list():
                d["runs"].append((size, bad_episodes(np.asarray(G)).tolist(), r["agent"],
                                  exp))
    rows: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for (ladder, fam), d in per.items():
        runs = pl.DataFrame({"size": [s for s, _, _, _ in d["runs"]],
                             "bad": [b for _, b, _, _ in d["runs"]]},
                            schema={"size": pl.Int64, "bad": pl.List(pl.Boolean)})
        score, ps = bsuite_deepsea_score(runs, threshold, forgiveness, num_episodes, sizes)
        for r in ps.iter_rows(named=True):
            of = [v for v in d["runs"] if v[0] == r["size"]]
            rows.append({"ladder": ladder, "family": fam, "algorithm": d["algorithm"],
                         "agents": ", ".join(sorted({v[2] for v in of})),
                         "experiments": ", ".join(sorted({v[3] for v in of})),
                         "episodes": max(len(v[1]) for v in of), **r})
        ran = sorted(set(runs["size"].to_list()))
        scored = ps["size"].to_list()
        missing = [] if sizes is None else [s for s in sizes if s not in ran]
        off = [s for s in ran if sizes is not None and s not in sizes]
        summary.append({
            "ladder": ladder, "family": fam, "score": score, "n_sizes": len(scored),
            "sizes": _size_text(scored), "n_beat": int(ps["beat_dither"].sum()),
            "missing_sizes": (f"{_size_text(missing)} ({len(missing)} of {len(sizes)})"
                              if missing and sizes is not None else ""),
            "off_sweep": _size_text(off),
            # (bsuite's summary: every size logged up to its 10,000 episodes)
            "finished": bool((ps["last_logged"] >= num_episodes).all()) if ps.height
            else False,
            "note": "; ".join(v for v in (
                "" if score is not None else "no size of bsuite's sweep was run",
                notes.get((ladder, fam), "")) if v)})
    for (ladder, fam), note in notes.items():
        if (ladder, fam) not in per:
            summary.append({"ladder": ladder, "family": fam, "score": None, "n_sizes": 0,
                            "sizes": "", "n_beat": 0, "missing_sizes": "", "off_sweep": "",
                            "finished": False, "note": note})
    from bbrlcore.analysis.constraints import family_order

    fams = list({r["family"] for r in summary})
    order = {f: i for i, f in enumerate(family_order(fams))}
    rows.sort(key=lambda r: (r["ladder"], order.get(r["family"], 99), r["size"]))
    summary.sort(key=lambda r: (r["ladder"], order.get(r["family"], 99)))
    return {"bsuite_deepsea": pl.DataFrame(rows, schema=_BSUITE_SCHEMA),
            "bsuite_deepsea_summary": pl.DataFrame(summary, schema=_BSUITE_SUMMARY_SCHEMA)}


def _size_text(sizes: list[int]) -> str:
    """Sizes as runs of bsuite's step of 2: ``[10, 12, 14, 20]`` → ``"10–14, 20"``.

    >>> _size_text([10, 12, 14, 20]), _size_text([])
    ('10–14, 20', '')
    """
    out: list[str] = []
    i = 0
    while i < len(sizes):
        j = i
        while j + 1 < len(sizes) and sizes[j + 1] == sizes[j] + 2:
            j += 1
        out.append(str(sizes[i]) if j == i else f"{sizes[i]}–{sizes[j]}")
        i = j + 1
    return ", ".join(out)


def normalised_regrets(merged: pl.DataFrame) -> pl.DataFrame:
    """Colosseum's per-step normalised regret of every run row with references (module
    docstring): ``merged`` with the column ``normalised_regret`` (null where the row has
    no references or no regret, or the optimal and worst references coincide).

    >>> t = pl.DataFrame({"horizon": [100], "episode_length": [0], "episodes": [1],
    ...                   "regret": [20.0], "optimal_reference": [0.5],
    ...                   "worst_reference": [0.1]})
    >>> normalised_regrets(t)["normalised_regret"].to_list()
    [0.5]
    """
    t = with_settings(merged)
    units = pl.when(pl.col("episode_length") > 0).then(pl.col("episodes")).otherwise(
        pl.col("horizon")).cast(pl.Float64)
    gap = pl.col("optimal_reference") - pl.col("worst_reference")
    ok = gap > 1e-12 * (1.0 + pl.col("optimal_reference").abs())
    return t.with_columns(pl.when(ok).then(pl.col("regret") / (units * gap)).otherwise(None)
                          .cast(pl.Float64).alias("normalised_regret"))


def _example_runs(size: int = 10, n: int = 6, E: int = 12) -> pl.DataFrame:
    """Episodic DeepSea runs of Random, Optimal and an e-greedy agent that learns after
    two episodes (docstring examples)."""
    rng = np.random.default_rng(0)
    rows = []
    for alg, agent in (("random", "random"), ("optimal", "optimal"),
                       ("e-greedy", "e-greedy__epsilon=0.1")):
        for i in range(n):
            if alg == "optimal":
                G = np.full(E, 0.99)
            elif alg == "random":
                G = np.where(rng.random(E) < 2.0 ** -size, 0.99, -0.005)
            else:
                G = np.where(np.arange(E) >= 2, 0.99, -0.005)
            rows.append(_deepsea_run(size, E, alg, agent, i, G))
    return pl.DataFrame(rows)


def _deepsea_run(size: int, E: int, alg: str, agent: str, i: int, G: np.ndarray,
                 experiment_suffix: str = "") -> dict:
    """The run-table row of an episodic DeepSea run written by hand (test MDP ``i``,
    episode returns ``G``, the family's references 0.99 and -0.0075): the rows of
    :func:`_example_runs` and of the tests' runs."""
    return {"experiment": f"DeepSea-{size}-UDeepSea-{size}@E{E}xH{size}" + experiment_suffix,
            "test": f"DeepSea-{size}", "prior": f"UDeepSea-{size}",
            "algorithm": alg, "agent": agent, "compat": False, "params": "{}",
            "mdp_index": i, "discounted_return": float(G.sum()),
            "undiscounted_return": float(G.sum()), "online_time_s": 1e-3,
            "n_steps": E * size, "offline_time_s": 0.0, "gamma": 1.0,
            "horizon": E * size, "test_seed": 0, "episode_length": size,
            "episodes": E, "episode_returns": G.tolist(),
            "optimal_reference": 0.99, "worst_reference": -0.0075,
            "random_reference": 0.0, "regret": float((0.99 - G).sum())}


def regret_summary(merged: pl.DataFrame) -> pl.DataFrame:
    """Per experiment and agent whose runs carry their references: the mean of
    Colosseum's per-step normalised regret over the test MDPs (:func:`normalised_regrets`)
    with its 95% interval (mean ± 1.96·s/√N, as the summary's): ``experiment, agent, n,
    normalised_regret, normalised_regret_low, normalised_regret_high``.

    >>> t = pl.DataFrame({"experiment": ["E", "E"], "agent": ["a", "a"],
    ...                   "horizon": [10, 10], "episode_length": [0, 0], "episodes": [1, 1],
    ...                   "regret": [2.0, 4.0], "optimal_reference": [1.0, 1.0],
    ...                   "worst_reference": [0.0, 0.0]})
    >>> r = regret_summary(t).row(0, named=True)
    >>> r["n"], round(r["normalised_regret"], 12)  # (0.2 and 0.4: a mean of 0.3)
    (2, 0.3)
    """
    from bbrlcore.analysis import stats

    schema = {"experiment": pl.Utf8, "agent": pl.Utf8, "n": pl.Int64,
              "normalised_regret": pl.Float64, "normalised_regret_low": pl.Float64,
              "normalised_regret_high": pl.Float64}
    if "regret" not in merged.columns:
        return pl.DataFrame(schema=schema)
    nr = normalised_regrets(merged)
    rows = []
    for (exp, agent), g in nr.group_by(["experiment", "agent"], maintain_order=True):
        v = g["normalised_regret"]
        if v.null_count():
            continue
        mean, lo, hi = stats.mean_ci(v.to_numpy())
        rows.append({"experiment": exp, "agent": agent, "n": g.height,
                     "normalised_regret": mean, "normalised_regret_low": lo,
                     "normalised_regret_high": hi})
    return pl.DataFrame(rows, schema=schema)
