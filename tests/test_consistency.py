"""Run tables that check each other (issue 41): every column derivable from others
(returns, episode returns and checkpoints from the rewards, the regret from the returns
and references, the references from the test set) is checked against its source by the
one check every reader goes through (``read_runs``: merge, summary, aggregate, curves,
report); an edited table is refused in one line naming the file, the row and what
disagrees, whichever reader meets it first."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from bbrlcore import protocol as E
from bbrlcore.cli import main
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.mdp import families
from bbrlcore.protocol import runner

AGENTS = (("random", {}), ("optimal", {"criterion": "undiscounted"}), ("psrl", {}))
#: Every reader of run tables, as the command line runs it (output flags appended).
READERS = ("merge", "summary", "aggregate", "curves")


@cache
def _runs(episodes: int = 50, horizon_steps: int | None = None):
    """A DeepSea-4 test set with references (3 MDPs, ``episodes`` episodes), and the run
    tables and metadata of Random, Optimal and PSRL on it (the issue's setup)."""
    p = families.make("deepsea", size=4)
    ts = E.new_test_set(p.test, 3, 0.95, 4 * episodes, 0, episode_length=4,
                        references=True)
    out = []
    for alg, raw in AGENTS:
        agent = E.train_agent(alg, raw, p.prior("uniform"), horizon=ts.horizon,
                              progress=False)
        table = E.run_agent(ts, agent, progress=False)
        out.append((alg, table, runner.run_meta(ts, agent, range(ts.n_mdps))))
    return ts, out


def _write(tmp: Path, edit=None, which: str = "psrl") -> list[str]:
    """The three run tables written to ``tmp``, ``edit`` applied to ``which``'s."""
    _, runs = _runs()
    paths = []
    for alg, table, meta in runs:
        if alg == which and edit is not None:
            table = edit(table)
        path = tmp / f"{alg}.parquet"
        artefacts.write_artefact(path, table, "run", meta)
        paths.append(str(path))
    return paths


def _read(command: str, paths: list[str], tmp: Path, capsys) -> tuple[int, str]:
    args = {"merge": ["-o", str(tmp / "m.parquet")],
            "summary": ["-o", str(tmp / "s.parquet"), "--score", "undiscounted"],
            "aggregate": ["-o", str(tmp / "agg"), "--score", "undiscounted",
                          "--resamples", "100"],
            "curves": ["-o", str(tmp / "curves"), "--score", "undiscounted",
                       "--resamples", "100"]}[command]
    capsys.readouterr()
    rc = main([command, *paths, *args])
    return rc, capsys.readouterr().err


def _list_edit(col: str, row: int, k: int, value=None, add: float = 0.0):
    def edit(t: pl.DataFrame) -> pl.DataFrame:
        v = t[col].to_list()
        v[row][k] = value if value is not None else v[row][k] + add
        return t.with_columns(pl.Series(col, v, dtype=t[col].dtype))
    return edit


def _at(col: str, mdp: int, value, also: dict | None = None):
    def edit(t: pl.DataFrame) -> pl.DataFrame:
        new = {col: pl.when(pl.col("mdp_index") == mdp).then(pl.lit(value, pl.Float64))
               .otherwise(pl.col(col))}
        for c, expr in (also or {}).items():
            new[c] = pl.when(pl.col("mdp_index") == mdp).then(expr).otherwise(pl.col(c))
        return t.with_columns(**new)
    return edit


#: (case, edit of PSRL's run table, what the one line must say)
EDITS = [
    # (a reader that reads no per-step rewards, the summary's, meets the episode returns'
    # sum first; one that does, the rewards of the episode)
    ("an episode return +1", _list_edit("episode_returns", 0, 5, add=1.0),
     r"row 0 .*MDP 0\): episode_returns(: episode 5 is 1\.99, but the rewards of steps "
     r"20-23 sum to 0\.99| sum to 43\.545.*, not the undiscounted_return 42\.545)"),
    ("an episode return +1 and the regret to match",
     lambda t: _list_edit("episode_returns", 0, 5, add=1.0)(t).with_columns(
         regret=pl.when(pl.col("mdp_index") == 0).then(pl.col("regret") - 1.0)
         .otherwise(pl.col("regret"))),
     r"MDP 0\): (episode_returns(: episode 5 is 1\.99, but the rewards| sum to 43\.545)"
     r"|regret 5\.955 is not optimal_reference x episodes - undiscounted_return)"),
    ("one MDP's optimal reference changed", _at("optimal_reference", 1, 0.5),
     r"MDP 1\): regret .* is not optimal_reference x episodes - undiscounted_return = "
     r"0\.5 x 50"),
    ("one MDP's optimal reference and its regret changed",
     _at("optimal_reference", 1, 0.5,
         {"regret": 0.5 * 50 - pl.col("undiscounted_return")}),
     r"experiment .*, test MDP 1: agents .* and psrl \(.*psrl\.parquet\) record different "
     r"references \(optimal_reference 0\.99.* vs 0\.5\)"),
    ("an infinite optimal reference", _at("optimal_reference", 1, float("inf")),
     r"MDP 1\): optimal_reference must be finite \(null where undefined\), got inf"),
    ("the regret 123", lambda t: t.with_columns(regret=pl.lit(123.0)),
     r"row 0 .*: regret 123 is not optimal_reference x episodes - undiscounted_return = "
     r"0\.99 x 50 - "),
    ("a NaN regret", lambda t: t.with_columns(regret=pl.lit(float("nan"))),
     r"regret must be finite \(null where undefined\), got nan"),
    ("an infinite regret", lambda t: t.with_columns(regret=pl.lit(float("inf"))),
     r"regret must be finite \(null where undefined\), got inf"),
    ("the optimal reference dropped", lambda t: t.drop("optimal_reference"),
     r"regret is recorded where optimal_reference or undiscounted_return is null"),
    ("the references and the regret dropped",
     lambda t: t.drop("optimal_reference", "worst_reference", "random_reference", "regret"),
     r"test MDP 0: agents .* record different references \(optimal_reference 0\.99.* vs "
     r"None"),
    ("a NaN checkpoint", _list_edit("checkpoints", 0, 3, value=float("nan")),
     r"checkpoints must hold finite values"),
    ("a checkpoint +0.5", _list_edit("checkpoints", 0, 3, add=0.5),
     r"checkpoint 3 \(.*\) is (.*, but the rewards of steps 0-15 sum to|not the sum of "
     r"the episode returns up to it)"),
]


@pytest.mark.parametrize("command", READERS)
@pytest.mark.parametrize("case,edit,message", EDITS, ids=[c for c, _, _ in EDITS])
def test_every_reader_refuses_a_derived_column_that_disagrees_with_its_source(
        tmp_path, capsys, command, case, edit, message):
    paths = _write(tmp_path, edit)
    rc, err = _read(command, paths, tmp_path, capsys)
    assert rc == 2, (case, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bbrl: error: "), err
    assert __import__("re").search(message, lines[0]), (case, lines[0])
    assert not (tmp_path / "m.parquet").exists() and not (tmp_path / "s.parquet").exists()


def test_the_same_tables_unedited_are_read_by_every_reader(tmp_path, capsys):
    paths = _write(tmp_path)
    for command in READERS:
        rc, err = _read(command, paths, tmp_path, capsys)
        assert rc == 0, (command, err)


def test_a_merged_table_edited_as_a_whole_is_refused_too(tmp_path, capsys):
    """The check is on read, whoever wrote the file: a merged table edited with polars
    (bbrl's metadata kept) is refused by summary, aggregate and curves."""
    paths = _write(tmp_path)
    assert main(["merge", *paths, "-o", str(tmp_path / "m.parquet")]) == 0
    merged, meta = artefacts.read_artefact(tmp_path / "m.parquet", "merged")
    bad = _list_edit("episode_returns", 7, 2, add=1.0)(merged)
    artefacts.write_artefact(tmp_path / "edited.parquet", bad, "merged", meta)
    for command in ("summary", "aggregate", "curves"):
        rc, err = _read(command, [str(tmp_path / "edited.parquet")], tmp_path, capsys)
        assert rc == 2 and "row 7 " in err and "episode_returns" in err, (command, err)


def test_merge_checks_the_references_against_the_test_set(tmp_path, capsys):
    """References changed alike in every table (each self-consistent) agree with one
    another; the test set, which merge is given in the workflow, tells."""
    ts, runs = _runs()
    E.write_test_set(ts, tmp_path / "ts.parquet")
    edit = _at("optimal_reference", 2, 0.5,
               {"regret": 0.5 * 50 - pl.col("undiscounted_return")})
    paths = []
    for alg, table, meta in runs:
        artefacts.write_artefact(tmp_path / f"{alg}.parquet", edit(table), "run", meta)
        paths.append(str(tmp_path / f"{alg}.parquet"))
    out = str(tmp_path / "m.parquet")
    assert main(["merge", *paths, "-o", out]) == 0  # (consistent with one another)
    capsys.readouterr()
    assert main(["merge", *paths, "--test-sets", str(tmp_path / "ts.parquet"),
                 "-o", str(tmp_path / "m2.parquet")]) == 2
    err = capsys.readouterr().err
    assert "test MDP 2: optimal_reference 0.5 is not its test set's" in err, err
    assert not (tmp_path / "m2.parquet").exists()
    # the report, given the test sets, says the same of the merged table
    assert main(["report", out, "--test-sets", str(tmp_path / "ts.parquet"), "--no-pdf",
                 "-o", str(tmp_path / "report")]) == 2
    assert "optimal_reference 0.5 is not its test set's" in capsys.readouterr().err
    # the genuine tables and test set merge
    good = _write(tmp_path)
    assert main(["merge", *good, "--test-sets", str(tmp_path / "ts.parquet"),
                 "-o", str(tmp_path / "m3.parquet")]) == 0


def test_long_episodic_rows_check_their_episode_returns_against_their_checkpoints():
    """Without per-step rewards (interactions longer than the recorded steps), the
    episode returns and checkpoints are two sums of the same rewards: checked against each
    other and against the undiscounted return."""
    from bbrlcore.analysis import results

    _, runs = _runs()
    t = runs[2][1].with_columns(pl.lit(None, dtype=pl.List(pl.Float32)).alias("rewards"))
    results.check_derived(t, "long.parquet")  # (untouched: consistent)
    with pytest.raises(BBRLError, match=r"checkpoint 3 \(.*\) is not the sum of the "
                                        r"episode returns up to it"):
        results.check_derived(_list_edit("checkpoints", 1, 3, add=0.25)(t), "long.parquet")
    with pytest.raises(BBRLError, match="episode_returns sum to .*, not the "
                                        "undiscounted_return"):
        results.check_derived(_list_edit("episode_returns", 1, 49, add=0.25)(t),
                              "long.parquet")


def test_the_check_costs_little_on_a_large_table():
    """The derived-column check is vectorised: 500 MDPs x 2,500 episodes of DeepSea-4
    (1.25 million episode returns, 10,000 steps each) are checked, not looped over."""
    from bbrlcore.analysis import results

    n, E_, H = 500, 2500, 4
    rng = np.random.default_rng(0)
    G = np.where(rng.random((n, E_)) < 0.5, 0.99, -0.0075)
    t = pl.DataFrame({
        "experiment": ["X"] * n, "agent": ["a"] * n, "mdp_index": np.arange(n),
        "horizon": [E_ * H] * n, "episode_length": [H] * n, "episodes": [E_] * n,
        "checkpoint_every": [H] * n, "undiscounted_return": np.cumsum(G, axis=1)[:, -1],
        "optimal_reference": [0.99] * n, "worst_reference": [-0.0075] * n,
        "random_reference": [0.0] * n,
        "regret": 0.99 * E_ - np.cumsum(G, axis=1)[:, -1]}).with_columns(
        pl.Series("checkpoints", np.cumsum(G, axis=1)).cast(pl.List(pl.Float64)),
        pl.Series("episode_returns", G).cast(pl.List(pl.Float64)))
    results.check_derived(t, "large.parquet")
