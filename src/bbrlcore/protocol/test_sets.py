"""Test sets and the experiment protocol: drawing, storing and running.

A **test set** is N MDPs drawn from a test distribution, with the discount factor γ, the
horizon T and the seed that drew them. An **experiment** pairs a test set with the prior
an agent was trained on, named ``{test}-{prior}`` (``GC-GC`` accurate, ``GC-UGC``
inaccurate); both experiments of a test distribution share its test set, so agents are
paired across priors too.

Running an agent plays **one trajectory per test MDP**: the agent is reset to its prior,
then acts for exactly T steps; the trajectory's return is
:math:`\\sum_{t=0}^{T-1} \\gamma^t r_t`. Agents know the reward function and learn
transitions only. Each trajectory runs inside one numba call; its wall time (reset, every
decision and every environment step; not compilation, generator construction nor I/O) is
the trajectory's ``online_time_s``.

**Settings of an interaction** (:class:`Interaction`, stored in the test set): the
paper's protocol is one **continuing** trajectory of T steps (``episode_length`` 0). A
**long** one (T up to :data:`MAX_HORIZON`) records, instead of every step's reward, the
cumulative reward every ``checkpoint_every`` n steps (T > :data:`MAX_RECORDED_STEPS`:
n defaults to :func:`default_checkpoint_every`). An **episodic** one plays E episodes of
H steps (T = E × H): the environment returns to the initial state after every H steps,
the agent keeping what it learned; H defaults to the family's natural episode length
(:func:`bbrlcore.mdp.families.episodic_form`), and the checkpoints are the episode ends
(n = H, or a multiple of H).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from bbrlcore import seeds
from bbrlcore.agents.base import Episode
from bbrlcore.errors import BBRLError, building
from bbrlcore.formats import artefacts
from bbrlcore.mdp import rows
from bbrlcore.mdp.distributions import FDMDistribution
from bbrlcore.mdp.environment import episode_rewards
from bbrlcore.mdp.rows import Layout

if TYPE_CHECKING:
    from bbrlcore.mdp.families import FamilyDistribution


@dataclass(frozen=True, eq=False)
class TestSet:
    """N test MDPs drawn from ``test`` with their γ, T and seed.

    ``test`` is an FDM distribution or a problem family's test distribution with a drawn
    structure (:class:`bbrlcore.mdp.families.FamilyDistribution`).

    The MDPs are stored on **sparse rows** (:mod:`bbrlcore.mdp.rows`): ``layout`` is the
    test distribution's support (every transition a drawn MDP can have, the same for all
    of them) and ``mdps`` has shape (N, nX, nU, K), MDP ``i``'s transition probabilities
    on that layout, so a test set costs memory in proportion to the transitions that
    exist. :meth:`dense` gives one MDP as a dense (nX, nU, nX) array. MDP ``i`` is drawn
    with the generator :func:`bbrlcore.seeds.mdp_rng` ``(seed, i)``, so a smaller test set
    with the same seed is a prefix of a larger one.

    Built with ``layout=None`` (as before sparse rows), ``mdps`` are dense (N, nX, nU, nX)
    arrays, converted to the test distribution's layout. ``mdps`` is read-only (a view of
    the array given, when that one is writable).
    """

    test: FDMDistribution | FamilyDistribution
    mdps: np.ndarray
    gamma: float
    horizon: int
    seed: int
    layout: Layout | None = None
    #: H (0: continuing, the paper's protocol), see :class:`Interaction`
    episode_length: int = 0
    #: n: the run tables' checkpoints every n steps (None: per-step rewards only)
    checkpoint_every: int | None = None
    #: what tells this setting apart in experiment and file names ("" for the paper's
    #: protocol): :attr:`Interaction.label`, or one the workflow gives
    label: str = ""
    #: the MDPs' reference values (:func:`bbrlcore.mdp.references.reference_table`: one
    #: row per MDP in order, ρ* ... V*_H(s₀) ...; what the run tables' ``regret`` is
    #: measured against), computed when the test set is drawn; None: not computed (a
    #: test set written before them, or built by hand)
    references: pl.DataFrame | None = None

    __test__ = False  # not a pytest class

    def __post_init__(self) -> None:
        if self.layout is None:
            lay = self.test.support_layout
            dense = np.asarray(self.mdps, dtype=np.float64)
            nX, nU = self.test.n_states, self.test.n_actions
            if dense.ndim != 4 or dense.shape[1:] != (nX, nU, nX):
                raise BBRLError(f"test set {self.test.short_name}: dense MDPs of shape "
                                f"{dense.shape[1:]}, expected {(nX, nU, nX)}")
            outside = (dense > 0) & ~lay.dense_mask()[None]
            if outside.any():
                i, x, u, y = (int(v) for v in np.argwhere(outside)[0])
                raise BBRLError(f"test set {self.test.short_name}: MDP {i} has the "
                                f"transition ({x}, {u}) -> {y}, which the test "
                                "distribution rules out")
            object.__setattr__(self, "mdps", rows.gather(dense, lay))
            object.__setattr__(self, "layout", lay)
        # read-only, as a test set read from its file is (its MDPs are the environment's,
        # never an agent's to change), whichever way it was made: numba compiles a kernel
        # once for read-only arrays and once more for writable ones
        if isinstance(self.mdps, np.ndarray):
            object.__setattr__(self, "mdps", rows.read_only(self.mdps))

    @property
    def n_mdps(self) -> int:
        return int(self.mdps.shape[0])

    def reference_values(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The reference of each MDP's interaction in its setting, (N,) arrays each:
        the optimal, worst and uniformly random policy's expected reward **per step**
        (continuing: ρ*, ρ⁻, ρᵘ) or **per episode** (episodic: V*_H(s₀), V⁻_H(s₀),
        Vᵘ_H(s₀)); NaN where undefined; None without references."""
        if self.references is None:
            return None
        kind = "episode_value" if self.episode_length > 0 else "average_reward"
        a, b, c = (self.references[f"{w}_{kind}"].fill_null(np.nan).to_numpy()
                   .astype(np.float64) for w in ("optimal", "worst", "random"))
        return a, b, c

    @property
    def episodes(self) -> int:
        """E (1 for a continuing interaction)."""
        return self.horizon // self.episode_length if self.episode_length > 0 else 1

    @property
    def interaction(self) -> Interaction:
        """The settings of its interaction."""
        return Interaction(self.horizon, self.episode_length, self.checkpoint_every)

    @property
    def tag(self) -> str:
        """``@`` + :attr:`label` (what experiment and test-set names end with), or ""."""
        return f"@{self.label}" if self.label else ""

    @property
    def name(self) -> str:
        """The test set's name: the test distribution's, then :attr:`tag`
        (``DeepSea-10@E10000xH10``)."""
        return self.test.short_name + self.tag

    def dense(self, i: int) -> np.ndarray:
        """MDP ``i`` as a dense (nX, nU, nX) array of transition probabilities."""
        assert self.layout is not None
        return rows.scatter(self.mdps[i], self.layout)

    def episode(self, horizon: int | None = None, dense: bool = False) -> Episode:
        """What a player needs besides the MDP: the test rewards, initial state, γ, T and
        the layout of the MDPs it is given (``dense=True``: dense arrays, for players
        written before sparse rows, see :attr:`bbrlcore.agents.base.Algorithm.sparse`)."""
        assert self.layout is not None
        T = self.horizon if horizon is None else horizon
        H = self.episode_length if T % max(self.episode_length, 1) == 0 else 0
        mode, R, Rstd = episode_rewards(self.test, self.layout, dense)
        common = dict(gaussian=mode, initial_state=self.test.initial_state,
                      gamma=self.gamma, horizon=T, episode_length=H,
                      starts=getattr(self.test, "starts", None))
        if dense:
            return Episode(R=R, Rstd=Rstd, **common)
        return Episode(R=R, Rstd=Rstd, succ=self.layout.succ, nsucc=self.layout.nsucc,
                       **common)


