"""Numba warm-up: train and run one algorithm once on a tiny problem, so its kernels are
compiled into numba's cache before its parallel jobs start."""

import json
import sys
import time

# ruff: noqa: F821  (``snakemake`` is injected by the script directive)
log = open(snakemake.log[0], "w")  # noqa: SIM115
sys.stderr = sys.stdout = log


def _excepthook(kind, exc, tb):
    """The traceback into the log, and one line on the job's own stderr: the reason
    stays visible when the log cannot be written (a full disk)."""
    import traceback

    try:
        traceback.print_exception(kind, exc, tb, file=log)
        log.flush()
    except OSError:
        pass
    print(f"warmup {snakemake.params.algorithm}: {kind.__name__}: {exc} "
          f"(log: {snakemake.log[0]})", file=sys.__stderr__, flush=True)


sys.excepthook = _excepthook


import bbrlcore  # noqa: E402
from bbrlcore.mdp import distributions
from bbrlcore import protocol as E

#: Cheap parameters per algorithm (same kernels and types as any real configuration).
CHEAP = {
    "random": [{}],
    "optimal": [{}, {"criterion": "undiscounted"}],
    "e-greedy": [{"epsilon": 0.5}],
    "soft-max": [{"tau": 1.0}, {"tau": 1.0, "compat": True}],
    "beb": [{"beta": 1.0}, {"beta": 1.0, "compat": True}],
    "sboss": [{"epsilon": 1.0, "delta": 1.0}, {"epsilon": 1.0, "delta": 1.0, "compat": True}],
    "opps-ds": [{"formula_set": "F2", "n_draws": 2}],
    "bamcp": [{"K": 2, "D": 2}],
    "bfs3": [{"K": 1, "C": 1, "D": 2}],
    # beyond the paper
    "psrl": [{}],
    "boss": [{"K": 2, "B": 1}],
    "bolt": [{"eta": 1.0}],
    "mbie-eb": [{"beta": 1.0}],
    # the exploration baselines (issue 34)
    "ucrl2": [{}],
    "q-learning-ucb": [{}],
}
#: Algorithms whose episodic form is a kernel of its own: compiled on a short episodic
#: interaction too (a player given an Episode with episode_length > 0); those refused
#: in a continuing experiment are warmed up that way only.
EPISODIC = {"psrl", "q-learning-ucb"}
EPISODIC_ONLY = {"q-learning-ucb"}

prior_d = distributions.read_parquet(snakemake.input.prior)
test_d = distributions.read_parquet(snakemake.input.test)
ts = E.new_test_set(test_d, 1, 0.95, 3, 0)
if prior_d.n_states != test_d.n_states or prior_d.n_actions != test_d.n_actions:
    ts = E.new_test_set(prior_d, 1, 0.95, 3, 0)  # compilation does not depend on sizes
first = json.loads(snakemake.params.agent)  # a plugin: its first configuration
lines = []
algorithm = snakemake.params.algorithm
for raw in CHEAP.get(algorithm, [first["params"]]):
    t0 = time.perf_counter()
    agent = E.train_agent(first["ref"], raw, prior_d, seed=0, gamma=0.95, horizon=3,
                          progress=False, source="warmup")
    if algorithm not in EPISODIC_ONLY:
        E.run_agent(ts, agent, range(1), progress=False)
    if algorithm in EPISODIC:  # its per-episode kernel: one episode of 3 steps
        import dataclasses

        from bbrlcore import agents

        alg = agents.get(algorithm)
        play = alg.make_player(agent.prior, agent.params, None,
                               dataclasses.replace(ts.episode(), episode_length=3))
        play(ts.mdps[0], 0)
    lines.append(f"{agent.agent_id}\t{time.perf_counter() - t0:.2f} s")
    print(lines[-1], flush=True)

with open(snakemake.output[0], "w") as f:
    f.write(f"numba cache: {snakemake.params.numba_cache}\n")
    f.write(f"bbrlcore {bbrlcore.__version__}\n")
    f.write("\n".join(lines) + "\n")
