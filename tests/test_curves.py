"""Learning curves, shortfall and regret over time (bbrlcore.analysis.curves): at the horizon
the summary's and the aggregates' numbers; bands are paired bootstrap percentiles."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from bbrlcore.analysis import aggregate as A
from bbrlcore.analysis import curves as C
from bbrlcore.analysis.results import summary_table
from bbrlcore.errors import BBRLError

T = 12


def runs(seed: int = 0, experiments=("GC-GC", "GC-UGC"), n: int = 15, T: int = T,
         gamma: float = 0.9) -> pl.DataFrame:
    """Merged runs: Random, Optimal and two e-greedy agents, rewards in {0, 1, 2, 10}."""
    rng = np.random.default_rng(seed)
    rows = []
    for exp in experiments:
        test, prior = exp.split("-")
        for alg, agent, p in (("random", "random", 0.2), ("optimal", "optimal", 0.9),
                              ("e-greedy", "e-greedy__epsilon=0.1", 0.6),
                              ("e-greedy", "e-greedy__epsilon=0.5", 0.4)):
            for i in range(n):
                r = rng.choice([0.0, 1.0, 2.0, 10.0], size=T,
                               p=[1 - p, p / 2, p / 3, p / 6]).astype(np.float32)
                ret, disc = 0.0, 1.0
                for x in r:
                    ret += disc * float(x)
                    disc *= gamma
                rows.append({"experiment": exp, "test": test, "prior": prior,
                             "algorithm": alg, "agent": agent, "params": "{}",
                             "compat": False, "mdp_index": i, "discounted_return": ret,
                             "undiscounted_return": float(r.astype(np.float64).sum()),
                             "online_time_s": 1e-3, "n_steps": T, "offline_time_s": 0.0,
                             "gamma": gamma, "horizon": T, "test_seed": 0,
                             "seed": 1000 + i, "bbrlcore_version": "0",
                             "rewards": r.tolist()})
    return pl.DataFrame(rows).with_columns(pl.col("rewards").cast(pl.List(pl.Float32)))


@pytest.mark.parametrize("score", ["discounted", "undiscounted"])
def test_at_the_horizon_the_curves_are_the_summary(score):
    m = runs()
    c = C.curves(m, score=score, n_resamples=200, seed=1)
    t = c.tables["curves"]
    s = summary_table(m, score)
    for r in t.filter(pl.col("t") == T).iter_rows(named=True):
        row = s.filter((pl.col("experiment") == r["experiment"])
                       & (pl.col("agent") == r["agent"])).row(0, named=True)
        assert r["normalised"] == pytest.approx(row["normalised_score"], abs=1e-12)
        assert r["shortfall"] == pytest.approx(row["shortfall"], abs=1e-9)
        g = m.filter((pl.col("experiment") == r["experiment"])
                     & (pl.col("agent") == r["agent"]))
        # the cumulative view is the score's (issue 33: one score everywhere), not
        # always the undiscounted sum
        col = "discounted_return" if score == "discounted" else "undiscounted_return"
        assert r["cumulative"] == pytest.approx(g[col].mean(), abs=1e-9)
        if score == "discounted":  # the recorded return, exactly (same accumulation)
            R = C.reward_matrix(g)
            assert np.array_equal(C.cumulative(R, 0.9, score)[:, -1],
                                  g["discounted_return"].to_numpy())
        assert r["normalised_low"] <= r["normalised"] <= r["normalised_high"]
        assert r["shortfall_low"] <= r["shortfall"] <= r["shortfall_high"]
        assert r["regret"] is None  # (runs without their test MDPs' references)
    # the best agent per family is the one the aggregates choose, by the same score
    best = A.best_agents(m, score=score)
    assert set(zip(best["experiment"], best["agent"], strict=True)) <= set(
        zip(t["experiment"], t["agent"], strict=True))


def test_the_aggregate_curve_ends_at_the_aggregates_iqm():
    m = runs(seed=3)
    agg = A.compute(m, n_resamples=200, seed=0)
    iqm = dict(zip(agg.tables["metrics"]["family"], agg.tables["metrics"]["iqm"], strict=True))
    c = C.curves(m, n_resamples=200, seed=0).tables["aggregate"]
    end = c.filter(pl.col("t") == T)
    for fam, v in zip(end["family"], end["iqm"], strict=True):
        if fam in iqm:
            assert v == pytest.approx(iqm[fam], abs=1e-12), fam
    assert (end["n_experiments"] == 2).all()
    assert ((c["iqm_low"] <= c["iqm"] + 1e-12) & (c["iqm"] <= c["iqm_high"] + 1e-12)).all()


def test_random_and_optimal_are_zero_and_one_and_shortfall_is_paired():
    m = runs(seed=5)
    t = C.curves(m, n_resamples=200).tables["curves"].drop_nulls("normalised")
    assert t.filter(pl.col("family") == "Optimal")["normalised"].to_list() == pytest.approx(
        [1.0] * t.filter(pl.col("family") == "Optimal").height)
    assert (t.filter(pl.col("family") == "Optimal")["shortfall"] == 0).all()
    rnd = t.filter(pl.col("family") == "Random")["normalised"].to_numpy()
    assert np.allclose(rnd, 0.0, atol=1e-12)
    # cumulative shortfall of a learner grows with t (rewards are >= 0 here)
    eg = t.filter((pl.col("family") == "e-Greedy") & (pl.col("experiment") == "GC-GC"))
    assert eg["t"].is_sorted()


def test_same_seed_same_tables_other_seed_other_bands():
    m = runs()
    a = C.curves(m, n_resamples=150, seed=7).tables
    b = C.curves(m, n_resamples=150, seed=7).tables
    assert a["curves"].equals(b["curves"]) and a["aggregate"].equals(b["aggregate"])
    c = C.curves(m, n_resamples=150, seed=8).tables
    assert not a["curves"]["shortfall_low"].equals(c["curves"]["shortfall_low"])


def test_older_tables_without_rewards_say_so():
    with pytest.raises(BBRLError, match="no per-step rewards"):
        C.curves(runs().drop("rewards"), n_resamples=100)


def test_bad_arguments_are_one_line():
    m = runs()
    with pytest.raises(BBRLError, match="score='total'"):
        C.curves(m, score="total")
    with pytest.raises(BBRLError, match="resamples|n_resamples"):
        C.curves(m, n_resamples=3)
    short = m.with_columns(pl.col("rewards").list.head(3))
    with pytest.raises(BBRLError, match="rewards holds 3 values, expected n_steps = horizon "
                       "= 12"):  # (the rewards' check, results.check_rewards, sees it first)
        C.curves(short, n_resamples=100)
    with pytest.raises(BBRLError, match="MDP 0\\): undiscounted_return 6 disagrees with its "
                       "rewards"):
        C.curves(m.with_columns(pl.col("rewards").list.eval(pl.element() * 2)),
                 n_resamples=100)



def test_experiments_of_different_horizons_have_curves_but_no_iqm_across_them():
    """A ladder run for a number of episodes has a horizon per size: each experiment
    gets its curves, and the IQM across experiments (which needs one time grid) is left
    out, saying why."""
    mixed = pl.concat([runs(experiments=("GC-GC",)),
                       runs(experiments=("GDL-GDL",), T=8)])
    c = C.curves(mixed, n_resamples=100)
    t = c.tables["curves"]
    assert t.group_by("experiment").agg(pl.col("t").max()).sort("experiment").rows() == [
        ("GC-GC", T), ("GDL-GDL", 8)]
    assert c.tables["aggregate"].is_empty()
    assert any("needs one time grid" in str(w) for w in c.left_out)


def test_grid_and_tables_are_written(tmp_path):
    assert C.time_grid(1000, 100)[[0, -1]].tolist() == [1, 1000]
    assert len(C.time_grid(1000, 100)) == 100
    c = C.curves(runs(), n_resamples=100, points=5, aggregate_points=3)
    assert c.tables["curves"]["t"].n_unique() == 5
    assert c.tables["aggregate"]["t"].n_unique() <= 3
    paths = C.write_tables(c, tmp_path)
    from bbrlcore.formats import artefacts

    table, meta = artefacts.read_artefact(paths["curves"], "curves")
    assert table.equals(c.tables["curves"]) and meta["score"] == "discounted"


def test_cli_prints_and_writes_the_curves(tmp_path, capsys):
    from bbrlcore.cli import main
    from bbrlcore.formats import artefacts

    artefacts.write_artefact(tmp_path / "m.parquet", runs(), "merged", {})
    assert main(["curves", str(tmp_path / "m.parquet"), "--resamples", "100", "-o",
                 str(tmp_path / "out"), "--score", "undiscounted"]) == 0
    out = capsys.readouterr().out
    assert "GC-UGC" in out and "e-Greedy" in out and "IQM of the normalised score" in out
    table, meta = artefacts.read_artefact(tmp_path / "out" / "curves.parquet", "curves")
    assert meta["score"] == "undiscounted" and table.height > 0
    assert main(["curves", str(tmp_path / "m.parquet"), "--points", "1"]) == 2
    # (a table written before bbrl recorded rewards lacks both columns; one without the
    # other is refused: tests/test_rewards.py)
    artefacts.write_artefact(tmp_path / "old.parquet",
                             runs().drop("rewards", "undiscounted_return"), "merged", {})
    assert main(["curves", str(tmp_path / "old.parquet")]) == 2
    assert "no per-step rewards" in capsys.readouterr().err


def test_the_undiscounted_score_needs_every_agents_sum():
    m = runs().with_columns(
        pl.when(pl.col("agent") == "random").then(None)
        .otherwise(pl.col("undiscounted_return")).alias("undiscounted_return"))
    with pytest.raises(BBRLError, match="agent random has no undiscounted_return"):
        summary_table(m, "undiscounted")
    summary_table(m, "discounted")  # the discounted return is always there


def test_reports_read_only_the_rewards_the_curves_need(tmp_path):
    from bbrlcore.analysis.results import attach_rewards, read_runs
    from bbrlcore.formats import artefacts

    m = runs()
    artefacts.write_artefact(tmp_path / "m.parquet", m, "merged", {})
    lean = read_runs([str(tmp_path / "m.parquet")], "report", rewards=False)
    assert "rewards" not in lean.columns
    need = C.curve_agents(lean)
    assert ("GC-GC", "random") in need and ("GC-GC", "optimal") in need
    assert ("GC-GC", "e-greedy__epsilon=0.1") in need or (
        "GC-GC", "e-greedy__epsilon=0.5") in need
    assert len(need) == 6  # Random, Optimal and e-Greedy's best, in two experiments
    full = attach_rewards(lean, [str(tmp_path / "m.parquet")], need)
    got = C.curves(full, n_resamples=100, seed=0).tables
    want = C.curves(m, n_resamples=100, seed=0).tables
    assert got["curves"].equals(want["curves"]) and got["aggregate"].equals(want["aggregate"])


def test_an_agent_without_rewards_loses_only_its_own_curve():
    """One agent of older tables (null rewards) among recorded ones: the other curves
    are drawn; a Random without rewards drops its experiment's curves only."""
    m = runs()
    old = (pl.col("experiment") == "GC-UGC") & (pl.col("algorithm") == "e-greedy")
    t = C.curves(m.with_columns(pl.when(old).then(None).otherwise(pl.col("rewards"))
                                .alias("rewards")), n_resamples=100).tables["curves"]
    fams = {e: set(t.filter(pl.col("experiment") == e)["family"].to_list())
            for e in ("GC-GC", "GC-UGC")}
    assert "e-Greedy" in fams["GC-GC"] and "e-Greedy" not in fams["GC-UGC"]
    assert "Optimal" in fams["GC-UGC"]
    no_random = m.with_columns(pl.when(pl.col("algorithm") == "random").then(None)
                               .otherwise(pl.col("rewards")).alias("rewards"))
    with pytest.raises(BBRLError, match="no per-step rewards"):
        C.curves(no_random, n_resamples=100)