def new_test_set(
    test: FDMDistribution | FamilyDistribution, n_mdps: int, gamma: float, horizon: int,
    seed: int, *, episode_length: int = 0, checkpoint_every: int | None = None,
    label: str | None = None, references: bool = True,
) -> TestSet:
    """Draw a test set (checks the parameters with clear errors).

    ``episode_length`` H > 0 makes its interactions episodic (``horizon`` T a multiple
    of H: E = T / H episodes); ``checkpoint_every`` n: the run tables record the
    cumulative reward every n steps (None: the default of :func:`interaction`);
    ``label``: what its experiments' names end with after ``@`` (None: the default,
    :attr:`Interaction.label`). The draws do not depend on them: the same seed gives the
    same MDPs in every setting. ``references`` (default): compute each MDP's reference
    values in the test set's setting (:mod:`bbrlcore.mdp.references`: ρ*, ρ⁻, ρᵘ
    continuing, V*_H(s₀), V⁻_H(s₀), Vᵘ_H(s₀) episodic), which the run tables' regret is
    measured against. They are computed here, once per MDP, and stored in the test set:
    every agent's run and every analysis reads them (none recomputes them), and the
    artefact that holds the MDPs holds what they are measured against.

    >>> from bbrlcore.mdp import families
    >>> ts = new_test_set(families.make("deepsea", size=4).test, 2, 1.0, 40, 0,
    ...                   episode_length=4)
    >>> ts.episodes, ts.checkpoint_every, ts.name
    (10, 4, 'DeepSea-4@E10xH4')
    """
    if not 1 <= n_mdps <= MAX_MDPS:
        raise BBRLError(f"--n-mdps must be in [1, {MAX_MDPS}], got {n_mdps}")
    if not (0 < gamma <= 1):
        raise BBRLError(f"--gamma must be in (0, 1], got {gamma}")
    if not 1 <= horizon <= MAX_HORIZON:
        raise BBRLError(f"--horizon must be in [1, {MAX_HORIZON:,}], got {horizon}")
    seeds.check_seed(seed, "--seed")
    if episode_length:
        it = interaction(test, episodes=horizon // max(int(episode_length), 1),
                         episode_length=episode_length, horizon=horizon,
                         checkpoint_every=checkpoint_every)
    else:
        it = interaction(test, horizon=horizon, checkpoint_every=checkpoint_every)
    lab = it.label if label is None else check_label(label)
    check_fits(test, n_mdps)
    with building(f"the test set of {n_mdps} MDPs of {test.short_name}"):
        lay = test.support_layout
        mdps = np.empty((n_mdps, *lay.succ.shape))
        for i in range(n_mdps):
            mdps[i] = test.draw_rows(seeds.mdp_rng(seed, i))
    refs = None
    if references:
        from bbrlcore.mdp.references import reference_table

        with building(f"the reference values of the {n_mdps} MDPs of {test.short_name}"):
            refs = reference_table(lay.succ, lay.nsucc, mdps, test.reward_rows,
                                   test.initial_state, it.episode_length,
                                   starts=getattr(test, "starts", None))
    return TestSet(test, mdps, float(gamma), int(horizon), int(seed), lay,
                   it.episode_length, it.checkpoint_every, lab, refs)


