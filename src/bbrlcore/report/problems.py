"""Problems and hardness in the report: every experiment placed by the hardness of its test
set, and each algorithm's normalised score against hardness and along each size ladder.

Colosseum (Conserva & Rauber, NeurIPS 2022, Fig. 17 and 18) places problem instances by
their **diameter** against their **environmental value norm**; here every test set is
such a point (the median over its MDPs, with the 5–95 % range), and the problem families
(:mod:`bbrlcore.mdp.families`) give **ladders**: the experiments of one family, one
setting of its other parameters and one kind of prior (accurate, uniform), ordered by
size. Each algorithm enters with its best agent of the experiment (highest mean, as the
rest of the report) and that agent's normalised score (Random = 0, Optimal = 1).

Three tables (written under ``data/``, drawn by :mod:`bbrlcore.report.figures` and
:mod:`bbrlcore.report.interactive` and nothing else):

* :func:`hardness_map`: one row per test set: ``test, problem, size, setting, n_mdps,
  optimal_value`` (mean), ``diameter, value_norm, suboptimality_gaps`` (medians; the
  diameter over the MDPs where it is finite, ``n_infinite`` counting the others) with
  their ``*_q05``/``*_q95``, and ``experiments`` (their names, comma-separated);
* :func:`score_table`: one row per experiment × algorithm: ``experiment, test, prior,
  prior_kind, problem, size, setting, ladder, family`` (the algorithm as the report names
  it), ``agent`` (its best), ``mean, normalised_score`` with its 95% interval
  ``normalised_low, normalised_high`` (the summary's mean ± 1.96·s/√N, normalised by the
  experiment's Random and Optimal means), the test set's hardness and, where the runs
  carry their test MDPs' references, that agent's **regret**: Colosseum's per-step
  normalised regret ``normalised_regret`` with ``normalised_regret_low,
  normalised_regret_high``
  (:func:`bbrlcore.analysis.exploration.regret_summary`), which the report draws against
  hardness and size beside the score;
* :func:`ladder_table`: the rows of :func:`score_table` on a ladder of at least two
  sizes, sorted by ladder, algorithm and size.
"""

from __future__ import annotations

from typing import Any

import polars as pl

#: The measures a score can be drawn against: column -> axis label.
MEASURES = {"diameter": "diameter (expected steps)",
            "value_norm": "environmental value norm",
            "suboptimality_gaps": "sum of 1 / sub-optimality gaps"}


def problem_of(test: str) -> dict[str, Any]:
    """The problem a test distribution's name belongs to: ``problem`` (the family's
    display name, or the name itself), ``size`` (None without one) and ``setting`` (the
    other parameters that differ from their defaults, as ``k=v, ...``).

    >>> problem_of("DeepSea-20-prand0.05")
    {'problem': 'DeepSea', 'size': 20, 'setting': 'p_rand=0.05'}
    >>> problem_of("GC"), problem_of("MyMDP")["problem"]
    ({'problem': 'GC', 'size': 5, 'setting': ''}, 'MyMDP')
    """
    from bbrlcore.mdp.families import parse_name
    from bbrlcore.mdp.families._base import fmt

    parsed = parse_name(test)
    if parsed is None or parsed[2]:  # not a family's, or a uniform prior as a test
        return {"problem": test, "size": None, "setting": ""}
    spec, params, _ = parsed
    # (a Colosseum instance's name gives only the parameters it sets: the others default)
    setting = ", ".join(f"{p.name}={fmt(params.get(p.name, p.default))}" for p in spec.params
                        if p.name != "size" and params.get(p.name, p.default) != p.default)
    return {"problem": spec.display, "size": params.get("size"), "setting": setting}


def test_order(tests: list[str]) -> list[str]:
    """Test distributions in reading order: the paper's (GC, GDL, Grid, then UGC, UGDL,
    UGrid), then other distributions (a file of one's own) as given, then each problem
    family's by its name, its other parameters (as numbers, not as text) and its size, so
    that RiverSwim-6 comes before RiverSwim-12 (:func:`bbrlcore.mdp.families.parse_name`
    reads the names back).

    >>> test_order(["RiverSwim-12", "GC", "RiverSwim-6-prand0.1", "RiverSwim-6", "DeepSea-5"])
    ['GC', 'DeepSea-5', 'RiverSwim-6', 'RiverSwim-12', 'RiverSwim-6-prand0.1']
    """
    from bbrlcore.mdp.families import parse_name

    paper = {n: i for i, n in enumerate(["GC", "GDL", "Grid", "UGC", "UGDL", "UGrid"])}

    def key(item: tuple[int, str]) -> tuple[Any, ...]:
        k, test = item
        if test in paper:
            return (0, paper[test])
        parsed = parse_name(test)
        if parsed is None:
            return (1, k)
        spec, params, uniform = parsed
        others = tuple((str(type(v).__name__), v) for name, v in
                       ((q.name, params.get(q.name, q.default)) for q in spec.params)
                       if name != "size")
        return (2, spec.display, others, bool(uniform), params.get("size") or 0, test)

    return [t for _, t in sorted(enumerate(dict.fromkeys(tests)), key=key)]


