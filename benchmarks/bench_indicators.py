"""Cost of Colosseum's indicators in bbrl (issue 43): one exact evaluation of a policy, and
what it adds to PSRL on Colosseum's DeepSea when evaluated every 100 steps.

* ``evaluation``: µs per exact evaluation (:mod:`bbrlcore.mdp.evaluation`) of a random
  stochastic policy (Colosseum's form, ``(H, nX, nU)`` episodic / ``(nX, nU)``
  continuing) and of a deterministic one, on DeepSea-10 and DeepSea-20 with p_rand 0.4
  (episodic, H = N, backward induction) and RiverSwim-6 and RiverSwim-25 (continuing:
  chain, closed classes, GTH, gain from a state). Two figures each: the numba kernel alone (what a
  wired agent kernel would pay) and the Python call :meth:`Evaluator.evaluate` (checks,
  conversion, kernel). Median over ``--rounds`` rounds of many calls, this thread's CPU
  time (the machine is shared).
* ``psrl``: PSRL's kernel on DeepSea-10 with p_rand 0.4 (Colosseum's benchmark instance's
  size and noise; bbrl's DeepSea family and PSRL, accurate prior), episodic (10^5 steps,
  episodes of 10 steps) in steps per second, without indicators and with Colosseum's
  indicators every 100 steps computed inside the kernel (the player of ``bbrl run
  --indicators``, :func:`bbrlcore.agents.psrl.make_indicator_player`: the whole call,
  the test MDP's references included), against 100 × Colosseum's steps/s.
* ``colosseum`` (with ``--colosseum-python``, a Python that has Colosseum and ray):
  Colosseum's own ``MDPLoop`` with its PSRL (``PSRLEpisodic``, its cached benchmark
  hyperparameters) on its DeepSea-10 benchmark instance (p_rand 0.4), ``log_every`` =
  100, in steps per second of the process's CPU time (comparable with bbrl's figures on a
  shared machine) and of wall time, its evaluation included; PSRL's module is imported
  without its package's deep agents (sonnet and TensorFlow are not needed).

    .venv/bin/python benchmarks/bench_indicators.py \
        [--colosseum-python /work/peers/venv-col/bin/python]

Writes ``results/indicators.json`` and ``results/indicators.md``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

from bbrlcore.mdp import evaluation as EV
from bbrlcore.mdp import families
from bbrlcore.mdp import indicators as IND

HERE = Path(__file__).resolve().parent
#: Colosseum's loop as measured by issue 43 on this machine (steps/s, DeepSea-10, PSRL)
COLOSSEUM_ISSUE = (3600, 3800)


def _cpu() -> float:
    return time.thread_time()


def _cases():
    out = []
    for n in (10, 20):
        p = families.make("deepsea", size=n, p_rand=0.4)  # Colosseum's benchmark noise
        out.append((f"DeepSea-{n}, p_rand 0.4 (episodic, H={n})", p.test, n))
    for n in (6, 25):
        p = families.make("riverswim", size=n)
        out.append((f"RiverSwim-{n} (continuing)", p.test, None))
    return out


def _median_us(fn, calls: int, rounds: int) -> float:
    fn()
    vals = []
    for _ in range(rounds):
        c0 = _cpu()
        for _ in range(calls):
            fn()
        vals.append((_cpu() - c0) / calls * 1e6)
    return statistics.median(vals)


def evaluation(rounds: int) -> list[dict]:
    rows = []
    for name, test, H in _cases():
        lay = test.support_layout
        P = test.draw_rows(np.random.default_rng(0))
        ev = IND.Evaluator(lay.succ, lay.nsucc, P, test.reward_rows, horizon=H,
                           start=test.initial_state)
        nX, nU = ev.n_states, ev.n_actions
        rng = np.random.default_rng(1)
        shape = (H, nX) if H else (nX,)
        stoch = rng.dirichlet(np.full(nU, 0.7), size=shape)
        det = rng.integers(0, nU, shape)
        for kind, pol in (("stochastic", stoch), ("deterministic", det)):
            pi = EV.as_policy(pol, nX, nU, H)
            V = np.zeros(nX)
            sc = EV.ChainScratch(nX, int(ev.nsucc.sum()))
            states, probs = np.array([test.initial_state], np.int64), np.ones(1)
            if H:
                if pi.ndim == 2:
                    def kern(pi=pi, V=V, ev=ev, H=H):
                        EV.episode_values_deterministic(ev.succ, ev.nsucc, ev.P, ev.rbar, pi,
                                                        H, V)
                else:
                    def kern(pi=pi, V=V, ev=ev, H=H):
                        EV.episode_values_stochastic(ev.succ, ev.nsucc, ev.P, ev.rbar, pi, H,
                                                     V)
            else:
                ps = pi[0] if pi.ndim == 3 else EV._NO_STOCHASTIC
                pd = pi[0] if pi.ndim == 2 else EV._NO_DETERMINISTIC

                def kern(ps=ps, pd=pd, st=pi.ndim == 3, sc=sc, states=states, probs=probs,
                         ev=ev):
                    EV.policy_chain(ev.succ, ev.nsucc, ev.P, ev.rbar, ps, pd, st, sc.indptr,
                                    sc.indices, sc.probs, sc.r)
                    EV.chain_gain_from(sc.indptr, sc.indices, sc.probs, sc.r, states, probs,
                                       EV.DENSE_MAX, sc.g)

            def full(pol=pol, ev=ev, s0=test.initial_state):
                ev.evaluate(pol, s0)

            k_us = _median_us(kern, 2000, rounds)
            f_us = _median_us(full, 2000, rounds)
            row = {"case": name, "policy": kind, "states": nX, "actions": nU,
                   "transitions": int(ev.nsucc.sum()), "kernel_us": round(k_us, 2),
                   "python_us": round(f_us, 2)}
            rows.append(row)
            print(f"{name:32s} {kind:13s} kernel {k_us:8.2f} µs   Python call {f_us:8.2f} µs",
                  flush=True)
    return rows


def psrl(rounds: int, eval_rows: list[dict]) -> dict:
    from bbrlcore import agents
    from bbrlcore import protocol as E
    from bbrlcore.mdp import distributions as D
    from bbrlcore.protocol import runner

    # Colosseum's instance itself (DeepSea-10, p_rand 0.4, Colosseum's form) under the
    # colosseum preset's prior: the support known, Colosseum's NIG reward prior (its
    # tuned mean); the current policy evaluated is Colosseum's (the MAP model's)
    name = "Colosseum-EE-DeepSea-0"
    prior = D.load(f"U{name}+rnig0.41854463543357456")
    agent = E.train_agent("psrl", {}, prior, progress=False)
    T, H = 100_000, 10

    ts = E.new_test_set(D.load_test(name), 1, 0.95, T, 0, episode_length=H,
                        references=False)
    alg, trained = agents.get("psrl"), runner._as_trained(agent)
    plain = alg.make_player(prior, agent.params, trained, ts.episode())
    ind = alg.indicator_player(prior, agent.params, trained, ts.episode(), IND.LOG_EVERY)
    P, buf = np.ascontiguousarray(ts.mdps[0]), np.empty(T)

    def timed(play, seed: int) -> float:
        c0 = _cpu()
        play(P, seed, buf)
        return _cpu() - c0

    timed(plain, 0), timed(ind, 0)  # compile
    # interleaved rounds (a shared machine: both see the same load)
    a, b = [], []
    for r in range(rounds):
        a.append(timed(plain, 1 + r))
        b.append(timed(ind, 1 + r))
    secs, secs_ind = statistics.median(a), statistics.median(b)
    n_eval = len(IND.log_rows(T, IND.LOG_EVERY)[0])
    out = {"T": T, "episode_length": H, "kernel_steps_per_s": round(T / secs),
           "evaluations": n_eval,
           "with_evaluation_steps_per_s": round(T / secs_ind),
           "goal_steps_per_s": 100 * COLOSSEUM_ISSUE[0]}
    out["prior"] = prior.short_name
    print(f"PSRL {name} episodic: kernel {T / secs:,.0f} steps/s; with Colosseum's "
          f"indicators every 100 steps in the kernel {T / secs_ind:,.0f} steps/s (goal ≥ "
          "100 × Colosseum)", flush=True)
    return out


COLOSSEUM_SNIPPET = r"""
import os, sys, time, types, warnings
warnings.filterwarnings("ignore")
# PSRL alone: the episodic agents' package imports the deep agents (sonnet, TensorFlow),
# which PSRL does not use; a bare package object lets its module import without them
import colosseum.agent.agents as A
pkg = types.ModuleType("colosseum.agent.agents.episodic")
pkg.__path__ = [os.path.join(A.__path__[0], "episodic")]
sys.modules["colosseum.agent.agents.episodic"] = pkg
from colosseum.agent.agents.episodic.posterior_sampling import PSRLEpisodic
from colosseum.mdp.deep_sea import DeepSeaEpisodic
from colosseum.experiment.agent_mdp_interaction import MDPLoop
from colosseum.utils.acme.specs import make_mdp_spec
T = {T}
PRMS = dict(prior_mean=0.41854463543357456, transition_prior=0.32345772625210756)
mdp = DeepSeaEpisodic(seed=0, size=10, p_rand=0.4, make_reward_stochastic=False,
                      randomize_actions=False)