def test_an_experiments_bands_do_not_depend_on_the_others():
    m = runs()
    exps = m["experiment"].unique().sort().to_list()
    both = C.curves(m, n_resamples=200).tables["curves"]
    alone = C.curves(m.filter(pl.col("experiment") == exps[-1]),
                     n_resamples=200).tables["curves"]
    cols = ["family", "t", "shortfall_low", "shortfall_high", "cumulative_low"]
    assert both.filter(pl.col("experiment") == exps[-1]).select(cols).equals(
        alone.select(cols))


def test_what_has_no_curve_is_said_with_the_reason(tmp_path, capsys):
    """Issue 33: experiments without Random or Optimal, and agents whose rewards are
    missing on some test MDPs, were left out silently; each is now one line (the
    ``left_out`` of the curves, on stderr in ``bbrl curves``)."""
    from bbrlcore.cli import main
    from bbrlcore.formats import artefacts

    m = pl.concat([runs(), runs(experiments=("GDL-GDL", "GDL-UGDL"))])
    m = m.filter(~((pl.col("experiment") == "GC-UGC") & (pl.col("algorithm") == "random"))
                 & ~((pl.col("experiment") == "GDL-UGDL")
                     & pl.col("algorithm").is_in(["random", "optimal"])))
    c = C.curves(m, n_resamples=100)
    lines = [str(w) for w in c.left_out]
    drawn = ("(the normalised score needs Random and Optimal; drawn: the cumulative score "
             "and, where the runs carry their test MDPs' references, the regret and "
             "bbrl's DeepSea score)")
    assert lines == [
        f"experiment GC-UGC: no normalised score: no Random agent {drawn}",
        "experiment GDL-UGDL: no normalised score and no shortfall against Optimal: no Random "
        f"and no Optimal agent {drawn}"]
    # (issue 41: their other curves are drawn; the IQM pools the complete experiments)
    t = c.tables["curves"]
    assert set(t["experiment"].to_list()) == {"GC-GC", "GC-UGC", "GDL-GDL", "GDL-UGDL"}
    part = t.filter(pl.col("experiment").is_in(["GC-UGC", "GDL-UGDL"]))
    assert part["normalised"].null_count() == part.height and part["cumulative"].null_count() == 0
    assert t.filter(pl.col("experiment") == "GC-UGC")["shortfall"].null_count() == 0
    assert t.filter(pl.col("experiment") == "GDL-UGDL")["shortfall"].null_count() == \
        t.filter(pl.col("experiment") == "GDL-UGDL").height
    assert "Optimal" not in t.filter(pl.col("experiment") == "GDL-UGDL")["family"].to_list()
    assert (c.tables["aggregate"]["n_experiments"] == 2).all()
    artefacts.write_artefact(tmp_path / "m.parquet", m, "merged", {})
    capsys.readouterr()
    assert main(["curves", str(tmp_path / "m.parquet"), "--resamples", "100"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"bbrl: warning: left out of the learning curves: {ln}" for ln in lines]

    # an agent without rewards on some MDPs (reachable from Python: a file is refused)
    best = C.curve_agents(runs())
    agent = next(a for e, a in sorted(best) if e == "GC-GC" and a.startswith("e-greedy"))
    part = runs().with_columns(
        pl.when((pl.col("agent") == agent) & (pl.col("experiment") == "GC-GC")
                & (pl.col("mdp_index") < 3)).then(None).otherwise(pl.col("rewards"))
        .alias("rewards"))
    c = C.curves(part, n_resamples=100)
    assert [str(w) for w in c.left_out] == [
        f"experiment GC-GC: no learning curve for e-Greedy (agent {agent}): it has no "
        "per-step rewards on test MDPs 0-2 (of 15) (a table written before bbrl recorded "
        "them, or a player that records none)",
        "e-Greedy: left out of the IQM across experiments: no curve in GC-GC (the IQM "
        "pools every experiment)"]
    assert c.tables["aggregate"].filter(pl.col("family") == "e-Greedy").is_empty()
    # Optimal without rewards: its experiment is left out, said so
    no_opt = runs().with_columns(
        pl.when((pl.col("algorithm") == "optimal") & (pl.col("experiment") == "GC-UGC"))
        .then(None).otherwise(pl.col("rewards")).alias("rewards"))
    assert str(C.curves(no_opt, n_resamples=100).left_out[0]) == (
        "experiment GC-UGC: no learning curves: Optimal (agent optimal) has no per-step "
        "rewards on any test MDP (a table written before bbrl recorded them, or a player "
        "that records none)")

def _late_runs(T: int = 30, n: int = 12, delay: int = 5) -> pl.DataFrame:
    """Random earns nothing; Optimal nothing for ``delay`` steps, then 1 a step (a far
    reward, as RiverSwim's); a learner in between. Per-MDP noise: a random step skipped."""
    rng = np.random.default_rng(5)
    rows = []
    for alg, agent in (("random", "random"), ("optimal", "optimal"),
                       ("e-greedy", "e-greedy__epsilon=0.1")):
        for i in range(n):
            r = np.zeros(T, dtype=np.float32)
            if alg != "random":
                r[delay:] = 1.0 if alg == "optimal" else (rng.random(T - delay) < 0.6)
                r[int(rng.integers(delay, T))] = 0.0
            rows.append({"experiment": "GC-GC", "test": "GC", "prior": "GC", "algorithm": alg,
                         "agent": agent, "params": "{}", "compat": False, "mdp_index": i,
                         "discounted_return": float(sum(0.9 ** s * float(x)
                                                        for s, x in enumerate(r))),
                         "undiscounted_return": float(r.sum()), "online_time_s": 1e-3,
                         "n_steps": T, "offline_time_s": 0.0, "gamma": 0.9, "horizon": T,
                         "test_seed": 0, "seed": i, "bbrlcore_version": "0",
                         "rewards": r.tolist()})
    return pl.DataFrame(rows).with_columns(pl.col("rewards").cast(pl.List(pl.Float32)))


def test_the_normalised_score_starts_where_optimal_has_gained():
    """Issue 33: the first steps' normalised score divides by a gap near 0 and its noise set
    the figures' scale. It is defined once Optimal's mean gain over Random reaches
    MIN_GAIN_FRACTION of its gain at T: here the gain is t - 5 (less the skipped steps),
    so from t = 8 on at T = 30, never at t <= 5 where it is 0."""
    m = _late_runs()
    t = C.curves(m, score="undiscounted", n_resamples=100, seed=0).tables["curves"]
    opt = m.filter(pl.col("algorithm") == "optimal")
    gain = np.cumsum(C.reward_matrix(opt), axis=1).mean(axis=0)  # Random earns 0
    want = {s for s in range(1, 31) if gain[s - 1] >= C.MIN_GAIN_FRACTION * gain[-1]
            and gain[s - 1] > 0}
    assert min(want) == 8
    for (fam,), g in t.group_by(["family"]):
        defined = set(g.filter(pl.col("normalised").is_not_null())["t"].to_list())
        assert defined == want, fam
        # the other views are drawn from t = 1 (no ratio: nothing to hide)
        assert g["shortfall"].null_count() == 0 and g["cumulative"].null_count() == 0


def test_the_curves_reference_is_the_optimal_of_the_score():
    """With two Optimal agents (discounted, undiscounted criterion), each score's curves
    are normalised by its own: that one ends at exactly 1, shortfall 0."""
    m = runs(experiments=("GC-GC",))
    und = (m.filter(pl.col("algorithm") == "optimal")
           .with_columns(pl.lit("optimal__criterion=undiscounted").alias("agent"),
                         (pl.col("undiscounted_return") + 0.5 * T).alias(
                             "undiscounted_return"),
                         # (the discounted return of the same rewards + 0.5)
                         (pl.col("discounted_return") + 0.5 * (1 - pl.col("gamma") ** T)
                          / (1 - pl.col("gamma"))).alias("discounted_return"),
                         pl.col("rewards").list.eval(pl.element() + 0.5)))
    m2 = pl.concat([m, und])
    for score, ref in (("discounted", "optimal"),
                       ("undiscounted", "optimal__criterion=undiscounted")):
        t = C.curves(m2, score=score, n_resamples=100, seed=0).tables["curves"]
        o = t.filter((pl.col("family") == "Optimal") & (pl.col("t") == T))
        assert o["agent"].to_list() == [ref]
        assert o["normalised"][0] == pytest.approx(1.0) and o["shortfall"][0] == 0.0
        s = summary_table(m2, score)
        for r in t.filter(pl.col("t") == T).iter_rows(named=True):
            row = s.filter(pl.col("agent") == r["agent"]).row(0, named=True)
            assert r["normalised"] == pytest.approx(row["normalised_score"], abs=1e-9)
