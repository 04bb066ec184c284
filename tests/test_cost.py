"""The cost model (issue "A cost model you can trust at scale"): work amounts that follow
the kernels, the fit, its validation against the benchmarks, time limits and overruns."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from bbrlcore import plan as P
from bbrlcore import protocol as E
from bbrlcore.agents import sboss
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import rows
from bbrlcore.plan import cost
from bbrlcore.protocol import runner

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------
# Work amounts follow the kernels


def test_sboss_simulation_uses_the_kernels_resampling_rule():
    gc, ugc = D.builtin("GC"), D.builtin("UGC")

    def sim(prior, *args):
        # the prior's concentrations and GC's mean model on the agent's sparse rows
        Pt, tlay = sboss.mean_rows(gc)
        lay = rows.union(prior.support_layout, tlay)
        theta = rows.move(prior.theta_rows, prior.support_layout, lay)
        return sboss.simulate_rebuilds(theta, lay.succ, lay.nsucc, rows.move(Pt, tlay, lay),
                                       0, *args)

    # compat on a sparse prior: the NaN rule never resamples after the first build
    r, w = sim(gc, 1e-6, 1e-4, True, 250, 0)
    assert r == 1 and w == sboss.merged_size(gc.theta_rows, 1e-6, True)
    # dense arrays (the full layout) count the same
    full = rows.full(5, 3)
    assert sboss.simulate_rebuilds(np.ascontiguousarray(gc.theta), full.succ, full.nsucc,
                                   gc.mean_model(), 0, 1e-6, 1e-4, True, 250, 0) == (r, w)
    # default mode resamples at small delta; the uniform prior resamples in both modes
    r, _ = sim(gc, 1e-6, 1e-4, False, 250, 0)
    assert r > 150
    for compat in (True, False):
        r, w = sim(ugc, 1e-6, 1e-4, compat, 250, 0)
        assert r == 250 and w > 250 * 1e5  # the issue's 5 s trajectories: 250 resamples
    # one step: exactly the merged model at the prior (K from the posterior variances)
    r, w = sim(ugc, 1e-3, 1.0, False, 1, 0)
    assert (r, w) == (1, sboss.merged_size(ugc.theta, 1e-3, False))


def test_sboss_work_matches_the_resamples_the_kernel_counts():
    """The simulated rebuilds (random actions) and the real kernel's resample counter
    (greedy actions) agree within a factor of 2 where resampling is frequent."""
    ts = E.new_test_set(D.builtin("GC"), 6, 0.95, 250, seed=3)
    for prior, params in [("UGC", {"epsilon": "1", "delta": "1"}),
                          ("GC", {"epsilon": "0.1", "delta": "0.01"})]:
        agent = E.train_agent("sboss", params, D.builtin(prior), progress=False)
        real = float(E.run_agent(ts, agent, progress=False)["resamples"].mean())
        f = sboss.cost_features(agent.params, D.builtin(prior), D.builtin("GC"), 0.95, 250)
        assert 0.5 < f["rebuilds"] / real < 2.0, (prior, params, f["rebuilds"], real)


def test_tree_search_work_grows_like_the_searches():
    f = cost.features
    gc, ugrid, grid = D.builtin("GC"), D.builtin("UGrid"), D.builtin("Grid")
    a = f("bfs3", {"K": 1, "C": 15, "D": 50}, grid, grid, 0.95, 250)
    # one rollout per tree: it expands one node per depth
    assert a["expansions"] == pytest.approx(a["trees"] * 50)
    b = f("bfs3", {"K": 1, "C": 15, "D": 50}, ugrid, grid, 0.95, 250)
    assert b["expansion_support"] / a["expansion_support"] > 5  # dense posterior rows
    c = f("bfs3", {"K": 10000, "C": 15, "D": 50}, grid, grid, 0.95, 250)
    assert c["visits"] / a["visits"] == pytest.approx(10000 // 15)
    # the probe sees a wide predictive saturate the tree: far fewer expansions than
    # rollout levels (measured: about 5% of N·D for UGDL at C = 15, K = 10000, D = 15)
    gdl, ugdl = D.builtin("GDL"), D.builtin("UGDL")
    u = f("bfs3", {"K": 10000, "C": 15, "D": 15}, ugdl, gdl, 0.95, 250)
    assert u["expansions"] < 0.2 * u["visits"]
    assert c["expansions"] > u["expansions"]
    k1 = f("bamcp", {"K": 500, "D": 15}, gc, gc, 0.95, 250)
    k2 = f("bamcp", {"K": 25000, "D": 50}, gc, gc, 0.95, 250)
    assert k2["sim_steps"] / k1["sim_steps"] == pytest.approx(50 * 50 / 15)


# ---------------------------------------------------------------------------------------
# The fit


def _rec(alg, params, test, prior, ms, horizon=250):
    return {"algorithm": alg, "params": params, "test": test, "prior": prior,
            "horizon": horizon, "ms_per_trajectory": ms}


def test_fit_recovers_prices_and_leaves_each_configuration_out(tmp_path):
    """Records made from known prices are predicted exactly, also left out."""
    gc, ugc = D.builtin("GC"), D.builtin("UGC")
    true = {"trajectory": 2e-4, "decisions": 1e-5, "simulations": 1e-7, "sim_steps": 3e-8,
            "sim_steps_support": 1e-8}
    rows = []
    for K in (1, 100, 1000, 5000):
        for D_ in (15, 50):
            for prior in (gc, ugc):
                f = cost.features("bamcp", {"K": K, "D": D_}, prior, gc, 0.95, 250)
                s = sum(true[k] * v for k, v in f.items())
                rows.append(_rec("bamcp", {"K": K, "D": D_}, "GC", prior.short_name,
                                 1000 * s))
    (tmp_path / "b.json").write_text(json.dumps({"rows": rows}))
    m = cost.CostModel(cost.records(tmp_path))
    fit = m.quality("bamcp")
    assert fit.n_configs == 16 and fit.worst_ratio < 1.05
    f = cost.features("bamcp", {"K": 2500, "D": 25}, gc, gc, 0.95, 250)
    exact = sum(true[k] * v for k, v in f.items())
    assert m.seconds_per_trajectory("bamcp", {"K": 2500, "D": 25}, "GC", 250, "GC") == (
        pytest.approx(exact, rel=0.05))
    assert m.in_range("bamcp", {"K": 2500, "D": 25}, "GC", "GC")
    assert not m.in_range("bamcp", {"K": 9000, "D": 25}, "GC", "GC")
    assert not m.in_range("bamcp", {"K": 2500, "D": 25}, "Grid", "Grid")


def test_a_fitted_model_is_kept_on_disk_and_a_bad_cache_is_refitted(tmp_path, monkeypatch):
    """Every workflow job asks the cost model for its estimate: the fit is stored once
    (keyed by the sources and the records) and read back; a damaged file is refitted."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    recs = tmp_path / "recs"
    recs.mkdir()
    rows = [_rec("e-greedy", {"epsilon": e}, "GC", "GC", 0.1 * (1 + e)) for e in (0.0, 1.0)]
    (recs / "r.json").write_text(json.dumps({"rows": rows}))
    monkeypatch.setattr(cost, "_MODELS", {})
    a = cost.model(recs).seconds_per_trajectory("e-greedy", {"epsilon": 0.5}, "GC")
    files = list((tmp_path / "cache" / "bbrlcore").glob("cost-*.pkl"))
    assert len(files) == 1
    monkeypatch.setattr(cost, "_MODELS", {})
    def no_refit(rows):
        raise AssertionError("refitted instead of reading the cache")

    monkeypatch.setattr(cost, "_fit", no_refit)
    assert cost.model(recs).seconds_per_trajectory("e-greedy", {"epsilon": 0.5}, "GC") == a
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(cost, "_MODELS", {})
    files[0].write_bytes(b"not a pickle")
    assert cost.model(recs).seconds_per_trajectory("e-greedy", {"epsilon": 0.5}, "GC") == a
    # other records, another file
    rows.append(_rec("e-greedy", {"epsilon": 0.5}, "GC", "GC", 0.2))
    (recs / "r.json").write_text(json.dumps({"rows": rows}))
    monkeypatch.setattr(cost, "_MODELS", {})
    cost.model(recs)
    assert len(list((tmp_path / "cache" / "bbrlcore").glob("cost-*.pkl"))) == 2


