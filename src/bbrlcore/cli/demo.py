"""``bbrl demo``: a small end-to-end run of the protocol (test set, training, runs)."""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

from bbrlcore import agents
from bbrlcore import protocol as E
from bbrlcore.cli._io import IO
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D

#: (algorithm, parameters) played by the demo when their module is installed.
DEMO_AGENTS: list[tuple[str, dict[str, str]]] = [
    ("random", {}),
    ("e-greedy", {"epsilon": "0.1"}),
    ("soft-max", {"tau": "0.1"}),
    ("soft-max", {"tau": "0.1", "compat": "true"}),
    ("beb", {"beta": "2.5"}),
    ("sboss", {"epsilon": "1", "delta": "1"}),
    ("opps-ds", {"formula_set": "F2", "n_draws": "100"}),
    ("bamcp", {"K": "50", "D": "15"}),
    ("bfs3", {"K": "10", "C": "2", "D": "10"}),
    ("optimal", {}),
]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="small end-to-end run: draw, train, run, summarise")
    p.add_argument("--test", default="GC", help="test distribution (GC)")
    p.add_argument("--prior", default=None, help="prior (default: the test distribution)")
    p.add_argument("--n-mdps", type=int, default=50, help="test MDPs (50)")
    p.add_argument("--out", default="results/demo", help="output directory")
    p.set_defaults(func=_demo, io=IO(inputs=("test", "prior"), outdirs=("out",)))


def _demo(args: argparse.Namespace) -> int:
    out = Path(args.out)
    test = D.load_test(args.test)  # every check before the output directory is created
    prior = D.load(args.prior or args.test)
    if (test.n_states, test.n_actions) != (prior.n_states, prior.n_actions):
        raise BBRLError(f"--prior {args.prior}: {prior.n_states} states and "
                        f"{prior.n_actions} actions, but --test {args.test} has "
                        f"{test.n_states} and {test.n_actions}: they must be equal")
    ts = E.new_test_set(test, args.n_mdps, 0.95, 250, seed=0)
    out.mkdir(parents=True, exist_ok=True)
    E.write_test_set(ts, out / "test-set.parquet")
    installed = set(agents.available())
    tables = []
    for name, params in DEMO_AGENTS:
        if name not in installed:
            continue
        agent = E.train_agent(name, params, prior, progress=False)
        E.write_agent(agent, out / f"{agent.agent_id}.agent.parquet")
        run = E.run_agent(ts, agent, progress=False)
        E.write_run(run, out / f"{agent.agent_id}.run.parquet", {"agent": agent.agent_id})
        tables.append(run)
        r = run["discounted_return"]
        print(
            f"{agent.agent_id:40s} mean {r.mean():8.3f} ± {1.96 * r.std() / len(r) ** 0.5:6.3f}"
            f"   {1000 * run['online_time_s'].mean():9.3f} ms/trajectory"
        )
    merged = pl.concat(tables, how="diagonal")
    E.write_run(merged, out / "all-runs.parquet", {"demo": True})
    print(f"wrote {out}/ (test set, agents, runs; all rows in {out / 'all-runs.parquet'})")
    return 0
