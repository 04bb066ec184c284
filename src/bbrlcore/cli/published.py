"""``bbrl compare-published RESULTS``: the published numbers beside a run's.

``RESULTS`` is a results directory (its ``summary.parquet``, else its ``merged/*.parquet``),
a summary table or merged (run) tables. Prints, for every row of the BBRL paper's tables
the results contain, the published score, ours (compat and default), the two-sample z,
the verdict and the original program's own figure (:mod:`bbrlcore.analysis.published`);
``-o`` also writes that table as Parquet. When the results hold Colosseum's benchmark
instances, it prints Colosseum's published Tables 11-14 beside bbrl's expected
normalised regret instead (:mod:`bbrlcore.analysis.colosseum_published`: it reads the
merged run tables, ``merged/*.parquet`` of a results directory), with the BBRL paper's
comparison too if the results also hold its configurations; ``--colosseum-output`` writes
Colosseum's comparison as Parquet.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

from bbrlcore.cli._io import IO
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare-published",
        help="the paper's published best agents beside a run's scores (verdict per row)",
    )
    p.add_argument("results", nargs="+", metavar="RESULTS",
                   help="results directory (summary.parquet or merged/*.parquet inside), a "
                   "summary .parquet or merged/run .parquet files")
    p.add_argument("-o", "--output", help="also write the comparison to this .parquet")
    p.add_argument("--colosseum-output", metavar="FILE",
                   help="also write the comparison with Colosseum's Tables 11-14 to this "
                   ".parquet")
    p.set_defaults(func=_compare, io=IO(inputs=("results",),
                                        outputs=("output", "colosseum_output"),
                                        extra_inputs=_directory_inputs))


def _directory_inputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The tables inside a results directory (so that ``-o`` cannot replace one)."""
    out = []
    for d in args.results:
        if Path(d).is_dir():
            files = [Path(d) / "summary.parquet", *sorted((Path(d) / "merged").glob("*.parquet"))]
            out += [("RESULTS", str(f)) for f in files if f.is_file()]
    return out


def read_summary(paths: list[str]) -> pl.DataFrame:
    """The summary table of ``paths`` (see the module docstring; a summary written before
    its ``regret`` column was named ``shortfall`` is read with that column renamed); one
    :class:`BBRLError` naming the path when there is nothing to compare."""
    from bbrlcore.analysis.results import read_runs, summary_table

    if len(paths) == 1 and Path(paths[0]).is_dir():
        d = Path(paths[0])
        if (d / "summary.parquet").is_file():
            paths = [str(d / "summary.parquet")]
        else:
            merged = sorted(str(p) for p in (d / "merged").glob("*.parquet"))
            if not merged:
                raise BBRLError(f"{d}: no summary.parquet and no merged/*.parquet (run the "
                                "workflow, or give summary or run tables)")
            paths = merged
    for p in paths:
        if Path(p).is_dir():
            raise BBRLError(f"{p}: a directory; give one results directory, or table files")
    kinds = {p: artefacts.read_meta(p).get("kind") for p in paths}
    summaries = [p for p, k in kinds.items() if k == "summary"]
    if summaries:
        if len(paths) > 1:
            raise BBRLError(f"{summaries[0]}: a summary table; give it alone (not with other "
                            "tables)")
        table, _ = artefacts.read_artefact(summaries[0], "summary")
        if "regret" in table.columns and "shortfall" not in table.columns:
            # written before the summary's `regret` (Optimal's mean − mean) was named
            # `shortfall` (CHANGELOG): the same values under the name they have now
            table = table.rename({"regret": "shortfall"})
        return table
    return summary_table(read_runs(paths, "published"))


def run_paths(paths: list[str]) -> list[str] | None:
    """The run tables of ``paths`` (a results directory's ``merged/*.parquet``, or the
    run/merged tables given); None when ``paths`` is a summary table alone."""
    if len(paths) == 1 and Path(paths[0]).is_dir():
        return sorted(str(p) for p in (Path(paths[0]) / "merged").glob("*.parquet")) or None
    runs = [p for p in paths if artefacts.read_meta(p).get("kind") in ("run", "merged")]
    return runs or None


def _compare(args: argparse.Namespace) -> int:
    from bbrlcore.analysis import colosseum_published as CP
    from bbrlcore.analysis import published
    from bbrlcore.analysis.results import read_runs
    from bbrlcore.analysis.selection import without_validation

    # (the published numbers are compared on the paper's selection: the test MDPs)
    summary = without_validation(read_summary(args.results))
    table = published.compare(summary)
    colosseum = None
    if "test" in summary.columns and CP.is_colosseum(summary["test"].unique().to_list()):
        paths = run_paths(args.results)
        if paths is None:
            raise BBRLError(f"{args.results[0]}: a summary table holds no expected "
                            "indicators; give the results directory or its merged run "
                            "tables to compare with Colosseum's tables")
        colosseum = CP.compare(read_runs(paths, "compare-published", rewards=False))
        print(CP.text_table(colosseum))
        if not table.is_empty():
            print()
    elif args.colosseum_output:
        raise BBRLError("--colosseum-output: these results hold no Colosseum instance")
    if table.is_empty():
        if colosseum is None:
            print("no published configuration in these results (the paper's agents run "
                  "with `snakemake --cores all --config preset=paper`)")
    else:
        print(published.text_table(table))
    if args.colosseum_output and colosseum is not None:
        artefacts.write_artefact(args.colosseum_output, colosseum,
                                 "colosseum-comparison", {"citation": CP.CITATION})
        print(f"wrote {args.colosseum_output}: {colosseum.height} rows")
    if args.output:
        artefacts.write_artefact(args.output, table, "published-comparison",
                                 {"citation": published.CITATION})
        print(f"wrote {args.output}: {table.height} rows")
    return 0
