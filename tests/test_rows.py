"""Sparse rows (issue 27): the layout module's round trips, test sets stored on rows (and
the files written before them), the same MDPs drawn as before, the memory limits, old
dense players beside players on rows, Python agents on rows, FDM serialisation, and the
dense public solvers against the ones on rows."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bbrlcore import plan as PL
from bbrlcore import protocol as E
from bbrlcore import seeds
from bbrlcore.agents import Param, PythonAgent, bayes, in_unit_interval, registry
from bbrlcore.agents._kernels import (
    model_init,
    model_update,
    rows_model_init,
    rows_model_update,
)
from bbrlcore.agents._posterior import (
    posterior_init,
    posterior_init_rows,
    posterior_update,
    posterior_update_rows,
    sample_model,
    sample_model_rows,
)
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import families as F
from bbrlcore.mdp import rows, solvers
from bbrlcore.protocol import runner, test_sets

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def fresh_registry():
    registry.reset()
    yield
    registry.reset()


def one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg, msg
    return msg


# ---------------------------------------------------------------------------------------
# (a) The layout module


@st.composite
def masks(draw, shape=None):
    """A boolean (nX, nU, nX) array (empty rows allowed) and its sizes."""
    nX, nU = shape or (draw(st.integers(1, 6)), draw(st.integers(1, 3)))
    bits = draw(st.lists(st.booleans(), min_size=nX * nU * nX, max_size=nX * nU * nX))
    return np.array(bits, dtype=bool).reshape(nX, nU, nX)


@st.composite
def mask_pairs(draw):
    a = draw(masks())
    return a, draw(masks(a.shape[:2]))


@settings(max_examples=80, deadline=None)
@given(masks(), st.integers(0, 2**32 - 1))
def test_gather_and_scatter_are_inverse_on_the_layout(mask, seed):
    lay = rows.layout_of(mask)
    nX, nU, _ = mask.shape
    assert lay.n_states == nX and lay.n_actions == nU and lay.nnz == int(mask.sum())
    assert np.array_equal(lay.dense_mask(), mask)
    assert np.array_equal(lay.nsucc, mask.sum(axis=2))
    for x in range(nX):  # successors increasing, padding zero
        for u in range(nU):
            row = lay.succ[x, u, :lay.nsucc[x, u]]
            assert np.array_equal(row, np.flatnonzero(mask[x, u]))
            assert not lay.succ[x, u, lay.nsucc[x, u]:].any()
    rng = np.random.default_rng(seed)
    dense = rng.random((3, nX, nU, nX))  # a leading batch axis too
    v = rows.gather(dense, lay)
    assert v.shape == (3, *lay.succ.shape) and not v[:, ~lay.mask].any()
    assert np.array_equal(rows.scatter(v, lay), np.where(mask, dense, 0.0))
    assert np.array_equal(rows.gather(rows.scatter(v, lay), lay), v)
    # compressed sparse rows and the JSON form give the same layout back
    indptr, indices = lay.csr()
    assert rows.from_csr(indptr, indices, nX, nU).same_as(lay)
    back = rows.decode(rows.encode(lay), nX, nU, "t")
    assert back.same_as(lay) and back.digest() == lay.digest()


@settings(max_examples=80, deadline=None)
@given(mask_pairs(), st.integers(0, 2**32 - 1))
def test_union_contains_slots_in_and_move(pair, seed):
    ma, mb = pair
    a, b = rows.layout_of(ma), rows.layout_of(mb)
    ab = rows.union(a, b)
    assert np.array_equal(ab.dense_mask(), ma | mb)
    assert rows.contains(ab, a) and rows.contains(ab, b)
    assert rows.contains(a, b) == (not (mb & ~ma).any())
    if rows.contains(a, b):
        assert rows.union(a, b) is a
    # slots_in: where each slot of b is in ab (-1 on b's padding), and -1 in a where absent
    where = rows.slots_in(ab, b)
    x, u, k = np.nonzero(b.mask)
    assert (where[~b.mask] == -1).all()
    assert np.array_equal(ab.succ[x, u, where[x, u, k]], b.succ[x, u, k])
    in_a = rows.slots_in(a, b)
    assert np.array_equal(in_a[x, u, k] >= 0, ma[x, u, b.succ[x, u, k]])
    # move: values of b placed on ab are the same dense array
    v = rows.gather(np.random.default_rng(seed).random(mb.shape), b)
    moved = rows.move(v, b, ab)
    assert np.array_equal(rows.scatter(moved, ab), rows.scatter(v, b))
    assert np.array_equal(rows.move(moved, ab, ab), moved)
    if not rows.contains(a, b):
        with pytest.raises(BBRLError, match="lacks transitions of the source"):
            rows.move(v, b, a)
    # slot_of: the binary search finds every successor, and nothing else
    for x in range(ma.shape[0]):
        for u in range(ma.shape[1]):
            for y in range(ma.shape[0]):
                k = rows.slot_of(ab.succ, ab.nsucc, x, u, y)
                if (ma | mb)[x, u, y]:
                    assert ab.succ[x, u, k] == y and k < ab.nsucc[x, u]
                else:
                    assert k == -1
                assert bayes.slot(ab, x, u, y) == k


def test_full_layout_is_the_dense_array():
    full = rows.full(4, 2)
    assert full.is_full and full.width == 4
    assert full.same_as(rows.layout_of(np.ones((4, 2, 4), dtype=bool)))
    P = np.random.default_rng(0).random((4, 2, 4))
    assert np.array_equal(rows.gather(P, full), P)
    assert not D.builtin("GC").support_layout.is_full
    assert D.builtin("UGC").support_layout.same_as(rows.full(5, 3))


def test_layouts_of_other_sizes_are_not_joined():
    with pytest.raises(BBRLError) as exc:
        rows.union(rows.full(3, 2), rows.full(4, 2))
    assert one_line(exc) == ("layouts of 3x2 and 4x2 (states x actions) cannot be joined")


def test_digests_tell_layouts_apart():
    gc = D.builtin("GC").support_layout
    m = gc.dense_mask().copy()
    assert rows.layout_of(m).digest() == gc.digest()
    m[0, 0, 3] = True
    assert rows.layout_of(m).digest() != gc.digest()


GOOD = {"nsucc": [2, 1], "succ": [0, 1, 1]}  # 2 states x 1 action
BAD_LAYOUTS = {
    "not a mapping": ([1, 2], "malformed layout"),
    "no nsucc": ({"succ": [0]}, "malformed layout ('nsucc')"),
    "text": ({"nsucc": ["a", 1], "succ": [0, 1]}, "malformed layout"),
    "too few rows": ({"nsucc": [2], "succ": [0, 1]},
                     "layout row lengths do not fit 2 states x 1 actions"),
    "a negative row": ({"nsucc": [-1, 1], "succ": [0]}, "layout row lengths do not fit"),
    "a row too long": ({"nsucc": [3, 1], "succ": [0, 1, 1, 1]},
                       "layout row lengths do not fit"),
    "too few successors": ({"nsucc": [2, 1], "succ": [0, 1]},
                           "layout successors do not fit 2 states"),
    "a state out of range": ({"nsucc": [2, 1], "succ": [0, 2, 1]},
                             "layout successors do not fit 2 states"),
    "a negative state": ({"nsucc": [2, 1], "succ": [-1, 0, 1]},
                         "layout successors do not fit"),
    "not increasing": ({"nsucc": [2, 1], "succ": [1, 0, 1]},
                       "layout successors are not increasing within a row"),
    "twice": ({"nsucc": [2, 1], "succ": [1, 1, 1]},
              "layout successors are not increasing within a row"),
}


def test_decode_reads_a_layout():
    lay = rows.decode(GOOD, 2, 1, "f.json")
    assert lay.succ[:, 0].tolist() == [[0, 1], [1, 0]] and lay.nsucc[:, 0].tolist() == [2, 1]
    # a row that ends where the next begins is not "decreasing"
    assert rows.decode({"nsucc": [1, 1], "succ": [1, 0]}, 2, 1, "f").nnz == 2


@pytest.mark.parametrize("kind", sorted(BAD_LAYOUTS))
def test_decode_refuses_bad_layouts_with_one_line(kind):
    d, expected = BAD_LAYOUTS[kind]
    with pytest.raises(BBRLError) as exc:
        rows.decode(d, 2, 1, "f.json")
    msg = one_line(exc)
    assert msg.startswith("f.json: ") and expected in msg, msg


# ---------------------------------------------------------------------------------------
# (b) Test sets on rows, and the files written before them


def _deepsea(size: int = 5, p_rand: float = 0.1):
    return F.make("deepsea", size=size, p_rand=p_rand).test


@pytest.mark.parametrize("test", [lambda: D.builtin("GC"), lambda: D.builtin("UGrid"),
                                  _deepsea], ids=["GC", "UGrid", "DeepSea"])
def test_a_test_set_reads_back_equal(tmp_path, test):
    dist = test()
    ts = E.new_test_set(dist, 4, 0.9, 17, seed=3)
    lay = dist.support_layout
    assert ts.layout is not None and ts.layout.same_as(lay)
    assert ts.mdps.shape == (4, *lay.succ.shape)
    E.write_test_set(ts, tmp_path / "ts.parquet")
    meta = artefacts.read_meta(tmp_path / "ts.parquet", "test-set")
    assert meta["layout"] == "rows" and meta["layout_digest"] == lay.digest()
    back = E.read_test_set(tmp_path / "ts.parquet")
    assert np.array_equal(back.mdps, ts.mdps) and back.layout.same_as(lay)
    assert (back.gamma, back.horizon, back.seed, back.n_mdps) == (0.9, 17, 3, 4)
    assert back.test.same_as(dist)
    for i in range(4):
        assert np.array_equal(back.dense(i), ts.dense(i))
        assert np.allclose(ts.dense(i).sum(axis=2), 1.0)
    ep, dense = ts.episode(), ts.episode(dense=True)
    assert ep.layout().same_as(lay) and np.array_equal(ep.R, dist.reward_rows)
    assert dense.succ is None and dense.R.shape == (dist.n_states, dist.n_actions,
                                                    dist.n_states)
    assert dense.layout().is_full and ts.episode(horizon=3).horizon == 3


def _old_dist_dict(d: D.FDMDistribution) -> dict:
    """``to_dict`` as written before sparse rows: every entry, no ``entries``."""
    out = {"name": d.name, "short_name": d.short_name, "n_states": d.n_states,
           "n_actions": d.n_actions, "initial_state": d.initial_state,
           "reward_type": d.reward_type, "theta": d.theta.ravel().tolist(),
           "reward": d.reward.ravel().tolist()}
    if d.reward_variance is not None:
        out["reward_variance"] = d.reward_variance.ravel().tolist()
    return out


def write_old_test_set(ts: E.TestSet, path: Path, dist_dict: dict | None = None,
                       dense: np.ndarray | None = None) -> None:
    """A test-set file as ``write_test_set`` wrote it before sparse rows (dense ``P``,
    no layout in the metadata, the distribution's dense dictionary)."""
    nX, nU = ts.test.n_states, ts.test.n_actions
    if dense is None:
        dense = np.stack([ts.dense(i) for i in range(ts.n_mdps)])
    table = pl.DataFrame({"mdp_index": np.arange(ts.n_mdps, dtype=np.int64),
                          "P": dense.reshape(ts.n_mdps, nX * nU * nX)})
    if dist_dict is None:
        dist_dict = (_old_dist_dict(ts.test) if isinstance(ts.test, D.FDMDistribution)
                     else ts.test.to_dict())
    meta = {"test": ts.test.short_name, "test_distribution": dist_dict,
            "n_mdps": ts.n_mdps, "gamma": ts.gamma, "horizon": ts.horizon, "seed": ts.seed}
    artefacts.write_artefact(path, table, "test-set", meta)


@pytest.mark.parametrize("test", [lambda: D.builtin("GC"), lambda: D.builtin("UGC"),
                                  _deepsea], ids=["GC", "UGC", "DeepSea"])
def test_a_test_set_file_written_before_rows_still_reads(tmp_path, test):
    ts = E.new_test_set(test(), 3, 0.95, 20, seed=9)
    write_old_test_set(ts, tmp_path / "old.parquet")
    assert "layout" not in artefacts.read_meta(tmp_path / "old.parquet", "test-set")
    old = E.read_test_set(tmp_path / "old.parquet")
    assert old.layout.same_as(ts.layout) and np.array_equal(old.mdps, ts.mdps)
    assert old.test.same_as(ts.test) and (old.gamma, old.horizon, old.seed) == (0.95, 20, 9)
    for i in range(3):
        assert np.array_equal(old.dense(i), ts.dense(i))
    # and what agents play on it is the same
    alg = registry.get("e-greedy")
    prior = ts.test if isinstance(ts.test, D.FDMDistribution) else ts.test.accurate_prior()
    returns = []
    for t in (ts, old):
        play = alg.make_player(prior, alg.parse_params({"epsilon": "0.1"}), None, t.episode())
        returns.append([play(np.ascontiguousarray(t.mdps[i]), 5 + i)[0] for i in range(3)])
    assert returns[0] == returns[1]


def test_an_old_file_with_a_transition_the_distribution_rules_out_is_refused(tmp_path):
    gc = D.builtin("GC")
    ts = E.new_test_set(gc, 2, 0.95, 20, seed=0)
    dense = np.stack([ts.dense(i) for i in range(2)])
    dense[1, 2, 1] = [0.5, 0.5, 0.0, 0.0, 0.0]  # (2, 1) -> 1 is not in GC's support
    write_old_test_set(ts, tmp_path / "old.parquet", dense=dense)
    with pytest.raises(BBRLError) as exc:
        E.read_test_set(tmp_path / "old.parquet")
    msg = one_line(exc)
    assert msg.startswith(f"{tmp_path / 'old.parquet'}: test set GC: MDP 1 has the "
                          "transition (2, 1) -> 1, which the test distribution rules out")
    assert "regenerate it" in msg


def test_a_file_on_another_layout_is_refused_with_one_line(tmp_path):
    ts = E.new_test_set(D.builtin("GC"), 2, 0.95, 20, seed=0)
    E.write_test_set(ts, tmp_path / "ts.parquet")
    table, meta = artefacts.read_artefact(tmp_path / "ts.parquet", "test-set")
    meta = {k: v for k, v in meta.items() if k not in ("kind", "bbrlcore_version")}
    meta["layout_digest"] = "0123456789abcdef"
    artefacts.write_artefact(tmp_path / "other.parquet", table, "test-set", meta)
    with pytest.raises(BBRLError) as exc:
        E.read_test_set(tmp_path / "other.parquet")
    msg = one_line(exc)
    assert msg.startswith(f"{tmp_path / 'other.parquet'}: its MDPs are stored on another "
                          "layout than the support of GC")
    assert "regenerate it" in msg


def test_a_value_on_the_padding_of_a_row_is_refused(tmp_path):
    ts = E.new_test_set(D.builtin("Grid"), 2, 0.95, 20, seed=0)
    lay = ts.layout
    x, u = (int(v) for v in np.argwhere(lay.nsucc < lay.width)[0])  # a corner's wall
    bad = ts.mdps.copy()
    bad[1, x, u, lay.width - 1] = 0.1
    E.write_test_set(E.TestSet(ts.test, bad, 0.95, 20, 0, lay), tmp_path / "pad.parquet")
    with pytest.raises(BBRLError) as exc:
        E.read_test_set(tmp_path / "pad.parquet")
    assert one_line(exc).startswith(f"{tmp_path / 'pad.parquet'}: MDP 1, row (x={x}, u={u}): "
                                    "a padding value = 0.1 is not a probability")


# ---------------------------------------------------------------------------------------
# (c) The same MDPs as the dense draws


TESTS = {
    "GC": lambda: D.builtin("GC"),
    "Grid": lambda: D.builtin("Grid"),
    "DeepSea": lambda: F.make("deepsea", size=6, p_rand=0.05).test,
    "Taxi": lambda: F.make("taxi", size=5, p_rand=0.02).test,
    "FrozenLake": lambda: F.make("frozenlake", size=5).test,
}


@pytest.mark.parametrize("name", sorted(TESTS))
def test_a_test_set_is_the_dense_draws_of_its_seeds(name):
    """new_test_set (draw_rows) draws what the dense draws with the same seeds gave (the
    test sets of before sparse rows), and a dense TestSet converts to the same rows."""
    test = TESTS[name]()
    n, seed = 3, 2024
    ts = E.new_test_set(test, n, 0.95, 10, seed=seed)
    dense = np.stack([test.draw_mdp(seeds.mdp_rng(seed, i)) for i in range(n)])
    for i in range(n):
        assert np.array_equal(ts.dense(i), dense[i]), (name, i)
    old = E.TestSet(test, dense, 0.95, 10, seed)  # built as before: dense MDPs
    assert old.layout.same_as(ts.layout) and np.array_equal(old.mdps, ts.mdps)
    # a smaller test set is a prefix of a larger one
    assert np.array_equal(E.new_test_set(test, 1, 0.95, 10, seed=seed).mdps, ts.mdps[:1])


def test_a_dense_test_set_of_the_wrong_shape_is_refused():
    with pytest.raises(BBRLError) as exc:
        E.TestSet(D.builtin("GC"), np.zeros((1, 5, 3, 4)), 0.95, 10, 0)
    assert one_line(exc) == ("test set GC: dense MDPs of shape (5, 3, 4), expected "
                             "(5, 3, 5)")


# ---------------------------------------------------------------------------------------
# (d) Test sets that would not fit in memory


def test_a_test_set_too_large_for_memory_is_refused_up_front(monkeypatch):
    ds = F.make("deepsea", size=50).test
    K = ds.support_layout.width
    n = 2_000_000
    need = 8 * n * ds.n_states * ds.n_actions * K
    assert test_sets.test_set_bytes(ds, n) == need
    def drawn(*args, **kwargs):
        raise AssertionError("an MDP was drawn before the test set was refused")

    with monkeypatch.context() as m:  # refused before anything is drawn (not a timing)
        m.setattr(test_sets.seeds, "mdp_rng", drawn)
        with pytest.raises(BBRLError) as exc:
            E.new_test_set(ds, n, 0.95, 10, seed=0)
    msg = one_line(exc)
    assert msg.startswith(f"test set of {n} MDPs of DeepSea-50: {need / 2**30:.1f} GiB on "
                          f"its sparse rows ({K} successors per row at most), more than the "
                          "8 GiB limit"), msg
    # the limit is a module constant
    gc = D.builtin("GC")
    E.new_test_set(gc, 100, 0.95, 10, seed=0)
    monkeypatch.setattr(test_sets, "MAX_TEST_SET_BYTES", 2**30)
    monkeypatch.setattr(test_sets, "test_set_bytes", lambda t, n: 3 * 2**30)
    with pytest.raises(BBRLError, match=r"test set of 100 MDPs of GC: 3\.0 GiB on its sparse "
                                        r"rows \(2 successors per row at most\), more than "
                                        r"the 1 GiB limit; use fewer MDPs"):
        E.new_test_set(gc, 100, 0.95, 10, seed=0)


def _cfg(experiments: list, n_mdps: int) -> dict:
    cfg = copy.deepcopy(yaml.safe_load((ROOT / "config.yaml").read_text()))
    cfg["experiments"] = experiments
    cfg["algorithms"] = {"random": {}}
    cfg["n_mdps"] = n_mdps
    return cfg


def test_the_plan_refuses_a_test_set_too_large_for_memory(monkeypatch):
    exp = [{"test": {"family": "deepsea", "size": [10, 50]}, "prior": "uniform"}]
    plan = PL.load(_cfg(exp, 1000))
    assert "DeepSea-50" in plan.tests
    ds = F.make("deepsea", size=50).test
    n = 2_000_000
    with pytest.raises(BBRLError) as exc:
        PL.load(_cfg(exp, n))
    msg = one_line(exc)
    need = test_sets.test_set_bytes(ds, n)  # (DeepSea-10's 6.1 GiB fit)
    assert msg == (f"config.yaml: n_mdps={n}: test set of {n} MDPs of DeepSea-50: "
                   f"{need / 2**30:.1f} GiB on its sparse rows (2 successors per row at most), "
                   "more than the 8 GiB limit; use fewer MDPs or a smaller size"), msg
    PL.load(_cfg([{"test": "GC", "prior": "accurate"}], 1000))  # 240 kB
    monkeypatch.setattr(test_sets, "MAX_TEST_SET_BYTES", 100_000)
    with pytest.raises(BBRLError, match=r"^config\.yaml: n_mdps=1000: test set of 1000 MDPs "
                                        r"of DeepSea-10: "):
        PL.load(_cfg(exp, 1000))


# ---------------------------------------------------------------------------------------
# (e) An Algorithm written before sparse rows gets dense MDPs; one declared sparse, rows

LEGACY = """
import numpy as np
from bbrlcore.agents import Algorithm

SEEN = []

def make(prior, params, trained, ep):
    nX, nU = prior.n_states, prior.n_actions
    SEEN.append(("episode", ep.succ is None, ep.R.shape))

    def play(P, seed, rewards=None):
        SEEN.append(("P", P.shape))
        rng = np.random.default_rng(seed)
        x = ep.initial_state
        ret, disc = 0.0, 1.0
        for t in range(ep.horizon):
            u = int(rng.integers(nU))
            if SPARSE:
                k = int(rng.choice(P.shape[2], p=P[x, u]))
                y, r = int(ep.succ[x, u, k]), float(ep.R[x, u, k])
            else:
                y = int(rng.choice(nX, p=P[x, u]))   # a dense row: P[x, u, y]
                r = float(ep.R[x, u, y])
            rewards[t] = r
            ret += disc * r
            disc *= ep.gamma
            x = y
        return ret, np.zeros(0, dtype=np.int64)
    return play

Plug = Algorithm(name="legacy-player", params=(), make_player=make, sparse=SPARSE)
"""


def _plugin_module(path: str):
    import sys

    return next(m for m in list(sys.modules.values())
                if getattr(m, "__file__", None) == path)


def test_a_legacy_dense_algorithm_gets_dense_mdps_and_a_sparse_one_rows(tmp_path,
                                                                         monkeypatch):
    ts = E.new_test_set(D.builtin("GC"), 4, 0.95, 30, seed=1)
    tables, seen = {}, {}
    for sparse in (False, True):
        registry.reset()  # (one name for both: the trajectory seeds follow the agent id)
        p = tmp_path / ("rows_player.py" if sparse else "dense_player.py")
        p.write_text(textwrap.dedent(LEGACY).replace("SPARSE", str(sparse)))
        agent = E.train_agent(f"{p}:Plug", {}, D.builtin("GC"), horizon=30, progress=False)
        tables[sparse] = E.run_agent(ts, agent, progress=False)
        seen[sparse] = _plugin_module(str(p)).SEEN
    nX, nU, K = 5, 3, ts.layout.width
    # warm-up (horizon 1) and the run: two episodes, then one P per trajectory
    assert seen[False][:2] == [("episode", True, (nX, nU, nX))] * 2
    assert {s for s in seen[False][2:] if s[0] == "P"} == {("P", (nX, nU, nX))}
    assert seen[True][:2] == [("episode", False, (nX, nU, K))] * 2
    assert {s for s in seen[True][2:] if s[0] == "P"} == {("P", (nX, nU, K))}
    # the same trajectories either way (the same draws on a dense row and on its slots)
    assert tables[False]["discounted_return"].to_list() == \
        tables[True]["discounted_return"].to_list()
    assert tables[False]["rewards"].to_list() == tables[True]["rewards"].to_list()
    # a dense player on a problem too large for dense arrays is refused, naming the fix
    monkeypatch.setattr(runner, "MAX_DENSE_ENTRIES", 50)
    registry.reset()
    agent = E.train_agent(f"{tmp_path / 'dense_player.py'}:Plug", {}, D.builtin("GC"),
                          horizon=30, progress=False)
    with pytest.raises(BBRLError) as exc:
        E.run_agent(ts, agent, progress=False)
    msg = one_line(exc)
    assert msg.startswith("agent legacy-player plays dense (nX, nU, nX) MDPs (its Algorithm is "
                          "not sparse): GC would need 0 MB per MDP")
    assert msg.endswith("write it on sparse rows (Algorithm(..., sparse=True))")


def test_which_algorithms_play_on_rows():
    my = f"{ROOT / 'examples' / 'my_agents.py'}"
    assert registry.get("e-greedy").sparse and registry.get("psrl").sparse
    assert registry.get(f"{my}:MyGreedy").sparse and registry.get(f"{my}:MyGreedyJit").sparse
    # a compiled agent with a dense trajectory kernel of its own (written before rows)
    from numba import njit

    from bbrlcore.agents import CompiledAgent
    from bbrlcore.agents.api import trajectory_loop

    @njit
    def reset(setup):
        return np.zeros(1)

    @njit
    def act(state, x):
        return 0

    @njit
    def observe(state, x, u, y, r):
        pass

    @njit
    def own(setup, P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, status,
            rewards):
        return trajectory_loop(reset, act, observe, None, setup, P, R, Rstd, gaussian,
                               initial_state, gamma, horizon, seed, status, rewards)

    class Own(CompiledAgent):
        name = "own-kernel"

    Own.reset, Own.act, Own.observe, Own.trajectory = reset, act, observe, own
    assert not registry.as_algorithm(Own, "test").sparse
    Own.trajectory = None
    assert registry.as_algorithm(Own, "test").sparse


# ---------------------------------------------------------------------------------------
# (f) A Python agent on rows


EPS = (Param("epsilon", float, required=True, check=in_unit_interval,
             doc="probability of a uniformly random action"),)


class DenseGreedy(PythonAgent):
    """The e-Greedy Python agent of the agents.api docstring: dense arrays."""

    name = "dense-greedy"
    params = EPS

    def reset(self):
        self.counts = self.prior.theta.copy()
        self.q = self.solve()

    def solve(self, q=None):
        P = bayes.mean_model(self.counts)
        return bayes.q_values(P, self.prior.reward, self.gamma, self.horizon, q)

    def act(self, state):
        if self.rng.random() < self.p["epsilon"]:
            return int(self.rng.integers(self.n_actions))
        return int(np.argmax(self.q[state]))

    def observe(self, state, action, next_state, reward):
        self.counts[state, action, next_state] += 1
        self.q = self.solve(self.q)


class RowsGreedy(DenseGreedy):
    """The same agent on its sparse rows: ``self.layout``, ``self.theta_rows``,
    ``self.reward_rows``, :func:`bayes.slot` and ``q_values(..., layout=)``."""

    name = "rows-greedy"

    def reset(self):
        self.counts = self.theta_rows.copy()
        self.q = self.solve()

    def solve(self, q=None):
        tot = self.counts.sum(axis=2, keepdims=True)
        P = np.divide(self.counts, tot, out=np.zeros_like(self.counts), where=tot > 0)
        return bayes.q_values(P, self.reward_rows, self.gamma, self.horizon, q,
                              layout=self.layout)

    def observe(self, state, action, next_state, reward):
        self.counts[state, action, bayes.slot(self.layout, state, action, next_state)] += 1
        self.q = self.solve(self.q)


def _play(cls, prior, ts, n, eps="0.1", seed0=100):
    alg = registry.as_algorithm(cls, "test")
    play = alg.make_player(prior, alg.parse_params({"epsilon": eps}), None, ts.episode())
    out = []
    for i in range(n):
        rewards = np.empty(ts.horizon)
        ret, _ = play(np.ascontiguousarray(ts.mdps[i]), seed0 + i, rewards)
        out.append((ret, rewards))
    return out


@pytest.mark.parametrize("test, prior", [("GC", "GC"), ("GC", "UGC"), ("Grid", "Grid")])
def test_a_python_agent_on_rows_plays_the_dense_agents_trajectories(test, prior):
    ts = E.new_test_set(D.builtin(test), 3, 0.95, 60, seed=4)
    dense = _play(DenseGreedy, D.builtin(prior), ts, 3)
    sparse = _play(RowsGreedy, D.builtin(prior), ts, 3)
    for (r1, w1), (r2, w2) in zip(dense, sparse, strict=True):
        assert r1 == r2 and np.array_equal(w1, w2)
    assert len({r for r, _ in dense}) > 1  # different MDPs, different trajectories


def test_a_python_agent_sees_its_layout():
    """``self.layout`` joins the prior's support with the test MDPs' transitions: an
    inaccurate prior that rules out a test transition still has its slot (concentration
    0)."""
    seen = {}

    class Look(RowsGreedy):
        name = "look"

        def reset(self):
            seen.update(layout=self.layout, theta=self.theta_rows, R=self.reward_rows)
            super().reset()

    gc = D.builtin("GC")
    theta = gc.theta.copy()
    theta[0, 0, 1] = 0.0  # this prior rules out (0, 0) -> 1
    prior = D.FDMDistribution("narrow", "Narrow", theta, gc.reward, 0)
    ts = E.new_test_set(gc, 1, 0.95, 20, seed=0)
    _play(Look, prior, ts, 1)
    lay = seen["layout"]
    assert lay.same_as(rows.union(prior.support_layout, gc.support_layout))
    k = bayes.slot(lay, 0, 0, 1)
    assert k >= 0 and seen["theta"][0, 0, k] == 0.0 and seen["R"][0, 0, k] == 0.0
    assert np.array_equal(rows.scatter(seen["theta"], lay), theta)


def test_a_python_agent_on_rows_runs_deepsea_30_quickly():
    """DeepSea-30 (902 states): the agent's arrays have 902 x 2 x 2 entries, not
    902 x 2 x 902; two trajectories of 50 steps, solving after every step (checked on the
    arrays the agent holds, not on a duration: the machine may be busy)."""
    problem = F.make("deepsea", size=30)
    ts = E.new_test_set(problem.test, 2, 0.95, 50, seed=0)
    prior = problem.prior("accurate")
    assert prior.n_states == 902 and prior.support_layout.width <= 3
    shapes = []

    class Recording(RowsGreedy):
        def solve(self, q=None):
            shapes.append((self.counts.shape, self.reward_rows.shape))
            return super().solve(q)

    out = _play(Recording, prior, ts, 2, eps="0.2")
    assert all(np.isfinite(r) for r, _ in out)
    width = prior.support_layout.width
    assert len(shapes) == 2 * (50 + 1)  # (a solve at each reset and after every step)
    assert set(shapes) == {((902, 2, width), (902, 2, width))}


# ---------------------------------------------------------------------------------------
# (g) FDM distributions' dictionaries and Parquet files


def _gaussian():
    gc = D.builtin("GC")
    var = np.where(gc.reward != 0, 0.5, 0.0)
    var[1, 2, 3] = 0.25  # a variance on an impossible transition is kept too
    return D.FDMDistribution("Noisy GC", "NGC", gc.theta, gc.reward, 0, "gaussian", var)


FDMS = {
    "GC": lambda: D.builtin("GC"),
    "UGrid": lambda: D.builtin("UGrid"),
    "gaussian": _gaussian,
    "DeepSea prior": lambda: F.make("deepsea", size=5, p_rand=0.1).prior("accurate"),
}


@pytest.mark.parametrize("name", sorted(FDMS))
def test_fdm_dicts_and_files_hold_the_stored_entries_and_read_back(tmp_path, name):
    d = FDMS[name]()
    dd = d.to_dict()
    n = d.entries.nnz
    assert "entries" in dd and len(dd["theta"]) == len(dd["reward"]) == n
    assert D.FDMDistribution.from_dict(dd, "t").same_as(d)
    # the stored entries: the support, and every non-zero reward or variance
    keep = (d.theta > 0) | (d.reward != 0)
    if d.reward_variance is not None:
        keep |= d.reward_variance != 0
        assert D.FDMDistribution.from_dict(dd, "t").reward_variance[1, 2, 3] == 0.25
    assert np.array_equal(d.entries.dense_mask(), keep)
    # written before sparse rows: dense lists, no entries
    assert D.FDMDistribution.from_dict(_old_dist_dict(d), "t").same_as(d)
    # Parquet: one row per stored entry
    D.write_parquet(d, tmp_path / "d.parquet")
    table, meta = artefacts.read_artefact(tmp_path / "d.parquet", "distribution")
    assert table.height == n and "entries" not in meta
    assert D.read_parquet(tmp_path / "d.parquet").same_as(d)
    # a file written before: every (x, u, y), zeros included
    nX, nU = d.n_states, d.n_actions
    x, u, y = np.meshgrid(np.arange(nX), np.arange(nU), np.arange(nX), indexing="ij")
    cols = {"x": x.ravel(), "u": u.ravel(), "y": y.ravel(), "theta": d.theta.ravel(),
            "reward": d.reward.ravel()}
    if d.reward_variance is not None:
        cols["reward_variance"] = d.reward_variance.ravel()
    meta = {k: v for k, v in meta.items() if k not in ("kind", "bbrlcore_version")}
    artefacts.write_artefact(tmp_path / "old.parquet", pl.DataFrame(cols), "distribution",
                             meta)
    assert D.read_parquet(tmp_path / "old.parquet").same_as(d)


def test_a_large_prior_stores_its_transitions_only(tmp_path):
    prior = F.make("deepsea", size=20).prior("accurate")
    nX, nU = prior.n_states, prior.n_actions
    n = prior.entries.nnz
    assert n <= 3 * nX * nU < nX * nU * nX // 100
    assert len(prior.to_dict()["theta"]) == n and prior.to_table().height == n
    D.write_parquet(prior, tmp_path / "p.parquet")
    assert D.read_parquet(tmp_path / "p.parquet").same_as(prior)


def test_a_family_test_distribution_file_reads_back_as_its_family(tmp_path):
    test = F.make("deepsea", size=5, p_rand=0.1).test
    D.write_parquet(test, tmp_path / "ds.parquet")
    assert D.read_test(tmp_path / "ds.parquet").same_as(test)
    assert D.read_parquet(tmp_path / "ds.parquet").same_as(test.accurate_prior())


BAD_DICTS = {
    "theta too short": (lambda d: d.update(theta=d["theta"][:-1]),
                        "theta holds 29 values, expected 30"),
    "entries outside": (lambda d: d.update(entries={**d["entries"], "succ":
                                                    [9] * len(d["entries"]["succ"])}),
                        "entries: layout successors do not fit 5 states"),
    "entries malformed": (lambda d: d.update(entries=[1]), "entries: malformed layout"),
}


@pytest.mark.parametrize("kind", sorted(BAD_DICTS))
def test_a_bad_distribution_dict_is_one_line(kind):
    gc = D.builtin("GC")
    dd = gc.to_dict()
    assert len(dd["theta"]) == gc.entries.nnz
    edit, expected = BAD_DICTS[kind]
    if kind == "theta too short":
        expected = (f"theta holds {gc.entries.nnz - 1} values, expected {gc.entries.nnz}")
    edit(dd)
    with pytest.raises(BBRLError) as exc:
        D.FDMDistribution.from_dict(dd, "f.parquet")
    msg = one_line(exc)
    assert msg.startswith("f.parquet") and expected in msg, msg


# ---------------------------------------------------------------------------------------
# (h) The dense public solvers and the ones on rows


def _models(name: str, n: int = 3):
    d = D.builtin(name)
    rng = np.random.default_rng(7)
    return d, [d.draw_mdp(rng) for _ in range(n)] + [d.mean_model()]


@pytest.mark.parametrize("name", ["GC", "GDL", "Grid", "UGC"])
@pytest.mark.parametrize("full", [False, True], ids=["support", "full"])
def test_the_dense_solvers_equal_the_ones_on_rows(name, full):
    d, models = _models(name)
    nX, nU = d.n_states, d.n_actions
    lay = rows.full(nX, nU) if full else d.support_layout
    R = np.ascontiguousarray(d.reward)
    Rr = rows.gather(R, lay)
    for P in models:
        supp, nsupp = solvers.support_of(P)
        Pr = rows.gather(P, lay)
        for T in (250, 5):  # policy iteration, and the capped Q-iteration
            Q1, Q2 = np.zeros((nX, nU)), np.zeros((nX, nU))
            s1 = solvers.q_solve(P, R, supp, nsupp, 0.95, T, Q1)
            s2 = solvers.q_solve_rows(Pr, Rr, lay.succ, lay.nsucc, 0.95, T, Q2)
            assert s1 == s2 and np.array_equal(Q1, Q2)
            # warm-started from the answer
            assert (solvers.q_solve(P, R, supp, nsupp, 0.95, T, Q1)
                    == solvers.q_solve_rows(Pr, Rr, lay.succ, lay.nsucc, 0.95, T, Q2))
            assert np.array_equal(Q1, Q2)
        assert np.array_equal(bayes.q_values(P, R, 0.95, 250),
                              bayes.q_values(Pr, Rr, 0.95, 250, layout=lay))
        V1, V2 = np.zeros(nX), np.zeros(nX)
        pi1, pi2 = np.zeros(nX, np.int64), np.zeros(nX, np.int64)
        s1 = solvers.guez_policy_iteration(P, R, supp, nsupp, 0.95, 1e-4, V1, pi1,
                                           np.empty((nX, nX)), np.empty(nX))
        s2 = solvers.guez_policy_iteration_rows(Pr, Rr, lay.succ, lay.nsucc, 0.95, 1e-4, V2,
                                                pi2, np.empty((nX, nX)), np.empty(nX))
        assert s1 == s2 and np.array_equal(V1, V2) and np.array_equal(pi1, pi2)
        Vd, pid = bayes.state_values(P, R, 0.95)
        Vr, pir = bayes.state_values(Pr, Rr, 0.95, layout=lay)
        assert np.array_equal(Vd, Vr) and np.array_equal(pid, pir)
        assert np.array_equal(Vd, V1) and np.array_equal(pid, pi1)


def test_the_compiled_posterior_helpers_on_rows_match_the_dense_ones():
    """rows_model_init/update and posterior_init/update_rows keep what the dense helpers
    keep; sample_model_rows draws sample_model's MDP from the same generator state."""
    gc = D.builtin("Grid")
    lay = gc.support_layout
    theta, theta_r = np.ascontiguousarray(gc.theta), np.ascontiguousarray(gc.theta_rows)
    N, Np, P, supp, nsupp = model_init(theta)
    Nr, Npr, Pr = rows_model_init(theta_r, lay.nsucc)
    alpha, visits, asupp, ansupp = posterior_init(theta)
    alpha_r, visits_r = posterior_init_rows(theta_r)
    rng = np.random.default_rng(3)
    P0 = gc.draw_mdp(rng)
    x = 0
    for _ in range(200):
        u = int(rng.integers(gc.n_actions))
        y = int(rng.choice(gc.n_states, p=P0[x, u]))
        model_update(N, Np, P, supp, nsupp, x, u, y)
        rows_model_update(Nr, Npr, Pr, lay.nsucc, x, u, bayes.slot(lay, x, u, y))
        posterior_update(alpha, visits, asupp, ansupp, x, u, y)
        assert posterior_update_rows(alpha_r, visits_r, lay.succ, lay.nsucc, x, u, y) == \
            bayes.slot(lay, x, u, y)
        x = y
    assert np.array_equal(rows.scatter(Pr, lay), P) and np.array_equal(Npr, Np)
    assert np.array_equal(rows.scatter(alpha_r, lay), alpha)
    assert np.array_equal(visits_r, visits)
    for seed in (1, 2):
        rs1, rs2 = bayes.new_generator(seed), bayes.new_generator(seed)
        Ps = np.zeros(alpha.shape)
        sample_model(alpha, asupp, ansupp, Ps, rs1)
        Psr = np.full(alpha_r.shape, np.nan)  # every slot of a row is written
        sample_model_rows(alpha_r, lay.nsucc, Psr, rs2)
        assert np.array_equal(rows.scatter(Psr, lay), Ps) and np.array_equal(rs1, rs2)
