"""Fidelity check against the original C++ program's scores (00-decisions §9).

``shared/data/reference_scores.tsv`` holds, for some configurations, the mean discounted
return of the original BBRL (N = 500 test MDPs, γ = 0.95, T = 250), its 95% half-width and
its milliseconds per trajectory. The original's test MDPs are not ours, so agreement is
statistical: the two-sample statistic

.. math:: z = |m_1 - m_2| / \\sqrt{(h_1/1.96)^2 + (h_2/1.96)^2}

must stay under 3. Rows flagged ``compat`` are compared with this project's compat mode.

    .venv/bin/python benchmarks/fidelity.py [--n-mdps 500]

writes ``benchmarks/results/fidelity.md``: our mean ± 95% half-width next to the
original's, the two-sample z (agreement: z < 3) and the ms per trajectory of both. The
functions are imported by ``tests/test_fidelity.py`` (the core agents at N = 500).
"""


from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from bbrlcore import agents
from bbrlcore import protocol as E
from bbrlcore.mdp import distributions as D


def read_reference(path: str | Path) -> pl.DataFrame:
    return pl.read_csv(path, separator="\t", comment_prefix="#",
                       schema_overrides={"params": pl.Utf8, "compat": pl.Utf8})


def _params(spec: str | None, compat: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for kv in (spec or "").split(";"):
        if kv.strip():
            k, v = kv.split("=", 1)
            out[k.strip()] = v.strip()
    if compat == "true":
        out["compat"] = "true"
    return out


def z_statistic(m1: float, h1: float, m2: float, h2: float) -> float:
    se = math.hypot(h1 / 1.96, h2 / 1.96)
    if se == 0:
        return 0.0 if m1 == m2 else math.inf
    return abs(m1 - m2) / se


def check(
    reference: pl.DataFrame,
    *,
    n_mdps: int = 500,
    seed: int = 2016,
    algorithms: Iterable[str] | None = None,
    progress: bool = False,
) -> pl.DataFrame:
    """Run every reference row whose algorithm is installed (or listed); return a table
    with our mean, half-width, ms per trajectory and the z statistic."""
    wanted = set(algorithms) if algorithms is not None else set(agents.available())
    test_sets: dict[str, E.TestSet] = {}
    rows = []
    for r in reference.iter_rows(named=True):
        if r["algorithm"] not in wanted:
            continue
        params = _params(r["params"], r["compat"])
        ts = test_sets.get(r["test"])
        if ts is None:
            ts = test_sets[r["test"]] = E.new_test_set(D.builtin(r["test"]), n_mdps, 0.95,
                                                       250, seed)
        agent = E.train_agent(r["algorithm"], params, D.builtin(r["prior"]), progress=False)
        run = E.run_agent(ts, agent, progress=progress)
        ret = run["discounted_return"]
        mean = float(ret.mean())
        half = 1.96 * float(ret.std()) / math.sqrt(len(ret))
        rows.append({
            "test": r["test"], "prior": r["prior"], "agent": agent.agent_id,
            "reference_mean": r["mean"], "reference_ci95": r["ci95_halfwidth"],
            "mean": round(mean, 3), "ci95": round(half, 3),
            "z": round(z_statistic(mean, half, r["mean"], r["ci95_halfwidth"]), 2),
            "reference_ms": r["ms_per_trajectory"],
            "ms": round(1000 * float(run["online_time_s"].mean()), 4),
        })
    return pl.DataFrame(rows)


ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-mdps", type=int, default=500)
    ap.add_argument("--reference", default=str(ROOT.parent / "shared/data/reference_scores.tsv"))
    args = ap.parse_args()
    out = check(read_reference(args.reference), n_mdps=args.n_mdps,
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