def test_a_local_correction_carries_what_the_work_misses(tmp_path):
    """Measurements 3x above the priced work on one experiment: its other configurations
    are predicted 3x higher, other experiments are not."""
    rows = [_rec("e-greedy", {"epsilon": e}, "Grid", "Grid", 3.0 * (1 + e)) for e in
            (0.0, 0.5, 1.0)]
    rows += [_rec("e-greedy", {"epsilon": e}, t, t, 1.0 * (1 + e))
             for e in (0.0, 0.5, 1.0) for t in ("GC", "GDL")]
    (tmp_path / "b.json").write_text(json.dumps({"rows": rows}))
    m = cost.CostModel(cost.records(tmp_path))
    g = m.seconds_per_trajectory("e-greedy", {"epsilon": 0.25}, "Grid", 250, "Grid")
    assert 3.0e-3 < g < 4.5e-3
    assert m.quality("e-greedy").worst_ratio < 2.0


def test_a_configuration_measured_at_several_horizons_is_corrected_at_the_query_s(tmp_path):
    """Issue 41: a probe at 50 episodes, then one at 500 (the study's setting changed):
    the correction took the first measurement's residual for every horizon, so that the
    500-episode runs were priced from the 50-episode probe's (work per step that the
    priced steps miss is not the same at both). Each horizon now gets its own, and a
    horizon between them their interpolation in log T."""
    def rec(T: int, s: float) -> dict:
        return {**_rec("random", {}, "DeepSea-10", "UDeepSea-10", 1e3 * s, T),
                "episode_length": 10}

    (tmp_path / "p.json").write_text(json.dumps({"rows": [rec(500, 0.01), rec(5000, 2.0)]}))
    m = cost.CostModel(cost.records(tmp_path))

    def est(T: int) -> float:
        return m.seconds_per_trajectory("random", {}, "DeepSea-10", T, "UDeepSea-10",
                                        episode_length=10)

    assert est(500) == pytest.approx(0.01) and est(5000) == pytest.approx(2.0)
    fit = m.quality("random")

    def priced(T: int) -> float:
        d = m.dists("DeepSea-10")
        return fit.priced(cost.features("random", {}, m.dists("UDeepSea-10"), d, 0.95, T,
                                        episode_length=10))

    r500, r5000 = 0.01 / priced(500), 2.0 / priced(5000)
    assert r500 != pytest.approx(r5000, rel=0.5)  # (what the priced steps miss differs)
    T = round(math.sqrt(500 * 5000))  # (the middle in log T: the residuals' middle)
    assert est(T) == pytest.approx(priced(T) * math.sqrt(r500 * r5000), rel=1e-3)
    assert est(50_000) == pytest.approx(priced(50_000) * r5000)  # (beyond: the nearest's)


