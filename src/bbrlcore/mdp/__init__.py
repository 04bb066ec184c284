"""MDP problems: the paper's distributions and the problem families."""
