"""``bbrl estimate CONFIG [--preset NAME]``: CPU-hours of a workflow configuration.

Uses the plan (:mod:`bbrlcore.plan`) and the cost model (:mod:`bbrlcore.plan.cost`) that the
Snakemake workflow uses to chunk its runs, so the figure is what the cluster will be asked
for: per algorithm, the offline training, the runs (N trajectories per experiment and
configuration) and a fixed overhead per job, in CPU-hours.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bbrlcore import plan as P
from bbrlcore.errors import BBRLError
from bbrlcore.plan import cost


def register(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser(
        "estimate", help="expected CPU-hours of a workflow configuration (cost model)",
        description="Expected CPU-hours of a workflow configuration, per algorithm, from "
        "the cost model the workflow uses to size its jobs (algorithms no benchmark "
        "measured, such as your plugins, are probed first: a few trajectories per "
        "experiment, kept under RESULTS_DIR/probes/ and reused).",
        epilog=COLUMNS, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    e.add_argument("config", help="workflow configuration (config.yaml)")
    e.add_argument("--preset", help="apply this preset overlay (quick, tiny, ...)")
    e.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="override a top-level key (YAML value), like snakemake --config",
    )
    e.add_argument(
        "--benchmarks", metavar="DIR",
        help=f"benchmarks results directory for calibration (default: ${cost.RESULTS_ENV} "
        "or benchmarks/results)",
    )
    e.add_argument("--agents", action="store_true",
                   help="list every agent id per algorithm (default: when 40 or fewer)")
    e.set_defaults(func=_estimate)


#: What the table's columns mean (``--help`` and the end of the output).
COLUMNS = """columns:
  configs      agent configurations (compat variants included)
  jobs         workflow jobs as they will run: units of one algorithm (trainings of
               agents that learn offline; chunks of runs, on the test sets or the
               validation sets) packed up to bundle_minutes
  offline h    CPU-hours of offline training (OPPS-DS; zero for algorithms without)
  runs h       CPU-hours of the trajectories: N per (configuration, experiment)
  valid h      CPU-hours of the trajectories on the validation sets (selection:
               validation): validation_mdps per (configuration, experiment), for the
               algorithms with more than one configuration in the experiment
  overhead h   a fixed cost per job (process start, imports, loading kernels and data)
  total h      offline + runs + valid + overhead
  max job h    the longest single job (the chunk budget bounds it)
  in range     runs whose experiment and parameters lie inside the measured ones
  worst        the largest prediction/measurement ratio over the measured
               configurations, each predicted without its own measurement
  calibration  measured (benchmarks/results), probed (short runs of this plan),
               or none (a rough default price)"""


def hours(h: float) -> str:
    """CPU-hours with the precision they need (``0.0042 h`` is 15 s, not ``0.0``).

    Examples
    --------
    >>> hours(435.2), hours(4.56), hours(0.1333), hours(0.0042)
    ('435', '4.56', '0.133', '0.0042 (15 s)')
    """
    if h >= 100:
        return f"{h:.0f}"
    if h >= 0.1:
        return f"{h:.3g}"
    s = h * 3600.0
    return f"{h:.2g} ({s:.2g} s)" if s < 60 else f"{h:.2g} ({s / 60:.2g} min)"


def horizons(plan: P.Plan) -> str:
    """The experiments' horizons T, smallest to largest (``250``, or ``100,000 to
    500,000`` when long interactions differ)."""
    hs = sorted({e.horizon for e in plan.experiments})
    if not hs:
        return f"{plan.config['horizon']:,}"
    return f"{hs[0]:,}" if len(hs) == 1 else f"{hs[0]:,} to {hs[-1]:,}"


def estimate(plan: P.Plan) -> dict[str, dict[str, Any]]:
    """Per algorithm: configurations, jobs (as they will run: bundles of units, see
    :mod:`bbrlcore.plan.bundles`; ``run_jobs`` counts those on the validation sets too,
    ``validate_jobs`` those alone), offline, run, validation-run (``valid_h``) and
    overhead CPU-hours, the longest job, and how far the cost model can be trusted there:
    how many (agent, experiment) runs lie inside its measured range, and its worst
    prediction ratio."""
    from bbrlcore.plan import bundles

    out: dict[str, dict[str, Any]] = {}
    n = plan.n_mdps("test")
    n_val = plan.n_mdps("validation")
    model = plan.cost_model
    validated = {(e.name, a.key) for e in plan.experiments for a in plan.validation_agents(e)}

    def row_of(alg: str) -> dict[str, Any]:
        return out.setdefault(
            alg,
            {"configs": 0, "train_jobs": 0, "run_jobs": 0, "validate_jobs": 0,
             "offline_h": 0.0, "run_h": 0.0, "valid_h": 0.0, "overhead_h": 0.0,
             "max_chunk_h": 0.0, "runs": 0, "in_range": 0},
        )

    for a in plan.agents:
        row = row_of(a.algorithm)
        row["configs"] += 1
        for prior in plan.priors_of(a):
            row["offline_h"] += plan.offline_seconds(prior, a) / 3600.0
        for exp in plan.experiments_of(a):
            s = plan.seconds_per_trajectory(exp, a)
            row["run_h"] += n * s / 3600.0
            if (exp.name, a.key) in validated:
                row["valid_h"] += n_val * s / 3600.0
            row["runs"] += 1
            row["in_range"] += model.in_range(a.algorithm, a.param_dict, exp.test, exp.prior)
    for b in bundles.bundles(plan):
        row = row_of(b.algorithm)
        row[f"{b.kind}_jobs"] += 1
        if b.split == "validation":
            row["validate_jobs"] += 1
        row["max_chunk_h"] = max(row["max_chunk_h"], b.seconds / 3600.0)
    for row in out.values():
        row["overhead_h"] = (row["train_jobs"] + row["run_jobs"]) * cost.JOB_OVERHEAD_S / 3600
    for name, row in out.items():
        row["total_h"] = row["offline_h"] + row["run_h"] + row["valid_h"] + row["overhead_h"]
        fit = model.quality(name)
        row["calibration"] = "none" if fit is None else (
            "probed" if name in plan.probed else "measured, probed episodic"
            if name in plan.probed_episodic else "measured")
        # a ratio "left out" needs another configuration to fit on: one is no check
        row["worst_ratio"] = (fit.worst_ratio if fit is not None and fit.n_configs > 1
                              else float("nan"))
        row["measured_configs"] = fit.n_configs if fit is not None else 0
    return out


def indicator_hours(plan: P.Plan) -> tuple[float, int]:
    """CPU-hours of Colosseum's indicators in the runs (``indicators: true``: the exact
    evaluations of each agent's policy, :meth:`bbrlcore.plan.Plan.indicator_seconds`,
    already in the runs' hours) and how many evaluations they are."""
    n = plan.n_mdps("test")
    n_val = plan.n_mdps("validation")
    secs, count = 0.0, 0
    for exp in plan.experiments:
        if exp.log_every is None:
            continue
        val = {a.key for a in plan.validation_agents(exp)}
        for a in plan.agents_of(exp):
            s = plan.indicator_seconds(exp, a)
            if s <= 0:
                continue
            m = n + (n_val if a.key in val else 0)
            secs += m * s
            count += m * (exp.horizon // exp.log_every + 1)
    return secs / 3600.0, count


def selection_line(plan: P.Plan) -> str:
    """What ``bbrl estimate`` says of the selection: where configurations are chosen and,
    on validation sets, how many MDPs and which algorithms play them."""
    if not plan.validating:
        return ("selection: test (each algorithm's configuration chosen on the test MDPs, "
                "the paper's): no validation runs")
    algs = sorted({a.algorithm for e in plan.experiments for a in plan.validation_agents(e)})
    return (f"selection: validation (each algorithm's configuration chosen on "
            f"{plan.n_mdps('validation')} validation MDPs per test distribution, its score "
            "reported on the test MDPs): validation runs of "
            + (", ".join(algs) if algs else "none (every algorithm has one configuration)"))


def _estimate(args: argparse.Namespace) -> int:
    import yaml

    overrides: dict[str, Any] = {}
    if args.preset:
        overrides["preset"] = args.preset
    for item in args.set:
        if "=" not in item:
            raise BBRLError(f"--set {item!r}: expected KEY=VALUE")
        k, v = item.split("=", 1)
        try:
            overrides[k.strip()] = yaml.safe_load(v)
        except (yaml.YAMLError, RecursionError) as exc:
            first = (str(exc).splitlines() or ["syntax error"])[0]
            raise BBRLError(f"--set {item!r}: the value is not valid YAML ({first})") from None
    plan = P.load(args.config, overrides, calibration_dir=args.benchmarks)
    from bbrlcore.plan import probe

    probe.ensure(plan, plan.config["results_dir"])  # plugins: measured by short probes
    rows = estimate(plan)
    c = plan.config
    for line in plan.over_budget():  # (before anything runs: a job no chunk can shorten)
        print(f"bbrl: warning: {line}", file=sys.stderr)
    for line in plan.missing_references():  # (columns that would be empty at the end)
        print(f"bbrl: warning: {line}", file=sys.stderr)
    for line in plan.notes:  # (what the plan leaves out: Colosseum's instances skipped)
        print(f"bbrl: note: {line}")
    print(
        f"{args.config}" + (f" (preset {c['preset']})" if c.get("preset") else "")
        + f": {len(plan.experiments)} experiments, {len(plan.agents)} agent configurations "
        f"per prior, N={c['n_mdps']}, T={horizons(plan)}, chunk budget "
        f"{c['chunk_budget_minutes']:g} min"
    )
    print(selection_line(plan))
    hdr = (f"{'algorithm':14s} {'configs':>7s} {'jobs':>6s} {'offline h':>10s} "
           f"{'runs h':>10s} {'valid h':>10s} {'overhead h':>10s} {'total h':>10s} "
           f"{'max job h':>11s}  {'in range':>9s} {'worst':>6s}  calibration")
    print(hdr)
    print("-" * len(hdr))
    tot = {"configs": 0, "jobs": 0, "offline_h": 0.0, "run_h": 0.0, "valid_h": 0.0,
           "overhead_h": 0.0, "total_h": 0.0, "runs": 0, "in_range": 0}
    for name in sorted(rows, key=lambda k: -rows[k]["total_h"]):
        r = rows[name]
        jobs = r["train_jobs"] + r["run_jobs"]
        worst = "-" if r["worst_ratio"] != r["worst_ratio"] else f"x{r['worst_ratio']:.2f}"
        cal = r["calibration"] + (f" ({r['measured_configs']} configs)"
                                  if r["calibration"] != "none" else "")
        print(
            f"{name:14s} {r['configs']:7d} {jobs:6d} {r['offline_h']:10.3g} "
            f"{r['run_h']:10.3g} {r['valid_h']:10.3g} {r['overhead_h']:10.3g} "
            f"{r['total_h']:10.3g} {r['max_chunk_h']:11.3g}  "
            f"{r['in_range']:4d}/{r['runs']:<4d} {worst:>6s}  {cal}"
        )
        tot["configs"] += r["configs"]
        tot["jobs"] += jobs
        for k in ("offline_h", "run_h", "valid_h", "overhead_h", "total_h", "runs",
                  "in_range"):
            tot[k] += r[k]
    print("-" * len(hdr))
    print(
        f"{'total':14s} {tot['configs']:7d} {tot['jobs']:6d} {tot['offline_h']:10.3g} "
        f"{tot['run_h']:10.3g} {tot['valid_h']:10.3g} {tot['overhead_h']:10.3g} "
        f"{tot['total_h']:10.3g} {'':11s}  {tot['in_range']:4d}/{tot['runs']:<4d}"
    )
    print(f"expected CPU-hours: {hours(tot['total_h'])} (single-core, this machine class)")
    ind_h, n_eval = indicator_hours(plan)
    if n_eval:
        print(f"of which Colosseum's indicators: {hours(ind_h)} ({n_eval:,} exact evaluations "
              "of the agents' policies, every log_every steps; measured per instance: "
              "benchmarks/results/colosseum_evaluations.md)")
    print()
    print("agents per algorithm" + (" (compat_variants: true adds the compat variant of "
                                    "every configuration of an algorithm that has one)"
                                    if c.get("compat_variants") else "") + ":")
    for line in plan.agents_summary(list_all=args.agents):
        print("  " + line)
    print()
    print(COLUMNS)
    print("(the cost model and its checks: benchmarks/README.md)")
    return 0
