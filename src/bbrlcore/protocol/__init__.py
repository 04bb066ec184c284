"""The protocol room: test sets, offline training, and the timed runs.

* :mod:`~bbrlcore.protocol.test_sets` — N test MDPs drawn from a test distribution with
  γ, T and a seed (:class:`TestSet`);
* :mod:`~bbrlcore.protocol.training` — offline learning on a prior, agent artefacts;
* :mod:`~bbrlcore.protocol.runner` — one trajectory per test MDP, timed, into a run table;
* :mod:`~bbrlcore.protocol.gym` — the same MDPs as gymnasium environments.

The names of the three first modules are re-exported here (``from bbrlcore import
protocol as E``; the old path ``bbrlcore.experiment`` is an alias of this package).
"""

from bbrlcore.protocol.runner import (
    OVERRUN_FACTOR,
    OVERRUN_MIN_S,
    RUN_COLUMNS,
    TIMING_COLUMNS,
    Overrun,
    parse_slice,
    read_run,
    run_agent,
    run_meta,
    score_summary,
    write_run,
)
from bbrlcore.protocol.test_sets import (
    MAX_EPISODES,
    MAX_HORIZON,
    MAX_MDPS,
    MAX_RECORDED_STEPS,
    ROW_SUM_TOLERANCE,
    Interaction,
    TestSet,
    check_mdps,
    default_checkpoint_every,
    interaction,
    new_test_set,
    read_test_set,
    validation_meta,
    validation_set,
    write_test_set,
)
from bbrlcore.protocol.training import TrainedAgent, read_agent, train_agent, write_agent

__all__ = [
    "MAX_EPISODES", "MAX_HORIZON", "MAX_MDPS", "MAX_RECORDED_STEPS", "OVERRUN_FACTOR",
    "OVERRUN_MIN_S", "ROW_SUM_TOLERANCE", "RUN_COLUMNS", "TIMING_COLUMNS", "Interaction",
    "Overrun", "TestSet", "TrainedAgent", "check_mdps", "default_checkpoint_every",
    "interaction", "new_test_set", "parse_slice", "read_agent", "read_run", "read_test_set",
    "run_agent", "run_meta", "score_summary", "train_agent", "validation_meta",
    "validation_set", "write_agent", "write_run", "write_test_set",
]
