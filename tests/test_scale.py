"""At scale (issue 33): distributions, test sets and agents hold the transitions that exist.

A distribution is stored as its entries (the transitions with a concentration, a reward or
a variance), never as a dense (nX, nU, nX) array: the largest sizes the families allow
are built, written, trained on and run in a few hundred MB; a configuration of many
ladder points builds no prior it does not need; running out of memory is one line. Every
sparse path is checked against the dense arithmetic it replaces, bit for bit.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bbrlcore import cli, seeds
from bbrlcore import protocol as E
from bbrlcore.errors import BBRLError, OutOfMemory, building
from bbrlcore.formats import artefacts
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import families as F
from bbrlcore.mdp import rows
from bbrlcore.mdp.families._base import Moments, merged, moment_matched, moment_matched_keys

GiB = 2**30


def _limited(bytes_: int):
    """A ``preexec_fn`` capping the child's address space (RLIMIT_AS) at ``bytes_``."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (bytes_, bytes_))
    return limit


def _bbrl(args: list[str], cwd: Path, env: dict[str, str], limit: int,
          ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bbrlcore.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300,
                          preexec_fn=_limited(limit))


# ---------------------------------------------------------------------------------------
# (a) What is stored: the transitions that exist


@pytest.mark.parametrize("fam, params", [("taxi", {}), ("taxi", {"p_rand": 0.1}),
                                         ("simplegrid", {}), ("simplegrid", {"p_rand": 0.0})])
def test_taxi_and_simplegrid_store_the_transitions_that_can_happen(fam, params):
    p = F.make(fam, **params)
    sup = F.support_keys(p.test)
    for d in (p.prior("accurate"), p.prior("uniform")):
        extra = np.setdiff1d(d.entry_keys, sup)
        # Taxi: nothing beside its support; SimpleGrid: a good corner's moves away
        assert extra.size <= (4 if fam == "simplegrid" else 0), (d.short_name, extra.size)
        assert np.array_equal(F.support_keys(d), sup)
        assert len(d.to_dict()["reward"]) == d.entry_keys.size


def test_the_largest_priors_hold_no_dense_array():
    """UTaxi-13 (2,704 states) and the accurate DeepSea-70 (4,902): their dictionaries
    (what an agent artefact embeds) and rows in a few MB, without a dense array."""
    tracemalloc.start()
    try:
        for d in (F.make("taxi", size=13).prior("uniform"),
                  F.make("deepsea", size=70).prior("accurate")):
            dd = d.to_dict()
            back = D.FDMDistribution.from_dict(dd, "agent.parquet")
            assert back.same_as(d) and np.array_equal(back.theta_rows, d.theta_rows)
            for x in (d, back):
                assert not {"theta", "reward", "reward_variance"} & set(x.__dict__)
            assert d.entry_keys.size < 3 * d.n_states * d.n_actions * 4
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200e6, f"peak {peak / 1e6:.0f} MB"  # one dense array would be 350 MB


@pytest.mark.parametrize("fam, params", [("taxi", {"size": 4}), ("simplegrid", {}),
                                         ("deepsea", {"size": 6, "p_rand": 0.1}),
                                         ("riverswim", {}), ("frozenlake", {"size": 4})])
def test_a_prior_written_and_read_back_is_the_same(tmp_path, fam, params):
    p = F.make(fam, **params)
    for kind in ("accurate", "uniform"):
        d = p.prior(kind)
        D.write_parquet(d, tmp_path / "d.parquet")
        back = D.read_parquet(tmp_path / "d.parquet")
        assert back.same_as(d)
        assert np.array_equal(back.theta, d.theta) and np.array_equal(back.reward, d.reward)


# ---------------------------------------------------------------------------------------
# (b) The sparse paths are the dense arithmetic, bit for bit