def prior_kind(test: str, prior: str) -> str:
    """``accurate`` (the test's own name), ``uniform`` (``U`` + the test's name: a
    family's uniform prior, or UGC for GC) or ``other``."""
    if prior == test:
        return "accurate"
    return "uniform" if prior == "U" + test else "other"


def _ladder(info: dict[str, Any], kind: str) -> str | None:
    if info["size"] is None:
        return None
    setting = f" ({info['setting']})" if info["setting"] else ""
    return f"{info['problem']}{setting}, {kind} prior"


_MAP_SCHEMA = {"test": pl.Utf8, "problem": pl.Utf8, "size": pl.Int64, "setting": pl.Utf8,
               "n_mdps": pl.Int64, "optimal_value": pl.Float64, "diameter": pl.Float64,
               "diameter_q05": pl.Float64, "diameter_q95": pl.Float64,
               "n_infinite": pl.Int64, "value_norm": pl.Float64,
               "value_norm_q05": pl.Float64, "value_norm_q95": pl.Float64,
               "suboptimality_gaps": pl.Float64, "suboptimality_gaps_q05": pl.Float64,
               "suboptimality_gaps_q95": pl.Float64, "experiments": pl.Utf8}


def hardness_map(hardness: pl.DataFrame, summary: pl.DataFrame) -> pl.DataFrame:
    """One row per test set of ``hardness`` (:func:`bbrlcore.mdp.hardness.hardness_table`
    rows) that an experiment of ``summary`` uses (module docstring)."""
    exps = summary.select("experiment", "test").unique().sort("experiment")
    rows = []
    for (test,), g in hardness.group_by(["test"], maintain_order=True):
        names = exps.filter(pl.col("test") == test)["experiment"].to_list()
        if not names:
            continue
        d = g["diameter"].filter(g["diameter"].is_finite())
        row: dict[str, Any] = {"test": test, **problem_of(test), "n_mdps": g.height,
                               "optimal_value": g["optimal_value"].mean(),
                               "n_infinite": g.height - len(d),
                               "experiments": ", ".join(names)}
        for col, s in (("diameter", d), ("value_norm", g["value_norm"]),
                       ("suboptimality_gaps", g["suboptimality_gaps"])):
            row[col] = s.median() if len(s) else float("inf")
            row[f"{col}_q05"] = s.quantile(0.05, "linear") if len(s) else float("inf")
            row[f"{col}_q95"] = s.quantile(0.95, "linear") if len(s) else float("inf")
        rows.append(row)
    return pl.DataFrame(rows, schema=_MAP_SCHEMA)


_SCORE_SCHEMA = {"experiment": pl.Utf8, "test": pl.Utf8, "prior": pl.Utf8,
                 "prior_kind": pl.Utf8, "problem": pl.Utf8, "size": pl.Int64,
                 "setting": pl.Utf8, "ladder": pl.Utf8, "family": pl.Utf8, "agent": pl.Utf8,
                 "mean": pl.Float64, "normalised_score": pl.Float64,
                 "normalised_low": pl.Float64, "normalised_high": pl.Float64,
                 "diameter": pl.Float64, "value_norm": pl.Float64,
                 "suboptimality_gaps": pl.Float64, "normalised_regret": pl.Float64,
                 "normalised_regret_low": pl.Float64, "normalised_regret_high": pl.Float64}


