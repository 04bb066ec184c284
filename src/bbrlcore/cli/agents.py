"""``bbrl train``, ``bbrl run`` and ``bbrl agents``."""

from __future__ import annotations

import argparse
import sys
import textwrap

from bbrlcore import agents, crash
from bbrlcore import protocol as E
from bbrlcore.cli._io import IO
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D


def _param_files(args: argparse.Namespace) -> list[tuple[str, str]]:
    """Files named by ``--param k=FILE`` (a formula set)."""
    return [("--param", item.split("=", 1)[1].strip()) for item in args.param if "=" in item]


def register(sub: argparse._SubParsersAction) -> None:
    tr = sub.add_parser("train", help="offline learning of an agent on a prior")
    tr.add_argument("--agent", required=True,
                    help=f"algorithm: {', '.join(agents.BUILTINS)}, an installed plugin, or a "
                    "plugin reference module:NAME or path/to/file.py:NAME")
    tr.add_argument(
        "--param", action="append", default=[], metavar="K=V", help="agent parameter (repeat)"
    )
    tr.add_argument("--prior", required=True, help="prior: name, .dat or .parquet")
    tr.add_argument("--seed", type=int, default=0, help="seed of offline learning (0)")
    tr.add_argument("--gamma", type=float, default=0.95, help="discount of simulated episodes")
    tr.add_argument("--horizon", type=int, default=250, help="horizon of simulated episodes")
    tr.add_argument("--checkpoint", help="checkpoint file for long trainings (resumes from it)")
    tr.add_argument(
        "--checkpoint-every", type=float, default=60.0, help="seconds between checkpoints (60)"
    )
    tr.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    tr.add_argument("-o", "--output", required=True, help="output agent .parquet")
    tr.set_defaults(func=_train, io=IO(inputs=("prior",), outputs=("output", "checkpoint"),
                                       extra_inputs=_param_files))

    rn = sub.add_parser("run", help="play an agent on a test set, one trajectory per MDP")
    rn.add_argument("--experiment", required=True, help="test-set .parquet (bbrl experiment new)")
    rn.add_argument("--agent", required=True, help="agent .parquet (bbrl train)")
    rn.add_argument("--mdps", help="slice START:STOP of test MDPs (default: all)")
    rn.add_argument("--indicators", action="store_true",
                    help="also compute Colosseum's expected indicators: the agent's current "
                    "policy evaluated exactly on the test MDP every --log-every steps "
                    "(columns expected_regret, normalised_expected_regret, ...; null for an "
                    "agent that does not expose its policy)")
    rn.add_argument("--log-every", type=int, default=None, metavar="L",
                    help="steps between two evaluations with --indicators (default: "
                    "Colosseum's 100)")
    rn.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    rn.add_argument("-o", "--output", required=True, help="output run .parquet")
    rn.set_defaults(func=_run, io=IO(inputs=("experiment", "agent"), outputs=("output",)))

    ls = sub.add_parser("agents", help="list the algorithms (built-ins and plugins), where "
                        "each comes from and its parameters; given names, describe those")
    ls.add_argument("refs", nargs="*", metavar="NAME",
                    help="describe only these algorithms: names or plugin references "
                    "(module:NAME or path/to/file.py:NAME), with each parameter's "
                    "documentation and the algorithm's description")
    ls.set_defaults(func=_list)


