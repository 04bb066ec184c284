"""The analysis room: from run tables to statistics.

* :mod:`~bbrlcore.analysis.results` — run tables checked, merged and summarised
  (``summary.parquet``);
* :mod:`~bbrlcore.analysis.stats` — intervals, the paired Z-test, Holm's procedure;
* :mod:`~bbrlcore.analysis.constraints` — "among the best" and the time-constraint map;
* :mod:`~bbrlcore.analysis.estimators` and :mod:`~bbrlcore.analysis.aggregate` —
  normalised scores and rliable's aggregates with the paired stratified bootstrap;
* :mod:`~bbrlcore.analysis.published` — the paper's published tables beside ours;
* :mod:`~bbrlcore.analysis.selection` — on which MDPs each algorithm's configuration is
  chosen (the test MDPs, the paper's; or validation MDPs), and its grid size.

Everything is a polars table; the report room draws them. Nothing here runs an agent.
"""
