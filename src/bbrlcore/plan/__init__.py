"""The plan room: a configuration turned into jobs, and what they will cost.

* :mod:`~bbrlcore.plan.config` — ``config.yaml`` read, the preset applied, every key
  checked (one line naming the key on any problem);
* :mod:`~bbrlcore.plan.model` — the checked :class:`Plan`: experiments, agent
  configurations, chunks of test MDPs, job resources;
* :mod:`~bbrlcore.plan.cost` — the cost model behind chunking, time limits and
  ``bbrl estimate``; :mod:`~bbrlcore.plan.probe` — probes of uncalibrated plugins;
* :mod:`~bbrlcore.plan.workflow` — what the Snakemake workflow needs at run time (lock
  owner, environment).

``from bbrlcore import plan as P`` gives the names of ``config`` and ``model``.
"""

from bbrlcore.plan.config import (
    apply_preset,
    check_yaml_file,
    load,
    read_configfiles,
    study_configuration,
)
from bbrlcore.plan.model import (
    DEFAULTS,
    PAPER_SETTINGS,
    SELECTIONS,
    VALIDATION_MDPS,
    AgentConfig,
    Experiment,
    Plan,
)

__all__ = ["DEFAULTS", "PAPER_SETTINGS", "SELECTIONS", "VALIDATION_MDPS", "AgentConfig",
           "Experiment", "Plan", "apply_preset", "check_yaml_file", "load",
           "read_configfiles", "study_configuration"]
