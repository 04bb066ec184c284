"""The cost model's estimate of a plugin against its measured time (issue 41).

A plugin is priced by probes (``bbrlcore.plan.probe``: 3 trajectories per experiment in
its setting); the workflow chunks, bundles and times its jobs by that estimate. This
writes an episodic PSRL of one's own twice, in Python (``MyPSRL``, the one of the
documentation's *Long and episodic interactions*) and compiled (``MyPSRLJit``: the same
algorithm as numba functions: a Dirichlet draw and an H-step solve per episode), plans
the study the issue reported (DeepSea-10, -14 and -20, uniform prior, 500 episodes of
the natural length), and compares for each (plugin, experiment):

* ``estimate``: the plan's seconds per trajectory after its probes;
* ``estimate_after_50``: the same when the results directory already held the probes of
  the same study at 50 episodes (a study whose setting changed: the records of both
  horizons are read);
* ``estimate_compiled_first``: the same when the study lists the compiled plugin first
  (its probes run before the Python plugin's, in the same process);
* ``job``: the estimate a workflow job (``bbrl batch``) and ``bbrl run`` announce and
  watch the run by (``bbrlcore.cli.agents.expected_run_seconds``);
* the measured time of ``--n-mdps`` trajectories played by ``run_agent``: the median of
  their online (wall) times and of their CPU times (the machine is shared).

Each estimate and each measurement runs in a process of its own, as a workflow job does
(:data:`ESTIMATE`, :data:`MEASURE`).

    .venv/bin/python benchmarks/bench_plugin_cost.py [--n-mdps 6] [--before OLD.json]

Writes ``benchmarks/results/plugin_cost.json`` (``"calibration": false``: plugins are not
calibrated by the benchmarks) and ``.md``; ``--before`` adds the estimates of an earlier
run (another tree's, e.g. ``PYTHONPATH=OLD/src``) to the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml

from bbrlcore import __version__

HERE = Path(__file__).resolve().parent

PLUGINS = textwrap.dedent('''
    import numpy as np
    from numba import njit
    from bbrlcore.agents import CompiledAgent, PythonAgent, bayes


    class MyPSRL(PythonAgent):
        """Posterior sampling with one model drawn per episode (Osband et al. 2013)."""

        name = "my-psrl"

        def reset(self):
            self.counts = self.prior.theta.copy()
            self.q = None

        def episode_start(self, k):
            P = bayes.sample_mdp(self.counts, self.rng)
            self.q = bayes.q_values(P, self.prior.reward, 1.0, self.episode_length)

        def act(self, state):
            if self.q is None:
                P = bayes.sample_mdp(self.counts, self.rng)
                self.q = bayes.q_values(P, self.prior.reward, self.gamma, self.horizon)
            return int(np.argmax(self.q[state]))

        def observe(self, state, action, next_state, reward):
            self.counts[state, action, next_state] += 1


    @njit(cache=True)
    def _reset(setup):
        theta, R, H = setup
        supp, nsupp = bayes.support_of(theta)
        Q = np.zeros((theta.shape[0], theta.shape[1]))
        return theta.copy(), np.empty_like(theta), R, supp, nsupp, Q, H


    @njit(cache=True)
    def _episode_start(state, k):
        alpha, P, R, supp, nsupp, Q, H = state
        bayes.draw_mdp(alpha, P)
        Q[:] = 0.0
        bayes.q_solve(P, R, supp, nsupp, 1.0, H, Q)


    @njit(cache=True)
    def _act(state, x):
        return bayes.argmax_random_tie(state[5][x])


    @njit(cache=True)
    def _observe(state, x, u, y, r):
        state[0][x, u, y] += 1.0


    class MyPSRLJit(CompiledAgent):
        """MyPSRL compiled (numba): the package's loop calls these functions."""

        name = "my-psrl-jit"
        reset = _reset
        act = _act
        observe = _observe
        episode_start = _episode_start

        def setup(self):
            return (np.ascontiguousarray(self.prior.theta, dtype=np.float64),
                    np.ascontiguousarray(self.prior.reward, dtype=np.float64),
                    int(self.episode_length))
    ''')
SIZES = [10, 14, 20]


def study(path: Path, results: str, episodes: int, n_mdps: int,
          compiled_first: bool = False) -> Path:
    plugins = ["my_episodic.py:MyPSRL", "my_episodic.py:MyPSRLJit"]
    if compiled_first:
        plugins.reverse()
    path.write_text(yaml.safe_dump({
        "results_dir": results, "n_mdps": n_mdps, "score": "undiscounted",
        "selection": "test",
        "experiments": [{"test": {"family": "deepsea", "size": SIZES},
                         "prior": "uniform", "episodes": episodes}],
        "algorithms": {"random": {}, "optimal": {}, **{p: {} for p in plugins}}},
        sort_keys=False))
    return path


#: Each step runs in a process of its own, as a workflow job does: what a process ran
#: before changes what comes after (glibc's allocator serves the Python agent's arrays
#: from fresh pages until a larger one has been freed: DeepSea-14's trajectories take
#: 4x less after DeepSea-20's).
ESTIMATE = """
import json, sys
from bbrlcore import plan as P
from bbrlcore.plan import probe
plan = P.load(sys.argv[1])
probe.ensure(plan, plan.config["results_dir"], progress=False)
print(json.dumps({f"{a.key} {e.name}": plan.seconds_per_trajectory(e, a)
                  for a in plan.agents if a.plugin_ref for e in plan.experiments_of(a)}))
"""
MEASURE = """
import json, os, statistics, sys, time
from bbrlcore import plan as P
from bbrlcore import protocol as E
from bbrlcore.plan import probe
plan = P.load(sys.argv[1])
probe.ensure(plan, plan.config["results_dir"], run=False)
a = plan.agent(sys.argv[2])
e = next(e for e in plan.experiments if e.name == sys.argv[3])
n = int(sys.argv[4])
ts = E.new_test_set(plan.test_distribution(e.test), n, plan.config["gamma"], e.horizon,
                    plan.config["test_seed"], episode_length=e.episode_length,
                    references=False)
agent = E.train_agent(a.ref, a.param_dict, plan.dists[e.prior], horizon=e.horizon,
                      progress=False)
os.environ["BBRL_COST_RECORDS"] = os.pathsep.join(plan.cost_records_dirs)
try:
    from bbrlcore.cli.agents import expected_run_seconds
except ImportError:  # (a tree before issue 41)
    from bbrlcore.cli.agents import _expected_run_seconds as expected_run_seconds
job = expected_run_seconds(ts, agent, 1)
cpu_times = []
try:  # (each trajectory's CPU time)
    table = E.run_agent(ts, agent, progress=False, cpu_times=cpu_times)
except TypeError:  # (a tree before issue 41: the run's, per trajectory)
    c0 = time.process_time()
    table = E.run_agent(ts, agent, progress=False)
    cpu_times = [(time.process_time() - c0) / n]
print(json.dumps({"job": job, "wall": statistics.median(table["online_time_s"].to_list()),
                  "cpu": statistics.median(cpu_times)}))
"""


def _python(code: str, *args: str) -> dict:
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                       check=False)
    if r.returncode != 0:
        raise SystemExit(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-mdps", type=int, default=6)
    ap.add_argument("--before", help="plugin_cost.json of an earlier run, shown beside")
    ap.add_argument("-o", "--output", default=str(HERE / "results" / "plugin_cost.json"))
    args = ap.parse_args()
    out_json = Path(args.output).resolve()
    before = json.loads(Path(args.before).read_text()) if args.before else None
    old = os.getcwd()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)
        try:
            Path("my_episodic.py").write_text(PLUGINS)
            n = args.n_mdps
            s500 = study(Path("s500.yaml"), "res-a", 500, n)
            est = _python(ESTIMATE, str(s500))
            _python(ESTIMATE, str(study(Path("s50.yaml"), "res-b", 50, n)))
            after = _python(ESTIMATE, str(study(Path("s500b.yaml"), "res-b", 500, n)))
            first = _python(ESTIMATE, str(study(Path("s500c.yaml"), "res-c", 500, n,
                                                compiled_first=True)))
            for key in est:
                agent_key, exp = key.split(" ", 1)
                m = _python(MEASURE, str(s500), agent_key, exp, str(n))
                row = {"agent_name": agent_key, "experiment": exp, "n_mdps": n,
                       "estimate_s": est[key], "estimate_after_50_s": after[key],
                       "estimate_compiled_first_s": first[key],
                       "job_estimate_s": m["job"], "measured_wall_median_s": m["wall"],
                       "measured_cpu_s": m["cpu"]}
                rows.append(row)
                print(f"{agent_key:12s} {exp:32s} estimate {est[key]:8.3f} s (after a "
                      f"50-episode probe {after[key]:8.3f}; compiled first "
                      f"{first[key]:8.3f}; job {m['job']:.3f}), measured "
                      f"{m['wall']:8.3f} s wall, {m['cpu']:8.3f} s CPU", flush=True)
        finally:
            os.chdir(old)
    meta = {"calibration": False, "date": time.strftime("%Y-%m-%d %H:%M"),
            "bbrlcore": __version__, "python": platform.python_version(),
            "load_average": list(os.getloadavg()),
            "what": "plugin estimates against measured times, DeepSea 10/14/20, "
                    "500 episodes (issue 41)"}
    out_json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    out_json.with_suffix(".md").write_text(report(rows, meta, before))
    print(f"wrote {out_json} and {out_json.with_suffix('.md')}")
    return 0


def _g(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


def _x(est: float | None, meas: float) -> str:
    if not est:
        return "-"
    return f"×{max(est / meas, meas / est):.2f}"


def report(rows: list[dict], meta: dict, before: dict | None) -> str:
    old = {(r["agent_name"], r["experiment"]): r for r in (before or {}).get("rows", [])}
    lines = [
        f"# Plugins: the cost model's estimate against the measured time ({meta['date']})",
        "",
        "`benchmarks/bench_plugin_cost.py`: an episodic PSRL of one's own in Python "
        "(`my-psrl`) and compiled (`my-psrl-jit`), DeepSea-10/14/20 with the uniform prior, "
        f"500 episodes, {rows[0]['n_mdps'] if rows else 0} test MDPs; seconds per "
        "trajectory. *estimate*: the plan's after its probes; *after 50*: when the "
        "results directory already held the probes of the study at 50 episodes; *jit "
        "first*: when the compiled plugin was probed first; *job*: "
        "what a workflow job and `bbrl run` announce; measured: the median online (wall) "
        "and CPU times of the trajectories (load average "
        f"{', '.join(f'{x:.1f}' for x in meta['load_average'])} on 2 cores). Ratio: "
        "max(estimate/measured, measured/estimate), against the smaller measured time "
        "(the wall time holds the other work on the machine's cores, the CPU time a "
        "plugin's threads). *before*: the same run on the tree "
        "before issue 41's changes (its own probes), against this run's measurements.",
        "",
    ]
    head = ("| plugin | experiment | estimate | after 50 | jit first | job | measured wall "
            "| measured CPU | ratios |")
    if old:
        head += " before: estimate | after 50 | jit first | before: ratios |"
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        m = min(r["measured_cpu_s"], r["measured_wall_median_s"])
        keys = ("estimate_s", "estimate_after_50_s", "estimate_compiled_first_s")
        cells = [r["agent_name"], r["experiment"], *(_g(r.get(k)) for k in keys),
                 _g(r["job_estimate_s"]), _g(r["measured_wall_median_s"]),
                 _g(r["measured_cpu_s"]), ", ".join(_x(r.get(k), m) for k in keys)]
        if old:
            o = old.get((r["agent_name"], r["experiment"]))
            cells += (["-"] * 4 if o is None else [
                *(_g(o.get(k)) for k in keys), ", ".join(_x(o.get(k), m) for k in keys)])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