@st.composite
def sparse_fdms(draw):
    nX = draw(st.integers(1, 6))
    nU = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    theta = np.where(rng.random((nX, nU, nX)) < 0.4, rng.gamma(0.5, 2.0, (nX, nU, nX)), 0.0)
    theta[..., 0] += draw(st.sampled_from([1e-320, 1e-300, 0.5, 3.0]))  # tiny rows too
    reward = np.where(rng.random((nX, nU, nX)) < 0.3, rng.normal(size=(nX, nU, nX)), 0.0)
    var = (np.where(rng.random((nX, nU, nX)) < 0.2, rng.random((nX, nU, nX)), 0.0)
           if draw(st.booleans()) else None)
    dense = D.FDMDistribution("d", "D", theta, reward, 0, "gaussian" if var is not None
                              else "constant", var)
    keys = np.flatnonzero((theta > 0) | (reward != 0) | (var is not None and var != 0))
    sparse = D.FDMDistribution.from_entries(
        "d", "D", nX, nU, keys, theta.ravel()[keys], reward.ravel()[keys], 0,
        dense.reward_type, None if var is None else var.ravel()[keys])
    return dense, sparse, seed


@settings(max_examples=60, deadline=None)
@given(sparse_fdms())
def test_an_fdm_from_its_entries_is_its_dense_twin(case):
    dense, sparse, seed = case
    assert sparse.same_as(dense) and dense.same_as(sparse)
    for a in ("theta", "reward", "reward_std", "theta_rows", "reward_rows",
              "reward_std_rows"):
        assert np.array_equal(getattr(sparse, a), getattr(dense, a)), a
    assert sparse.r_max == float(dense.reward.max()) and sparse.r_min == float(
        dense.reward.min())
    assert np.array_equal(sparse.reward_row_sums, dense.reward.sum(axis=2))
    lay = rows.full(dense.n_states, dense.n_actions)
    assert np.array_equal(sparse.rewards_on(lay), rows.gather(dense.reward, lay))
    for which in ("theta", "reward", "reward_std"):
        blocks = np.concatenate([b for _, _, b in sparse.dense_blocks(which)])
        assert np.array_equal(blocks, getattr(dense, which)), which
    # the same MDP from the same draws, with or without the dense array
    for s in (seed, seed + 1):
        want = rows.gather(dense.draw_mdp(np.random.default_rng(s)), dense.support_layout)
        assert np.array_equal(sparse.draw_rows(np.random.default_rng(s)), want)
    assert sparse.describe() == dense.describe()
    assert sparse.to_dict() == dense.to_dict()


def test_draws_in_blocks_are_the_dense_draws(monkeypatch):
    """An FDM's test MDPs are drawn a block of rows at a time: the gamma draws of the
    whole dense array, in its order (SimpleGrid-5 in blocks of 7 values)."""
    d = F.make("simplegrid").test
    want = [rows.gather(d.draw_mdp(np.random.default_rng(s)), d.support_layout)
            for s in range(3)]
    monkeypatch.setattr(D, "CHUNK_ENTRIES", 7)
    for s in range(3):
        assert np.array_equal(d.draw_rows(np.random.default_rng(s)), want[s])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_moments_on_a_known_support_are_the_general_ones(seed, per_state):
    """The compiled accumulation (Monte-Carlo priors) adds kernels exactly as the general
    one: duplicates summed in the kernel's order, zero probabilities left out."""
    rng = np.random.default_rng(seed)
    nX, nU, K = int(rng.integers(1, 7)), int(rng.integers(1, 4)), int(rng.integers(1, 5))
    kernels = []
    for _ in range(4):
        succ = rng.integers(0, nX, (nX, nU, K))
        prob = np.where(rng.random((nX, nU, K)) < 0.2, 0.0, rng.random((nX, nU, K)))
        kernels.append((succ, prob))
    support = np.unique(np.concatenate([merged(k, nX)[0] for k in kernels]))
    a, b = Moments(nX, nU), Moments(nX, nU, support)
    for k in kernels:
        w = rng.random(nX) if per_state else float(rng.random())
        a.add(k, w)
        b.add(k, w)
    (ma, sa), (mb, sb) = a.dense(), b.dense()
    assert np.array_equal(ma, mb) and np.array_equal(sa, sb)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_moment_matching_on_entries_is_the_dense_one(seed):
    rng = np.random.default_rng(seed)
    nX, nU = int(rng.integers(1, 8)), int(rng.integers(1, 4))
    m = np.where(rng.random((nX, nU, nX)) < 0.5, rng.random((nX, nU, nX)), 0.0)
    m /= np.maximum(m.sum(axis=2, keepdims=True), 1e-300)
    s2 = (m * m).sum(axis=2) + rng.random((nX, nU)) * 0.1
    c = float(rng.choice([0.5, 10.0, 1e6]))
    keys = np.flatnonzero(m)
    theta = moment_matched_keys(keys, m.ravel()[keys], s2, c, nX, nU)
    assert np.array_equal(theta, moment_matched(m, s2, c).ravel()[keys])


