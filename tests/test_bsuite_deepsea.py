"""bsuite's DeepSea score, exactly as bsuite computes it (issue 43): bbrl's
:func:`~bbrlcore.analysis.exploration.bsuite_deepsea_score` against bsuite 0.3.6's own
``deep_sea/analysis.py`` on the same runs.

The fixture ``tests/fixtures/bsuite_deepsea.json`` is made by
``tests/fixtures/make_bsuite_deepsea.py``, run outside bbrl's environment with a Python
that has bsuite 0.3.6 and pandas < 2 (its docstring has the commands). It plays scripted
runs on bsuite's own DeepSea environment through bsuite's logging wrapper (so the bad
episodes are counted by bsuite and logged at bsuite's logarithmic schedule), feeds the
logged rows of each case to bsuite's ``analysis.find_solution`` and ``analysis.score``
(and, for cases whose sizes are all in bsuite's sweep, to
``summary_analysis.bsuite_score`` after ``join_metadata``), and stores every run's
per-episode bad flags, the returns bsuite's environment paid, and bsuite's outputs. The
cases: one run per size (bsuite's setting; a learning time rounded up from 1,112 to the
logged 1,200, past N = 10's limit of 1,124; a crossing after episode 10,000, ignored),
several runs per size (the earliest crossing; runs of different lengths), unequal
numbers of rows merged back (a size's weight in the mean), the threshold itself (0.9
exactly is not below it), a size off bsuite's sweep and unfinished runs. Here the same
runs go through bbrl: the bad flags directly, and the returns through a merged run table
and :func:`~bbrlcore.analysis.exploration.bsuite_deepsea_scores`; every number must
equal bsuite's.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from bbrlcore.analysis import exploration as X

FIXTURE = Path(__file__).parent / "fixtures" / "bsuite_deepsea.json"


@cache
def fixture() -> dict:
    return json.loads(FIXTURE.read_text())


def _bad(run: dict) -> np.ndarray:
    bits = np.unpackbits(np.frombuffer(bytes.fromhex(run["bad_hex"]), dtype=np.uint8))
    return bits[: run["episodes"]].astype(bool)


def _returns(run: dict) -> np.ndarray:
    """The episode returns bsuite's environment paid in this run."""
    bad = _bad(run)
    e = np.arange(run["episodes"])
    by_k = np.array([np.nan if v is None else v for v in run["bad_return_by_k"]])
    good = np.nan if run["good_return"] is None else run["good_return"]
    return np.where(bad, by_k[e % run["size"]], good)


def _runs(case: dict) -> pl.DataFrame:
    return pl.DataFrame({"size": [r["size"] for r in case["runs"]],
                         "bad": [_bad(r).tolist() for r in case["runs"]]},
                        schema={"size": pl.Int64, "bad": pl.List(pl.Boolean)})


CASES = sorted(json.loads(FIXTURE.read_text())["cases"])


def test_the_fixture_is_bsuite_0_3_6_with_its_defaults():
    f = fixture()
    assert f["bsuite_version"] == "0.3.6" and f["pandas_version"] < "2"
    assert (f["threshold"], f["forgiveness"], f["num_episodes"]) == (
        X.THRESHOLD, X.FORGIVENESS, X.BSUITE_EPISODES)
    assert set(CASES) >= {"one_run_per_size", "several_runs_per_size", "unequal_rows",
                          "threshold_edge", "off_sweep_and_unfinished"}


def test_the_logging_schedule_is_bsuite_s():
    got = X.bsuite_logged_episodes(12000).tolist()
    assert got == fixture()["logged_episodes"]
    assert got[:19] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 17, 20, 25, 30, 40, 50, 60]
    assert 1000 in got and 1200 in got and not set(range(1001, 1200)) & set(got)


@pytest.mark.parametrize("name", CASES)
def test_bad_episodes_are_read_from_bsuite_s_returns(name):
    for run in fixture()["cases"][name]["runs"]:
        assert (X.bad_episodes(_returns(run)) == _bad(run)).all()


@pytest.mark.parametrize("name", CASES)
def test_the_score_and_learning_times_equal_bsuite_s(name):
    case = fixture()["cases"][name]
    score, per_size = X.bsuite_deepsea_score(_runs(case), sizes=None)
    assert score == case["score"]  # (exactly: the same mean of the same booleans)
    # bsuite's find_solution has one row per run merged back; ours a weight per size
    ours = Counter()
    for r in per_size.iter_rows(named=True):
        ours[(r["size"], r["episode"], r["solved"], r["finished"])] += r["rows"]
    theirs = Counter((r["size"], r["episode"], r["solved"], r["finished"])
                     for r in case["find_solution"])
    assert ours == theirs


