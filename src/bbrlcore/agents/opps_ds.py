r"""OPPS-DS: offline prior-based policy search over a discrete set of formula agents.

Offline, OPPS-DS treats every formula of a formula set (``F2``...``F6``, see
:mod:`bbrlcore.agents.formulas`) as an arm of a multi-armed bandit. Pulling an arm draws one MDP
from the prior and plays one trajectory of T steps (discount γ) of that formula agent
(:mod:`bbrlcore.agents.formula_agent`); the payoff is the discounted return. The bandit
is solved with UCB1 (Auer et al. 2002) under a budget of ``n_draws`` successful pulls:

1. initialisation: arms 0, 1, ... in file order are pulled once each while budget
   remains (so with ``n_draws`` < |F| the later arms are never tried);
2. then, while budget remains, pull the arm maximising
   :math:`\mu_i + c\sqrt{\ln N / n_i}` (N = successful pulls so far), exact ties at random;
3. the agent is the **most-pulled** arm (random ties), not the best mean.

An arm whose trajectory has a formula failure is discarded: the failed
pull costs no budget, the arm is never pulled again and can never be the final choice
(the reference could return it: a defect). If every arm is discarded training fails with
"no valid formula". Online, the learned agent is that formula agent.

Randomness and resumability. Pull k (k = 0, 1, ... counts attempts, failed ones
included) seeds numba's generator with ``splitmix64(base + k·φ) >> 32``, where ``base``
comes from ``SeedSequence([seed, h(agent id)])``; the pull's tie-break,
MDP draw (Dirichlet rows from the prior's θ) and trajectory use only that stream. The
whole UCB1 loop runs in numba in batches; between batches the state (arm statistics,
counters) can be checkpointed atomically, and a resumed training gives exactly the agent
of an uninterrupted one. The final tie-break uses ``SeedSequence([seed, h(agent id), 1])``.

Agent ids render the formula set by name and seed, never by path (see
:func:`bbrlcore.agents.formulas.label_of`): ``opps-ds__formula_set=F3@s1__n_draws=1250__c=660``.

At an episode's start (an episodic interaction,
:attr:`~bbrlcore.agents.base.Episode.episode_length` H > 0): nothing but the return to
the initial state; the learned formula agent keeps its
three models (:mod:`bbrlcore.agents.formula_agent`). Its offline search plays continuing
trajectories of the training horizon, as in the paper.

Paper: Castronovo, Maes, Fonteneau and Ernst, "Learning exploration/exploitation
strategies for single trajectory reinforcement learning", EWRL 2012; Castronovo et al.,
"Benchmarking for Bayesian Reinforcement Learning", PLOS ONE 2016, §4.1; Auer,
Cesa-Bianchi and Fischer, "Finite-time analysis of the multiarmed bandit problem",
Machine Learning 47, 2002 (UCB1).

**A prior that does not know the support** (``+dir<α>``,
:mod:`bbrlcore.mdp.transition_prior`; issue 42). Offline, a pull draws its MDP from the
prior as stated: every row :math:`\mathrm{Dir}(\alpha, \ldots, \alpha)` over all S next
states (``dirichlet_row`` on α, the pull's stream; the distribution's own ``draw_mdp``
draws the same law with this sampler, :func:`bbrlcore.mdp.transition_prior.draw_dense`,
and is not used: a pull draws on its own stream). Such an MDP can go
anywhere, so the training runs on the **full** layout: the drawn MDP, the prior's
rewards (its dense tables) and the three features' models are dense S×A×S arrays, about
15 of 8·S²·A bytes (measured 1.35 MB of set-up arrays on DeepSea-10, S = 102, A = 2,
plus the trajectory's models: about 2.5 MB in all; DeepSea-20, S = 402: about 40 MB),
and a pull's step sweeps S²·A terms (24 pulls of 50 steps on UDeepSea-10+dir0.3235:
0.12 s against 0.005 s on UDeepSea-10). Its QMean is the posterior mean of Dir(α) over
every next state, as online. Online the learned formula agent plays as
:mod:`bbrlcore.agents.formula` does under ``+dir`` (QMean on the sparse slots plus a
background, no dense array). A checkpoint records α (a training under another prior is
refused).

**Rewards.** OPPS-DS's formulas are computed from Q-functions of the prior's reward
table; it needs known rewards, and a prior whose rewards are unknown (``+rbeta``,
``+rnig``: :mod:`bbrlcore.mdp.reward_prior`) is refused in one line naming it and the
prior (:attr:`~bbrlcore.agents.base.Algorithm.reward_priors`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numba import njit

from bbrlcore.agents import formulas as F
from bbrlcore.agents._kernels import dirichlet_row
from bbrlcore.agents.base import (
    Algorithm,
    Episode,
    Param,
    TrainContext,
    Trained,
    int_between,
    positive,
)
from bbrlcore.agents.formula_agent import (
    formula_player,
    formula_trajectory,
    initial_q,
    model_sizes,
    prior_features,
)
from bbrlcore.errors import BBRLError
from bbrlcore.formats.artefacts import atomic_path
from bbrlcore.seeds import id_hash64

# indices of the scalar UCB1 state (int64 array ``st``)
_ATTEMPTS, _SUCCESS, _BUDGET, _NEXT_INIT = 0, 1, 2, 3
_GOLDEN = 0x9E3779B97F4A7C15


@njit(cache=True, error_model="numpy")
def pull_seed(base, k):
    """Seed (31 bits) of pull ``k``: splitmix64 of ``base + k·φ``."""
    z = np.uint64(base) + np.uint64(k) * np.uint64(_GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return np.int64(z >> np.uint64(33))


@njit(cache=True, error_model="numpy")
def ucb1_select(mu, npull, disc, n_total, c):
    """Arm maximising mu_i + c sqrt(ln N / n_i) over live arms (exact ties at random);
    -1 when every arm is discarded."""
    K = mu.shape[0]
    lnN = np.log(max(n_total, 1))
    best = -np.inf
    count = 0
    for i in range(K):
        if disc[i]:
            continue
        v = mu[i] + c * np.sqrt(lnN / npull[i])
        if count == 0 or v > best:
            best = v
            count = 1
        elif v == best:
            count += 1
    if count == 0:
        return -1
    pick = np.random.randint(0, count) if count > 1 else 0
    for i in range(K):
        if not disc[i]:
            v = mu[i] + c * np.sqrt(lnN / npull[i])
            if v == best:
                if pick == 0:
                    return i
                pick -= 1
    return -1


@njit(cache=True, error_model="numpy")
def ucb1_step(mu, npull, disc, st, c):
    """Choose the arm of the next pull (RNG already seeded); -1 when nothing is left."""
    K = mu.shape[0]
    if st[_BUDGET] <= 0:
        return -1
    if st[_NEXT_INIT] < K:
        arm = st[_NEXT_INIT]
        st[_NEXT_INIT] += 1
        return arm
    return ucb1_select(mu, npull, disc, st[_SUCCESS], c)


@njit(cache=True, error_model="numpy")
def ucb1_record(mu, npull, disc, st, arm, payoff, ok):
    """Record the outcome of a pull."""
    st[_ATTEMPTS] += 1
    if not ok:
        disc[arm] = True
        return
    n = npull[arm]
    mu[arm] = mu[arm] * n / (n + 1) + payoff / (n + 1)
    npull[arm] = n + 1
    st[_SUCCESS] += 1
    st[_BUDGET] -= 1


@njit(cache=True, error_model="numpy")
def bandit_batch(mu, npull, disc, st, c, base, max_attempts, means, sds):
    """UCB1 on a synthetic Gaussian bandit (payoff ~ N(means[i], sds[i]); a negative sd
    makes the arm fail): the same loop as :func:`opps_batch`, for tests."""
    done = 0
    while done < max_attempts:
        np.random.seed(pull_seed(base, st[_ATTEMPTS]))
        arm = ucb1_step(mu, npull, disc, st, c)
        if arm < 0:
            return done
        ok = sds[arm] >= 0.0
        payoff = means[arm] + max(sds[arm], 0.0) * np.random.standard_normal()
        ucb1_record(mu, npull, disc, st, arm, payoff, ok)
        done += 1
    return done


@njit(cache=True, error_model="numpy")
def opps_batch(
    mu, npull, disc, st, c, base, max_attempts,
    codes, lengths, used, R, Rstd, gaussian, initial_state, gamma, horizon, Qinit,
    succ, nsucc, theta, Rm, succ1, nsucc1, self_loop, Rm1, to1, dense, usucc, unsucc,
    Rfull, Rsum, a_all,
):  # fmt: skip
    """Run up to ``max_attempts`` UCB1 pulls of OPPS-DS; returns the number run.

    A pull draws an MDP from the prior on its support's rows (``succ``, ``nsucc``: a
    Dirichlet row per state-action pair, over the slots of positive ``theta`` in
    increasing order, the draws of a dense row's; under ``+dir<α>`` the layout is full
    and ``theta`` is α on every slot: Dir(α) over all S next states) and plays the arm's
    formula agent on it (``R``, ``Rstd``: the prior's rewards on those rows; the
    arguments from ``theta`` on: :meth:`bbrlcore.agents.formula_agent.Features.args`)."""
    nX, nU, K = theta.shape
    P = np.zeros((nX, nU, K))
    rewards = np.empty(horizon)  # (a pull's rewards: not kept)
    done = 0
    while done < max_attempts:
        np.random.seed(pull_seed(base, st[_ATTEMPTS]))
        arm = ucb1_step(mu, npull, disc, st, c)
        if arm < 0:
            return done
        for x in range(nX):
            for u in range(nU):
                n = nsucc[x, u]
                dirichlet_row(theta[x, u, :n], P[x, u, :n])
        ret, fails = formula_trajectory(
            P, R, Rstd, gaussian, initial_state, gamma, horizon,
            codes[arm], lengths[arm], used[arm],
            succ, nsucc, theta, Rm, succ1, nsucc1, self_loop, Rm1, to1, dense, usucc,
            unsucc, Rfull, Rsum, a_all, Qinit[arm], False, True, rewards, 0,
        )  # fmt: skip
        ucb1_record(mu, npull, disc, st, arm, ret, fails == 0)
        done += 1
    return done


# ---------------------------------------------------------------------------------------
# Python orchestration: parameters, progress, checkpoints


class UCB1State:
    """Arm statistics and counters of a UCB1 run (what a checkpoint holds)."""

    def __init__(self, K: int, n_draws: int) -> None:
        self.mu = np.zeros(K)
        self.npull = np.zeros(K, dtype=np.int64)
        self.disc = np.zeros(K, dtype=np.bool_)
        self.st = np.zeros(4, dtype=np.int64)
        self.st[_BUDGET] = n_draws
        self.elapsed = 0.0  # training seconds spent before this session (resumed runs)

    @property
    def finished(self) -> bool:
        return bool(self.st[_BUDGET] <= 0 or self.disc.all())

    def save(self, path: str, fingerprint: str, elapsed: float) -> None:
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            np.savez(f, mu=self.mu, npull=self.npull, disc=self.disc, st=self.st,
                     elapsed=np.array(elapsed), fingerprint=np.array(fingerprint))

    @classmethod
    def load(cls, path: str, fingerprint: str, K: int) -> UCB1State:
        try:
            with np.load(path, allow_pickle=False) as z:
                fp = str(z["fingerprint"])
                s = cls(K, 0)
                s.mu, s.npull, s.disc, s.st = z["mu"], z["npull"], z["disc"], z["st"]
                s.elapsed = float(z["elapsed"])
        except Exception as exc:  # corrupt or foreign file
            raise BBRLError(f"--checkpoint {path}: unreadable checkpoint ({exc})") from None
        if fp != fingerprint:
            raise BBRLError(
                f"--checkpoint {path}: belongs to another training (different agent, prior, "
                "seed, gamma or horizon); delete it or choose another path"
            )
        if s.mu.shape != (K,):
            raise BBRLError(f"--checkpoint {path}: wrong number of arms")
        return s


def most_pulled(state: UCB1State, rng: np.random.Generator) -> int:
    """The most-pulled non-discarded arm (uniform among ties); -1 if none."""
    live = np.flatnonzero(~state.disc & (state.npull > 0))
    if len(live) == 0:
        return -1
    m = state.npull[live].max()
    best = live[state.npull[live] == m]
    return int(best[rng.integers(len(best))]) if len(best) > 1 else int(best[0])


def _base_seed(seed: int, agent_id: str) -> int:
    s = np.random.SeedSequence([int(seed), id_hash64(agent_id)]).generate_state(2, np.uint32)
    return int(s[0]) | (int(s[1]) << 32)


def _fingerprint(prior, agent_id: str, fs: F.FormulaSet, ctx: TrainContext) -> str:
    h = hashlib.sha256()
    for which in ("theta", "reward", "reward_std"):  # the dense arrays' bytes, a block at
        for _, _, block in prior.dense_blocks(which):  # a time (never the whole array)
            h.update(block.tobytes())
    h.update(str(prior.initial_state).encode())
    if getattr(prior, "dirichlet_all", None) is not None:  # (+dir<α>: another prior)
        h.update(f"dirichlet_all={float(prior.dirichlet_all)!r}".encode())
    h.update("\n".join(fs.rpn).encode())
    rec = {"agent": agent_id, "prior": h.hexdigest(), "seed": int(ctx.seed),
           "gamma": float(ctx.gamma), "horizon": int(ctx.horizon)}
    return json.dumps(rec, sort_keys=True)


def run_ucb1(
    batch,
    state: UCB1State,
    n_draws: int,
    ctx: TrainContext,
    fingerprint: str,
    describe_best=None,
) -> UCB1State:
    """Drive ``batch(state, max_attempts) -> attempts run`` until the budget is spent,
    with progress lines and periodic checkpoints (``ctx.checkpoint``)."""
    t0 = time.perf_counter()
    last_ckpt = t0
    last_report = t0
    size = 8
    start_success = int(state.st[_SUCCESS])
    while not state.finished:
        tb = time.perf_counter()
        ran = batch(state, size)
        dt = time.perf_counter() - tb
        if ran == 0:
            break
        # aim at ~0.25 s batches (capped by the checkpoint interval)
        target = 0.25
        if ctx.checkpoint:
            target = min(target, max(ctx.checkpoint_every / 4, 0.01))
        size = int(min(max(ran * target / max(dt, 1e-6), 1), 1_000_000))
        now = time.perf_counter()
        if ctx.checkpoint and now - last_ckpt >= ctx.checkpoint_every:
            state.save(ctx.checkpoint, fingerprint, state.elapsed + now - t0)
            last_ckpt = now
        done = int(state.st[_SUCCESS])
        if ctx.progress is not None:
            ctx.progress(done, n_draws)
        elif now - last_report >= 5.0:
            last_report = now
            el = now - t0
            rate = (done - start_success) / el if el > 0 else 0.0
            eta = (n_draws - done) / rate if rate > 0 else math.inf
            best = int(np.argmax(np.where(state.disc, -1, state.npull)))
            extra = f", most pulled arm {best}" + (
                f" ({describe_best(best)})" if describe_best else "")
            print(f"opps-ds: {done}/{n_draws} pulls, {el:.0f} s elapsed, ETA {eta:.0f} s"
                  f"{extra}", file=sys.stderr, flush=True)
    if ctx.checkpoint:
        state.save(ctx.checkpoint, fingerprint, state.elapsed + time.perf_counter() - t0)
    return state


def _check_formula_set(v: str) -> str | None:
    if F._NAME.match(v):
        return None
    if not Path(v).exists():
        return "expected F2..F6 or an existing formula-set file (Parquet or .dat)"
    return None


PARAMS = (
    Param("formula_set", str, required=True, check=_check_formula_set,
          doc="formula set: F2..F6 (default seed, cached) or a Parquet/.dat file",
          id_value=F.label_of),
    Param("n_draws", int, required=True, check=int_between(1, 10**9),
          doc="UCB1 budget: successful pulls, initial pulls included"),
    Param("c", float, default=660.0, check=positive, doc="UCB1 exploration constant"),
)


def train(prior, params: dict[str, Any], ctx: TrainContext) -> Trained:
    """OPPS-DS offline learning (UCB1 over the formula set); see the module docstring."""
    fs = F.load(params["formula_set"])
    n_draws = int(params["n_draws"])
    c = float(params["c"])
    agent_id = ALGORITHM.agent_id(params)
    K = len(fs)
    if K == 0:
        raise BBRLError(f"formula_set={params['formula_set']}: empty formula set")
    # the agents' layout: the prior's support (every MDP drawn from it lives there; under
    # +dir<α> the full layout)
    st, fe = prior_features(prior, float(ctx.gamma), int(ctx.horizon))
    fargs = fe.args()
    gaussian, x0 = prior.reward_type == "gaussian", int(prior.initial_state)
    used = np.array([F.variables_used(fs.codes[i, : fs.lengths[i]]) for i in range(K)])
    # the features' Q at reset depend only on the prior: solved once for all pulls
    q3 = initial_q(st.succ, st.nsucc, *fargs, np.ones(3, dtype=np.bool_), float(ctx.gamma),
                   int(ctx.horizon))
    Qinit = np.ascontiguousarray(np.where(used[:, :, None, None], q3[None], 0.0))
    base = _base_seed(ctx.seed, agent_id)
    fingerprint = _fingerprint(prior, agent_id, fs, ctx)

    state = UCB1State(K, n_draws)
    if ctx.checkpoint and os.path.exists(ctx.checkpoint):
        state = UCB1State.load(ctx.checkpoint, fingerprint, K)
        print(f"opps-ds: resuming from {ctx.checkpoint} "
              f"({int(state.st[_SUCCESS])}/{n_draws} pulls done)", file=sys.stderr)

    def batch(s: UCB1State, m: int) -> int:
        return int(opps_batch(
            s.mu, s.npull, s.disc, s.st, c, np.uint64(base), m,
            fs.codes, fs.lengths, used, st.R, st.Rstd, gaussian, x0,
            float(ctx.gamma), int(ctx.horizon), Qinit, st.succ, st.nsucc, *fargs,
        ))  # fmt: skip

    batch(UCB1State(K, 0), 0)  # compile (no pull): offline time excludes compilation
    t_run = time.perf_counter()
    run_ucb1(batch, state, n_draws, ctx, fingerprint, describe_best=lambda i: fs.rpn[i])
    rng = np.random.default_rng(np.random.SeedSequence([int(ctx.seed), id_hash64(agent_id), 1]))
    arm = most_pulled(state, rng)
    if arm < 0:
        raise BBRLError(
            f"opps-ds: no valid formula in {fs.label} (every arm tried had a formula failure)"
        )
    codes = fs.codes[arm, : fs.lengths[arm]]
    table = pl.DataFrame({
        "arm": np.arange(K, dtype=np.int64),
        "rpn": fs.rpn,
        "infix": [F.infix(fs.codes[i, : fs.lengths[i]]) for i in range(K)],
        "pulls": state.npull.astype(np.int64),
        "mean_return": [float(m) if n > 0 else None for m, n in zip(state.mu, state.npull,
                                                                   strict=True)],
        "discarded": state.disc.astype(bool),
    })
    info = {
        "formula_set": fs.label,
        "n_formulas": K,
        "arm": arm,
        "rpn": fs.rpn[arm],
        "infix": F.infix(codes),
        "pulls": int(state.npull[arm]),
        "mean_return": float(state.mu[arm]),
        "successful_pulls": int(state.st[_SUCCESS]),
        "attempts": int(state.st[_ATTEMPTS]),
        "discarded_arms": int(state.disc.sum()),
        "seed": int(ctx.seed),
        "gamma": float(ctx.gamma),
        "horizon": int(ctx.horizon),
    }
    # offline time without compilation, plus earlier sessions of a resumed training
    # (the runner reads and removes this key)
    info["_offline_time_s"] = state.elapsed + time.perf_counter() - t_run
    return Trained(info=info, table=table)


def make_player(prior, params: dict[str, Any], trained: Trained, ep: Episode):
    """The learned formula agent as a ``play(P, seed, rewards=None)`` trajectory
    function (:func:`bbrlcore.agents.formula_agent.formula_player`)."""
    rpn = trained.info.get("rpn") if trained and trained.info else None
    if not rpn:
        raise BBRLError("opps-ds agent: no chosen formula in the agent artefact (info.rpn)")
    return formula_player(prior, F.parse(rpn, "opps-ds agent formula"), ep)


#: Formulas in the named sets (F5 and F6 vary slightly with the seed).
SET_SIZES = {"F2": 12, "F3": 43, "F4": 226, "F5": 1210, "F6": 7330}


def _mean_backups(prior) -> float:
    """Terms of a sweep of the three features' models (θ, self-loops, ones), averaged:
    the formula learned offline decides which are solved, unknown before training
    (:func:`bbrlcore.agents.formula_agent.model_sizes`). Under ``+dir<α>`` the training
    MDPs are on the full layout: S²·A terms each (and the S²·A Gamma variates of a
    draw)."""
    if getattr(prior, "dirichlet_all", None) is not None:
        return 2.0 * float(prior.n_states) ** 2 * prior.n_actions
    return float(np.mean(model_sizes(prior)[:3]))


def cost_features(params: dict, prior, test, gamma: float, horizon: int,
                  learned: dict | None = None) -> dict[str, float]:
    """The learned formula agent: the work of the formula agent it plays
    (:func:`bbrlcore.agents.formula.cost_features`: the models of the features the formula
    reads solved after every step). Before training the formula is unknown: the average
    of the three one-feature formulas' work; with ``learned`` (the agent's info: ``rpn``
    or ``formula``) exactly its formula's."""
    from bbrlcore.agents.formula import cost_features as formula_features

    for key in ("rpn", "formula", "infix"):
        text = (learned or {}).get(key)
        if isinstance(text, str):
            try:
                F.parse_formula(text, "cost")
            except BBRLError:
                continue
            return formula_features({"formula": text}, prior, test, gamma, horizon)
    feats = [formula_features({"formula": f}, prior, test, gamma, horizon)
             for f in ("X0", "X1", "X2")]
    return {k: float(np.mean([f.get(k, 0.0) for f in feats])) for f in feats for k in f}


def offline_cost_features(params: dict, prior, gamma: float, horizon: int) -> dict[str, float]:
    """UCB1 over the formula set: ``n_draws`` pulls, each a trajectory of a formula agent
    on an MDP drawn from the prior, plus a per-arm part."""
    fs = str(params["formula_set"])
    if fs in SET_SIZES:
        arms = float(SET_SIZES[fs])
    else:
        try:
            arms = float(len(F.load(fs)))
        except BBRLError:
            arms = 1000.0
    n = float(params["n_draws"])
    T = float(horizon)
    return {"job": 1.0, "pull_steps": n * T, "pull_backups": n * T * _mean_backups(prior),
            "arms": arms}


ALGORITHM = Algorithm(
    name="opps-ds",
    params=PARAMS,
    make_player=make_player,
    train=train,
    counters=("formula_failures",),
    doc=__doc__ or "",
    cost_features=cost_features,
    offline_cost_features=offline_cost_features,
    sparse=True,
    episodic=True,
    dirichlet_all=True,
)
