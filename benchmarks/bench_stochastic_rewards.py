"""What a stochastic reward costs a step (issue 42): Random and PSRL on DeepSea-20.

Each agent plays the same test MDPs (N = 20, T = 2,000, γ = 0.95, continuing; and the
episodic form, H = 20) with deterministic rewards (the paper's: reward mode 0, no draw)
and with Beta rewards on **every** transition (``beta_laws`` with the reward range
widened so that no transition keeps a constant reward: the worst case; DeepSea's own
``reward_noise`` makes only the left moves random). The players are built once and
compiled outside the timing; a round times ``play`` on every MDP in turn; the best of
``--rounds`` rounds is kept (the machine is shared: its load, ``os.getloadavg``, is
recorded before and after). The issue's goal: a stochastic step costs at most 1.5× a
deterministic one.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_stochastic_rewards.py

Writes ``benchmarks/results/stochastic_rewards.json`` and prints a Markdown table
(``benchmarks/results/stochastic_rewards.md`` holds the figures recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from bbrlcore import agents
from bbrlcore import protocol as E
from bbrlcore.mdp import families
from bbrlcore.mdp.environment import beta_laws, with_environment

OUT = Path(__file__).parent / "results" / "stochastic_rewards.json"
N_MDPS, HORIZON, H, GAMMA = 20, 2000, 20, 0.95
AGENTS = [("random", {}), ("psrl", {})]


def _player(alg: str, params: dict, prior, ts):
    return agents.get(alg).make_player(prior, agents.get(alg).parse_params(params), None,
                                       ts.episode())


def measure(rounds: int) -> dict:
    p = families.make("deepsea", size=20)
    det = p.test
    lo, hi = float(det.r_min), float(det.r_max)
    # (the range widened: every transition's reward a Beta, none at the range's ends)
    noisy = with_environment(det, beta_laws(det, 2.0, lo - 1.0, hi + 1.0))
    prior = p.prior("accurate")
    out = {"load_before": os.getloadavg(), "rows": []}
    for episode_length in (0, H):
        for alg, params in AGENTS:
            row = {"agent": alg, "episode_length": episode_length}
            for label, test in (("deterministic", det), ("beta", noisy)):
                ts = E.new_test_set(test, N_MDPS, GAMMA, HORIZON, seed=0,
                                    episode_length=episode_length, references=False)
                play = _player(alg, params, prior, ts)
                buf = np.zeros(HORIZON)
                mdps = [np.ascontiguousarray(ts.mdps[i]) for i in range(N_MDPS)]
                play(mdps[0], 0, buf)  # compiled outside the timing
                best = float("inf")
                for _ in range(rounds):
                    t0 = time.perf_counter()
                    for i, P in enumerate(mdps):
                        play(P, 100 + i, buf)
                    best = min(best, time.perf_counter() - t0)
                row[f"{label}_steps_per_s"] = N_MDPS * HORIZON / best
            row["ratio"] = row["deterministic_steps_per_s"] / row["beta_steps_per_s"]
            out["rows"].append(row)
            print(row, flush=True)
    out["load_after"] = os.getloadavg()
    out["machine"] = {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                      "python": platform.python_version()}
    return out


def table(res: dict) -> str:
    lines = ["| agent | H | deterministic steps/s | Beta steps/s | cost ratio |",
             "|---|---|---|---|---|"]
    for r in res["rows"]:
        lines.append(f"| {r['agent']} | {r['episode_length'] or 'continuing'} | "
                     f"{r['deterministic_steps_per_s']:,.0f} | {r['beta_steps_per_s']:,.0f} "
                     f"| {r['ratio']:.2f} |")
    lb, la = res["load_before"], res["load_after"]
    lines.append("")
    lines.append(f"Load average (1, 5, 15 min) before {lb[0]:.1f}, {lb[1]:.1f}, {lb[2]:.1f}; "
                 f"after {la[0]:.1f}, {la[1]:.1f}, {la[2]:.1f}; "
                 f"{res['machine']['cpu_count']} CPUs.")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    res = measure(args.rounds)
    OUT.write_text(json.dumps(res, indent=1) + "\n")
    print(table(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