def test_a_run_s_estimate_is_in_its_setting(tmp_path):
    """Issue 41: the estimate `bbrl run` and a workflow job announce and watch their runs
    by is the plan's in the test set's setting: PSRL's episodic form (a model drawn per
    episode) is priced as such, not as its continuing form."""
    from bbrlcore.cli.agents import expected_run_seconds
    from bbrlcore.mdp import families

    prior = families.make("deepsea", size=5).prior("uniform")
    ts = E.new_test_set(families.make("deepsea", size=5).test, 2, 0.95, 500, seed=0,
                        episode_length=5, references=False)
    agent = E.train_agent("psrl", {}, prior, horizon=500, progress=False)
    m = cost.model()
    episodic = m.seconds_per_trajectory("psrl", agent.params, ts.test, 500, prior, 0.95,
                                        learned=agent.info, episode_length=5)
    continuing = m.seconds_per_trajectory("psrl", agent.params, ts.test, 500, prior, 0.95,
                                          learned=agent.info)
    assert episodic != pytest.approx(continuing, rel=0.1)
    assert expected_run_seconds(ts, agent, 3) == pytest.approx(3 * episodic)


#: The paper's six experiments' distributions.
PAPER = {"GC", "GDL", "Grid", "UGC", "UGDL", "UGrid"}

