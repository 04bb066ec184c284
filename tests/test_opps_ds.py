"""Formula agents and OPPS-DS: features, failures, UCB1, determinism, checkpoint/resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from bbrlcore.agents import formulas as F
from bbrlcore.agents import get
from bbrlcore.agents import opps_ds as O
from bbrlcore.agents.base import Episode, TrainContext
from bbrlcore.agents.formula_agent import initial_q, prior_features
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp.solvers import solve_q

A = get("opps-ds")
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "formula_sets"


def _episode(prior, horizon=250, gamma=0.95) -> Episode:
    return Episode(prior.reward, prior.reward_std, prior.reward_type == "gaussian",
                   prior.initial_state, gamma, horizon)


def _write_set(path: Path, rpn: list[str]) -> str:
    text = "\n".join(["Serializable", "0", "FormulaVector", "1", str(len(rpn)), *rpn]) + "\n"
    path.write_text(text)
    return str(path)


# --------------------------------------------------------------------------------------
# UCB1 core on a synthetic bandit


def _bandit(means, sds, n, c=2.0, seed=5):
    K = len(means)
    s = O.UCB1State(K, n)
    O.bandit_batch(s.mu, s.npull, s.disc, s.st, c, np.uint64(seed), 10**9,
                   np.array(means, float), np.array(sds, float))
    return s


def test_ucb1_finds_clearly_best_arm():
    s = _bandit([0.0, 1.0, 3.0, 2.0, 0.5], [1.0] * 5, 2000)
    assert O.most_pulled(s, np.random.default_rng(0)) == 2
    assert s.npull.sum() == 2000 and s.st[O._SUCCESS] == 2000
    assert s.npull[2] > 0.5 * 2000
    assert abs(s.mu[2] - 3.0) < 0.2


def test_ucb1_discards_failing_arms_without_budget():
    # arm 1 fails (negative sd) and is better on paper: discarded, never chosen
    s = _bandit([0.0, 10.0, 1.0], [0.5, -1.0, 0.5], 300)
    assert s.disc.tolist() == [False, True, False]
    assert s.npull[1] == 0 and s.npull.sum() == 300
    assert s.st[O._ATTEMPTS] == 301
    assert O.most_pulled(s, np.random.default_rng(0)) == 2


def test_ucb1_budget_smaller_than_arms_tries_first_arms_only():
    s = _bandit([0.0, 1.0, 2.0, 3.0, 4.0], [0.1] * 5, 3)
    assert s.npull.tolist() == [1, 1, 1, 0, 0]


def test_ucb1_all_discarded():
    s = _bandit([1.0, 2.0], [-1.0, -1.0], 10)
    assert s.disc.all() and O.most_pulled(s, np.random.default_rng(0)) == -1


def test_ucb1_index_ties_are_random():
    # identical deterministic arms: the main-loop choice is uniform among them
    s = _bandit([1.0, 1.0, 1.0], [0.0, 0.0, 0.0], 3000, c=1.0)
    assert (s.npull > 800).all()


# --------------------------------------------------------------------------------------
# formula agent


def test_feature_models_match_their_definitions():
    prior = D.builtin("GC")
    nX = prior.n_states
    self_loop = np.zeros_like(prior.theta)
    for x in range(nX):
        self_loop[x, :, x] = 1.0
    st, fe = prior_features(prior, 0.95, 250)
    Q = initial_q(st.succ, st.nsucc, *fe.args(), np.ones(3, dtype=np.bool_), 0.95, 250)
    for k, c in enumerate([prior.theta, self_loop, np.ones_like(prior.theta)]):
        P = c / c.sum(axis=2, keepdims=True)
        # the Q-iteration's answer (solved exactly: bbrlcore.mdp.solvers.q_solve), within the
        # literal iteration's 0.01 tolerance of it
        literal = solve_q(P, prior.reward, 0.95, 250)
        assert np.abs(Q[k] - literal).max() <= 0.01 * 0.95 / 0.05 + 1e-9


def test_decomposed_uniform_feature_matches_the_dense_model(monkeypatch):
    """Above UNIFORM_DENSE_MAX, QUniform is solved by the decomposed Q-iteration (sums
    in another order, no policy iteration): within the Q-iteration's tolerance of the
    dense model's answer, and a trajectory still plays."""
    from bbrlcore.agents import formula_agent as FA

    prior = D.builtin("Grid")
    used = np.array([False, False, True])
    st, fe = prior_features(prior, 0.95, 250)
    assert fe.dense
    dense = initial_q(st.succ, st.nsucc, *fe.args(), used, 0.95, 250)[2]
    monkeypatch.setattr(FA, "UNIFORM_DENSE_MAX", 0)
    st, fe = prior_features(prior, 0.95, 250)
    assert not fe.dense
    dec = initial_q(st.succ, st.nsucc, *fe.args(), used, 0.95, 250)[2]
    assert np.abs(dec - dense).max() <= 0.01 * 0.95 / 0.05 + 1e-9
    P = prior.draw_mdp(np.random.default_rng(3))
    play = A.make_player(prior, {}, type("T", (), {"info": {"rpn": "X2"}})(),
                         _episode(prior, horizon=50))
    ret, counters = play(P, 5)
    assert np.isfinite(ret) and counters.tolist() == [0]


