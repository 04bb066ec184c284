"""The analysis room: from run tables to statistics.

* :mod:`~bbrlcore.analysis.results` — run tables checked, merged and summarised
  (``summary.parquet``);
* :mod:`~bbrlcore.analysis.stats` — intervals, the paired Z-test, Holm's procedure;
* :mod:`~bbrlcore.analysis.constraints` — "among the best" and the time-constraint map;
* :mod:`~bbrlcore.analysis.estimators` and :mod:`~bbrlcore.analysis.aggregate` —
  normalised scores and rliable's aggregates with the paired stratified bootstrap;
* :mod:`~bbrlcore.analysis.published` — the paper's published tables beside ours;
* :mod:`~bbrlcore.analysis.selection` — on which MDPs each algorithm's configuration is
  chosen (the test MDPs, the paper's; or validation MDPs), and its grid size
  (:mod:`~bbrlcore.analysis.choice`: the rule alone, below the tables);
* :mod:`~bbrlcore.analysis.exploration` — the DeepSea scores (bsuite's, exactly, and
  bbrl's many-MDP form) and Colosseum-style normalised regret;
* :mod:`~bbrlcore.analysis.curves` — learning curves with paired bootstrap bands.

The modules import each other in one direction (``tests/test_analysis_imports.py``
fails on a cycle, function-level imports included): ``stats``, ``estimators`` and
``choice`` at the bottom; then ``results``, ``selection``, ``constraints``;
``exploration``; ``aggregate``; ``curves`` on top. A helper two modules share lives in
the lower one.

Everything is a polars table; the report room draws them. Nothing here runs an agent.
"""
