"""bbrl's Colosseum variants against Colosseum's own MDPs, state by state (issue #42).

The fixtures ``tests/fixtures/colosseum/*.npz`` were written by
``tests/fixtures/colosseum/make_fixtures.py``, run under Python 3.9 with Colosseum
(``/work/peers/venv-col/bin/python tests/fixtures/colosseum/make_fixtures.py``; its
docstring lists what each file holds). The script builds Colosseum's MDPs with its own
classes (``RiverSwimContinuous``, ``DeepSeaEpisodic``, ...); nothing here imports Colosseum.

Each case maps Colosseum's nodes to bbrl's states (RiverSwim ``X`` → ``X``; DeepSea
``(X, Y)`` → row ``N−1−Y``, column ``X`` of the triangle; SimpleGrid ``(X, Y)`` → row
``size−1−Y``, column ``X``) and compares:

* the transition matrix, row by row (bbrl's nominal model, float64, with Colosseum's
  float32 ``T``: to 1e-6), and that bbrl's rows put no mass outside Colosseum's states;
* the expected rewards ``R[x, u]`` (to 1e-6), for the instances whose rewards are
  deterministic; an instance with stochastic rewards (Beta laws: ``*_stoch``) is compared on
  its transitions and starting state only: its reward laws need stochastic rewards
  (issue #42, another branch);
* the starting distribution (one state), the episode length H (episodic cases);
* optimal and worst values. An episodic case's are Colosseum's float32 backward
  induction, exact up to rounding: compared to 1e-5 per step. A continuous case's are
  its float32 Gauss-Seidel value iteration at gamma 0.99 stopped when a sweep changes no
  value by 1e-3, so **inexact**: started from zero with rewards ≥ 0 it stays below the
  fixed point, by at most 0.99·1e-3/(1−0.99) = 0.099 (measured: up to 0.0992 with float32
  rounding). bbrl's exact values (policy iteration, each policy evaluated by a linear
  solve, float64) must lie in [Colosseum's − 1e-4, Colosseum's + 0.1]. Its worst values
  are the exact evaluation (1e-7) of the policy greedy for that inexact value iteration on
  −R, so at or above the true worst: Colosseum's within [bbrl's − 1e-4, bbrl's + 0.1]
  (measured: within 9e-4).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import sparse
from scipy.sparse.linalg import spsolve

from bbrlcore.mdp import families as F
from bbrlcore.mdp.families import simplegrid

FIXTURES = Path(__file__).parent / "fixtures" / "colosseum"
#: this module's fixtures (make_fixtures.py writes them with their Colosseum class and
#: keyword arguments; other fixtures of the folder, such as indicators.npz, are not)
CASES = sorted(p.stem for p in FIXTURES.glob("*.npz") if "kwargs" in np.load(p).files)
GAMMA = 0.99
#: Colosseum's continuous values: how far below the fixed point its value iteration's
#: stopping rule may leave them (module docstring), and float32 rounding.
CONTINUOUS_GAP, ROUNDING = 0.1, 1e-4


def load(case: str, folder: Path = FIXTURES) -> dict:
    with np.load(folder / f"{case}.npz", allow_pickle=False) as z:
        d = {k: z[k] for k in z.files}
    d["kwargs"] = json.loads(str(d["kwargs"]))
    d["cls"] = str(d["cls"])
    return d


def bbrl_problem(d: dict) -> tuple[F.Problem, np.ndarray]:
    """bbrl's variant of a Colosseum instance, and the bbrl state of each Colosseum
    state index."""
    kw, cls, nodes = d["kwargs"], d["cls"], d["nodes"]
    size = kw["size"]
    ctl = {"p_rand": kw.get("p_rand") or 0.0, "p_lazy": kw.get("p_lazy") or 0.0}
    if cls.startswith("RiverSwim"):
        return F.make("riverswim", size=size, current=0, **ctl), nodes[:, 0]
    if cls.startswith("DeepSea"):
        r = size - 1 - nodes[:, 1]
        return (F.make("deepsea", size=size, form=1, p_rand=ctl["p_rand"]),
                r * (r + 1) // 2 + nodes[:, 0])
    assert cls.startswith("SimpleGrid")
    states = (size - 1 - nodes[:, 1]) * size + nodes[:, 0]
    s0 = int(states[np.flatnonzero(d["start"])[0]])
    start = [simplegrid.start_state(size, k) for k in range(4)].index(s0)
    return F.make("simplegrid", size=size, reward_type=kw.get("reward_type", 3), other=0.5,
                  start=start, **ctl), states


def colosseum_T(d: dict) -> np.ndarray:
    n, nU = d["R"].shape
    T = np.zeros(n * nU * n)
    T[d["T_keys"]] = d["T_values"]
    return T.reshape(n, nU, n)


def optimal(P: np.ndarray, r: np.ndarray, H: int, worst: bool = False) -> np.ndarray:
    pick = np.min if worst else np.max
    V = np.zeros(P.shape[0])
    if H:  # backward induction over H steps (Colosseum's episodic_value_iteration)
        for _ in range(H):
            V = pick(r + P @ V, axis=1)
        return V
    # discounted: policy iteration, each policy evaluated exactly (a linear solve)
    n = P.shape[0]
    arg = np.argmin if worst else np.argmax
    pi = arg(r, axis=1)
    for _ in range(1000):
        Pp, rp = P[np.arange(n), pi], r[np.arange(n), pi]
        V = spsolve(sparse.csc_matrix(sparse.eye(n) - GAMMA * sparse.csr_matrix(Pp)), rp)
        Q = r + GAMMA * (P @ V)
        new = arg(Q, axis=1)
        better = np.abs(Q[np.arange(n), new] - Q[np.arange(n), pi]) > 1e-10 * (1 + np.abs(V))
        if not better.any():
            return V
        pi = np.where(better, new, pi)
    raise AssertionError("policy iteration did not converge")


@pytest.mark.parametrize("case", CASES)
def test_variant_is_colosseums_state_by_state(case):
    d = load(case)
    p, idx = bbrl_problem(d)
    t = p.test
    P, R = t.mean_model(), np.asarray(t.reward)
    assert len(np.unique(idx)) == idx.size
    T = colosseum_T(d)
    sub = P[idx][:, :, idx]
    # bbrl's rows of Colosseum's states stay among them, and equal Colosseum's
    assert np.allclose(sub.sum(axis=2), 1.0, atol=1e-12)
    np.testing.assert_allclose(sub, T, atol=1e-6, rtol=0)
    # the starting state
    assert d["start"].sum() == 1.0 and t.initial_state == idx[np.flatnonzero(d["start"])[0]]
    H = int(d["H"])
    if H:
        assert F.episodic_form(t)[1] == H
    if case.endswith("_stoch"):
        return  # Beta rewards: transitions and start only (module docstring)
    r = (P * R).sum(axis=2)[idx]
    np.testing.assert_allclose(r, d["R"], atol=1e-6, rtol=1e-6)
    V_opt, V_worst = optimal(sub, r, H), optimal(sub, r, H, worst=True)
    if H:  # exact backward induction in float32: to rounding
        np.testing.assert_allclose(V_opt, d["V_opt"], atol=1e-5 * H, rtol=0)
        np.testing.assert_allclose(V_worst, d["V_worst"], atol=1e-5 * H, rtol=0)
    else:  # Colosseum's inexact value iteration: one-sided (module docstring)
        gap = V_opt - d["V_opt"]
        assert gap.min() >= -ROUNDING and gap.max() <= CONTINUOUS_GAP, (gap.min(), gap.max())
        gap = d["V_worst"] - V_worst
        assert gap.min() >= -ROUNDING and gap.max() <= CONTINUOUS_GAP, (gap.min(), gap.max())


def test_fixtures_cover_each_variant():
    """The fixtures hold every variant, both settings, and the benchmark's
    deterministic-reward instances of these three families."""
    classes = {load(c)["cls"] for c in CASES}
    assert classes == {f"{f}{s}" for f in ("RiverSwim", "DeepSea", "SimpleGrid")
                       for s in ("Continuous", "Episodic")}
    assert sum(c.startswith("bench_") for c in CASES) >= 12


def test_simplegrid_even_start_follows_colosseums_seed():
    """Colosseum's seed picks one of an even grid's four central tiles: the fixtures of
    seeds 0..3 land on at least two of them, each one a ``start`` of bbrl's."""
    starts = {bbrl_problem(load(f"simplegrid_e4_seed{k}"))[0].params["start"]
              for k in range(4)}
    assert len(starts) >= 2


def test_simplegrid_episode_length_does_not_depend_on_colosseums_seed():
    """Colosseum's H is 1 + the largest distance from one of its (size − 1)² possible
    starting tiles, the tiles nearest the centre, ties of the last ring broken by its seed
    (``_calculate_starting_nodes``): whichever tiles of that ring it takes, H is the same
    for every size bbrl allows, and equals the family's."""
    for s in range(3, simplegrid.MAX_SIZE + 1):
        c = (s - 1) / 2
        tiles = sorted(((x - c) ** 2 + (y - c) ** 2, abs(x - c) + abs(y - c))
                       for x in range(s) for y in range(s))
        k = (s - 1) ** 2
        cut = tiles[k - 1][0]
        inside = [l1 for d2, l1 in tiles if d2 < cut]
        ring = sorted(l1 for d2, l1 in tiles if d2 == cut)
        need = k - len(inside)
        lo, hi = max(inside + ring[:need]), max(inside + ring[-need:])
        assert lo == hi, s
        assert simplegrid.episode_length({"size": s}) == int(s - 1 + hi) + 1, s
