"""The field's scores (issue 34): the regret against the optimal policy's exact value and
Colosseum's normalised regret in the
learning curves and the aggregates, bbrl's DeepSea score and bsuite's (issue 43) in the
curves and on the command line; checked against sums written here from the run tables'
episode returns and checkpoints (bsuite's score against bsuite's own code:
``tests/test_bsuite_deepsea.py``)."""

from __future__ import annotations

from functools import cache

import numpy as np
import polars as pl
import pytest

from bbrlcore import protocol as E
from bbrlcore.analysis import aggregate as A
from bbrlcore.analysis import curves as C
from bbrlcore.analysis import exploration as X
from bbrlcore.analysis import results
from bbrlcore.mdp import families
from bbrlcore.protocol import runner


@cache
def deepsea_runs(size: int = 4, episodes: int = 40, n: int = 6, refs: bool = True
                 ) -> pl.DataFrame:
    p = families.make("deepsea", size=size)
    ts = E.new_test_set(p.test, n, 1.0, size * episodes, 0, episode_length=size,
                        references=refs)
    runs = []
    for alg, raw in (("random", {}), ("optimal", {"criterion": "undiscounted"}),
                     ("e-greedy", {"epsilon": "0.1"}), ("psrl", {})):
        agent = E.train_agent(alg, raw, p.prior("uniform"), horizon=ts.horizon,
                              progress=False)
        runs.append(E.run_agent(ts, agent, progress=False))
    return results.merge_tables(runs)


def test_the_regret_of_the_curves_is_exact_at_every_episode_end():
    m = deepsea_runs()
    c = C.curves(m, "undiscounted", n_resamples=200, points=50)
    t = c.tables["curves"]
    assert (t["t"] % 4 == 0).all() and (t["episodes"] * 4 == t["t"]).all()
    for fam, agent in t.select("family", "agent").unique().iter_rows():
        g = m.filter(pl.col("agent") == agent).sort("mdp_index")
        G = np.asarray(g["episode_returns"].to_list())
        vstar = g["optimal_reference"].to_numpy()
        gap = vstar - g["worst_reference"].to_numpy()
        S = np.cumsum(vstar[:, None] - G, axis=1)  # (written here: the definition)
        f = t.filter(pl.col("family") == fam).sort("t")
        e = f["episodes"].to_numpy()
        assert f["regret"].to_numpy() == pytest.approx(S[:, e - 1].mean(axis=0),
                                                           abs=1e-12)
        assert f["normalised_regret"].to_numpy() == pytest.approx(
            (S / gap[:, None])[:, e - 1].mean(axis=0), abs=1e-12)
        assert (f["normalised_regret_low"] <= f["normalised_regret"] + 1e-12).all()
        assert (f["normalised_regret"] <= f["normalised_regret_high"] + 1e-12).all()
        if fam == "Optimal":  # deterministic DeepSea: V*_H exactly, every episode
            assert np.abs(f["regret"].to_numpy()).max() < 1e-9


def test_long_curves_have_log_spaced_points_for_log_axes():
    """Issue 41: the points of a curve were 100 evenly spaced episodes (1, 11, 21, ... of
    1,000), drawn on log axes: learning in the first episodes could not be seen. A long
    curve also has every episode up to the 200th and log-spaced ones beyond (exact
    there, as at every point), which the log-axis figures draw; the evenly spaced points
    (``even_grid``) stay what linear axes draw, and a short curve is as it was."""
    from bbrlcore.report import figures, interactive

    m = deepsea_runs(episodes=1000, n=4)
    t = C.curves(m, "undiscounted", n_resamples=100).tables["curves"]
    f = t.filter(pl.col("family") == "PSRL").sort("t")
    e = f["episodes"].to_numpy()
    assert e[:200].tolist() == list(range(1, 201)) and e[-1] == 1000
    beyond = e[e > 200]
    assert (np.diff(np.log(beyond)) < 0.05).all() and beyond.size >= 50  # log-spaced
    even = f.filter(pl.col("even_grid"))["t"].to_numpy()
    assert even.tolist() == (C.time_grid(1000, 100) * 4).tolist()
    g = m.filter(pl.col("agent") == f["agent"][0]).sort("mdp_index")
    S = np.cumsum(g["optimal_reference"].to_numpy()[:, None]
                  - np.asarray(g["episode_returns"].to_list()), axis=1)
    assert f["regret"].to_numpy() == pytest.approx(S[:, e - 1].mean(axis=0), rel=1e-9)
    # the figures: log axes draw every point, linear ones the evenly spaced
    panels = [(f["experiment"][0], "size 4")]
    styles = figures.style_map(t["family"].unique().to_list())
    reg = interactive.regret_curves(t, panels, styles)
    line = next(tr for tr in reg["data"] if tr["meta"] == [panels[0][0], "PSRL", "line"])
    assert line["x"] == e.tolist()
    lc = interactive.learning_curves(t, panels, styles, "undiscounted")
    line = next(tr for tr in lc["data"] if tr["meta"] == [panels[0][0], "PSRL", "line"])
    assert line["x"] == even.tolist()
    short = C.curves(deepsea_runs(), "undiscounted", n_resamples=100).tables["curves"]
    assert short["even_grid"].all()