def parse_kv(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise BBRLError(f"--param {item!r}: expected NAME=VALUE")
        k, v = item.split("=", 1)
        k = k.strip()
        if k in out:
            raise BBRLError(f"--param {k}: given twice")
        out[k] = v.strip()
    return out


def _train(args: argparse.Namespace) -> int:
    from bbrlcore.protocol.training import check_checkpoint_every

    check_checkpoint_every(args.checkpoint_every)
    alg = agents.get(args.agent)  # unknown names fail before any work
    raw = parse_kv(args.param)
    alg.parse_params(raw)
    prior = D.load(args.prior)
    agent = E.train_agent(
        args.agent,
        raw,
        prior,
        seed=args.seed,
        gamma=args.gamma,
        horizon=args.horizon,
        checkpoint=args.checkpoint,
        checkpoint_every=args.checkpoint_every,
        progress=not args.quiet,
        expected_s=lambda: _expected_train_seconds(args.agent, raw, prior, args.gamma,
                                                   args.horizon),
    )
    E.write_agent(agent, args.output)
    # (said once the file is there: after a clean exit of a watched process)
    crash.announce(f"wrote {args.output}: {agent.agent_id} on {prior.short_name}, "
                   f"offline {agent.offline_time_s:.3g} s")
    return 0


def _run(args: argparse.Namespace) -> int:
    from bbrlcore.mdp.indicators import LOG_EVERY
    from bbrlcore.protocol.runner import check_log_every

    if args.log_every is not None and not args.indicators:
        raise BBRLError("--log-every: applies with --indicators only")
    log_every = (check_log_every(LOG_EVERY if args.log_every is None else args.log_every,
                                 "--log-every") if args.indicators else None)
    ts = E.read_test_set(args.experiment)
    agent = E.read_agent(args.agent)
    sel = E.parse_slice(args.mdps, ts.n_mdps)
    table = E.run_agent(ts, agent, sel, progress=not args.quiet,
                        expected_s=lambda: expected_run_seconds(ts, agent, len(sel)),
                        log_every=log_every)
    E.write_run(table, args.output, E.run_meta(ts, agent, sel))
    n = len(table)
    if n:
        ms = 1000 * table["online_time_s"].mean()
        crash.announce(f"wrote {args.output}: {n} trajectories, {E.score_summary(table)}, "
                       f"{ms:.3g} ms each")
    else:
        crash.announce(f"wrote {args.output}: no trajectories (empty slice)")
    return 0


def _expected_train_seconds(algorithm: str, raw: dict, prior, gamma: float,
                            horizon: int) -> float | None:
    """The cost model's estimate of offline learning (None if it cannot tell)."""
    from bbrlcore.plan import cost

    try:
        return cost.model().offline_seconds(algorithm, raw, prior, horizon, gamma)
    except (BBRLError, ValueError, ArithmeticError):
        return None


def expected_run_seconds(ts: E.TestSet, agent: E.TrainedAgent, n: int) -> float | None:
    """The cost model's estimate of ``n`` trajectories of ``agent`` on ``ts`` in its
    setting (its horizon and, episodic, its episodes: PSRL's episodic form plans once
    per episode), as ``bbrl run`` and a workflow job announce and watch it (None if it
    cannot tell)."""
    from bbrlcore.plan import cost

    try:
        s = cost.model().seconds_per_trajectory(
            agent.algorithm, agent.params, ts.test, ts.horizon, agent.prior, ts.gamma,
            learned=agent.info, episode_length=ts.episode_length)
    except (BBRLError, ValueError, ArithmeticError):
        return None
    return n * s


def _list(args: argparse.Namespace) -> int:
    if args.refs:
        entries = [agents.registry.entry(ref) for ref in args.refs]  # unknown: one line
        for k, e in enumerate(entries):
            if k:
                print()
            print(describe(e))
        return 0
    for e in agents.registry.all_entries():
        alg = e.algorithm
        ps = [f"{p.name} ({p.type.__name__}, "
              f"{'required' if p.required else f'default {p.default}'})" for p in alg.params]
        print(f"{e.name:12s} {'; '.join(ps) or '-'}")
        print(f"{'':12s} from {_where(e)}")
    return 0


def _where(e: agents.registry.Entry) -> str:
    where = e.source if e.builtin else f"{e.source}: {e.ref}"
    if e.builtin and e.name in agents.EXTENDED:
        where += " (beyond the paper)"
    elif e.builtin and e.name in agents.BASELINES:
        where += " (a baseline of the exploration literature)"
    return where


def describe(e: agents.registry.Entry) -> str:
    """What ``bbrl agents NAME`` prints: the algorithm's name and display name, where it
    comes from, each parameter (type, default, documentation), its counters, whether it
    learns offline, and its description."""
    from bbrlcore.analysis.constraints import display_name

    alg = e.algorithm
    shown = alg.display_name or display_name(alg.name)
    lines = [alg.name + (f" ({shown} in the report)" if shown != alg.name else ""),
             f"  from {_where(e)}"]
    if alg.params:
        lines.append("  parameters:")
        for p in alg.params:
            kind = "required" if p.required else f"default {p.default}"
            lines.append(f"    {p.name} ({p.type.__name__}, {kind})"
                         + (f": {p.doc}" if p.doc else ""))
    else:
        lines.append("  parameters: none")
    if alg.counters:
        lines.append(f"  counters (run-table columns): {', '.join(alg.counters)}")
    lines.append(f"  learns offline: {'yes' if alg.train is not None else 'no'}")
    if alg.doc.strip():
        lines += ["", textwrap.indent(_dedent_doc(alg.doc), "  ")]
    return "\n".join(lines).rstrip()


def _dedent_doc(doc: str) -> str:
    """A docstring whose first line is not indented like the others."""
    first, _, rest = doc.strip().partition("\n")
    return first + ("\n" + textwrap.dedent(rest) if rest else "")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(0)