def test_failing_formula_counts_failures_and_plays_uniformly():
    prior = D.builtin("GC")
    ep = _episode(prior, horizon=100)
    trained = type("T", (), {"info": {"rpn": "X0 X0 SUB INV"}})()  # 1/(Q0-Q0): always fails
    play = A.make_player(prior, {}, trained, ep)
    P = prior.draw_mdp(np.random.default_rng(1))
    ret, counters = play(P, 3)
    assert counters.tolist() == [100 * prior.n_actions]
    assert np.isfinite(ret)


def test_player_is_deterministic_and_valid_formula_has_no_failures():
    prior = D.builtin("GDL")
    ep = _episode(prior, horizon=60)
    trained = type("T", (), {"info": {"rpn": "X0 X2 MAX2"}})()
    play = A.make_player(prior, {}, trained, ep)
    P = prior.draw_mdp(np.random.default_rng(2))
    r1, c1 = play(P, 11)
    r2, c2 = play(P, 11)
    assert r1 == r2 and c1.tolist() == c2.tolist() == [0]


def test_player_rejects_missing_formula():
    prior = D.builtin("GC")
    with pytest.raises(BBRLError, match="no chosen formula"):
        A.make_player(prior, {}, type("T", (), {"info": {}})(), _episode(prior))


# --------------------------------------------------------------------------------------
# OPPS-DS training


def test_params_and_agent_id(tmp_path):
    p = A.parse_params({"formula_set": "F3", "n_draws": "1250"})
    assert p == {"formula_set": "F3", "n_draws": 1250, "c": 660.0}
    assert A.agent_id(p) == "opps-ds__formula_set=F3@s1__n_draws=1250__c=660"
    f = _write_set(tmp_path / "my.dat", ["X0", "X1"])
    q = A.parse_params({"formula_set": f, "n_draws": 10, "c": 2})
    aid = A.agent_id(q)
    assert str(tmp_path) not in aid and aid.startswith("opps-ds__formula_set=F1@dat-")
    with pytest.raises(BBRLError, match="formula_set"):
        A.parse_params({"formula_set": "F9", "n_draws": 1})
    with pytest.raises(BBRLError, match="n_draws"):
        A.parse_params({"formula_set": "F2", "n_draws": 0})
    with pytest.raises(BBRLError, match="c"):
        A.parse_params({"formula_set": "F2", "n_draws": 1, "c": -1})


def test_train_outputs_and_determinism():
    prior = D.builtin("GC")
    p = A.parse_params({"formula_set": "F2", "n_draws": 60, "c": 50})
    ctx = TrainContext(seed=4, horizon=40)
    t1 = A.train(prior, p, ctx)
    t2 = A.train(prior, p, TrainContext(seed=4, horizon=40))
    assert t1.info.pop("_offline_time_s") > 0 and t2.info.pop("_offline_time_s") > 0
    assert t1.info == t2.info
    assert t1.table.equals(t2.table)
    t = t1.table
    assert t.columns == ["arm", "rpn", "infix", "pulls", "mean_return", "discarded"]
    assert t.height == 12 and t["pulls"].sum() == 60
    arm = t1.info["arm"]
    assert not t["discarded"][arm]
    assert t["pulls"][arm] == t.filter(~pl.col("discarded"))["pulls"].max()
    assert t1.info["rpn"] == t["rpn"][arm] == F.load("F2").rpn[arm]
    # another seed gives other statistics
    t3 = A.train(prior, p, TrainContext(seed=5, horizon=40))
    assert not t3.table.equals(t1.table)