def loop(seed):
    agent = PSRLEpisodic.get_agent_instance_from_parameters(seed, T, make_mdp_spec(mdp), PRMS)
    return MDPLoop(mdp, agent)
loop(0).run(300, 100)  # numba compilation
lp = loop(1)
w0, c0 = time.perf_counter(), time.process_time()
lp.run(T, 100)
print(T / (time.perf_counter() - w0), T / (time.process_time() - c0))
"""


def colosseum(python: str, T: int) -> dict:
    import tempfile

    with tempfile.TemporaryDirectory() as cwd:  # Colosseum writes caches where it runs
        res = subprocess.run([python, "-c", COLOSSEUM_SNIPPET.replace("{T}", str(T))],
                             capture_output=True, text=True, timeout=3600, cwd=cwd)
    if res.returncode != 0:
        tail = res.stderr.strip().splitlines()[-1:] or ["?"]
        print("Colosseum's loop did not run:", tail[0])
        return {"error": tail[0]}
    wall, cpu = (float(v) for v in res.stdout.strip().splitlines()[-1].split())
    print(f"Colosseum's MDPLoop, PSRL on DeepSea-10 (p_rand 0.4), log_every 100: "
          f"{cpu:,.0f} steps/s of CPU time, {wall:,.0f} wall (T = {T:,})", flush=True)
    return {"T": T, "steps_per_s": round(cpu), "wall_steps_per_s": round(wall)}


def markdown(out: dict) -> str:
    lines = ["# Colosseum's indicators: cost of an exact evaluation (issue 43)", "",
             f"Measured {out['date']} by `benchmarks/bench_indicators.py` on a shared 2-core "
             "machine (this thread's CPU time, median of rounds).", "",
             "| case | policy | states | transitions | kernel µs | Python call µs |",
             "|---|---|---|---|---|---|"]
    for r in out["evaluation"]:
        lines.append(f"| {r['case']} | {r['policy']} | {r['states']} | {r['transitions']} | "
                     f"{r['kernel_us']} | {r['python_us']} |")
    p = out.get("psrl")
    if p:
        lines += ["", f"PSRL on Colosseum's instance Colosseum-EE-DeepSea-0 (DeepSea-10, "
                  f"p_rand 0.4, Colosseum's form), episodic, 10^5 steps, prior "
                  f"`{p.get('prior', 'accurate')}` (the colosseum preset's: the support "
                  "known, Colosseum's NIG reward prior with its tuned mean; Colosseum's "
                  "PSRL also puts a Dirichlet of 0.3235 on every next state), its current "
                  "policy Colosseum's (the MAP model's optimal policy):", "",
                  f"- bbrl's kernel alone: {p['kernel_steps_per_s']:,} steps/s;",
                  f"- with Colosseum's indicators every 100 steps computed inside the "
                  f"kernel ({p['evaluations']:,} exact evaluations; `bbrl run "
                  f"--indicators`'s player, the test MDP's references included): "
                  f"{p['with_evaluation_steps_per_s']:,} steps/s "
                  f"({p['with_evaluation_steps_per_s'] / p['kernel_steps_per_s']:.0%} of "
                  "the kernel alone);",
                  f"- goal: ≥ 100 × Colosseum's {COLOSSEUM_ISSUE[0]:,}–{COLOSSEUM_ISSUE[1]:,} "
                  f"steps/s (issue 43's measurement) = {p['goal_steps_per_s']:,} steps/s."]
    c = out.get("colosseum")
    if c and "steps_per_s" in c:
        ratio = p["with_evaluation_steps_per_s"] / c["steps_per_s"] if p else float("nan")
        lines += [f"- Colosseum's own `MDPLoop` with its PSRL on its DeepSea-10 instance "
                  f"(p_rand 0.4), measured here: {c['steps_per_s']:,} steps/s of CPU time "
                  f"({c['wall_steps_per_s']:,} wall; T = {c['T']:,}, its evaluation "
                  f"included); bbrl with the evaluation: {ratio:,.0f}× that."]
    elif c:
        lines += [f"- Colosseum's own loop could not run here: {c['error']}"]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("evaluation", "psrl", "colosseum"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--colosseum-python", default=None)
    ap.add_argument("--colosseum-steps", type=int, default=20_000)
    ap.add_argument("-o", "--output", default=str(HERE / "results" / "indicators.json"))
    args = ap.parse_args()
    path = Path(args.output)
    out = json.loads(path.read_text()) if args.only and path.exists() else {}
    out["date"] = time.strftime("%Y-%m-%d")
    if args.only in (None, "evaluation"):
        out["evaluation"] = evaluation(args.rounds)
    if args.only in (None, "psrl"):
        out["psrl"] = psrl(min(args.rounds, 3), out["evaluation"])
    if args.colosseum_python and args.only in (None, "colosseum"):
        out["colosseum"] = colosseum(args.colosseum_python, args.colosseum_steps)
    path.write_text(json.dumps(out, indent=1) + "\n")
    path.with_suffix(".md").write_text(markdown(out))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