def test_a_lazy_prior_is_built_once_and_only_when_read():
    p = F.make("deepsea", size=8, p_rand=0.1)
    for kind in ("accurate", "uniform"):
        d = p.prior(kind)
        assert "_data" not in d.__dict__
        assert d.short_name and d.n_states == 66 and d.support_layout.nnz > 0
        assert "_data" not in d.__dict__  # the support came from the test distribution
        assert d.support_layout.same_as(rows.from_keys(F.support_keys(d), 66, 2))
        assert "_data" in d.__dict__
    import pickle

    back = pickle.loads(pickle.dumps(p.prior("accurate")))
    assert back.same_as(p.prior("accurate"))


# ---------------------------------------------------------------------------------------
# (c) The commands, at the largest sizes, in bounded memory (subprocesses under
# RLIMIT_AS; the same commands needed 2.3-16 GB before)


def test_the_largest_taxi_prior_is_written_trained_on_and_read_in_little_memory(
        tmp_path, env_with_cache):
    r = _bbrl(["distribution", "new", "taxi", "--param", "size=13", "--prior", "uniform",
               "-o", "u.parquet"], tmp_path, env_with_cache, int(1.5 * GiB))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "u.parquet").stat().st_size < 1e6  # 7.4 GB peak, 10.7 MB before
    r = _bbrl(["train", "--agent", "random", "--prior", "UTaxi-13", "-q", "-o", "a.parquet"],
              tmp_path, env_with_cache, int(1.5 * GiB))
    assert r.returncode == 0, r.stderr  # killed under 12 GB before
    assert (tmp_path / "a.parquet").stat().st_size < 2e6
    agent = E.read_agent(tmp_path / "a.parquet")
    assert agent.prior.same_as(F.make("taxi", size=13).prior("uniform"))


def test_a_simplegrid_test_set_is_small_and_the_same_mdps(tmp_path, env_with_cache):
    r = _bbrl(["experiment", "new", "--test", "SimpleGrid-40", "--n-mdps", "2", "-o",
               "t.parquet"], tmp_path, env_with_cache, int(1.5 * GiB))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "t.parquet").stat().st_size < 10e6  # 458 MB before
    ts = E.read_test_set(tmp_path / "t.parquet")
    d = F.make("simplegrid", size=40).test
    assert ts.test.same_as(d)
    # the seed's MDPs (draw_rows is the dense draws, bit for bit: tests above)
    assert np.array_equal(ts.mdps[0], d.draw_rows(seeds.mdp_rng(0, 0)))


def test_a_deepsea_70_agent_runs_under_4_gib(tmp_path, env_with_cache):
    """Reading the agent's prior needed its dense arrays: a MemoryError under 4 GiB."""
    prior = F.make("deepsea", size=70).prior("accurate")
    agent = E.train_agent("e-greedy", {"epsilon": "0.1"}, prior, progress=False)
    E.write_agent(agent, tmp_path / "a.parquet")
    ts = E.new_test_set(F.make("deepsea", size=70).test, 1, 0.95, 20, 0)
    E.write_test_set(ts, tmp_path / "t.parquet")
    r = _bbrl(["run", "--experiment", "t.parquet", "--agent", "a.parquet", "-q", "-o",
               "r.parquet"], tmp_path, env_with_cache, 4 * GiB)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.parquet").exists()


