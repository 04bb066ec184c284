"""Make tests/fixtures/colosseum/indicators.npz: Colosseum's own indicators for fixed policies.

Run with a Python that has Colosseum (not bbrl's environment; bbrl never imports it)::

    /work/peers/venv-col/bin/python benchmarks/colosseum_indicators_fixture.py \
        [--out tests/fixtures/colosseum/indicators.npz]

For each case below it builds Colosseum's MDP, plays Colosseum's own interaction loop
(``colosseum.experiment.agent_mdp_interaction.MDPLoop.run(T, log_every)``) with a scripted
agent whose current policy is a fixed sequence (a new policy every ``log_every`` updates:
random stochastic policies, optionally becoming the optimal policy so that Colosseum's
"optimal, stop training" rule fires), acting by sampling that policy with a seeded
generator. Around every ``_update_performance_logs`` call it records what Colosseum
evaluated — the agent's ``current_optimal_stochastic_policy``, the current state and the
episode's starting state — and the unrounded ``_last_logs`` it computed (the logger keeps
them rounded to 5 decimals), plus the rewards of every step and Colosseum's references
(its T and R, V* and V⁻ per start, ρ*, ρ⁻). bbrl recomputes the same columns from the
policies, states and rewards alone (tests/test_indicators.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")

CASES = [
    # name, family, kwargs, T, log_every, optimal_from_row (None: never), seed
    ("deepsea10_random", "deepsea", dict(seed=0, size=10), 3000, 100, None, 1),
    ("deepsea8_freeze", "deepsea", dict(seed=3, size=8, p_rand=0.05), 4000, 100, 8, 2),
    ("riverswim8_random", "riverswim", dict(seed=0, size=8, p_rand=0.05), 2001, 100, None, 3),
    ("riverswim6_freeze", "riverswim", dict(seed=1, size=6, p_rand=0.1), 3000, 50, 14, 4),
]


class ScriptedAgent:
    """Colosseum's agent interface (duck-typed), playing a fixed sequence of policies."""

    def __init__(self, episodic, policies, every, seed):
        self._episodic = episodic
        self._policies = policies
        self._every = every
        self._n_updates = 0
        self._rng = np.random.RandomState(seed)

    def is_episodic(self):
        return self._episodic

    def is_emission_map_accepted(self, emission_map):
        return True

    @property
    def current_optimal_stochastic_policy(self):
        return self._policies[min(self._n_updates // self._every, len(self._policies) - 1)]

    def select_action(self, ts, h):
        pi = self.current_optimal_stochastic_policy
        p = pi[h, ts.observation] if self._episodic else pi[ts.observation]
        p = np.asarray(p, np.float64)
        return int(self._rng.choice(len(p), p=p / p.sum()))

    def step_update(self, ts, a, next_ts, h):
        self._n_updates += 1

    def is_episode_end(self, ts, a, next_ts, h):
        return next_ts.last()

    def episode_end_update(self):
        pass

    def before_start_interacting(self):
        pass

    def agent_logs(self):
        pass


def make_mdp(family, kwargs):
    if family == "deepsea":
        from colosseum.mdp.deep_sea import DeepSeaEpisodic

        return DeepSeaEpisodic(**kwargs)
    from colosseum.mdp.river_swim import RiverSwimContinuous

    return RiverSwimContinuous(**kwargs)


def policies_for(mdp, episodic, n, optimal_from, rng):
    nS, nA = mdp.n_states, mdp.n_actions
    shape = (mdp.H, nS) if episodic else (nS,)
    out = []
    opt = mdp.get_optimal_policy(True).astype(np.float32)
    if episodic:  # Colosseum's episodic Q (and so its greedy policy) has H + 1 steps
        opt = opt[: mdp.H]
    for i in range(n):
        if optimal_from is not None and i >= optimal_from:
            pi = opt.copy()
        elif optimal_from is not None and i == optimal_from - 1:
            # nearly optimal: regret below Colosseum's 1e-3 clip in the continuing case
            pi = (0.9995 * opt + 0.0005 / nA).astype(np.float32)
        else:
            pi = rng.dirichlet(np.full(nA, 0.7), size=shape).astype(np.float32)
        pi = (pi / pi.sum(-1, keepdims=True)).astype(np.float32)
        out.append(pi)
    return out


def run_case(name, family, kwargs, T, every, optimal_from, seed):
    from colosseum.experiment.agent_mdp_interaction import MDPLoop

    mdp = make_mdp(family, kwargs)
    episodic = mdp.is_episodic()
    rng = np.random.RandomState(seed)
    n_pol = T // every + 2
    policies = policies_for(mdp, episodic, n_pol, optimal_from, rng)
    agent = ScriptedAgent(episodic, policies, every, seed)
    loop = MDPLoop(mdp, agent)
    rec = {k: [] for k in ("policy", "state", "start", "training", "steps")}
    logs = []
    inner = loop._update_performance_logs

    def recording(t):
        rec["policy"].append(np.array(agent.current_optimal_stochastic_policy, np.float32))
        rec["state"].append(mdp.node_to_index[mdp.cur_node])
        rec["start"].append(mdp.node_to_index[mdp.last_starting_node])
        rec["training"].append(bool(loop._is_training))
        rec["steps"].append(t)
        inner(t)
        logs.append(dict(loop._last_logs, regret=float(loop._regret),
                         normalized_regret=float(loop._normalized_regret),
                         agent_average_reward=float(loop._agent_average_reward)))

    loop._update_performance_logs = recording
    loop.run(T, every)
    out = {
        "T": np.int64(T), "log_every": np.int64(every), "episodic": np.bool_(episodic),
        "P": np.asarray(mdp.T), "R": np.asarray(mdp.R),
        "rewards": np.asarray(loop.actions_sequence, np.float64),
        "policies": np.stack(rec["policy"]), "states": np.asarray(rec["state"], np.int64),
        "starts": np.asarray(rec["start"], np.int64),
        "training": np.asarray(rec["training"]), "steps": np.asarray(rec["steps"], np.int64),
        "last_training_step": np.int64(loop._last_training_step),
    }
    for key in logs[0]:
        if key == "steps_per_second":
            continue
        out["log_" + key] = np.asarray([d[key] for d in logs], np.float64)
    if episodic:
        out["H"] = np.int64(mdp.H)
        out["start_distribution"] = np.asarray(mdp.starting_state_distribution, np.float64)
        out["V_optimal"] = np.asarray(mdp.optimal_value_functions[1][0], np.float64)
        out["V_worst"] = np.asarray(mdp.worst_value_functions[1][0], np.float64)
        out["optimal_average"] = np.float64(mdp.episodic_optimal_average_reward)
        out["worst_average"] = np.float64(mdp.episodic_worst_average_reward)
        out["random_average"] = np.float64(mdp.episodic_random_average_reward)
    else:
        d = np.zeros(mdp.n_states)
        for s, p in mdp.starting_states_and_probs:
            d[s] += p
        out["start_distribution"] = d
        out["optimal_average"] = np.float64(mdp.optimal_average_reward)
        out["worst_average"] = np.float64(mdp.worst_average_reward)
        out["random_average"] = np.float64(mdp.random_average_reward)
    return {f"{name}/{k}": v for k, v in out.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests",
                                                  "fixtures", "colosseum", "indicators.npz"))
    args = ap.parse_args(argv)
    out = os.path.abspath(args.out)
    # Colosseum writes caches (cached_hardness_measures/, tmp/) into the working directory
    import tempfile

    os.chdir(tempfile.mkdtemp(prefix="colosseum-"))
    import colosseum

    data = {}
    for case in CASES:
        data.update(run_case(*case))
        print(case[0], "done", file=sys.stderr)
    data["cases"] = np.array([c[0] for c in CASES])
    data["colosseum_version"] = np.array(getattr(colosseum, "__version__", "1.2"))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    np.savez_compressed(out, **data)
    print("wrote", out, file=sys.stderr)


if __name__ == "__main__":
    main()