def score_table(summary: pl.DataFrame, hmap: pl.DataFrame,
                families: list[str], regrets: pl.DataFrame | None = None) -> pl.DataFrame:
    """Each algorithm's best agent (highest mean; on the validation MDPs when the summary
    was chosen on them, :mod:`bbrlcore.analysis.selection`) per experiment whose test set
    is in ``hmap``, with its normalised score and the test set's hardness; ``summary``
    carries the report's ``family`` column, ``families`` their order (module
    docstring). ``regrets`` (:func:`bbrlcore.analysis.exploration.regret_summary`) adds
    that agent's normalised regret per step with its interval (``normalised_regret,
    normalised_regret_low, normalised_regret_high``; null where its runs carry no
    references)."""
    from bbrlcore.analysis.results import normalising_means
    from bbrlcore.analysis.selection import selection_key

    hard = {r["test"]: r for r in hmap.iter_rows(named=True)}
    rank = {f: i for i, f in enumerate(families)}
    score = str(summary["score"][0]) if "score" in summary.columns and summary.height \
        else "discounted"
    means = {r["experiment"]: r for r in
             normalising_means(summary, score).iter_rows(named=True)}
    rows = []
    for r in summary.sort([pl.col("experiment"), selection_key(summary)],
                          descending=[False, True]).iter_rows(named=True):
        h = hard.get(r["test"])
        if h is None:
            continue
        ref = means.get(r["experiment"])
        low = high = None
        if r["normalised_score"] is not None and ref is not None:
            span = ref["optimal_mean"] - ref["random_mean"]
            low = (r["ci_low"] - ref["random_mean"]) / span
            high = (r["ci_high"] - ref["random_mean"]) / span
        rows.append({"experiment": r["experiment"], "test": r["test"], "prior": r["prior"],
                     "family": r["family"], "agent": r["agent"], "mean": r["mean"],
                     "normalised_score": r["normalised_score"],
                     "normalised_low": low, "normalised_high": high,
                     "prior_kind": prior_kind(r["test"], r["prior"]),
                     "problem": h["problem"], "size": h["size"], "setting": h["setting"],
                     "diameter": h["diameter"], "value_norm": h["value_norm"],
                     "suboptimality_gaps": h["suboptimality_gaps"]})
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:  # sorted by mean, best first
        best.setdefault((row["experiment"], row["family"]), row)
    out = []
    for row in best.values():
        info = {"problem": row["problem"], "size": row["size"], "setting": row["setting"]}
        out.append({**row, "ladder": _ladder(info, row["prior_kind"])})
    out.sort(key=lambda r: (r["experiment"], rank.get(r["family"], 99), r["family"]))
    reg = {} if regrets is None else {
        (r["experiment"], r["agent"]): r for r in regrets.iter_rows(named=True)}
    for row in out:
        r = reg.get((row["experiment"], row["agent"]), {})
        for c in ("normalised_regret", "normalised_regret_low", "normalised_regret_high"):
            row[c] = r.get(c)
    return pl.DataFrame(out, schema=_SCORE_SCHEMA)


def regret_view(table: pl.DataFrame) -> pl.DataFrame:
    """The rows of :func:`score_table` (or :func:`ladder_table`) with a normalised
    regret, that regret in place of the normalised score (``normalised_score``,
    ``normalised_low``, ``normalised_high``), for the figures that draw the score."""
    return (table.filter(pl.col("normalised_regret").is_not_null())
            .with_columns(pl.col("normalised_regret").alias("normalised_score"),
                          pl.col("normalised_regret_low").alias("normalised_low"),
                          pl.col("normalised_regret_high").alias("normalised_high")))


def ladder_table(scores: pl.DataFrame) -> pl.DataFrame:
    """The rows of :func:`score_table` on ladders of at least two sizes, sorted by ladder
    (problem, setting, accurate before uniform), algorithm and size."""
    sized = scores.filter(pl.col("ladder").is_not_null())
    n_sizes = sized.group_by("ladder").agg(pl.col("size").n_unique().alias("_n"))
    keep = n_sizes.filter(pl.col("_n") >= 2)["ladder"].to_list()
    kinds = {"accurate": 0, "uniform": 1, "other": 2}
    return (sized.filter(pl.col("ladder").is_in(keep))
            .with_columns(pl.col("prior_kind").replace_strict(kinds, default=3).alias("_k"))
            .sort(["problem", "setting", "_k", "ladder", "family", "size"])
            .drop("_k"))


def ladders(table: pl.DataFrame) -> list[str]:
    """The ladders of :func:`ladder_table` in its order."""
    return table["ladder"].unique(maintain_order=True).to_list()


def experiment_ladders(summary: pl.DataFrame) -> list[tuple[str, list[tuple[int, str]]]]:
    """The ladders of the experiments of ``summary`` (no test set needed): each ladder of
    at least two sizes with its ``(size, experiment)`` pairs by size, in the order of
    :func:`ladder_table` (problem, setting, accurate before uniform).

    >>> s = pl.DataFrame({"experiment": ["DeepSea-10-DeepSea-10", "DeepSea-5-DeepSea-5",
    ...                                  "GC-GC"], "test": ["DeepSea-10", "DeepSea-5", "GC"],
    ...                   "prior": ["DeepSea-10", "DeepSea-5", "GC"]})
    >>> experiment_ladders(s)
    [('DeepSea, accurate prior', [(5, 'DeepSea-5-DeepSea-5'), (10, 'DeepSea-10-DeepSea-10')])]
    """
    found: dict[str, dict[str, Any]] = {}
    kinds = {"accurate": 0, "uniform": 1, "other": 2}
    for exp, test, prior in summary.select("experiment", "test", "prior").unique().iter_rows():
        info = problem_of(test)
        kind = prior_kind(test, prior)
        name = _ladder(info, kind)
        if name is None:
            continue
        lad = found.setdefault(name, {"key": (info["problem"], info["setting"],
                                              kinds.get(kind, 3), name), "rungs": {}})
        lad["rungs"].setdefault(int(info["size"]), exp)
    out = []
    for name, lad in sorted(found.items(), key=lambda kv: kv[1]["key"]):
        if len(lad["rungs"]) >= 2:
            out.append((name, sorted(lad["rungs"].items())))
    return out
