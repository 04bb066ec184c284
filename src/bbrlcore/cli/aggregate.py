"""``bbrl aggregate``: statistics across experiments, a thin shell over
:mod:`bbrlcore.analysis.aggregate`.

``bbrl aggregate MERGED... [--seed S] [--resamples N] [--offline-bound s]
[--online-bound s] [--alpha A] [--correction none|holm] [--versus NAME] [-o DIR]`` prints
the aggregate tables (metrics with stratified-bootstrap intervals, probabilities of
improvement, the performance profiles at a few thresholds, "among the best" per
experiment) and, with ``-o``, writes every table as Parquet into DIR
(``results/report/data/`` in the workflow). ``--versus NAME`` adds one algorithm against
every other: P(NAME > Y) and P(Y > NAME) with their intervals, for every Y
(:func:`bbrlcore.analysis.aggregate.versus`).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import polars as pl

from bbrlcore.analysis import aggregate as agg_mod
from bbrlcore.analysis import stats
from bbrlcore.cli._io import IO
from bbrlcore.errors import BBRLError

#: Thresholds at which the terminal shows the performance profiles.
PROFILE_TAUS = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "aggregate",
        help="scores across experiments: IQM, median, mean, optimality gap, profiles, "
        "probability of improvement (stratified bootstrap)",
    )
    p.add_argument("merged", nargs="+", metavar="MERGED",
                   help="merged (or run) .parquet files, every experiment with Random and "
                   "Optimal")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (0)")
    p.add_argument("--resamples", type=int, default=agg_mod.DEFAULT_RESAMPLES,
                   help=f"bootstrap resamples (>= {agg_mod.MIN_RESAMPLES}; "
                   f"{agg_mod.DEFAULT_RESAMPLES})")
    p.add_argument("--offline-bound", type=float, default=None, metavar="SECONDS",
                   help="best agents within this offline time (none)")
    p.add_argument("--online-bound", type=float, default=None, metavar="SECONDS",
                   help="best agents within this online time per decision (none)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="level of the intervals (0.95)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="level of the among-the-best Z-tests (0.05)")
    p.add_argument("--correction", choices=stats.CORRECTIONS, default="none",
                   help="multiple comparisons in among the best: none (the paper) or holm")
    p.add_argument("--score", choices=("discounted", "undiscounted"), default="discounted",
                   help="the score: the discounted return (the paper's, default) or the "
                   "undiscounted sum of rewards")
    p.add_argument("--merge-compat", action="store_true",
                   help="compat variants compete within their algorithm instead of being "
                   "families of their own")
    p.add_argument("--versus", metavar="NAME",
                   help="also compare one algorithm (as the report names it, e.g. 'BEB "
                   "(compat)' or a plugin's display name, or its id) with every other: "
                   "P(NAME > Y) and P(Y > NAME)")
    p.add_argument("--plugins", nargs="*", default=[], metavar="REF",
                   help="plugin references (path/to/file.py:NAME, module:NAME) whose "
                   "display names the tables show and --versus takes, as the report; "
                   "installed plugins are found by name")
    from bbrlcore.cli.results import add_validation

    add_validation(p)
    p.add_argument("-o", "--output", metavar="DIR",
                   help="also write the tables as Parquet into DIR")
    p.set_defaults(func=_aggregate, io=IO(inputs=("merged", "validation"), outdirs=("output",),
                                          outdir_files=tuple(agg_mod.TABLE_FILES.values())))


def _num(v: float) -> str:
    s = f"{v:6.3f}"
    return s.replace("-0.000", " 0.000")


def _ci(v: float, lo: float, hi: float) -> str:
    return f"{_num(v)} [{_num(lo)}, {_num(hi)}]"


def _table(header: list[str], rows: list[list[str]], right: set[int] | None = None) -> str:
    right = right or set()
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    return "\n".join(out)


def _bound(v: float | None) -> str:
    return "none" if v is None or math.isinf(v) else f"{v:g} s"


def render(agg: agg_mod.Aggregates) -> str:
    """The terminal view of :func:`bbrlcore.analysis.aggregate.compute`'s tables."""
    meta = agg.meta
    t = agg.tables
    conf = round(100 * meta["confidence"], 2)
    conf_s = f"{conf:g}%"
    lines = [
        f"bbrl aggregate: {len(meta['experiments'])} "
        f"experiment{'s' if len(meta['experiments']) != 1 else ''} "
        f"({', '.join(meta['experiments'])}); scores normalised per experiment "
        "(Random's mean = 0, Optimal's mean = 1)",
        "best agent of each family per experiment, offline bound "
        f"{_bound(meta['offline_bound_s'])}, online bound {_bound(meta['online_bound_s'])} "
        "per decision, chosen on "
        + ("validation MDPs, scored on the test MDPs" if meta.get("selection") ==
           "validation" else "the test MDPs (the paper's selection)"),
        f"{conf_s} percentile intervals: paired stratified bootstrap, "
        f"{meta['n_resamples']} resamples, seed {meta['seed']} "
        f"(strata: {'; '.join(', '.join(s) for s in meta['strata'])})",
    ]
    for fam, exps in sorted(agg.excluded.items()):
        lines.append(f"left out: {fam} (no agent within the bounds in {', '.join(exps)})")
    m = t["metrics"]
    lines += ["", f"Aggregate normalised scores ({conf_s} CI), best IQM first", ""]
    rows = [[r["family"], _ci(r["iqm"], r["iqm_ci_low"], r["iqm_ci_high"]),
             _ci(r["median"], r["median_ci_low"], r["median_ci_high"]),
             _ci(r["mean"], r["mean_ci_low"], r["mean_ci_high"]),
             _ci(r["optimality_gap"], r["optimality_gap_ci_low"],
                 r["optimality_gap_ci_high"])]
            for r in m.iter_rows(named=True)]
    lines.append(_table(["family", "IQM", "median", "mean", "optimality gap"], rows,
                        right={1, 2, 3, 4}))

    reg = t.get("regret")
    if reg is not None and not reg.is_empty():
        lines += ["", f"Normalised regret at the end of the interaction ({conf_s} CI; "
                  "Colosseum's: regret against the optimal policy's exact value, per step "
                  "(episode), divided by optimal - worst; 0 optimal all along, 1 as bad as "
                  f"possible), {len(meta.get('regret_experiments', []))} experiments with "
                  "references, lowest IQM first", ""]
        rows = [[r["family"], _ci(r["iqm"], r["iqm_ci_low"], r["iqm_ci_high"]),
                 _ci(r["median"], r["median_ci_low"], r["median_ci_high"]),
                 _ci(r["mean"], r["mean_ci_low"], r["mean_ci_high"])]
                for r in reg.iter_rows(named=True)]
        lines.append(_table(["family", "IQM", "median", "mean"], rows, right={1, 2, 3}))

    order = m["family"].to_list()
    rank = {f: i for i, f in enumerate(order)}
    imp = t["improvement"].filter(
        pl.col("family_x").replace_strict(rank, return_dtype=pl.Int64)
        < pl.col("family_y").replace_strict(rank, return_dtype=pl.Int64))
    imp = imp.sort(pl.col("family_x").replace_strict(rank, return_dtype=pl.Int64),
                   pl.col("family_y").replace_strict(rank, return_dtype=pl.Int64))
    if not imp.is_empty():
        lines += ["", f"Probability of improvement P(X > Y) ({conf_s} CI): Mann-Whitney "
                  "over trajectories (rliable), and paired on the same test MDP", ""]
        rows = [[r["family_x"], r["family_y"],
                 _ci(r["probability"], r["ci_low"], r["ci_high"]),
                 _ci(r["paired_probability"], r["paired_ci_low"], r["paired_ci_high"])]
                for r in imp.iter_rows(named=True)]
        lines.append(_table(["X", "Y", "P(X > Y)", "paired"], rows, right={2, 3}))

    prof = t["profiles"]
    taus = np.unique(prof["tau"].to_numpy())
    shown = [x for x in PROFILE_TAUS if np.any(np.abs(taus - x) < 1e-9)]
    lines += ["", "Performance profiles: fraction of (experiment, MDP) scores > tau "
              "(bands in the Parquet table)", ""]
    rows = []
    for fam in order:
        g = prof.filter(pl.col("family") == fam).sort("tau")
        tv, fv = g["tau"].to_numpy(), g["fraction"].to_numpy()
        cells = [fam]
        for x in shown:
            cells.append(f"{fv[int(np.argmin(np.abs(tv - x)))]:.3f}")
        rows.append(cells)
    header = ["family"] + [f"tau={x:g}" for x in shown]
    lines.append(_table(header, rows, right=set(range(1, len(header)))))

    ab = t["among_best"]
    if not ab.is_empty():
        r0 = ab.row(0, named=True)
        corr = "Holm step-down" if r0["correction"] == "holm" else "each test on its own"
        lines += ["", f"Among the best per experiment (one-sided paired Z-test against the "
                  f"reference, alpha = {r0['alpha']:g}, {corr})", ""]
        rows = []
        for (exp,), g in ab.group_by(["experiment"], maintain_order=True):
            ref = g.filter(pl.col("reference"))["family"].to_list()
            among = g.filter(pl.col("among_best") & ~pl.col("reference"))["family"].to_list()
            rows.append([exp, ", ".join(ref + among), f"{g['familywise_error'][0]:.3g}"])
        lines.append(_table(["experiment", "among the best (reference first)",
                             "family-wise error <="], rows, right={2}))
    return "\n".join(lines)