def test_running_out_of_memory_is_one_line_naming_what(tmp_path, env_with_cache):
    """A genuine allocation failure (5.6 GiB of test MDPs under a 4 GiB address space)."""
    r = _bbrl(["experiment", "new", "--test", "DeepSea-70", "--n-mdps", "38000", "-o",
               "t.parquet"], tmp_path, env_with_cache, 4 * GiB)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("bbrl: error: out of memory while building the test set of "
                               "38000 MDPs of DeepSea-70 (Unable to allocate"), lines[0]
    assert not (tmp_path / "t.parquet").exists()


def test_out_of_memory_anywhere_is_one_line(monkeypatch, tmp_path, capsys):
    """Inside a `building` block it names what; elsewhere the package's function."""
    prior = D.builtin("GC")
    E.write_agent(E.train_agent("random", {}, prior, progress=False), tmp_path / "a.parquet")
    E.write_test_set(E.new_test_set(prior, 2, 0.95, 10, 0), tmp_path / "t.parquet")

    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 366. MiB for an array")

    from_dict = D.FDMDistribution.from_dict

    def agent_prior(d, source="distribution"):  # (the test set's reads)
        if source.endswith("a.parquet"):
            no_memory()
        return from_dict(d, source)

    monkeypatch.setattr(D.FDMDistribution, "from_dict", agent_prior)
    argv = ["run", "--experiment", str(tmp_path / "t.parquet"), "--agent",
            str(tmp_path / "a.parquet"), "-q", "-o", str(tmp_path / "r.parquet")]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"bbrl: error: out of memory while building the prior of agent file "
                   f"{tmp_path / 'a.parquet'} (Unable to allocate 366. MiB for an array)"]
    monkeypatch.undo()
    from bbrlcore.protocol import runner

    monkeypatch.setattr(runner.np, "empty", no_memory)  # (outside any `building` block)
    assert cli.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "bbrl: error: out of memory in bbrlcore.protocol.runner.run_agent (Unable to "), err
    assert not (tmp_path / "r.parquet").exists()
    with pytest.raises(OutOfMemory, match="while building X$"):
        with building("X"):
            raise MemoryError()


# ---------------------------------------------------------------------------------------
# (d) Files


@pytest.mark.slow  # (a 110 MB footer written and read twice: 5-20 s)
def test_an_artefact_with_a_footer_over_the_default_thrift_limit_reads(tmp_path):
    """Agents and test sets written before embedded dense priors of ~100 MB in their
    footers: Parquet's default readers refuse them, bbrl's read them."""
    meta = {"blob": "x" * 110_000_000}
    artefacts.write_artefact(tmp_path / "big.parquet", pa.table({"a": [1]}), "agent", meta)
    import pyarrow.parquet as pq

    with pytest.raises(Exception, match="size limit"):
        pq.ParquetFile(tmp_path / "big.parquet").schema_arrow  # noqa: B018
    assert len(artefacts.read_meta(tmp_path / "big.parquet", "agent")["blob"]) == 110_000_000
    table, m = artefacts.read_artefact(tmp_path / "big.parquet", "agent")
    assert table.height == 1 and len(m["blob"]) == 110_000_000


def test_metadata_too_large_for_any_reader_is_refused_when_written(tmp_path, monkeypatch):
    monkeypatch.setattr(artefacts, "MAX_META_BYTES", 1000)
    with pytest.raises(BBRLError) as exc:
        artefacts.write_artefact(tmp_path / "m.parquet", pa.table({"a": [1]}), "agent",
                                 {"blob": "x" * 2000})
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(str(tmp_path / "m.parquet")), msg
    assert "more than the 0 MB a Parquet footer may hold" in msg
    assert not list(tmp_path.iterdir())


