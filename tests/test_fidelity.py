"""Scores agree with the original C++ program (00-decisions §9): two-sample z < 3 on every
reference row of the core agents, with N = 500 test MDPs as in the reference."""

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "bbrl_fidelity", Path(__file__).resolve().parents[1] / "benchmarks" / "fidelity.py")
fidelity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fidelity)

CORE = ["random", "e-greedy", "soft-max", "beb", "sboss"]


@pytest.mark.slow
def test_core_agents_agree_with_reference_scores(shared):
    ref = fidelity.read_reference(shared / "data" / "reference_scores.tsv")
    out = fidelity.check(ref, algorithms=CORE)
    assert len(out) >= 60
    bad = out.filter(out["z"] >= 3)
    assert bad.is_empty(), bad