#: Where the model misses x3 today (benchmarks/results/cost_model.md, named in the
#: closing note of issue 27): the worst left-out ratio each may not exceed. The paper's
#: six experiments: OPPS-DS online (one Grid-UGrid configuration, x3.16, since the
#: ladder's learned formulas share its prices). The ladders (10 MDPs a point): the sweeps
#: of an exploring agent's solves are probed on the prior, without the observations that
#: move its posterior (SBOSS, BOSS on DeepSea; BOLT, which crosses RiverSwim-50 but not
#: RiverSwim-100); small models solved by LU evaluations take a varying number of them
#: (PSRL, Soft-max); Random's trajectory is a constant plus cache misses on large MDPs.
PAPER_GAPS = {("opps-ds", "online"): 3.2}
LADDER_GAPS = {("bolt", "online"): 10.8, ("sboss", "online"): 11.7,
               ("boss", "online"): 9.1, ("random", "online"): 3.8,
               ("psrl", "online"): 3.3, ("soft-max", "online"): 3.1}


def _worst(fit, paper: bool) -> float:
    return max((cost._ratio(p, m) for cfg, m, _, p in fit.validation
                if (cfg[2] in PAPER) == paper), default=1.0)


def test_the_benchmarks_predict_every_measured_configuration_within_3x():
    """The committed measurements (benchmarks/results, extremes of every grid and the
    families' size ladders) against the model fitted without each configuration: the
    check of benchmarks/README.md — x3, or the named gap, which may not grow."""
    m = cost.model(ROOT / "benchmarks" / "results")
    assert {a for a, _ in m.fits} >= {"random", "e-greedy", "soft-max", "beb", "sboss",
                                      "opps-ds", "bamcp", "bfs3", "optimal", "psrl",
                                      "boss", "bolt", "mbie-eb", "formula"}
    assert ("opps-ds", "offline") in m.fits
    bad = {}
    for key, fit in m.fits.items():
        for paper, gaps in ((True, PAPER_GAPS), (False, LADDER_GAPS)):
            w = _worst(fit, paper)
            if not w <= gaps.get(key, 3.0):
                bad[(*key, "paper" if paper else "ladder")] = round(w, 2)
    assert not bad, bad
    # every ladder point is measured (the ladders are part of the check)
    assert all(any(cfg[2] not in PAPER for cfg, *_ in fit.validation)
               for key, fit in m.fits.items() if key[1] == "online")


def test_optimal_long_horizons_are_priced_within_2x_of_their_measurements():
    """Issue 41 (Optimal on DeepSea-4 at T = 10^6 priced at 0.04 s, measured 0.64 s):
    the measurements of benchmarks/bench_long.py --only optimal (both criteria,
    DeepSea-4 and DeepSea-10, T = 10^4 ... 10^7, continuing and episodic) each
    predicted within x2 by the model fitted without any long-horizon record of that
    test: what grows with T is the model's (the undiscounted criterion's backward
    induction over T + 1 rows; an episode's H rows once), not the records'."""
    recs = cost.records(ROOT / "benchmarks" / "results")
    long = [r for r in recs if r.algorithm == "optimal" and r.horizon >= 10_000]
    seen = {(r.test, dict(r.params)["criterion"], r.horizon, r.episode_length) for r in long}
    for test, H in (("DeepSea-4", 4), ("DeepSea-10", 10)):
        for crit in ("discounted", "undiscounted"):
            assert {(test, crit, T, 0) for T in (10**4, 10**5, 10**6)} <= seen
            assert {(test, crit, T, H) for T in (10**5, 10**6)} <= seen
    assert ("DeepSea-4", "undiscounted", 10**7, 0) in seen
    ratios = {}
    for test in ("DeepSea-4", "DeepSea-10"):
        m = cost.CostModel([r for r in recs if not (
            r.algorithm == "optimal" and r.test == test and r.horizon >= 10_000)])
        for r in long:
            if r.test == test:
                est = m.seconds_per_trajectory("optimal", dict(r.params), test, r.horizon,
                                               test, r.gamma, episode_length=r.episode_length)
                ratios[(test, dict(r.params)["criterion"], r.horizon, r.episode_length)] = (
                    cost._ratio(est, r.seconds))
    assert len(ratios) == len(long) and max(ratios.values()) <= 2.0, ratios


