"""``bbrl curves MERGED... [-o DIR]``: learning curves, shortfall and regret over time.

From the per-step rewards of the run tables (:mod:`bbrlcore.analysis.curves`): per
experiment and algorithm (its best agent), the mean cumulative reward, the normalised
score (Random 0, Optimal 1 at each t), the cumulative shortfall against the Optimal agent
and, where the runs carry their test MDPs' references, the regret against the optimal
policy's exact value, with paired bootstrap bands; across experiments, the IQM of the
normalised score against time with stratified bands. Prints a few points of each
curve; ``-o DIR`` writes the tables (``curves.parquet``, ``curves-aggregate.parquet``).
What has no curve (an experiment whose Random or Optimal has no rewards, an agent without
rewards on some test MDPs) and what an experiment without Random or Optimal lacks (the
normalised score; its cumulative score, regret and the DeepSea scores are computed)
is said on stderr, one line each, with the reason.
"""

from __future__ import annotations

import argparse
import sys

from bbrlcore.cli._io import IO
from bbrlcore.errors import BBRLError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "curves", help="learning curves, shortfall and regret over time (from per-step "
        "rewards)",
        description=__doc__.split("\n\n")[1].replace("\n", " ") if __doc__ else None)
    p.add_argument("merged", nargs="+", metavar="MERGED",
                   help="merged (or run) .parquet files with per-step rewards")
    p.add_argument("--score", choices=("discounted", "undiscounted"), default="discounted",
                   help="accumulate the discounted return (the paper's, default) or the "
                   "undiscounted sum of rewards; also what selects the best agents")
    p.add_argument("--resamples", type=int, default=2000,
                   help="bootstrap resamples of the bands (2000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (0)")
    p.add_argument("--points", type=int, default=100,
                   help="time points per curve (at most; 100)")
    p.add_argument("-o", "--output", metavar="DIR", help="write the tables into DIR")
    from bbrlcore.analysis.curves import TABLE_FILES
    from bbrlcore.cli.results import add_validation

    add_validation(p)
    p.set_defaults(func=_curves, io=IO(inputs=("merged", "validation"), outdirs=("output",),
                                       outdir_files=tuple(TABLE_FILES.values())))


