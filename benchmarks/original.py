"""Time the original C++ BBRL program (``BBRL-DDS``) on one agent and one experiment.

Optional: the benchmarks use it only when given the path of a ``BBRL-DDS`` binary built
outside this repository (``--original PATH`` or ``BBRL_ORIGINAL=PATH``); the project never
depends on it. How to build it: ``benchmarks/README.md``.

The original reports its own online time per trajectory ("Online time (per trajectory)"
of ``--run_experiment``: the experiment's elapsed time divided by the number of
trajectories). Its test MDPs are drawn by itself (``--new_experiment --seed 42``), from
the same distribution files as ours (``shared/data/distributions``). Each call runs in a
work directory that caches experiments and agents; results go to fresh files.

    python benchmarks/original.py /work/orig-bbrl/build/Release/BBRL-DDS bfs3 Grid UGrid \\
        --param K=1 --param C=15 --param D=50 --n-mdps 3 --horizon 250
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = ROOT.parent / "shared" / "data" / "distributions"

#: The original's agent class and parameter flags, by our algorithm name.
CLASSES = {"bamcp": ("BAMCPAgent", ("K", "D")), "bfs3": ("BFS3Agent", ("K", "C", "D"))}


def _run(cmd: list[str], cwd: Path) -> str:
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def experiment_file(binary: str, workdir: Path, test: str, n_mdps: int, horizon: int) -> Path:
    """The original's test set: ``n_mdps`` MDPs of ``test``, gamma = 0.95 (cached)."""
    out = workdir / f"{test}-{n_mdps}-{horizon}-exp.dat"
    if not out.exists():
        _run([binary, "--new_experiment", "--name", f"{test} Experiment",
              "--mdp_distribution", "DirMultiDistribution",
              "--mdp_distribution_file", str(DISTRIBUTIONS / f"{test}-distrib.dat"),
              "--n_mdps", str(n_mdps), "--n_simulations_per_mdp", "1",
              "--discount_factor", "0.95", "--horizon_limit", str(horizon),
              "--output", str(out), "--seed", "42"], workdir)
    return out


def agent_file(binary: str, workdir: Path, algorithm: str, params: dict, prior: str) -> Path:
    """The original's agent (its ``--offline_learning`` on the prior; cached)."""
    cls, keys = CLASSES[algorithm]
    flags = [x for k in keys if k in params for x in (f"--{k}", str(params[k]))]
    label = "-".join(str(params[k]) for k in keys if k in params)
    out = workdir / f"{prior}-{cls}-{label}.dat"
    if not out.exists():
        _run([binary, "--offline_learning", "--agent", cls, *flags,
              "--mdp_distribution", "DirMultiDistribution",
              "--mdp_distribution_file", str(DISTRIBUTIONS / f"{prior}-distrib.dat"),
              "--output", str(out), "--seed", "7"], workdir)
    return out


def time_original(binary: str, algorithm: str, params: dict, test: str, prior: str,
                  n_mdps: int, horizon: int = 250, workdir: str | Path | None = None) -> float:
    """ms per trajectory of the original program (its own online time)."""
    wd = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="bbrl-orig-"))
    wd.mkdir(parents=True, exist_ok=True)
    exp = experiment_file(binary, wd, test, n_mdps, horizon)
    agent = agent_file(binary, wd, algorithm, params, prior)
    out = wd / f"result-{uuid.uuid4().hex}.dat"
    text = _run([binary, "--run_experiment", "--seed", "11", "--experiment",
                 "--experiment_file", str(exp), "--agent", CLASSES[algorithm][0],
                 "--agent_file", str(agent), "--n_threads", "1", "--output", str(out),
                 "--refresh_frequency", "100000", "--backup_frequency", "0"], wd)
    out.unlink(missing_ok=True)
    times = re.findall(r"Online time \(per trajectory\):\s*([0-9.eE+-]+)ms", text)
    if not times:
        raise RuntimeError(f"no online time in the original's output:\n{text}")
    return float(times[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("algorithm", choices=sorted(CLASSES))
    ap.add_argument("test")
    ap.add_argument("prior")
    ap.add_argument("--param", action="append", default=[], help="k=v (K, C, D)")
    ap.add_argument("--n-mdps", type=int, default=3)
    ap.add_argument("--horizon", type=int, default=250)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    params = dict(kv.split("=", 1) for kv in args.param)
    ms = time_original(args.binary, args.algorithm, params, args.test, args.prior,
                       args.n_mdps, args.horizon, args.workdir)
    print(f"{ms:.1f} ms per trajectory")


if __name__ == "__main__":
    main()
