"""Scores agree with the original C++ program (00-decisions §9): two-sample z < 3 on every
reference row of the core agents, with N = 500 test MDPs as in the reference."""

import pytest

from bbrlcore import fidelity

CORE = ["random", "e-greedy", "soft-max", "beb", "sboss"]


@pytest.mark.slow
def test_core_agents_agree_with_reference_scores(shared):
    ref = fidelity.read_reference(shared / "data" / "reference_scores.tsv")
    out = fidelity.check(ref, algorithms=CORE)
    assert len(out) >= 60
    bad = out.filter(out["z"] >= 3)
    assert bad.is_empty(), bad