# ---------------------------------------------------------------------------------------
# Settings of an interaction

#: Per-step rewards are stored in the run tables only up to this many steps per
#: trajectory (above, the checkpoints are); re-exported by
#: :mod:`bbrlcore.protocol.runner`.
MAX_RECORDED_STEPS = 10_000
#: Most checkpoints a trajectory records by default (:func:`default_checkpoint_every`).
DEFAULT_CHECKPOINTS = 10_000
#: Most episodes of an interaction (each one's return is stored: 8 bytes a value).
MAX_EPISODES = 1_000_000


@dataclass(frozen=True)
class Interaction:
    """The settings of one interaction (a trajectory) with a test MDP.

    ``horizon`` T: its steps; ``episode_length`` H: 0 continuing (the paper's), else
    episodic with E = T / H episodes; ``checkpoint_every`` n: the run tables' checkpoints
    (the cumulative undiscounted reward at steps n, 2n, ..., T; None: none, per-step
    rewards only).

    Examples
    --------
    >>> Interaction(250).label, Interaction(10**6, 0, 100).label
    ('', 'T1000000')
    >>> Interaction(10**5, 10, 10).label, Interaction(10**5, 10, 100).label
    ('E10000xH10', 'E10000xH10n100')
    """

    horizon: int
    episode_length: int = 0
    checkpoint_every: int | None = None

    @property
    def episodes(self) -> int:
        return self.horizon // self.episode_length if self.episode_length > 0 else 1

    @property
    def episodic(self) -> bool:
        return self.episode_length > 0

    @property
    def label(self) -> str:
        """What tells the setting apart in names ("" for a continuing interaction
        without checkpoints, the paper's): ``E{E}xH{H}`` (episodic), ``T{T}``
        (continuing with checkpoints), then ``n{n}`` when n is not the default."""
        n = self.checkpoint_every
        if self.episodic:
            text = f"E{self.episodes}xH{self.episode_length}"
            return text + (f"n{n}" if n is not None and n != self.episode_length else "")
        if n is None:
            return ""
        default = default_checkpoint_every(self.horizon)
        return f"T{self.horizon}" + ("" if n == default else f"n{n}")

    def records_steps(self) -> bool:
        """Whether the run tables store every step's reward (T ≤
        :data:`MAX_RECORDED_STEPS`)."""
        return self.horizon <= MAX_RECORDED_STEPS