def test_train_discards_failing_formulas(tmp_path):
    prior = D.builtin("GC")
    f = _write_set(tmp_path / "s.dat", ["X0 X0 SUB INV", "X0", "X2 X2 SUB INV"])
    p = A.parse_params({"formula_set": f, "n_draws": 20})
    tr = A.train(prior, p, TrainContext(seed=1, horizon=20))
    assert tr.table["discarded"].to_list() == [True, False, True]
    assert tr.info["arm"] == 1 and tr.info["pulls"] == 20
    g = _write_set(tmp_path / "bad.dat", ["X0 X0 SUB INV"])
    with pytest.raises(BBRLError, match="no valid formula"):
        A.train(prior, A.parse_params({"formula_set": g, "n_draws": 5}),
                TrainContext(seed=1, horizon=20))


def test_progress_callback_and_checkpoint_roundtrip(tmp_path):
    prior = D.builtin("GC")
    p = A.parse_params({"formula_set": "F2", "n_draws": 40})
    seen = []
    ck = tmp_path / "ck.npz"
    ctx = TrainContext(seed=2, horizon=30, progress=lambda d, n: seen.append((d, n)),
                       checkpoint=str(ck), checkpoint_every=0.0)
    tr = A.train(prior, p, ctx)
    tr.info.pop("_offline_time_s")
    assert seen and seen[-1] == (40, 40)
    assert ck.exists()
    # a finished checkpoint resumes instantly to the same agent
    again = A.train(prior, p, TrainContext(seed=2, horizon=30, checkpoint=str(ck)))
    assert again.info.pop("_offline_time_s") > 0
    assert again.info == tr.info
    # a checkpoint of another training is refused
    with pytest.raises(BBRLError, match="another training"):
        A.train(prior, p, TrainContext(seed=3, horizon=30, checkpoint=str(ck)))


_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from bbrlcore import distributions as D
    from bbrlcore.agents import get
    from bbrlcore.agents.base import TrainContext
    A = get("opps-ds")
    p = A.parse_params({"formula_set": "F3", "n_draws": sys.argv[1]})
    ctx = TrainContext(seed=7, horizon=30, checkpoint=sys.argv[2], checkpoint_every=0.05)
    tr = A.train(D.builtin("GC"), p, ctx)
    tr.table.write_parquet(sys.argv[3])
    print(json.dumps(tr.info))
    """
)


@pytest.mark.slow
def test_killed_training_resumes_to_the_uninterrupted_agent(tmp_path):
    n = 4000
    script = tmp_path / "train.py"
    script.write_text(_SCRIPT)
    ck, out = tmp_path / "ck.npz", tmp_path / "table.parquet"
    cmd = [sys.executable, str(script), str(n), str(ck), str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed_at = None
    # killed once its checkpoint shows it under way (whatever time that takes on a busy
    # machine: the bound only stops a training that hangs)
    deadline = time.time() + 1800
    while time.time() < deadline and proc.poll() is None:
        if ck.exists():
            try:
                with np.load(ck) as z:
                    done = int(z["st"][O._SUCCESS])
            except Exception:
                done = 0
            if 0 < done < n // 2:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                killed_at = done
                break
        time.sleep(0.01)
    assert killed_at is not None, "the training ended before it could be killed"
    assert not out.exists()
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert "resuming" in res.stderr
    resumed = json.loads(res.stdout.strip().splitlines()[-1])
    assert resumed.pop("_offline_time_s") > 0
    fresh = A.train(D.builtin("GC"), A.parse_params({"formula_set": "F3", "n_draws": n}),
                    TrainContext(seed=7, horizon=30))
    fresh.info.pop("_offline_time_s")
    assert resumed == fresh.info
    assert pl.read_parquet(out).equals(fresh.table)


@pytest.mark.parametrize("prior_name", ["GDL", "Grid"])
def test_train_and_play_other_priors(prior_name):
    prior = D.builtin(prior_name)
    p = A.parse_params({"formula_set": "F2", "n_draws": 24})
    tr = A.train(prior, p, TrainContext(seed=1, horizon=25))
    play = A.make_player(prior, p, tr, _episode(prior, horizon=25))
    ret, counters = play(prior.draw_mdp(np.random.default_rng(0)), 1)
    assert np.isfinite(ret) and counters.shape == (1,)
