"""Compile an algorithm's numba kernels into numba's cache before parallel work starts.

numba compiles a kernel the first time a process calls it and writes it to its cache
(``NUMBA_CACHE_DIR``; bbrl's default keys the directory by its source tree, so that a
changed module compiles again). Processes that start cold at the same time all compile
the same kernels: a workflow's first jobs, a test suite's workers. :func:`warm_algorithm`
trains and plays an algorithm once on a tiny problem whose types are those of any real
run (:data:`CHEAP` holds the cheap parameters of each built-in; its episodic kernel too,
where it has one). ``bbrl warmup`` runs it for every built-in (and
:mod:`bbrlcore.analysis.warmup` for the analysis); the workflow's ``warmup_numba`` rule
warms one algorithm before its jobs fan out.

>>> from bbrlcore.mdp import distributions as D
>>> gc = D.load_test("GC")
>>> [agent for agent, _ in warm_algorithm("beb", gc, gc)]  # doctest: +SKIP
['beb__beta=1', 'beb__beta=1__compat=true']
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

#: Cheap parameters per built-in algorithm (the same kernels and types as any real
#: configuration): each entry is trained and played once.
CHEAP: dict[str, list[dict[str, Any]]] = {
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
#: interaction too; those refused in a continuing experiment are warmed up that way only.
EPISODIC = frozenset({"psrl", "q-learning-ucb"})
EPISODIC_ONLY = frozenset({"q-learning-ucb"})


def algorithm_names(names: Iterable[str] | None = None) -> list[str]:
    """``names`` checked (each a built-in of :data:`CHEAP`: one :class:`BBRLError` line
    otherwise), or every built-in of :data:`CHEAP` that is installed."""
    from bbrlcore import agents
    from bbrlcore.errors import BBRLError

    if names is None:
        installed = set(agents.available())
        return [a for a in CHEAP if a in installed]
    names = list(names)
    for a in names:
        if a not in CHEAP:
            raise BBRLError(f"--algorithm {a}: not a built-in algorithm (one of "
                            f"{', '.join(CHEAP)})")
    return names


def warm_algorithm(
    algorithm: str,
    prior: Any,
    test: Any,
    params: Sequence[Mapping[str, Any]] | None = None,
    ref: str | None = None,
) -> list[tuple[str, float]]:
    """Train and play ``algorithm`` once per entry of ``params`` (default: its
    :data:`CHEAP` parameters) on one test MDP of 3 steps drawn from ``test`` (from
    ``prior`` when their sizes differ: compilation does not depend on sizes). ``ref`` is
    the reference to train (a plugin's ``file.py:Class``; default ``algorithm``).

    Returns ``(agent id, seconds)`` per entry.
    """
    from bbrlcore import agents
    from bbrlcore import protocol as E

    ts = E.new_test_set(test, 1, 0.95, 3, 0)
    if prior.n_states != test.n_states or prior.n_actions != test.n_actions:
        ts = E.new_test_set(prior, 1, 0.95, 3, 0)
    out = []
    for raw in (CHEAP[algorithm] if params is None else params):
        t0 = time.perf_counter()
        agent = E.train_agent(ref or algorithm, dict(raw), prior, seed=0, gamma=0.95,
                              horizon=3, progress=False, source="warmup")
        if algorithm not in EPISODIC_ONLY:
            E.run_agent(ts, agent, range(1), progress=False)
        if algorithm in EPISODIC:  # its per-episode kernel: one episode of 3 steps
            alg = agents.get(algorithm)
            play = alg.make_player(agent.prior, agent.params, None,
                                   dataclasses.replace(ts.episode(), episode_length=3))
            play(ts.mdps[0], 0)
        out.append((agent.agent_id, time.perf_counter() - t0))
    return out


def warm_algorithms(
    names: Iterable[str] | None = None,
    report: Callable[[str, float], None] | None = None,
) -> list[tuple[str, float]]:
    """:func:`warm_algorithm` for each built-in of ``names`` (default: every one of
    :data:`CHEAP` that is installed) on GC. Returns ``(algorithm, seconds)`` per
    algorithm; ``report(algorithm, seconds)`` is called as each ends."""
    from bbrlcore.mdp import distributions as D

    names = algorithm_names(names)
    gc = D.load_test("GC")
    done: list[tuple[str, float]] = []
    for a in names:
        t0 = time.perf_counter()
        warm_algorithm(a, gc, gc)
        done.append((a, time.perf_counter() - t0))
        if report:
            report(*done[-1])
    return done
