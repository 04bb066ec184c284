r"""The field's scores of exploration: bsuite's DeepSea score and Colosseum's normalised
regret across experiments.

**bsuite's DeepSea score** (Osband et al., "Behaviour Suite for Reinforcement Learning",
ICLR 2020, §2.2 and its ``deep_sea/analysis.py``). An agent plays DeepSea of size N
episodically (10,000 episodes of N steps in bsuite); its **average regret** after e
episodes is :math:`\frac1e\sum_{k<e}(V^*_N(s_0) - G_k)`, where :math:`V^*_N(s_0) = 0.99`
and a missed treasure costs about 1. Its **learning time** is the first episode at which
the average regret falls below 0.9 (bsuite's threshold, :data:`THRESHOLD`). Dithering
(acting at random) needs about :math:`2^N` episodes to find the treasure once; the size
is **learned** when the learning time is below :math:`2^N` (plus bsuite's forgiveness of
100 episodes, :data:`FORGIVENESS`), and the **score** is the fraction of sizes learned.

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
(:func:`undecided_text` says why not).

Each algorithm enters with its best agent of the experiment (the highest mean score, as
everywhere in bbrl: :func:`bbrlcore.analysis.aggregate.best_agents`). The experiments
scored are the episodic experiments of the DeepSea family (``DeepSea-N``, any prior)
whose runs carry the references; their ladders are the problem's other parameters and
the kind of prior (accurate, uniform), as the report's.

**Colosseum's normalised regret across experiments** (Conserva & Rauber 2022, App. C):
per test MDP, the regret of the whole interaction divided by its number of steps
(continuing) or episodes (episodic) and by the gap between the optimal and the worst
policy's value: :math:`\frac{T\rho^* - \sum_t r_t}{T(\rho^* - \rho^-)}` or
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

#: bsuite's threshold on the average regret per episode.
THRESHOLD = 0.9
#: bsuite's forgiveness: a size is learned when its learning time is below 2^N + this.
FORGIVENESS = 100


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
    setting = ", ".join(f"{p.name}={fmt(params[p.name])}" for p in spec.params
                        if p.name != "size" and params[p.name] != p.default)
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


def deepsea_scores(
    merged: pl.DataFrame, best: pl.DataFrame, n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0, confidence: float = 0.95, threshold: float = THRESHOLD,
    forgiveness: int = FORGIVENESS,
) -> dict[str, pl.DataFrame]:
    """bsuite's DeepSea score (module docstring) of each family's best agent (``best``:
    :func:`bbrlcore.analysis.aggregate.best_agents` of ``merged``) in every episodic
    DeepSea experiment of ``merged`` whose runs carry their references and episode
    returns; ``{"deepsea": per experiment and family, "deepsea_summary": per ladder and
    family}`` (empty tables when there is none).

    Examples
    --------
    >>> from bbrlcore.analysis.exploration import _example_runs
    >>> from bbrlcore.analysis.aggregate import best_agents
    >>> m = _example_runs()
    >>> t = deepsea_scores(m, best_agents(m, score="undiscounted"), n_resamples=100)
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