def test_long_continuing_curves_have_the_regret_exact_at_the_checkpoints(monkeypatch):
    p = families.make("riverswim", size=6)
    ts = E.new_test_set(p.test, 5, 0.99, 400, 1, checkpoint_every=40)
    runs = [E.run_agent(ts, E.train_agent(a, raw, p.prior("accurate"), horizon=400,
                                          progress=False), progress=False)
            for a, raw in (("random", {}), ("optimal", {}), ("e-greedy", {"epsilon": "0.1"}))]
    m = results.merge_tables(runs)
    monkeypatch.setattr(C, "MAX_RECORDED_STEPS", 100)  # (the checkpoints are read)
    t = C.curves(m.with_columns(pl.lit(None, dtype=pl.List(pl.Float32)).alias("rewards")),
                 "undiscounted", n_resamples=100).tables["curves"]
    assert t["t"].unique().sort().to_list() == list(range(40, 401, 40))
    rho = ts.references["optimal_average_reward"].to_numpy()
    worst = ts.references["worst_average_reward"].to_numpy()
    for agent in t["agent"].unique():
        g = m.filter(pl.col("agent") == agent).sort("mdp_index")
        ck = np.asarray(g["checkpoints"].to_list())
        f = t.filter(pl.col("agent") == agent).sort("t")
        times = f["t"].to_numpy()
        want = rho[:, None] * times[None, :] - ck[:, times // 40 - 1]
        assert f["regret"].to_numpy() == pytest.approx(want.mean(axis=0), abs=1e-12)
        assert f["normalised_regret"].to_numpy() == pytest.approx(
            (want / (rho - worst)[:, None]).mean(axis=0), abs=1e-12)


def test_regret_is_against_the_exact_value_and_shortfall_against_the_optimal_agent(
        tmp_path, capsys):
    """Issue 41: ``regret`` meant two things, the regret against the optimal policy's
    exact expected value (the run tables') and the difference from the Optimal agent's
    realised score (the summary's, the curves' paired one). On a stochastic problem they
    differ (the Optimal agent's realised rewards are not its expectation): the curves'
    ``regret`` ends at the run tables' mean ``regret``, their ``shortfall`` at the
    summary's ``shortfall``, Optimal's mean − the agent's mean."""
    from bbrlcore.cli import main
    from bbrlcore.formats import artefacts

    p = families.make("riverswim", size=6)
    ts = E.new_test_set(p.test, 5, 0.99, 300, 2)
    m = results.merge_tables([
        E.run_agent(ts, E.train_agent(a, raw, p.prior("accurate"), horizon=300,
                                      progress=False), progress=False)
        for a, raw in (("random", {}), ("optimal", {"criterion": "undiscounted"}),
                       ("e-greedy", {"epsilon": "0.1"}))])
    s = results.summary_table(m, "undiscounted")
    assert "shortfall" in s.columns and "regret" not in s.columns
    opt = s.filter(pl.col("algorithm") == "optimal")["mean"][0]
    assert s["shortfall"].to_numpy() == pytest.approx(opt - s["mean"].to_numpy(), abs=1e-12)
    t = C.curves(m, "undiscounted", n_resamples=100).tables["curves"]
    assert "regret_ref" not in t.columns
    for r in t.filter(pl.col("t") == 300).iter_rows(named=True):
        g = m.filter(pl.col("agent") == r["agent"])
        # (the curves sum the float32 rewards, the run tables the played ones)
        assert r["regret"] == pytest.approx(g["regret"].mean(), rel=1e-9)
        assert r["shortfall"] == pytest.approx(
            s.filter(pl.col("agent") == r["agent"])["shortfall"][0], rel=1e-9, abs=1e-9)
        assert r["regret_low"] <= r["regret"] <= r["regret_high"]
        assert r["shortfall_low"] <= r["shortfall"] <= r["shortfall_high"]
    o = t.filter((pl.col("family") == "Optimal") & (pl.col("t") == 300)).row(0, named=True)
    assert o["shortfall"] == 0.0 and abs(o["regret"]) > 1e-6  # (two quantities)
    # the command line names both as the tables do
    artefacts.write_artefact(tmp_path / "m.parquet", m, "merged", {})
    assert main(["curves", str(tmp_path / "m.parquet"), "--score", "undiscounted",
                 "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert "shortfall t=300" in out and "shortfall: below the Optimal agent" in out
    assert "regret: against the optimal policy's exact value" in out


def test_without_references_there_is_no_regret_and_no_regret_aggregate():
    m = deepsea_runs(refs=False)
    t = C.curves(m, "undiscounted", n_resamples=100).tables["curves"]
    assert t["regret"].null_count() == t.height
    assert t["normalised_regret"].null_count() == t.height
    agg = A.compute(m, n_resamples=100, score="undiscounted")
    assert agg.tables["regret"].is_empty()
    assert C.curves(m, "undiscounted", n_resamples=100).tables["deepsea"].is_empty()


def test_the_regret_aggregate_is_colosseum_s_normalised_regret_per_episode():
    m = deepsea_runs()
    agg = A.compute(m, n_resamples=200, score="undiscounted")
    reg = agg.tables["regret"]
    best = agg.tables["best_agents"]
    for r in reg.iter_rows(named=True):
        agent = best.filter(pl.col("family") == r["family"])["agent"][0]
        g = m.filter(pl.col("agent") == agent)
        per = g["regret"] / (g["episodes"] * (g["optimal_reference"] - g["worst_reference"]))
        assert r["mean"] == pytest.approx(per.mean(), abs=1e-12)
        assert r["mean_ci_low"] <= r["mean"] <= r["mean_ci_high"]
    # Random is about 1 (it almost never finds the treasure), PSRL far below it
    fams = dict(zip(reg["family"], reg["mean"], strict=True))
    assert fams["Random"] > 0.8 and fams["PSRL"] < fams["Random"]
    assert agg.meta["regret_experiments"] == ["DeepSea-4-UDeepSea-4@E40xH4"]


def _synthetic(size: int, learn_at: dict[str, int | None], E: int, n: int = 5,
               exp_suffix: str = "") -> pl.DataFrame:
    """Episodic DeepSea runs written by hand: an agent misses the treasure (return
    -0.005, regret 0.995) until its episode ``learn_at`` (1-based), then takes it."""
    rows = []
    for alg, at in learn_at.items():
        for i in range(n):
            G = np.full(E, -0.005) if at is None else np.where(np.arange(1, E + 1) >= at,
                                                                0.99, -0.005)
            rows.append(X._deepsea_run(size, E, alg, alg, i, G, exp_suffix))
    return pl.DataFrame(rows)


def test_bbrl_s_deepsea_learning_time_and_score_by_hand():
    """An agent that takes the treasure from episode k on: its average regret after e
    episodes is 0.995 (k - 1) / e, first below 0.9 at e = floor(0.995 (k - 1) / 0.9) + 1.
    Size 4: learned when that is before 2^4 + 100 episodes; size 10: before 1124."""
    E = 400
    runs = pl.concat([
        _synthetic(4, {"random": None, "optimal": 1, "e-greedy": 150, "beb": 2}, E),
        _synthetic(10, {"random": None, "optimal": 1, "e-greedy": 150, "beb": 2}, E)])
    best = A.best_agents(runs, score="undiscounted")
    out = X.bbrl_deepsea_scores(runs, best, n_resamples=100)
    t = out["deepsea"]

    def crossing(k: int) -> int:
        e = np.arange(1, E + 1)
        return int(np.argmax(0.995 * np.minimum(k - 1, e) / e < 0.9)) + 1

    got = {(r["family"], r["size"]): r for r in t.iter_rows(named=True)}
    assert got[("e-Greedy", 4)]["learning_episode"] == crossing(150) == 165
    assert not got[("e-Greedy", 4)]["learned"]  # (165 > 2^4 + 100)
    assert got[("e-Greedy", 10)]["learned"]  # (165 < 2^10 + 100)
    assert got[("BEB", 4)]["learning_episode"] == crossing(2) == 2
    assert got[("Random", 10)]["learning_episode"] is None
    assert not got[("Random", 10)]["decided"]  # (400 episodes < 2^10: cannot tell)
    assert got[("Random", 4)]["decided"]
    # identical MDPs: every replicate agrees with the point
    assert got[("e-Greedy", 4)]["learning_low"] == got[("e-Greedy", 4)]["learning_high"] == 165
    s = {r["family"]: r for r in out["deepsea_summary"].iter_rows(named=True)}
    assert (s["e-Greedy"]["score"], s["BEB"]["score"], s["Random"]["score"]) == (0.5, 1.0, 0.0)
    assert s["e-Greedy"]["sizes"] == "4, 10" and s["Random"]["undecided"] == 1


def test_bbrl_s_deepsea_score_of_real_runs_and_the_command_line(tmp_path, capsys):
    from bbrlcore.cli import main
    from bbrlcore.formats import artefacts

    m = deepsea_runs()
    artefacts.write_artefact(tmp_path / "m.parquet", m, "merged", {})
    assert main(["curves", str(tmp_path / "m.parquet"), "--score", "undiscounted",
                 "--resamples", "100", "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "bbrl's DeepSea score (not bsuite's number)" in out
    assert "norm. regret / episode" in out
    # size 4 is not in bsuite's sweep: bsuite's score says so rather than scoring it
    assert "no score (no size of bsuite's sweep was run; sizes run off bsuite's sweep: 4)" in out
    ds = artefacts.read_artefact(tmp_path / "out" / "curves-deepsea.parquet", "curves")[0]
    for r in ds.iter_rows(named=True):  # the first crossing, computed here
        g = m.filter(pl.col("agent") == r["agent"]).sort("mdp_index")
        G = np.asarray(g["episode_returns"].to_list())
        avg = (0.99 - G).cumsum(axis=1).mean(axis=0) / np.arange(1, G.shape[1] + 1)
        first = int(np.argmax(avg < 0.9)) + 1 if (avg < 0.9).any() else None
        assert r["learning_episode"] == first and r["dither_episodes"] == 16.0
        assert r["learned"] == (first is not None and first < 16 + 100)
    psrl = ds.filter(pl.col("family") == "PSRL").row(0, named=True)
    assert psrl["learned"] and psrl["learning_episode"] < 40
    assert main(["aggregate", str(tmp_path / "m.parquet"), "--score", "undiscounted",
                 "--resamples", "100"]) == 0
    assert "Normalised regret at the end of the interaction" in capsys.readouterr().out


def test_curves_without_random_and_optimal_give_what_the_references_allow(tmp_path, capsys):
    """bbrl's DeepSea score and the regret need the references the runs carry,
    not Random nor Optimal: ``bbrl curves`` refused a table without them. It computes
    them (the same numbers as with Random and Optimal beside) and says in one line what
    is missing and why (the normalised score needs Random and Optimal)."""
    from bbrlcore.cli import main
    from bbrlcore.formats import artefacts

    m = deepsea_runs()
    full = C.curves(m, "undiscounted", n_resamples=100)
    only = m.filter(pl.col("algorithm").is_in(["psrl", "e-greedy"]))
    c = C.curves(only, "undiscounted", n_resamples=100)
    assert [w.what for w in c.left_out] == ["no normalised score and no shortfall against "
                                            "Optimal"]
    cols = ["experiment", "family", "t", "cumulative", "regret", "regret_low",
            "normalised_regret", "normalised_regret_high"]
    keep = pl.col("family").is_in(["PSRL", "e-Greedy"])
    assert c.tables["curves"].select(cols).equals(
        full.tables["curves"].filter(keep).select(cols))
    assert c.tables["curves"]["normalised"].null_count() == c.tables["curves"].height
    assert c.tables["aggregate"].is_empty()
    assert c.tables["deepsea"].equals(full.tables["deepsea"].filter(keep))
    artefacts.write_artefact(tmp_path / "m.parquet", only, "merged", {})
    capsys.readouterr()
    assert main(["curves", str(tmp_path / "m.parquet"), "--score", "undiscounted",
                 "--resamples", "100", "-o", str(tmp_path / "out")]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "bbrl: warning: left out of the learning curves: experiment DeepSea-4-UDeepSea-4"
        "@E40xH4: no normalised score and no shortfall against Optimal: no Random and no "
        "Optimal agent (the normalised score needs Random and Optimal; drawn: the "
        "cumulative score and, where the runs carry their test MDPs' references, the "
        "regret and bbrl's DeepSea score)"]
    assert "regret t=160" in out and "shortfall" not in out.split("\n", 1)[1]
    assert "bbrl's DeepSea score" in out
    assert (tmp_path / "out" / "curves-deepsea.parquet").exists()
    assert (tmp_path / "out" / "curves-bsuite-deepsea-summary.parquet").exists()


def test_an_undecided_size_says_its_real_limit(tmp_path, capsys):
    """A size not learned in fewer episodes than bsuite's limit 2^N + 100 is undecided;
    the command line said "(undecided: 50 episodes < 2^4)" where 50 > 16: it prints the
    limit, 2^N + 100, and so does the report's figure."""
    from bbrlcore.cli import main
    from bbrlcore.formats import artefacts
    from bbrlcore.report import interactive

    m = deepsea_runs(size=6, episodes=30)
    artefacts.write_artefact(tmp_path / "m.parquet", m, "merged", {})
    assert main(["curves", str(tmp_path / "m.parquet"), "--score", "undiscounted",
                 "--resamples", "100", "-o", str(tmp_path / "out")]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "(undecided" in ln]
    assert len(lines) == 1 and "Random" in lines[0], lines
    assert lines[0].endswith("not learned (undecided: 30 episodes < 2^6 + 100 = 164)")
    ds = artefacts.read_artefact(tmp_path / "out" / "curves-deepsea.parquet", "curves")[0]
    fig = interactive.episodes_to_learn(ds, {"Random": ("#000000", "o", True),
                                             "PSRL": ("#0000ff", "s", True)})
    hover = [c[2] for t in fig["data"] if t["name"] == "Random" for c in t["customdata"]]
    assert hover == ["undecided: 30 episodes < 2^6 + 100 = 164"]
    assert X.undecided_text(50, 4) == "50 episodes < 2^4 + 100 = 116"


def test_normalised_regret_rows_and_runner_columns():
    m = deepsea_runs()
    nr = X.normalised_regrets(m)
    r = nr.row(0, named=True)
    assert r["normalised_regret"] == pytest.approx(
        r["regret"] / (r["episodes"] * (r["optimal_reference"] - r["worst_reference"])))
    assert set(runner.RUN_COLUMNS) >= {"regret", "optimal_reference", "worst_reference",
                                      "random_reference"}


def test_bsuite_s_deepsea_score_of_real_runs_in_the_curves_and_the_command_line(
        tmp_path, capsys):
    """Real runs of DeepSea-10 (bsuite's smallest size): bsuite's score in the curves'
    tables and on the command line, each size's learning episode the earliest run's
    first logged episode whose fraction of missed treasures is below 0.9 (bsuite's
    schedule written out here), beside bbrl's."""
    from bbrlcore.cli import main
    from bbrlcore.formats import artefacts

    m = deepsea_runs(size=10, episodes=60, n=3)
    c = C.curves(m, "undiscounted", n_resamples=100)
    per, summ = c.tables["bsuite_deepsea"], c.tables["bsuite_deepsea_summary"]
    logged = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 17, 20, 25, 30, 40, 50, 60])
    assert set(per["family"]) == set(c.tables["deepsea"]["family"])
    for r in per.iter_rows(named=True):
        agent = c.tables["deepsea"].filter(pl.col("family") == r["family"])["agent"][0]
        G = np.asarray(m.filter(pl.col("agent") == agent).sort("mdp_index")
                       ["episode_returns"].to_list())
        assert set(np.round(G, 9).ravel()) <= {0.99} | {-k / 1000 for k in range(11)}
        frac = np.cumsum(G < 0.5, axis=1)[:, logged - 1] / logged
        firsts = [int(logged[np.argmax(f < 0.9)]) if (f < 0.9).any() else None
                  for f in frac]
        assert r["run_learning_episodes"] == firsts
        crossed = [f for f in firsts if f is not None]
        assert r["solved"] == bool(crossed)
        assert r["episode"] == (min(crossed) if crossed else 60)
        assert r["beat_dither"] == bool(crossed) and r["rows"] == 3 and r["runs"] == 3
    s = {r["family"]: r for r in summ.iter_rows(named=True)}
    assert s["Random"]["score"] == 0.0 and s["PSRL"]["score"] == 1.0
    assert s["Random"]["missing_sizes"] == "12–50 (20 of 21)"
    assert not s["PSRL"]["finished"]  # (60 episodes, not bsuite's 10,000)
    artefacts.write_artefact(tmp_path / "m.parquet", m, "merged", {})
    assert main(["curves", str(tmp_path / "m.parquet"), "--score", "undiscounted",
                 "--resamples", "100", "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "bsuite's DeepSea score, as bsuite 0.3.6 computes it" in out
    assert ("score DeepSea, uniform prior, Random: 0.00 (0 of 1 sizes beat dithering; "
            "learning episode by size: 10: never) (unfinished") in out
    t = artefacts.read_artefact(tmp_path / "out" / "curves-bsuite-deepsea-summary.parquet",
                                "curves")[0]
    assert t.equals(summ)
