"""The MDP room: what the benchmark's problems are.

FDM distributions (:mod:`~bbrlcore.mdp.distributions`: Dirichlet priors over MDPs with
known rewards, the paper's built-ins, the ``.dat`` and Parquet files), the dynamic
programming every other room uses (:mod:`~bbrlcore.mdp.solvers`) and the hardness of an
MDP (:mod:`~bbrlcore.mdp.hardness`). Nothing here knows agents, runs or reports.
"""