def _curves(args: argparse.Namespace) -> int:
    from bbrlcore.analysis import curves as C
    from bbrlcore.analysis.results import (
        attach_rewards,
        read_runs,
        reference_agents,
        reference_warning,
    )

    if args.points < 2:
        raise BBRLError(f"--points {args.points}: must be >= 2")
    if args.resamples < 100:
        raise BBRLError(f"--resamples {args.resamples}: must be >= 100")
    if args.seed < 0:
        raise BBRLError(f"--seed {args.seed}: must be >= 0")
    # the per-step rewards of the agents the curves draw only (each algorithm's best,
    # Random, Optimal), as the report reads them: a whole configuration's are gigabytes
    merged = read_runs(args.merged, "curves", rewards=False)
    # more resamples than memory holds: refused before reading a single reward
    C.check_bootstrap_memory(merged, args.resamples, "--resamples", args.points)
    line = reference_warning(reference_agents(merged, args.score), args.score)
    if line:  # normalised against an Optimal of the other criterion
        print(f"bbrl: warning: {line}", file=sys.stderr)
    best = None
    summary = None
    if args.validation is not None:  # each algorithm's agent chosen on validation runs
        from bbrlcore.analysis import aggregate as A
        from bbrlcore.analysis.results import summary_table
        from bbrlcore.analysis.selection import chosen

        A._check_merged(merged)
        summary = chosen(summary_table(merged, args.score), merged, args.validation,
                         "curves", args.score)
        best = A.best_agents(merged, score=args.score, summary=summary)
    merged = attach_rewards(merged, list(args.merged),
                            C.curve_agents(merged, args.score, summary=summary))
    c = C.curves(merged, score=args.score, n_resamples=args.resamples, seed=args.seed,
                 points=args.points, resamples_option="--resamples", best=best)
    for what in c.left_out:  # which experiments and agents have no curve, and why
        print(f"bbrl: warning: left out of the learning curves: {what}", file=sys.stderr)
    t = c.tables["curves"]
    print(f"learning curves ({args.score} score; normalised: Random 0, Optimal 1 at each t; "
          "shortfall: below the Optimal agent, paired; regret: against the optimal policy's "
          "exact value; norm. regret: Colosseum's, the regret divided by optimal - worst; "
          "95% bootstrap "
          "intervals; each algorithm's agent "
          + ("chosen on the validation runs" if best is not None else
             "chosen on the test runs, the paper's selection") + ")")
    for exp in t["experiment"].unique(maintain_order=True).to_list():
        e = t.filter(t["experiment"] == exp)
        T = int(e["t"].max())
        grid = sorted(set(e.filter(e["even_grid"])["t"].to_list()))
        # a quarter, half and all of the horizon: the nearest time points of the curves
        marks = sorted({min(grid, key=lambda g, m=m: (abs(g - m), g))
                        for m in (max(1, T // 4), max(1, T // 2), T)})
        # Colosseum's normalised regret, per step (per episode) at T, where the runs carry
        # their test MDPs' references
        per = e["episodes"].drop_nulls()
        unit = "episode" if per.len() else "step"
        has_nr = e["normalised_regret"].drop_nulls().len() > 0
        # what the experiment has (without Random or Optimal: no normalised score, without
        # Optimal no shortfall against it; said in the warnings above): the columns shown,
        # the shortfall, else the regret
        has_norm = e["normalised"].drop_nulls().len() > 0
        reg = ("shortfall" if e["shortfall"].drop_nulls().len() else
               "regret" if e["regret"].drop_nulls().len() else None)
        print(f"\n{exp}")
        print(f"  {'algorithm':22s}"
              + ("".join(f"{'norm. t=' + str(m):>18s}" for m in marks) if has_norm
                 else f"{'cumulative t=' + str(T):>28s}")
              + ({"shortfall": f"{'shortfall t=' + str(T):>22s}",
                  "regret": f"{'regret t=' + str(T):>22s}", None: ""}[reg])
              + (f"{'norm. regret / ' + unit:>28s}" if has_nr else ""))
        for fam in e["family"].unique(maintain_order=True).to_list():
            f = e.filter(e["family"] == fam)
            last = f.filter(f["t"] == T).row(0, named=True)
            cells = []
            for m in marks if has_norm else ():
                r = f.filter(f["t"] == m)
                v = r["normalised"][0] if r.height else None
                cells.append("–" if v is None else f"{0.0 if abs(v) < 5e-4 else v:.3f}")
            line = f"  {fam:22s}" + "".join(f"{c:>18s}" for c in cells)
            if not has_norm:
                line += (f"{last['cumulative']:>13.3f} [{last['cumulative_low']:.2f}, "
                         f"{last['cumulative_high']:.2f}]")
            if reg is not None and last[reg] is not None:
                line += (f"{last[reg]:>11.3f} "
                         f"[{last[reg + '_low']:.2f}, {last[reg + '_high']:.2f}]")
            if has_nr and last["normalised_regret"] is not None:
                k = float(last["episodes"] or last["t"])
                line += (f"{last['normalised_regret'] / k:>13.4f} "
                         f"[{last['normalised_regret_low'] / k:.4f}, "
                         f"{last['normalised_regret_high'] / k:.4f}]")
            print(line)
    a = c.tables["aggregate"]
    if not a.is_empty():
        T = int(a["t"].max())
        print(f"\nacross experiments: IQM of the normalised score at t={T}")
        for r in a.filter(a["t"] == T).sort("iqm", descending=True).iter_rows(named=True):
            print(f"  {r['family']:22s} {r['iqm']:.3f} [{r['iqm_low']:.3f}, "
                  f"{r['iqm_high']:.3f}]  ({r['n_experiments']} experiments)")
    bs = c.tables["bsuite_deepsea_summary"]
    if not bs.is_empty():
        import polars as pl

        from bbrlcore.analysis.exploration import (
            BSUITE_EPISODES,
            FORGIVENESS,
            THRESHOLD,
        )

        print(f"\nbsuite's DeepSea score, as bsuite 0.3.6 computes it: per size, the first "
              f"logged episode at which a run's fraction of bad episodes falls below "
              f"{THRESHOLD} (the earliest run), on bsuite's logging schedule up to "
              f"{BSUITE_EPISODES:,}; beats dithering: before 2^N + {FORGIVENESS}; score: "
              "the fraction of bsuite's sizes 10-50 run that do")
        per = c.tables["bsuite_deepsea"]
        for r in bs.iter_rows(named=True):
            if r["score"] is None:
                print(f"  {r['ladder']}, {r['family']}: no score ("
                      + (r["note"] or "") + (f"; sizes run off bsuite's sweep: "
                                             f"{r['off_sweep']}" if r["off_sweep"] else "")
                      + ")")
                continue
            sizes = per.filter((pl.col("ladder") == r["ladder"])
                               & (pl.col("family") == r["family"]))
            when = ", ".join(f"{s['size']}: {s['episode'] if s['solved'] else 'never'}"
                             for s in sizes.iter_rows(named=True))
            print(f"  score {r['ladder']}, {r['family']}: {r['score']:.2f} ({r['n_beat']} "
                  f"of {r['n_sizes']} sizes beat dithering; learning episode by size: "
                  f"{when})" + ("" if r["finished"] else
                                " (unfinished: runs shorter than 10,000 episodes)")
                  + (f"; not run: {r['missing_sizes']}" if r["missing_sizes"] else "")
                  + (f"; off bsuite's sweep, not scored: {r['off_sweep']}"
                     if r["off_sweep"] else ""))
    ds = c.tables["deepsea"]
    if not ds.is_empty():
        from bbrlcore.analysis.exploration import FORGIVENESS, THRESHOLD, undecided_text

        print(f"\nbbrl's DeepSea score (not bsuite's number): episodes until the average "
              f"regret over the test MDPs falls below {THRESHOLD}, at any episode (learned: "
              f"before 2^N + {FORGIVENESS} episodes, dithering's), paired intervals")
        for r in ds.iter_rows(named=True):
            when = ("never" if r["learning_episode"] is None
                    else f"episode {r['learning_episode']}")
            lo = "–" if r["learning_low"] is None else f"{r['learning_low']:.0f}"
            hi = "> E" if r["learning_high"] is None else f"{r['learning_high']:.0f}"
            print(f"  {r['experiment']:34s} {r['family']:18s} {when:>15s} [{lo}, {hi}]  "
                  f"{'learned' if r['learned'] else 'not learned'}"
                  + ("" if r["decided"] else
                     f" (undecided: {undecided_text(r['episodes'], r['size'])})"))
        for r in c.tables["deepsea_summary"].iter_rows(named=True):
            print(f"  score {r['ladder']}, {r['family']}: {r['score']:.2f} [{r['score_low']:.2f}"
                  f", {r['score_high']:.2f}] ({r['n_learned']} of {r['n_sizes']} sizes: "
                  f"{r['sizes']})")
    if args.output:
        paths = C.write_tables(c, args.output)
        print(f"\nwrote {', '.join(str(p) for p in paths.values())}")
    return 0
