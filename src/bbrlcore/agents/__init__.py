"""The benchmark's algorithms, and the API to add your own.

Built-ins: one module per agent (its kernel, its parameters and a docstring explaining the
algorithm and its paper). Plugins: a :class:`PythonAgent` or :class:`CompiledAgent`
subclass, or an :class:`Algorithm`, found through the entry-point group ``bbrl.agents`` or
by reference (``module:NAME``, ``path/file.py:NAME``); see :mod:`bbrlcore.agents.api` and
:mod:`bbrlcore.agents.registry`. :mod:`bbrlcore.agents.bayes` holds what a Bayesian agent
needs (the Dirichlet posterior, drawing an MDP from it, solving a model), for Python and
compiled agents. :func:`get` finds any of them by name or reference, with a
clear error for unknown ones.

Examples
--------
>>> from bbrlcore import agents
>>> alg = agents.get("beb")
>>> alg.agent_id(alg.parse_params({"beta": "2.5", "compat": "true"}))
'beb__beta=2.5__compat=true'
"""

from __future__ import annotations

from bbrlcore.agents import bayes, registry
from bbrlcore.agents.api import (
    AgentError,
    CompiledAgent,
    PythonAgent,
    compiled_trajectory,
    no_counters,
    trajectory_kernel,
    trajectory_loop,
)
from bbrlcore.agents.base import (
    COMPAT,
    Algorithm,
    Episode,
    Param,
    TrainContext,
    Trained,
    at_least_one,
    in_unit_interval,
    int_between,
    non_negative,
    positive,
    records_rewards,
    support_sizes,
)

#: Names of the paper's algorithms and Optimal, in the paper's order.
NAMES: tuple[str, ...] = ("random", "e-greedy", "soft-max", "beb", "sboss", "opps-ds", "bamcp",
                          "bfs3", "optimal")
#: Built-in algorithms beyond the paper (documentation: "The algorithms"): PSRL, BOSS, BOLT and
#: MBIE-EB, compiled agents written with the public API (:class:`CompiledAgent`; PSRL's
#: built-in plays its compiled agent's functions, and its per-episode form).
EXTENDED: tuple[str, ...] = ("psrl", "boss", "bolt", "mbie-eb")
#: The baselines of the exploration literature for long interactions (README "Beyond the
#: paper", issue 34): UCRL2 (continuing) and Q-learning with UCB-Hoeffding bonuses
#: (episodic only), whole-trajectory kernels; not in the paper's protocol's presets.
BASELINES: tuple[str, ...] = ("ucrl2", "q-learning-ucb")
#: Every built-in algorithm: the paper's, the fixed-formula agent ``formula`` (the
#: original library's FormulaAgent), then those beyond the paper, then the baselines.
BUILTINS: tuple[str, ...] = tuple(registry.BUILTIN_ENTRY_POINTS)


def get(name: str) -> Algorithm:
    """The :class:`Algorithm` called ``name`` (or referenced by ``module:NAME`` /
    ``path/file.py:NAME``); :class:`~bbrlcore.errors.BBRLError` if there is none."""
    return registry.get(name)


def available() -> list[str]:
    """Names of every algorithm found: built-ins, installed plugins, loaded references."""
    return [e.name for e in registry.all_entries()]


__all__ = [
    "BASELINES", "BUILTINS", "COMPAT", "EXTENDED", "NAMES", "AgentError", "Algorithm",
    "CompiledAgent",
    "bayes",
    "Episode", "Param", "PythonAgent", "TrainContext", "Trained", "at_least_one", "available",
    "compiled_trajectory", "get", "in_unit_interval", "int_between", "non_negative",
    "no_counters", "positive", "records_rewards", "registry", "support_sizes", "trajectory_kernel",
    "trajectory_loop",
]
