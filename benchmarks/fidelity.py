"""Compare every installed agent with the original program's scores (00-decisions §9).

    .venv/bin/python benchmarks/fidelity.py [--n-mdps 500]

Writes ``benchmarks/results/fidelity.md``: our mean ± 95% half-width next to the
original's, the two-sample z (agreement: z < 3) and the ms per trajectory of both.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bbrlcore import fidelity

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-mdps", type=int, default=500)
    ap.add_argument("--reference", default=str(ROOT.parent / "shared/data/reference_scores.tsv"))
    args = ap.parse_args()
    out = fidelity.check(fidelity.read_reference(args.reference), n_mdps=args.n_mdps,
                         progress=True)
    lines = ["# Fidelity: this project vs the original C++ BBRL", "",
             f"N = {args.n_mdps} test MDPs (ours: seed 2016), γ = 0.95, T = 250. "
             "Agreement: two-sample z < 3.", "",
             "| experiment | agent | original | ours | z | original ms | our ms |",
             "|---|---|---|---|---:|---:|---:|"]
    for r in out.iter_rows(named=True):
        flag = "" if r["z"] < 3 else " **✗**"
        lines.append(f"| {r['test']}-{r['prior']} | {r['agent']} | {r['reference_mean']} ± "
                     f"{r['reference_ci95']} | {r['mean']} ± {r['ci95']} | {r['z']}{flag} | "
                     f"{r['reference_ms']} | {r['ms']} |")
    n_ok = int((out["z"] < 3).sum())
    lines += ["", f"{n_ok} of {len(out)} rows agree."]
    path = ROOT / "benchmarks" / "results" / "fidelity.md"
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