def test_the_issue_s_sboss_edge_is_predicted_in_seconds_not_milliseconds():
    """SBOSS compat, epsilon=1e-6, delta=1e-4, GC-UGC: 250 resamples of a huge merged
    model per trajectory (about 5 s here), not the 0.07 ms of the old model."""
    s = cost.seconds_per_trajectory("sboss", {"epsilon": 1e-6, "delta": 1e-4, "compat": True},
                                    "GC", 250, "UGC")
    assert 1.0 < s < 30.0


# ---------------------------------------------------------------------------------------
# Time limits and overruns


def test_time_limits_grow_on_each_retry():
    plan = P.load(ROOT / "config.yaml")
    one = plan.runtime_minutes(600.0, 1)
    assert one == 10 + 3 * 10
    assert plan.runtime_minutes(600.0, 2) == 4 * one
    assert plan.runtime_minutes(600.0, 3) == 16 * one
    fast = P.load(ROOT / "config.yaml", {"runtime_safety": 0, "runtime_min_minutes": 1})
    assert [fast.runtime_minutes(1e6, a) for a in (1, 2)] == [1, 4]


def test_a_run_past_its_estimate_says_so(capsys, monkeypatch):
    monkeypatch.setattr(runner, "OVERRUN_MIN_S", 0.0)
    ts = E.new_test_set(D.builtin("GC"), 3, 0.95, 250, seed=1)
    agent = E.train_agent("e-greedy", {"epsilon": "0.1"}, D.builtin("GC"), progress=False)
    E.run_agent(ts, agent, progress=False, expected_s=1e-9)
    err = capsys.readouterr().err
    assert err.count("bbrl: warning: run e-greedy__epsilon=0.1 GC-GC") == 2  # during, end
    assert "times the cost model's estimate" in err
    E.run_agent(ts, agent, progress=False, expected_s=1e3)
    assert "warning" not in capsys.readouterr().err
    # a function: asked once, when the run has lasted OVERRUN_MIN_S
    asked = []
    E.run_agent(ts, agent, progress=False, expected_s=lambda: asked.append(1) or 1e-9)
    assert asked == [1] and "times the cost model's estimate" in capsys.readouterr().err
    monkeypatch.setattr(runner, "OVERRUN_MIN_S", 1e9)
    E.run_agent(ts, agent, progress=False, expected_s=lambda: asked.append(2) or 1e-9)
    assert asked == [1] and "warning" not in capsys.readouterr().err  # never computed


def test_estimate_says_how_far_to_trust_it(capsys):
    from bbrlcore.cli import main

    assert main(["estimate", str(ROOT / "config.yaml"), "--preset", "quick"]) == 0
    out = capsys.readouterr().out
    assert "in range" in out and "worst" in out and "measured (" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("bfs3"))
    assert re_ratio(line) <= 3.0


def re_ratio(line: str) -> float:
    import re

    m = re.search(r"x(\d+\.\d+)", line)
    return float(m.group(1)) if m else math.inf


def test_estimate_lists_the_agents_and_explains_its_columns(capsys):
    """No silent doubling: the compat variants that compat_variants adds are counted and
    named per algorithm; a small figure keeps its digits; the columns are explained."""
    from bbrlcore.cli import main
    from bbrlcore.cli.estimate import COLUMNS, hours

    assert main(["estimate", str(ROOT / "config.yaml"), "--preset", "quick"]) == 0
    out = capsys.readouterr().out
    beb = next(ln for ln in out.splitlines() if ln.strip().startswith("beb: "))
    assert "4 agents (2 configurations + 2 compat variants added by compat_variants" in beb
    assert "beb__beta=2.5__compat=true" in beb
    figure = float(re.search(r"expected CPU-hours: ([0-9.]+)", out).group(1))
    # (the quick preset's 34 jobs: about a CPU-minute, mostly the jobs' start-up)
    assert "expected CPU-hours: 0.0 " not in out and 0.005 < figure < 0.2
    for col in ("configs", "offline h", "max job h", "in range", "worst", "calibration"):
        assert f"  {col}" in COLUMNS and f"  {col}" in out
    assert hours(0.0042) == "0.0042 (15 s)" and hours(2.0 / 3600) == "0.00056 (2 s)"
    with pytest.raises(SystemExit):
        main(["estimate", "--help"])
    assert "max job h" in capsys.readouterr().out