def render_versus(v: pl.DataFrame, confidence: float = 0.95) -> str:
    """The terminal view of :func:`bbrlcore.analysis.aggregate.versus`: one row per other
    algorithm, best first."""
    if v.is_empty():
        return "no other algorithm to compare with"
    name = v["family"][0]
    conf = f"{round(100 * confidence, 2):g}%"
    words = {"better": f"{name} better", "worse": f"{name} worse",
             "unclear": "no clear difference"}
    rows = [[r["opponent"], _ci(r["probability"], r["ci_low"], r["ci_high"]),
             _ci(r["reverse_probability"], r["reverse_ci_low"], r["reverse_ci_high"]),
             _ci(r["paired_probability"], r["paired_ci_low"], r["paired_ci_high"]),
             words[r["verdict"]]]
            for r in v.iter_rows(named=True)]
    head = [f"{name} against every other algorithm ({conf} CI; 0.5: no difference; "
            f"verdict: whether the interval of P({name} > Y) is above or below 0.5)", ""]
    return "\n".join(head) + "\n" + _table(
        ["Y", f"P({name} > Y)", f"P(Y > {name})", "paired (same MDP)", "verdict"], rows,
        right={1, 2, 3})


def _warn_reference(merged, score: str) -> None:
    """One line on stderr when some experiment's only Optimal is of another criterion
    than ``score`` (the normalisation's reference)."""
    import sys

    from bbrlcore.analysis.results import reference_agents, reference_warning

    line = reference_warning(reference_agents(merged, score), score)
    if line:
        print(f"bbrl: warning: {line}", file=sys.stderr)