def default_checkpoint_every(horizon: int) -> int | None:
    """The checkpoint interval of a continuing interaction that does not set one: None
    (every step's reward is stored) up to :data:`MAX_RECORDED_STEPS` steps, else the
    smallest divisor n of T giving at most :data:`DEFAULT_CHECKPOINTS` checkpoints (T =
    10⁶: n = 100, Colosseum's interval; a run table of 100 MDPs then holds 8 MB of
    checkpoints).

    >>> default_checkpoint_every(250), default_checkpoint_every(10**6)
    (None, 100)
    >>> default_checkpoint_every(500_000), default_checkpoint_every(10_007 * 3)
    (50, 10007)
    """
    T = int(horizon)
    if T <= MAX_RECORDED_STEPS:
        return None
    lo = -(-T // DEFAULT_CHECKPOINTS)
    best = T
    d = 1
    while d * d <= T:
        if T % d == 0:
            for c in (d, T // d):
                if lo <= c < best:
                    best = c
        d += 1
    return best


def _positive_int(v: Any, key: str, hi: int) -> int:
    """``v`` as an integer in [1, hi], or one line naming ``key``."""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            raise BBRLError(f"{key}={v!r}: expected a positive integer") from None
        if f.is_integer():
            v = int(f)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise BBRLError(f"{key}={v!r}: expected a positive integer")
    if not 1 <= v <= hi:
        raise BBRLError(f"{key}={v}: must be an integer in [1, {hi:,}]")
    return int(v)


def interaction(
    test: Any, *, horizon: int | None = None, episodes: int | None = None,
    episode_length: int | None = None, checkpoint_every: int | None = None,
    keys: dict[str, str] | None = None,
) -> Interaction:
    """The settings of an interaction with MDPs of ``test``, checked: one
    :class:`BBRLError` line naming the key on any problem (``keys`` maps ``horizon``,
    ``episodes``, ``episode_length``, ``checkpoint_every`` to what the user wrote:
    ``--episodes`` by default, ``experiments[0].episodes`` in a configuration).

    * continuing: ``horizon`` T (250 when None);
    * episodic: ``episodes`` E and ``episode_length`` H (default: the family's natural
      length, :func:`bbrlcore.mdp.families.episodic_form`); T = E × H (a ``horizon``
      given too must equal it). A family without an episodic form is refused, naming it;
      a distribution of no family needs H;
    * ``checkpoint_every`` n: T a multiple of n (episodic: n a multiple of H); default
      :func:`default_checkpoint_every` (episodic: H).

    >>> from bbrlcore.mdp import families
    >>> interaction(families.make("deepsea", size=10).test, episodes=100)
    Interaction(horizon=1000, episode_length=10, checkpoint_every=10)
    >>> interaction(families.make("chain").test, episodes=100)
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: --episodes: family chain (Chain-5) has no episodic form ...
    """
    k = {n: f"--{n.replace('_', '-')}" for n in
         ("horizon", "episodes", "episode_length", "checkpoint_every")} | (keys or {})
    if episode_length is not None and episodes is None:
        raise BBRLError(f"{k['episode_length']}={episode_length}: needs {k['episodes']} E "
                        "(an episodic interaction of E episodes)")
    T = None if horizon is None else _positive_int(horizon, k["horizon"], MAX_HORIZON)
    H = 0
    if episodes is not None:
        E = _positive_int(episodes, k["episodes"], MAX_EPISODES)
        from bbrlcore.mdp.families import episodic_families, episodic_form

        spec, natural = episodic_form(test)
        name = getattr(test, "short_name", "?")
        if spec is not None and natural is None:
            raise BBRLError(f"{k['episodes']}: family {spec.name} ({name}) has no episodic "
                            "form (continuing only); families with one: "
                            f"{', '.join(episodic_families())}")
        if episode_length is None:
            if natural is None:
                raise BBRLError(f"{k['episodes']}: {name} is no problem family's, so it has "
                                f"no natural episode length: give {k['episode_length']}")
            H = natural
        else:
            H = _positive_int(episode_length, k["episode_length"], MAX_HORIZON)
        if E * H > MAX_HORIZON:
            raise BBRLError(f"{k['episodes']}={E} episodes of {H} steps: {E * H:,} steps, "
                            f"more than {MAX_HORIZON:,}")
        if T is not None and T != E * H:
            raise BBRLError(f"{k['horizon']}={T}: an episodic interaction lasts episodes x "
                            f"episode_length = {E} x {H} = {E * H} steps (leave "
                            f"{k['horizon']} out)")
        T = E * H
    if T is None:
        T = 250
    if checkpoint_every is None:
        n = H if H else default_checkpoint_every(T)
    else:
        n = _positive_int(checkpoint_every, k["checkpoint_every"], MAX_HORIZON)
        if T % n:
            raise BBRLError(f"{k['checkpoint_every']}={n}: the horizon T={T} is not a "
                            f"multiple of it (checkpoints at steps n, 2n, ..., T)")
        if H and n % H:
            raise BBRLError(f"{k['checkpoint_every']}={n}: not a multiple of the episode "
                            f"length {H} (an episodic interaction's checkpoints are episode "
                            "ends)")
    return Interaction(T, H, n)


#: A test set's label: letters, digits, '.', '_' and '+' (it ends file and experiment
#: names, after '@').
LABEL = re.compile(r"[A-Za-z0-9._+]*")


def check_label(label: str, key: str = "--label") -> str:
    """``label`` if it can end a name (:data:`LABEL`), else one line naming ``key``."""
    if not isinstance(label, str) or not LABEL.fullmatch(label) or len(label) > 64:
        raise BBRLError(f"{key}={label!r}: letters, digits, '.', '_' and '+' only, at most "
                        "64 characters (it ends experiment and file names)")
    return label


#: Largest test set held in memory (its MDPs' values, 8 bytes each): a bigger one is
#: refused up front with its size.
MAX_TEST_SET_BYTES = 8 * 2**30


def test_set_bytes(test: FDMDistribution | FamilyDistribution, n_mdps: int) -> int:
    """Memory of ``n_mdps`` MDPs of ``test`` on its layout (8 bytes a value)."""
    return 8 * n_mdps * int(np.prod(test.support_layout.succ.shape))


def check_fits(test: FDMDistribution | FamilyDistribution, n_mdps: int) -> None:
    """Refuse, with the estimated size, a test set that would not fit in memory."""
    need = test_set_bytes(test, n_mdps)
    if need > MAX_TEST_SET_BYTES:
        raise BBRLError(f"test set of {n_mdps} MDPs of {test.short_name}: "
                        f"{need / 2**30:.1f} GiB on its sparse rows "
                        f"({test.support_layout.width} successors per row at most), more "
                        f"than the {MAX_TEST_SET_BYTES / 2**30:.0f} GiB limit; use fewer "
                        "MDPs or a smaller size")


#: The columns of a test-set artefact: type and meaning (the documentation's column
#: reference is generated from this; a test checks it against a written test set). Its
#: metadata (key ``bbrl``) holds the test distribution, N, γ, T, the seed and the layout.
TEST_SET_COLUMNS: dict[str, tuple[str, str]] = {
    "mdp_index": ("Int64", "the test MDP's index, 0 to N − 1 (its seed is "
                           "`SeedSequence([seed, mdp_index])`)"),
    "P": ("Array(Float64)", "its transition probabilities on the test distribution's "
                            "sparse rows, flattened (nX, nU, K): K the widest row"),
}


def validation_set(ts: TestSet, n_mdps: int) -> TestSet:
    """The **validation set** of the test set ``ts``: ``n_mdps`` MDPs of the same test
    distribution, with the same γ, T and setting (episodes, checkpoints, label), drawn with the seed
    :func:`bbrlcore.seeds.validation_seed` ``(ts.seed)`` (another branch of the seed tree:
    never one of the test set's MDPs). Each algorithm's configuration is chosen on it
    (``selection: validation``) and its score reported on ``ts``.

    >>> from bbrlcore.mdp import distributions as D
    >>> ts = new_test_set(D.builtin("GC"), 3, 0.95, 20, 0)
    >>> v = validation_set(ts, 2)
    >>> v.n_mdps, v.seed == seeds.validation_seed(0), bool((v.mdps[0] != ts.mdps[0]).any())
    (2, True, True)
    """
    return new_test_set(ts.test, n_mdps, ts.gamma, ts.horizon, seeds.validation_seed(ts.seed),
                        episode_length=ts.episode_length,
                        checkpoint_every=ts.checkpoint_every, label=ts.label)


def validation_meta(ts: TestSet) -> dict[str, Any]:
    """What a validation set's artefact records besides a test set's (``split`` and the
    test set it validates: its seed and size), for :func:`write_test_set`."""
    return {"split": "validation", "validation_of": {"seed": ts.seed, "n_mdps": ts.n_mdps}}


def _reference_column_docs() -> dict[str, tuple[str, str]]:
    from bbrlcore.mdp.references import REFERENCE_COLUMNS

    return {k: ("Boolean" if k == "constant_gain" else "Float64", v)
            for k, v in REFERENCE_COLUMNS.items()}


#: The reference columns a test set drawn with ``references`` holds besides
#: :data:`TEST_SET_COLUMNS` (:mod:`bbrlcore.mdp.references`; null where undefined:
#: continuing ones in an episodic test set and the other way round; absent from test sets
#: written before them).
TEST_SET_REFERENCE_COLUMNS: dict[str, tuple[str, str]] = _reference_column_docs()


def write_test_set(ts: TestSet, path: str | Path,
                   extra: dict[str, Any] | None = None) -> None:
    """Write a test-set artefact: one row per MDP, its probabilities on the test
    distribution's layout (``P``, flattened (nX, nU, K); the layout's digest is in the
    metadata). ``extra``: more metadata (a validation set's, :func:`validation_meta`)."""
    assert ts.layout is not None
    table = pl.DataFrame(
        {
            "mdp_index": np.arange(ts.n_mdps, dtype=np.int64),
            "P": ts.mdps.reshape(ts.n_mdps, -1),
        }
    )
    if ts.references is not None:
        table = pl.concat([table, ts.references.drop("mdp_index")], how="horizontal")
    meta = {
        "test": ts.test.short_name,
        "test_distribution": ts.test.to_dict(),
        "n_mdps": ts.n_mdps,
        "gamma": ts.gamma,
        "horizon": ts.horizon,
        "seed": ts.seed,
        "layout": "rows",
        "layout_digest": ts.layout.digest(),
        "episode_length": ts.episode_length,
        "episodes": ts.episodes,
        "checkpoint_every": ts.checkpoint_every,
        "label": ts.label,
        "references": ts.references is not None,
    }
    meta.update(extra or {})
    artefacts.write_artefact(path, table, "test-set", meta)


def read_test_set(path: str | Path) -> TestSet:
    """Read a test-set artefact, validating its contents: the embedded test distribution,
    γ, T and seed, one row per MDP index ``0..N-1``, and every MDP row a probability
    distribution (finite, non-negative, summing to one within :data:`ROW_SUM_TOLERANCE`)
    on the test distribution's support. Any problem is one :class:`BBRLError` naming the
    file (and the MDP and row). Files written before sparse rows (dense ``P``) still
    read."""
    with building(f"the test set of {path}"):
        return _read_test_set(path)


def _read_test_set(path: str | Path) -> TestSet:
    table, meta = artefacts.read_artefact(path, "test-set")
    m = artefacts.MetaReader(path, meta, "test-set")
    regen = artefacts.REGENERATE["test-set"]
    test = _embedded_test_distribution(m.dict("test_distribution"), str(path))
    n = m.int("n_mdps", lo=1, hi=MAX_MDPS)
    gamma = m.float("gamma", lo=0.0, hi=1.0, lo_open=True)
    horizon = m.int("horizon", lo=1, hi=MAX_HORIZON)
    seed = m.int("seed", lo=0, hi=seeds.MAX_SEED)
    setting = _read_interaction(m, horizon, test)
    nX, nU = test.n_states, test.n_actions
    sparse = meta.get("layout") == "rows"
    lay = test.support_layout
    if sparse and meta.get("layout_digest") != lay.digest():
        raise BBRLError(f"{path}: its MDPs are stored on another layout than the support of "
                        f"{test.short_name} (written by another version?); {regen}")
    width = int(np.prod(lay.succ.shape)) if sparse else nX * nU * nX
    if set(table.columns) < {"mdp_index", "P"}:
        raise BBRLError(f"{path}: test-set table lacks the mdp_index or P column; {regen}")
    if len(table) != n:
        raise BBRLError(f"{path}: {len(table)} MDP rows, but the metadata says n_mdps={n}; "
                        f"{regen}")
    try:
        table = table.sort("mdp_index")
        idx = table["mdp_index"].to_numpy()
        if not np.array_equal(idx, np.arange(n)):
            raise BBRLError(f"{path}: mdp_index is not 0..{n - 1} (each once); {regen}")
        P = np.asarray(table["P"].to_numpy(), dtype=np.float64)
        if P.shape != (n, width):
            raise BBRLError(f"{path}: MDP rows hold {P.shape[1:] or 'ragged'} values, expected "
                            f"{width} ({nX} states x {nU} actions"
                            + (f" x {lay.width} successors)" if sparse else ")") + f"; {regen}")
    except (ValueError, TypeError, pl.exceptions.PolarsError) as exc:
        raise BBRLError(f"{path}: malformed test-set artefact ({exc}); {regen}") from None
    refs = _read_references(table, str(path), setting[0], regen)
    if sparse:
        mdps = P.reshape(n, *lay.succ.shape)
        check_mdps(mdps, str(path), lay)
        return TestSet(test, mdps, gamma, horizon, seed, lay, *setting, refs)
    dense = P.reshape(n, nX, nU, nX)
    check_mdps(dense, str(path))
    try:
        return TestSet(test, dense, gamma, horizon, seed, None, *setting, refs)
    except BBRLError as exc:
        raise BBRLError(f"{path}: {exc}; {regen}") from None


def _read_references(table: pl.DataFrame, path: str, episode_length: int, regen: str
                     ) -> pl.DataFrame | None:
    """The reference columns of a test-set table (sorted by MDP), checked: all there or
    none (a test set written before them: None), of their types, and the setting's
    values finite where given."""
    names = list(TEST_SET_REFERENCE_COLUMNS)
    have = [c for c in names if c in table.columns]
    if not have:
        return None
    if len(have) != len(names):
        missing = ", ".join(c for c in names if c not in table.columns)
        raise BBRLError(f"{path}: test-set table lacks the reference columns {missing}; "
                        f"{regen}")
    for c, (dtype, _) in TEST_SET_REFERENCE_COLUMNS.items():
        if str(table[c].dtype) != dtype:
            raise BBRLError(f"{path}: column {c!r} has type {table[c].dtype}, expected "
                            f"{dtype}; {regen}")
    kind = "episode_value" if episode_length > 0 else "average_reward"
    for w in ("optimal", "worst", "random"):
        c = table[f"{w}_{kind}"]
        bad = (~c.is_finite()).fill_null(False)
        if bad.any():
            i = int(table["mdp_index"].filter(bad)[0])
            raise BBRLError(f"{path}: MDP {i}: {w}_{kind} = {c.filter(bad)[0]} is not a "
                            f"finite value; {regen}")
    return table.select("mdp_index", *names)


def _read_interaction(m: artefacts.MetaReader, horizon: int, test: Any
                      ) -> tuple[int, int | None, str]:
    """``(episode_length, checkpoint_every, label)`` of a test set's metadata, checked
    against its horizon; a file written before them is continuing, without checkpoints,
    unlabelled."""
    H = m.int("episode_length", lo=0, hi=MAX_HORIZON, default=0)
    E = m.int("episodes", lo=1, hi=MAX_EPISODES, default=horizon // H if H else 1)
    n = m.meta.get("checkpoint_every")
    if n is not None:
        n = m.int("checkpoint_every", lo=1, hi=horizon)
    label = m.str("label", default="")
    if H and horizon != E * H:
        raise m.fail("horizon", f"is {horizon}, not episodes x episode_length = {E} x {H}")
    if not H and E != 1:
        raise m.fail("episodes", f"is {E} in a continuing test set (episode_length 0)")
    if n is not None and (horizon % n or (H and n % H)):
        raise m.fail("checkpoint_every", f"{n} does not divide the horizon {horizon}"
                     + (f" in multiples of the episode length {H}" if H else ""))
    if not LABEL.fullmatch(label):
        raise m.fail("label", f"{label!r} is not a label (letters, digits, '.', '_', '+')")
    return H, n, label


def _embedded_test_distribution(
    d: dict[str, Any], source: str
) -> FDMDistribution | FamilyDistribution:
    """The embedded test distribution: a problem family's (a ``"family"`` key: rebuilt from
    the family and its parameters) or an FDM."""
    if "family" in d:
        from bbrlcore.mdp.families import from_dict

        return from_dict(d, source)
    return FDMDistribution.from_dict(d, source)


#: Tolerance on the sum of each transition row of a test MDP.
ROW_SUM_TOLERANCE = 1e-9
#: Limits of a test set (larger values are refused with a clear error).
MAX_MDPS = 10_000_000
MAX_HORIZON = 100_000_000


def check_mdps(mdps: np.ndarray, source: str, layout: Layout | None = None) -> None:
    """Every row ``P[i, x, u, :]`` finite, non-negative and summing to one (and zero on
    the padding of ``layout``: MDPs on sparse rows); else one :class:`BBRLError` naming
    ``source``, the MDP and the row."""
    bad_val = ~np.isfinite(mdps) | (mdps < 0)
    if layout is not None:
        bad_val |= (mdps != 0) & ~layout.mask[None]
    if bad_val.any():
        i, x, u, y = (int(v) for v in np.argwhere(bad_val)[0])
        if layout is not None:
            y = int(layout.succ[x, u, y]) if layout.mask[x, u, y] else -1
        what = f"P(y={y})" if y >= 0 else "a padding value"
        v = mdps[tuple(int(a) for a in np.argwhere(bad_val)[0])]
        raise BBRLError(f"{source}: MDP {i}, row (x={x}, u={u}): {what} = {v} "
                        "is not a probability; " + artefacts.REGENERATE["test-set"])
    err = np.abs(mdps.sum(axis=3) - 1.0)
    if (err > ROW_SUM_TOLERANCE).any():
        i, x, u = (int(v) for v in np.argwhere(err > ROW_SUM_TOLERANCE)[0])
        raise BBRLError(f"{source}: MDP {i}, row (x={x}, u={u}) sums to "
                        f"{mdps[i, x, u].sum():.12g}, not 1; " + artefacts.REGENERATE["test-set"])
