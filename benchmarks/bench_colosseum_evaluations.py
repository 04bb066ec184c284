"""Cost of one exact evaluation of Colosseum's indicators on every Colosseum instance bbrl
expresses (issue 43): what ``bbrl estimate`` adds to a run with ``indicators: true``.

An interaction of T steps with ``log_every`` L evaluates the agent's current policy
exactly about T / L times (:mod:`bbrlcore.mdp.indicators`); each evaluation is a numba
kernel call inside the agent's trajectory kernel: episodic, backward induction over the
episode (H sweeps of the transitions); continuing, the policy's chain from the current
state, its closed classes and their stationary laws (GTH, cubic in a class's size up to
:data:`bbrlcore.mdp.evaluation.DENSE_MAX` states). This script times those kernels on each
instance's MDP (its test distribution draws the instance itself) for a uniformly random
**stochastic** policy (full support: every reachable state in one class, the costliest
chain; Colosseum's agents give stochastic policies) and a random **deterministic** one, the
median over ``--rounds`` rounds of this thread's CPU time (the machine is shared).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_colosseum_evaluations.py [--rounds 5]

Writes ``results/colosseum_evaluations.json`` (records ``{"evaluation": {"test",
"episode_length", "policy", "states", "transitions", "kernel_us"}}``, read by
:func:`bbrlcore.plan.cost.evaluation_records`) and ``results/colosseum_evaluations.md``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import evaluation as EV
from bbrlcore.mdp import families
from bbrlcore.mdp.families import colosseum_instances as CI

HERE = Path(__file__).resolve().parent


def _median_us(fn, rounds: int, budget_s: float = 0.2) -> float:
    fn()
    c0 = time.thread_time()
    fn()
    one = max(time.thread_time() - c0, 1e-7)
    calls = max(1, min(5000, int(budget_s / one)))
    vals = []
    for _ in range(rounds):
        c0 = time.thread_time()
        for _ in range(calls):
            fn()
        vals.append((time.thread_time() - c0) / calls * 1e6)
    return statistics.median(vals)


def kernels(test, H: int):
    """(policy kind, kernel call) pairs on one MDP of ``test`` (H = 0: continuing)."""
    lay = test.support_layout
    P = test.draw_rows(np.random.default_rng(0))
    succ, nsucc, P = EV._rows(lay.succ, lay.nsucc, P)
    rbar = EV.expected_rewards(succ, nsucc, P, test.reward_rows)
    nX, nU = nsucc.shape
    rng = np.random.default_rng(1)
    shape = (H, nX) if H else (nX,)
    stoch = np.ascontiguousarray(rng.dirichlet(np.ones(nU), size=shape))
    det = rng.integers(0, nU, shape).astype(np.int64)
    V = np.zeros(nX)
    sc = EV.ChainScratch(nX, int(nsucc.sum()))
    states = np.array([test.initial_state], np.int64)
    probs = np.ones(1)
    out = []
    for kind, pol in (("stochastic", stoch), ("deterministic", det)):
        if H:
            f = (EV.episode_values_stochastic if kind == "stochastic"
                 else EV.episode_values_deterministic)

            def kern(pol=pol, f=f):
                f(succ, nsucc, P, rbar, pol, H, V)
        else:
            ps = pol if kind == "stochastic" else EV._NO_STOCHASTIC
            pd = pol if kind == "deterministic" else EV._NO_DETERMINISTIC

            def kern(ps=ps, pd=pd, st=kind == "stochastic"):
                EV.policy_chain(succ, nsucc, P, rbar, ps, pd, st, sc.indptr, sc.indices,
                                sc.probs, sc.r)
                EV.chain_gain_from(sc.indptr, sc.indices, sc.probs, sc.r, states, probs,
                                   EV.DENSE_MAX, sc.g)
        out.append((kind, kern, nX, int(nsucc.sum())))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", nargs="*", help="instance names (default: every expressed)")
    args = ap.parse_args()
    names = args.only or [n for n, i in CI.INSTANCES.items() if i.problem_params]
    rows = []
    for name in names:
        inst = CI.INSTANCES[name]
        test = D.load(name)
        H = families.episodic_form(test)[1] if inst.episodic else 0
        for kind, kern, nX, ntr in kernels(test, H):
            us = _median_us(kern, args.rounds)
            rows.append({"test": name, "episode_length": H, "policy": kind,
                         "states": nX, "transitions": ntr, "kernel_us": round(us, 2)})
            print(f"{name:28s} H={H:3d} {kind:13s} {nX:5d} states {ntr:6d} transitions "
                  f"{us:10.2f} µs", flush=True)
    res = HERE / "results"
    meta = {"date": time.strftime("%Y-%m-%d"), "script": "bench_colosseum_evaluations.py",
            "rounds": args.rounds, "clock": "thread CPU time, median of rounds"}
    (res / "colosseum_evaluations.json").write_text(json.dumps(
        {"meta": meta, "evaluation": rows}, indent=1) + "\n")
    lines = ["# Colosseum's indicators: one exact evaluation per Colosseum instance (issue 43)",
             "", f"Measured {meta['date']} by `benchmarks/bench_colosseum_evaluations.py` "
             "on a shared 2-core machine (this thread's CPU time, median of "
             f"{args.rounds} rounds): the numba kernel that evaluates a policy exactly "
             "(episodic: backward induction over H steps; continuing: the policy's chain "
             "from the start, closed classes, GTH). `bbrl estimate` adds T / log_every "
             "evaluations (the stochastic policy's, the costlier) to every run with "
             "`indicators: true`.", "",
             "| instance | H | states | transitions | stochastic µs | deterministic µs |",
             "|---|---|---|---|---|---|"]
    by: dict[str, dict] = {}
    for r in rows:
        by.setdefault(r["test"], dict(r))[r["policy"]] = r["kernel_us"]
    for name, r in by.items():
        lines.append(f"| {name} | {r['episode_length'] or 'continuing'} | {r['states']} | "
                     f"{r['transitions']} | {r.get('stochastic', '')} | "
                     f"{r.get('deterministic', '')} |")
    (res / "colosseum_evaluations.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