def _aggregate(args: argparse.Namespace) -> int:
    from bbrlcore.analysis.results import read_runs

    for name, v in (("--offline-bound", args.offline_bound),
                    ("--online-bound", args.online_bound)):
        if v is not None and not (v >= 0):
            raise BBRLError(f"{name} {v}: must be >= 0 (seconds)")
    if args.resamples < agg_mod.MIN_RESAMPLES:
        raise BBRLError(f"--resamples {args.resamples}: must be >= {agg_mod.MIN_RESAMPLES}")
    if args.seed < 0:
        raise BBRLError(f"--seed {args.seed}: must be >= 0")
    if not (0 < args.confidence < 1):
        raise BBRLError(f"--confidence {args.confidence}: must be in (0, 1)")
    if not (0 < args.alpha < 1):
        raise BBRLError(f"--alpha {args.alpha}: must be in (0, 1)")
    from bbrlcore.agents import registry
    from bbrlcore.analysis.constraints import display_names
    from bbrlcore.analysis.results import summary_table
    from bbrlcore.analysis.selection import chosen

    merged = read_runs(args.merged, "aggregate", rewards=False)
    _warn_reference(merged, args.score)
    summary = None
    if args.validation is not None:
        agg_mod._check_merged(merged)
        summary = chosen(summary_table(merged, args.score), merged, args.validation,
                         "aggregate", args.score)
    algorithms = merged["algorithm"].unique().sort().to_list()
    names = registry.display_names(algorithms, args.plugins)  # as the report shows them
    with display_names(names):
        if args.versus is not None:  # an unknown name fails before the bootstrap
            pairs = merged.filter(pl.col("algorithm") != "optimal").select(
                "algorithm", "compat").unique()
            known = {e.name for e in registry.all_entries()}
            unknown = [a for a in algorithms if a not in known]
            hint = (f" (the display name of plugin {', '.join(unknown)} is known when it is "
                    "installed or given with --plugins REF, e.g. --plugins "
                    "my_agents.py:MyAgent)" if unknown else "")
            agg_mod.find_family(args.versus, [
                agg_mod._family(a, bool(c), not args.merge_compat)
                for a, c in pairs.iter_rows()], hint=hint)
        agg = agg_mod.compute(
            merged, n_resamples=args.resamples, seed=args.seed,
            offline_bound=args.offline_bound, online_bound=args.online_bound,
            confidence=args.confidence, alpha=args.alpha, correction=args.correction,
            separate_compat=not args.merge_compat, score=args.score,
            resamples_option="--resamples", summary=summary)
        v = None if args.versus is None else agg_mod.versus(agg, args.versus)
    print(render(agg))
    if v is not None:
        print("\n" + render_versus(v, args.confidence))
    if args.output:
        paths = agg_mod.write_tables(agg, args.output)
        print(f"\nwrote {len(paths)} tables into {args.output}")
    return 0