@pytest.mark.parametrize("name", CASES)
def test_the_score_of_a_merged_run_table_equals_bsuite_s(name):
    """The same runs as bbrl's run tables hold them (episode returns, one experiment per
    size and length, the runs of a size as its test MDPs), scored on bsuite's sweep."""
    case = fixture()["cases"][name]
    rows, best = [], []
    by_exp: dict[tuple[int, int], int] = {}
    for run in case["runs"]:
        key = (run["size"], run["episodes"])
        i = by_exp[key] = by_exp.get(key, -1) + 1
        rows.append(X._deepsea_run(run["size"], run["episodes"], "e-greedy",
                                   "e-greedy__epsilon=0.1", i, _returns(run)))
    m = pl.DataFrame(rows)
    best = (m.select("experiment", "agent", "algorithm").unique()
            .with_columns(pl.lit("e-Greedy").alias("family")))
    out = X.bsuite_deepsea_scores(m, best)
    s = out["bsuite_deepsea_summary"].row(0, named=True)
    if "summary_score" in case:  # every size in bsuite's sweep: its whole pipeline
        assert s["score"] == case["summary_score"] == case["score"]
        assert s["finished"] == case["summary_finished"]
        assert s["off_sweep"] == ""
    else:  # a size off the sweep is left out; the rest as bsuite's function scores it
        kept = {"runs": [r for r in case["runs"] if r["size"] in X.BSUITE_SIZES]}
        want, _ = X.bsuite_deepsea_score(_runs(kept), sizes=None)
        assert s["score"] == want != case["score"]
        assert s["off_sweep"] == "4"
    n_sweep = len({r["size"] for r in case["runs"]} & set(X.BSUITE_SIZES))
    assert s["n_sizes"] == n_sweep
    assert s["missing_sizes"].endswith(f"({21 - n_sweep} of 21)")
    t = out["bsuite_deepsea"]
    assert t["rows"].sum() == sum(1 for r in case["find_solution"]
                                  if r["size"] in X.BSUITE_SIZES)


def test_bsuite_s_learning_time_is_not_bbrl_s():
    """One run per size: bsuite's learning time is the logged 1,200 (past the limit
    1,124 of N = 10) where the same run's regret crosses at every episode before it."""
    run = fixture()["cases"]["one_run_per_size"]["runs"][0]
    assert run["size"] == 10
    bad = _bad(run)
    e = np.arange(1, bad.size + 1)
    every = int(np.argmax(np.cumsum(bad) / e < 0.9)) + 1  # at every episode
    assert every == 1112 < 2**10 + 100
    sol = X.bsuite_size_solution([bad])
    assert sol["episode"] == 1200 and sol["solved"]
    _, t = X.bsuite_deepsea_score(pl.DataFrame({"size": [10], "bad": [bad.tolist()]}))
    assert not t["beat_dither"][0]


def test_noisy_deepsea_has_no_bsuite_score():
    """With p_rand > 0 a miss may be the noise's: the run tables cannot tell bad
    episodes, the summary says so instead of guessing."""
    G = np.where(np.arange(40) >= 5, 0.99, 0.0)
    r = X._deepsea_run(10, 40, "e-greedy", "e-greedy__epsilon=0.1", 0, G)
    r.update(test="DeepSea-10-prand0.1", prior="DeepSea-10-prand0.1",
             experiment="DeepSea-10-prand0.1-DeepSea-10-prand0.1@E40xH10")
    m = pl.DataFrame([r])
    best = m.select("experiment", "agent", "algorithm").with_columns(
        pl.lit("e-Greedy").alias("family"))
    s = X.bsuite_deepsea_scores(m, best)["bsuite_deepsea_summary"].row(0, named=True)
    assert s["score"] is None and "p_rand > 0" in s["note"]


def test_episodes_other_than_one_pass_are_not_bsuite_s():
    """An episodic DeepSea experiment whose episodes are not one pass down the grid
    (H != N) holds no bsuite episodes: left out, and said beside the score of the
    others."""
    G = np.where(np.arange(40) >= 5, 0.99, 0.0)
    rows = [X._deepsea_run(10, 40, "e-greedy", "e-greedy__epsilon=0.1", 0, G),
            X._deepsea_run(12, 40, "e-greedy", "e-greedy__epsilon=0.1", 0, G)]
    rows[1].update(episode_length=13, horizon=40 * 13,
                   experiment="DeepSea-12-UDeepSea-12@E40xH13")
    m = pl.DataFrame(rows)
    best = m.select("experiment", "agent", "algorithm").with_columns(
        pl.lit("e-Greedy").alias("family"))
    out = X.bsuite_deepsea_scores(m, best)
    s = out["bsuite_deepsea_summary"].row(0, named=True)
    assert s["score"] == 1.0 and s["sizes"] == "10"
    assert s["note"] == ("DeepSea-12-UDeepSea-12@E40xH13: episodes of 13 steps, not one "
                         "pass down the grid (N = 12): not bsuite's episodes, left out")


def test_bad_input_is_one_clear_line():
    runs = pl.DataFrame({"size": [10], "bad": [[True]]})
    with pytest.raises(Exception, match="threshold=0"):
        X.bsuite_deepsea_score(runs, threshold=0)
    with pytest.raises(Exception, match="num_episodes=0"):
        X.bsuite_deepsea_score(runs, num_episodes=0)