def test_an_old_agent_with_a_dense_prior_still_reads(tmp_path):
    """Written before distributions stored their entries: every (x, u, y), rewards on
    transitions that cannot happen included (UTaxi-4's 0.1)."""
    new = F.make("taxi", size=4).prior("uniform")
    R = np.array(new.reward)
    R[(R == 0) & ~(np.asarray(new.theta) > 0)] = 0.1  # the old family's reward
    old = D.FDMDistribution(new.name, new.short_name, np.array(new.theta), R, 0)
    agent = E.train_agent("random", {}, old, progress=False)
    E.write_agent(agent, tmp_path / "a.parquet")
    back = E.read_agent(tmp_path / "a.parquet").prior
    assert back.same_as(old) and not back.same_as(new)
    assert np.array_equal(back.theta_rows, new.theta_rows)
    assert np.array_equal(back.reward_rows, new.reward_rows)  # what the agents play with


# ---------------------------------------------------------------------------------------
# (e) A configuration's ladder: checked from the parameters, priors built when read


def _plan(tmp_path: Path, algorithms: dict, sizes: list[int]):
    from bbrlcore import plan as PL

    cfg = {"n_mdps": 10, "results_dir": str(tmp_path / "res"),
           "experiments": [{"test": {"family": "deepsea", "size": sizes},
                            "prior": ["accurate", "uniform"]}],
           "algorithms": algorithms}
    return PL.load(cfg)


def test_checking_a_ladder_builds_no_prior(tmp_path):
    """DeepSea [50 ... 70], both priors: 7.1 GB and a MemoryError before. Checking the
    configuration builds none; the estimate of algorithms whose cost reads the shapes
    only (Random, BAMCP: the support's rows) builds none either."""
    tracemalloc.start()
    try:
        plan = _plan(tmp_path, {"random": {}, "bamcp": {"K": 10}}, [50, 55, 60, 65, 70])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(plan.experiments) == 10 and len(plan.dists) == 10
    assert peak < 50e6, f"peak {peak / 1e6:.0f} MB"
    assert not [n for n, d in plan.dists.items() if "_data" in d.__dict__]
    plan.cost_model  # noqa: B018  (fitted, or read from its cache, outside the measure)
    tracemalloc.start()
    try:
        for e in plan.experiments:
            for a in plan.agents_of(e):
                assert plan.n_chunks(e, a) >= 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100e6, f"peak {peak / 1e6:.0f} MB"
    # built: only a prior the cost model's own measurements name (the benchmarks measured
    # DeepSea-50), on its rows
    from bbrlcore.plan import cost

    measured = {n for r in cost.records(cost.default_results_dir()) for n in (r.test, r.prior)}
    built = {n for n, d in plan.dists.items() if "_data" in d.__dict__}
    assert built <= measured and "DeepSea-70" not in built, built
    for d in plan.dists.values():
        assert not {"theta", "reward"} & set(d.__dict__)


def test_a_cost_probe_builds_its_prior_sparse(tmp_path, monkeypatch):
    """e-Greedy's cost probes the accurate prior's sweeps: the prior is built, on rows.
    (The work amounts are memoised on disk and in the process: a run whose cache holds
    them builds nothing; here they are computed.)"""
    from bbrlcore.agents import _memo

    monkeypatch.setenv("BBRL_COST_CACHE", "0")
    monkeypatch.setattr(_memo, "_PROBES", {})
    plan = _plan(tmp_path, {"e-greedy": {"epsilon": 0.1}}, [70])
    plan.cost_model  # noqa: B018
    tracemalloc.start()
    try:
        for e in plan.experiments:
            for a in plan.agents_of(e):
                assert plan.seconds_per_trajectory(e, a) > 0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 300e6, f"peak {peak / 1e6:.0f} MB"
    assert "_data" in plan.dists["DeepSea-70"].__dict__
    for d in plan.dists.values():
        assert not {"theta", "reward"} & set(d.__dict__)
