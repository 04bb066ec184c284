"""Numba warm-up: train and run one algorithm once on a tiny problem, so its kernels are
compiled into numba's cache before its parallel jobs start."""

import json
import sys

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
from bbrlcore.mdp import distributions  # noqa: E402
from bbrlcore.protocol.warmup import CHEAP, warm_algorithm  # noqa: E402

prior_d = distributions.read_parquet(snakemake.input.prior)
test_d = distributions.read_parquet(snakemake.input.test)
first = json.loads(snakemake.params.agent)  # a plugin: its first configuration
algorithm = snakemake.params.algorithm
lines = []
for raw in CHEAP.get(algorithm, [first["params"]]):
    for agent_id, seconds in warm_algorithm(algorithm, prior_d, test_d, [raw], first["ref"]):
        lines.append(f"{agent_id}\t{seconds:.2f} s")
        print(lines[-1], flush=True)

with open(snakemake.output[0], "w") as f:
    f.write(f"numba cache: {snakemake.params.numba_cache}\n")
    f.write(f"bbrlcore {bbrlcore.__version__}\n")
    f.write("\n".join(lines) + "\n")