def test_built_in_work_amounts_are_memoised_exactly_and_keyed_by_content(tmp_path, monkeypatch):
    """A dry run plans the same work amounts every time: a built-in algorithm's are kept
    on disk (computing some loads numba's kernels, the one numba a dry run would need).
    What is read back equals what is computed, to the bit; another distribution's
    contents (the same name), other parameters or another horizon are other entries (a
    plugin's own cost function is never kept: its code is not among bbrlcore's
    sources)."""
    from bbrlcore.agents import _memo

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    gc = D.load_test("GC")
    cases = [("beb", {"beta": 2.0}, 250), ("bfs3", {"K": 2, "C": 2, "D": 3}, 50),
             ("opps-ds", {"formula_set": "F2", "n_draws": 10}, 250), ("psrl", {}, 100)]
    fresh = {}
    monkeypatch.setenv("BBRL_COST_CACHE", "0")
    for alg, params, T in cases:
        _memo._PROBES.clear()
        fresh[alg] = cost.features(alg, params, gc, gc, 0.95, T)
    monkeypatch.setenv("BBRL_COST_CACHE", "1")
    for alg, params, T in cases:
        _memo._PROBES.clear()
        assert cost.features(alg, params, gc, gc, 0.95, T) == fresh[alg]  # computed, stored
        _memo._PROBES.clear()
        assert cost.features(alg, params, gc, gc, 0.95, T) == fresh[alg]  # read back
    stored = list(tmp_path.glob("bbrlcore/cost-features-*/*"))
    assert len(stored) == len(cases)
    # keyed by the contents, not the name: GC with other concentrations
    theta = np.array(gc.theta) * 2.0
    other = D.FDMDistribution(gc.name, gc.short_name, theta, gc.reward, gc.initial_state)
    cost.features("beb", {"beta": 3.0}, gc, gc, 0.95, 250)
    cost.features("beb", {"beta": 2.0}, gc, gc, 0.95, 100)
    cost.features("beb", {"beta": 2.0}, other, other, 0.95, 250)
    assert len(list(tmp_path.glob("bbrlcore/cost-features-*/*"))) == len(cases) + 3


def test_out_of_memory_in_the_work_amounts_names_what_and_the_limit(monkeypatch, tmp_path):
    """Running out of memory while computing an algorithm's work amounts was "out of
    memory in bbrlcore.agents._memo.compute (Allocation failed)": it names the
    algorithm, its parameters, the distributions and T, and, under an address-space
    limit, the limit and what to do."""
    import resource

    from bbrlcore.agents import _memo, bfs3
    from bbrlcore.errors import OutOfMemory

    def hungry(*args):
        raise MemoryError("Allocation failed (probably too large).")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("BBRL_COST_CACHE", "0")
    monkeypatch.setattr(_memo, "_PROBES", {})
    monkeypatch.setattr(bfs3, "probe_tree_nodes", hungry)
    monkeypatch.setattr(resource, "getrlimit", lambda which: (6_000_000 * 1024, -1))
    deep = D.load("DeepSea-10")
    with pytest.raises(OutOfMemory) as err:
        cost.features("bfs3", {"K": 1, "C": 2, "D": 15}, deep, deep, 0.95, 100_000,
                      episode_length=10)
    assert str(err.value) == (
        "out of memory while computing bfs3's work amounts for the cost model (K=1, C=2, "
        "D=15) on DeepSea-10 with the prior DeepSea-10, T = 100,000 steps in episodes of 10 "
        "(Allocation failed (probably too large).); the address space is limited to 5.7 "
        "GiB (ulimit -v): raise the limit")
