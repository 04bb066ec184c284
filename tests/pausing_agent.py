"""A test agent whose decisions take wall time but no CPU: the real-Slurm time-limit test
(tests/test_slurm.py) needs one run job that outlasts its first time limit, and a job
that waits (instead of BAMCP computing for two minutes) leaves the machine's cores to the
tests running beside it.

Used by reference: ``tests/pausing_agent.py:PausingRandom`` with ``pause`` (seconds per
decision). It plays uniformly random actions (the ``random`` built-in's behaviour, from
its own generator), waiting ``pause`` seconds before each.
"""

from __future__ import annotations

import time

from bbrlcore.agents import Param, PythonAgent
from bbrlcore.agents.base import non_negative


class PausingRandom(PythonAgent):
    """Uniformly random actions, each after ``pause`` seconds of waiting."""

    name = "pausing-random"
    params = (Param("pause", float, required=True, check=non_negative,
                    doc="seconds each decision waits (no CPU used)"),)

    def act(self, state: int) -> int:
        time.sleep(self.p["pause"])
        return int(self.rng.integers(self.n_actions))
