"""What every agent module provides, and the parameter machinery they share.

An agent module (``bbrlcore/agents/<name>.py``) defines one :class:`Algorithm`:

* ``params``: its :class:`Param` declarations, in the order the agent id lists them;
* ``train(prior, params, ctx)``: offline learning from the prior; returns a
  :class:`Trained` (JSON-able ``info`` plus an optional table, both stored in the agent
  artefact). Most agents only keep the prior;
* ``make_player(prior, params, trained, episode)``: returns a callable
  ``play(P, seed, rewards=None) -> (discounted_return, counters)`` that runs **one whole
  trajectory** of ``episode.horizon`` steps on the test MDP ``P`` inside numba, starting
  from the prior (the agent's reset is part of the trajectory), and writes
  the reward of step ``t`` into ``rewards[t]`` (a float64 array of length
  ``episode.horizon``; without one the player records into a buffer of its own). See
  :data:`Player`. In an **episodic** interaction (``episode.episode_length`` H > 0) the
  environment returns to the initial state after every H steps (after step t when
  ``(t + 1) % H == 0``), the agent keeping what it learned: an :class:`Algorithm` whose
  players do that says ``episodic=True`` (every built-in does);
* ``counters``: names of the integer counters ``play`` returns (extra run-table columns,
  e.g. ``formula_failures``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bbrlcore.errors import BBRLError
from bbrlcore.mdp._dense import MAX_AGENT_MEMORY_BYTES as _MAX_AGENT_MEMORY_BYTES


@dataclass(frozen=True)
class Param:
    """One agent parameter: name, type (float, int, bool or str), default and check.

    ``required`` parameters have no default. ``check`` returns an error text (for example
    ``"must be in [0, 1]"``) or ``None``. ``id_value`` renders the value in the agent id
    (default: integers as integers, floats with ``format(v, ".12g")``). ``normalise``
    maps a typed value to its canonical form, ``normalise(value, where)``, raising a
    :class:`~bbrlcore.errors.BBRLError` that starts with ``where`` on a malformed value
    (the ``formula`` agent's ``Q2/Q0`` becomes ``X2_X0_DIV``); it must be idempotent,
    since stored parameters are read back through it.
    """

    name: str
    type: type
    required: bool = False
    default: Any = None
    check: Callable[[Any], str | None] | None = None
    doc: str = ""
    id_value: Callable[[Any], str] | None = None
    normalise: Callable[[Any, str], Any] | None = None
    #: The agent id leaves the parameter out at its default (as ``compat`` when false): a
    #: parameter added to an algorithm keeps the ids of its existing configurations.
    id_omits_default: bool = False


@dataclass(frozen=True)
class Episode:
    """What a trajectory needs besides the test MDP: the test distribution's rewards,
    initial state, the discount factor, the horizon, and the layout of the test MDPs.

    The test MDPs a player is given are on **sparse rows** (:mod:`bbrlcore.mdp.rows`):
    ``succ`` (nX, nU, K) and ``nsucc`` (nX, nU) list the successors of each state-action
    pair (the test distribution's support), ``P[x, u, k]`` is the probability of the
    transition to ``succ[x, u, k]``, and ``R``, ``Rstd`` are the rewards' means and
    standard deviations on the same slots. Without a layout (``succ is None``: an
    Episode built before sparse rows, or for a player of an :class:`Algorithm` with
    ``sparse=False``) ``P``, ``R`` and ``Rstd`` are dense (nX, nU, nX) arrays, which is
    the layout whose rows are full (:func:`bbrlcore.mdp.rows.full`).

    ``gaussian`` is the rewards' mode (:data:`bbrlcore.agents._kernels.REWARD_LAWS`):
    0 (false) constant rewards ``R``, 1 (true) Gaussian rewards ``R + Rstd·Z``, 2 reward
    laws: ``R`` is then the expected reward and ``Rstd`` stacks the laws' parameters,
    shape (5·nX, nU, K) (:func:`bbrlcore.mdp.environment.law_rows`). ``starts``: a
    starting distribution ``(states, probs)`` (None: ``initial_state``, a fixed state or
    -1 for every state alike); the kernels take :attr:`start`.

    ``episode_length`` H: 0 (the default, the paper's protocol) for one **continuing**
    interaction of ``horizon`` T steps; H > 0 for an **episodic** one, T = E × H: after
    every H steps (after step t when ``(t + 1) % H == 0``) the environment returns to
    the initial state (a new draw when ``initial_state`` is -1), and the agent keeps
    what it learned (its posterior starts from the prior once, at the interaction's
    start). ``horizon`` stays T, the whole interaction.

    Examples
    --------
    >>> ep = Episode(R=np.zeros((2, 1, 2)), Rstd=np.zeros((2, 1, 2)), gaussian=False,
    ...              initial_state=0, gamma=0.95, horizon=30, episode_length=10)
    >>> ep.episodes, Episode(**{**ep.__dict__, "episode_length": 0}).episodes
    (3, 1)
    """

    R: np.ndarray
    Rstd: np.ndarray
    gaussian: bool
    initial_state: int
    gamma: float
    horizon: int
    succ: np.ndarray | None = None
    nsucc: np.ndarray | None = None
    episode_length: int = 0
    starts: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def start(self) -> np.ndarray:
        """The starts as the kernels take them (the ``initial_state`` argument):
        :func:`bbrlcore.mdp.environment.start_array`."""
        from bbrlcore.mdp.environment import start_array

        return start_array(int(self.R.shape[0]), int(self.initial_state), self.starts)

    @property
    def reach_from(self) -> int:
        """The one starting state, or -1 when there are several (every state may
        start: what a computation over the states reachable from the start uses)."""
        if self.starts is None:
            return int(self.initial_state)
        return int(self.starts[0][0]) if len(self.starts[0]) == 1 else -1

    @property
    def episodes(self) -> int:
        """E: the number of episodes (1 for a continuing interaction)."""
        H = int(self.episode_length)
        return self.horizon // H if H > 0 else 1

    def layout(self) -> Any:
        """The layout of the test MDPs (:class:`bbrlcore.mdp.rows.Layout`; the full one
        for a dense Episode)."""
        from bbrlcore.mdp import rows

        nX, nU = int(self.R.shape[0]), int(self.R.shape[1])
        if self.succ is None or self.nsucc is None:
            return rows.full(nX, nU)
        return rows.Layout(self.succ, self.nsucc, nX)


@dataclass
class TrainContext:
    """Settings of offline learning: seed, the simulated episodes' gamma and horizon,
    progress reporting, and (for long trainings) a checkpoint file and interval."""

    seed: int = 0
    gamma: float = 0.95
    horizon: int = 250
    progress: Callable[[int, int], None] | None = None
    checkpoint: str | None = None
    checkpoint_every: float = 60.0


@dataclass
class Trained:
    """The result of offline learning: JSON-able ``info`` and an optional table."""

    info: dict[str, Any] = field(default_factory=dict)
    table: Any = None  # polars.DataFrame | None


#: ``play(P, seed, rewards=None) -> (discounted_return, counters)``: one whole trajectory
#: on the test MDP ``P`` (float64, shape (nX, nU, nX)) seeded with ``seed``; the reward of
#: step ``t`` goes to ``rewards[t]`` (a writable float64 array of length T, filled
#: completely; the runner stores it in the run table's ``rewards`` column), while the
#: return is accumulated as always (``ret += disc * r; disc *= gamma``, step by step).
#: ``counters`` is an int64 array of the algorithm's :attr:`Algorithm.counters`.
#:
#: A player taking only ``(P, seed)`` (a third party's :class:`Algorithm` written before
#: bbrl recorded rewards) still runs: :func:`records_rewards` tells it apart, and its rows
#: carry a null ``rewards`` and ``undiscounted_return``. Agents written with
#: :class:`~bbrlcore.agents.api.PythonAgent` or :class:`~bbrlcore.agents.api.CompiledAgent`
#: change nothing: the package's loop records for them.
Player = Callable[..., tuple[float, np.ndarray]]


def records_rewards(play: Callable[..., Any]) -> bool:
    """Whether ``play`` takes the per-step rewards buffer, its third positional argument
    (see :data:`Player`), rather than only ``(P, seed)``.

    Examples
    --------
    >>> records_rewards(lambda P, seed, rewards=None: (0.0, None))
    True
    >>> records_rewards(lambda P, seed: (0.0, None))
    False
    """
    import inspect

    try:
        sig = inspect.signature(play)
    except (TypeError, ValueError):  # a callable without a signature: the old protocol
        return False
    try:
        sig.bind(None, 0, None)
    except TypeError:
        return False
    return True

def on_rows(play: Callable[..., Any]) -> Callable[..., Any]:
    """The function the runner calls for each trajectory of a recording player: the
    player's attribute ``on_rows`` if it has one, else the player itself.

    A player whose trajectory is only microseconds long (Random, Optimal) may offer, as
    ``play.on_rows``, the same call without the check of ``rewards`` (a tenth of a
    microsecond, ≈ 1 % of Random's trajectory): its caller promises a float64 array of
    shape ``(horizon,)`` every time, as :func:`bbrlcore.protocol.run_agent` passes (a
    row of its rewards table). The kernels write without bounds checks, so any other
    caller goes through ``play``.

    Examples
    --------
    >>> def play(P, seed, rewards=None):
    ...     return 0.0, None
    >>> on_rows(play) is play
    True
    """
    return getattr(play, "on_rows", play)


#: The dtype of a rewards array (a player's fast check: ``rewards.dtype is FLOAT64``).
FLOAT64 = np.dtype(np.float64)


def reward_buffer(rewards: np.ndarray | None, horizon: int) -> np.ndarray:
    """The array a player writes its per-step rewards into: ``rewards`` itself (checked:
    a float64 array of shape ``(horizon,)``, since kernels write without bounds checks),
    or a new one when it is None. (The built-in players call it only when ``rewards`` is
    not already such an array: ``type(rewards) is np.ndarray and rewards.shape ==
    (horizon,) and rewards.dtype is FLOAT64``, a tenth of a microsecond less per
    trajectory.)

    Examples
    --------
    >>> reward_buffer(None, 3).shape
    (3,)
    >>> reward_buffer(np.zeros(2), 3)
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: rewards: expected a float64 array of shape (3,) ... (2,)
    """
    if rewards is None:
        return np.empty(horizon)
    if (not isinstance(rewards, np.ndarray) or rewards.shape != (horizon,)
            or rewards.dtype != np.float64):
        got = (f"{rewards.dtype} {rewards.shape}" if isinstance(rewards, np.ndarray)
               else type(rewards).__name__)
        raise BBRLError(f"rewards: expected a float64 array of shape ({horizon},) (the "
                        f"horizon), got {got}")
    return rewards


#: ``cost_features(params, prior, test, gamma, horizon) -> {name: amount}``: the work one
#: trajectory does, in the kernel's own units (steps, Bellman backups, simulated steps,
#: sampled entries...). The cost model (:mod:`bbrlcore.plan.cost`) prices each unit from
#: benchmark measurements, so a trajectory's time is a non-negative combination of them.
CostFeatures = Callable[[dict[str, Any], Any, Any, float, int], dict[str, float]]
#: ``offline_cost_features(params, prior, gamma, horizon) -> {name: amount}``: the work
#: of offline learning, in the same way.
OfflineCostFeatures = Callable[[dict[str, Any], Any, float, int], dict[str, float]]


def default_cost_features(
    params: dict[str, Any], prior: Any, test: Any, gamma: float, horizon: int
) -> dict[str, float]:
    """Work of a trajectory when an algorithm declares nothing: a fixed part and a part
    per step (a plugin's probe prices both, per configuration)."""
    return {"trajectory": 1.0, "steps": float(horizon)}


def support_sizes(theta: np.ndarray) -> np.ndarray:
    """Number of successors with positive concentration of each (x, u), shape (nX, nU):
    the terms of a Bellman backup, or the entries of a sampled transition row."""
    return (np.asarray(theta) > 0).sum(axis=2)


@dataclass(frozen=True)
class Algorithm:
    """An algorithm of the benchmark (see the module docstring)."""

    name: str
    params: tuple[Param, ...]
    make_player: Callable[..., Player]
    train: Callable[..., Trained] | None = None
    counters: tuple[str, ...] = ()
    has_compat: bool = False
    doc: str = ""
    #: Cross-field check of a configuration where it will run: ``setting_check(params,
    #: prior, gamma, horizon)`` returns an error text or None (e.g. "needs gamma < 1", a
    #: search tree that would not fit in memory). The workflow calls it for every agent
    #: configuration and prior before any job runs; ``bbrl train`` and ``bbrl run`` too.
    setting_check: Callable[[dict[str, Any], Any, float, int], str | None] | None = None
    #: The work of one trajectory (see :data:`CostFeatures`); None: the default
    #: :func:`default_cost_features`.
    cost_features: CostFeatures | None = None
    #: The work of offline learning (see :data:`OfflineCostFeatures`); None: a fixed part.
    offline_cost_features: OfflineCostFeatures | None = None
    #: The name the report shows (e.g. ``"Bayes-UCB-Q"``); "" for the built-in table of
    #: display names (:data:`bbrlcore.analysis.constraints.NICE`), else :attr:`name`.
    display_name: str = ""
    #: Work done once ahead of the runs, when a plugin is trained:
    #: ``prepare(prior, params, trained, episode)`` (a compiled agent compiles its
    #: trajectory kernel into numba's cache, so that ``bbrl train`` refuses code that does
    #: not compile and the run jobs find it compiled). None: nothing. Built-ins are
    #: compiled by the workflow's warm-up instead.
    prepare: Callable[[Any, dict[str, Any], Trained, Episode], None] | None = None
    #: Whether ``make_player`` takes an :class:`Episode` on sparse rows and its players
    #: the test MDPs' values on them (``play(P, seed, rewards)`` with ``P`` of shape
    #: (nX, nU, K)): every built-in, :class:`~bbrlcore.agents.api.PythonAgent` and
    #: :class:`~bbrlcore.agents.api.CompiledAgent`. False (an :class:`Algorithm` written
    #: before sparse rows): the runner gives it dense arrays (nX, nU, nX), which a large
    #: problem may not afford.
    sparse: bool = False
    #: Whether its players honour :attr:`Episode.episode_length` (an episodic
    #: interaction: back to the initial state after every H steps, learning kept): every
    #: built-in, :class:`~bbrlcore.agents.api.PythonAgent` and
    #: :class:`~bbrlcore.agents.api.CompiledAgent` (the package's loops do it for them).
    #: False (an :class:`Algorithm` written before episodes): refused, in one line, in an
    #: episodic experiment (:meth:`check_episodic`).
    episodic: bool = False
    #: Why it plays episodic interactions only ("": it plays continuing ones too):
    #: Q-learning-UCB learns one Q-function per step of an episode. Refused, in one line,
    #: in a continuing interaction (:meth:`check_episodic`, the one place that says so:
    #: the configuration, the runner and the player ask it).
    episodic_only: str = ""
    #: Why the parameters ``params`` make it play continuing interactions only (None:
    #: they do not): ``continuing_only(params) -> str | None``. PSRL's ``form=colosseum``
    #: (Colosseum's ``PSRLContinuous``). Refused, in one line, in an episodic interaction
    #: (:meth:`check_episodic` given the parameters). None: no parameter does.
    continuing_only: Callable[[dict[str, Any]], str | None] | None = None
    #: A line for the user about a whole run, from its counters: ``run_note(params,
    #: totals, n_steps)``, ``totals`` mapping each of :attr:`counters` to its sum over the
    #: run's trajectories and ``n_steps`` their steps in all; returns the line or None.
    #: The runner prints it once per run, on stderr (``bbrl: note: <agent> on
    #: <experiment>: <line>``): UCRL2 says so when its actions tied under its optimistic
    #: values at nearly every step. None: nothing to say.
    run_note: Callable[[dict[str, Any], dict[str, int], int], str | None] | None = None
    #: Colosseum's expected indicators (:mod:`bbrlcore.mdp.indicators`), for an algorithm
    #: whose current best policy is explicit: ``indicator_player(prior, params, trained,
    #: episode, log_every)`` returns a player ``play(P, seed, rewards) -> (return,
    #: counters, values)`` that plays the same trajectory as :attr:`make_player`'s and
    #: evaluates the agent's current policy exactly on the test MDP every ``log_every``
    #: steps inside its kernel; ``values`` are the run table's
    #: :data:`bbrlcore.agents._indicators.COLUMNS` and the step Colosseum would stop
    #: training at (-1: never); it returns None where they are unavailable for the
    #: parameters or the setting. None: the expected indicators are unavailable for the
    #: algorithm (the run says so once; its columns are null).
    indicator_player: Callable[..., Callable[..., tuple[float, np.ndarray, np.ndarray]]] \
        | None = None

    #: The reward priors (:data:`bbrlcore.mdp.reward_prior.REWARD_PRIORS`) its players
    #: learn under: ``("known",)`` (the default) for an algorithm that is given the
    #: expected rewards; a prior whose rewards are unknown (``+rbeta``, ``+rnig``) is
    #: refused for it, in one line, by :meth:`check_setting` (before any job runs).
    reward_priors: tuple[str, ...] = ("known",)
    #: Whether its players use a prior that does not know the transitions' support, a
    #: Dirichlet on every next state (``+dir<α>``, :mod:`bbrlcore.mdp.transition_prior`):
    #: True for an algorithm that handles it (PSRL samples it, e-Greedy, Soft-max and BEB
    #: plan on its posterior mean, UCRL2 lets its confidence sets hold every next state,
    #: BOSS, SBOSS and BOLT hold their posterior on the full S×A×S layout)
    #: or never reads the transition prior (Random, Q-learning-UCB,
    #: MBIE-EB, Optimal); False (the default): such a prior is refused for it, in one
    #: line, by :meth:`check_setting` (:data:`DIRICHLET_ALL_BUILTINS`).
    dirichlet_all: bool = False

    # -----------------------------------------------------------------------------------
    def parse_params(
        self, raw: dict[str, Any], *, source: str = "--param", stored: bool = False
    ) -> dict[str, Any]:
        """Coerce, check and complete parameters (strings from the command line or typed
        values from a config); raise :class:`BBRLError` naming the key on any problem.

        ``stored=True`` reads parameters recorded in an artefact: ``null`` stands for a
        default of None, and string parameters (file references such as a formula set,
        which may have moved since) are type-checked but not looked up.
        """
        known = {p.name: p for p in self.params}
        if not isinstance(raw, dict):
            raise BBRLError(f"{source}: expected a mapping of parameters")
        if stored:
            raw = {k: v for k, v in raw.items()
                   if not (v is None and k in known and known[k].default is None
                           and not known[k].required)}
        for key in raw:
            if key not in known:
                expected = ", ".join(known) or "none"
                raise BBRLError(
                    f"{source} {key}: unknown parameter of {self.name} (expected: {expected})"
                )
        out: dict[str, Any] = {}
        for p in self.params:
            if p.name in raw:
                value = coerce(p, raw[p.name], f"{source} {p.name}")
            elif p.required:
                raise BBRLError(f"{source} {p.name}: required by {self.name} and missing")
            else:
                value = p.default
            if value is not None and p.check is not None and not (stored and p.type is str):
                err = p.check(value)
                if err:
                    raise BBRLError(f"{source} {p.name}={show_value(value)}: {err}")
            out[p.name] = value
        return out

    def check_setting(
        self, params: dict[str, Any], prior: Any, gamma: float, horizon: int,
        *, source: str = "",
    ) -> None:
        """Raise :class:`BBRLError` (prefixed by ``source``) when the configuration cannot
        run on ``prior`` with ``gamma`` and ``horizon`` (see :attr:`setting_check`), or
        when the prior's rewards are unknown under a reward prior the algorithm does not
        learn under (:attr:`reward_priors`).

        >>> from bbrlcore.mdp import distributions as D
        >>> Algorithm("old", (), lambda *a: None).check_setting({}, D.load("UGC+rnig"),
        ...                                                     0.95, 10)
        Traceback (most recent call last):
        ...
        bbrlcore.errors.BBRLError: old cannot use the prior UGC+rnig: its rewards are ...
        """
        check_reward_prior(self.name, self.reward_priors, prior, source)
        check_dirichlet_all(self.name, self.dirichlet_all, prior, source)
        if self.setting_check is None:
            return
        err = self.setting_check(params, prior, gamma, horizon)
        if err:
            where = f"{source}: " if source else ""
            raise BBRLError(f"{where}{self.agent_id(params)} on {prior.short_name}: {err}")

    def check_episodic(self, episode_length: int, *, source: str = "",
                       fix: str = "", params: dict[str, Any] | None = None) -> None:
        """Raise :class:`BBRLError` (prefixed by ``source``) when the algorithm cannot play
        the interaction: an episodic one (``episode_length`` > 0) and its players do not
        honour episodes (:attr:`episodic` False), or a continuing one (``episode_length``
        0) and it plays episodic interactions only (:attr:`episodic_only`). ``fix`` says
        what to change where the interaction was given (default: the command line's
        ``bbrl experiment new --episodes E``). ``params`` given: also an episodic
        interaction that these parameters make impossible (:attr:`continuing_only`).

        >>> Algorithm("old", (), lambda *a: None).check_episodic(10, source="agent old")
        Traceback (most recent call last):
        ...
        bbrlcore.errors.BBRLError: agent old: algorithm old does not support episodic ...
        >>> ep = Algorithm("ep", (), lambda *a: None, episodic=True, episodic_only="why")
        >>> ep.check_episodic(0, fix="give it episodes:")
        Traceback (most recent call last):
        ...
        bbrlcore.errors.BBRLError: ep plays episodic interactions only (why); give it episodes:
        """
        where = f"{source}: " if source else ""
        if episode_length > 0 and not self.episodic:
            raise BBRLError(
                f"{where}algorithm {self.name} does not support episodic interactions "
                f"(episode_length {episode_length}): its Algorithm does not say "
                "episodic=True (its players must return to the initial state after every "
                "episode_length steps, see bbrlcore.agents.base.Episode)")
        if episode_length > 0 and params is not None and self.continuing_only:
            why = self.continuing_only(params)
            if why:
                raise BBRLError(
                    f"{where}{self.agent_id(params)} plays continuing interactions only "
                    f"({why}); this interaction is episodic (episode_length "
                    f"{episode_length})")
        if episode_length <= 0 and self.episodic_only:
            raise BBRLError(
                f"{where}{self.name} plays episodic interactions only "
                f"({self.episodic_only}); "
                + (fix or "this interaction is continuing: make an episodic test set "
                   "(bbrl experiment new --episodes E)"))

    def agent_id(self, params: dict[str, Any],
                 rendered: dict[str, str] | None = None) -> str:
        """``algorithm__name=value...`` in declaration order.

        ``rendered`` gives, for some parameters, the text the id shows instead of
        rendering the value again (an agent artefact's recorded formula-set label, whose
        file may have moved since)."""
        rendered = rendered or {}
        parts = [self.name]
        for p in self.params:
            v = params.get(p.name)
            if v is None:
                continue
            if p.name == "compat":
                if v:
                    parts.append("compat=true")
                continue
            if p.id_omits_default and v == p.default:
                continue
            if p.name in rendered:
                shown = rendered[p.name]
            else:
                shown = p.id_value(v) if p.id_value else show_value(v)
            parts.append(f"{p.name}={shown}")
        return "__".join(parts)


def check_reward_prior(name: str, supported: tuple[str, ...], prior: Any,
                       source: str = "") -> None:
    """Raise :class:`BBRLError`, one line naming the algorithm ``name`` and the prior, when
    ``prior``'s reward prior (:func:`bbrlcore.mdp.reward_prior.reward_prior_of`) is not
    among ``supported``."""
    from bbrlcore.mdp.reward_prior import reward_prior_of

    rk = reward_prior_of(prior).kind
    if rk in supported:
        return
    where = f"{source}: " if source else ""
    raise BBRLError(f"{where}{name} cannot use the prior {prior.short_name}: its rewards are "
                    f"unknown ({rk} prior) and {name} "
                    + ("needs known rewards" if supported == ("known",) else
                       "learns under the reward priors " + ", ".join(supported) + " only"))


#: The built-ins that take a prior with a Dirichlet on every next state (``+dir<α>``).
DIRICHLET_ALL_BUILTINS = ("psrl", "e-greedy", "soft-max", "beb", "ucrl2", "mbie-eb",
                          "q-learning-ucb", "random", "optimal", "boss", "sboss", "bolt",
                          "bamcp", "bfs3", "formula", "opps-ds")


def check_dirichlet_all(name: str, supported: bool, prior: Any, source: str = "") -> None:
    """Raise :class:`BBRLError`, one line naming the algorithm ``name`` and the prior, when
    ``prior`` has a Dirichlet on every next state (``+dir<α>``) and the algorithm does not
    take one (``supported`` False).

    >>> from bbrlcore.mdp import distributions as D
    >>> check_dirichlet_all("mine", False, D.load("UGC+dir0.5"))
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: mine cannot use the prior UGC+dir0.5: it does not know ... psrl, ...
    """
    if supported or getattr(prior, "dirichlet_all", None) is None:
        return
    where = f"{source}: " if source else ""
    raise BBRLError(f"{where}{name} cannot use the prior {prior.short_name}: it does not "
                    "know the transitions' support (a Dirichlet on every next state) and "
                    f"{name} plans on a support; the built-ins that take it: "
                    + ", ".join(DIRICHLET_ALL_BUILTINS))


def show_value(v: Any) -> str:
    """A parameter value as agent ids and messages show it (floats with ``.12g``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format(v, ".12g")
    return str(v)


def coerce(p: Param, value: Any, where: str) -> Any:
    """Convert ``value`` to the parameter's type, then to its
    canonical form (:attr:`Param.normalise`)."""
    out = _coerce_type(p, value, where)
    return p.normalise(out, where) if p.normalise else out


def _coerce_type(p: Param, value: Any, where: str) -> Any:
    t = p.type
    if t is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise BBRLError(f"{where}={value!r}: expected a boolean (true or false)")
    if t is int:
        if isinstance(value, bool):
            raise BBRLError(f"{where}={value!r}: expected an integer")
        if isinstance(value, int):
            out = value
        else:
            try:
                f = float(value)
            except (TypeError, ValueError):
                raise BBRLError(f"{where}={value!r}: expected an integer") from None
            if not math.isfinite(f) or f != int(f):
                raise BBRLError(f"{where}={value!r}: expected an integer")
            out = int(f)
        if not -(2**63) <= out < 2**63:
            raise BBRLError(f"{where}={value!r}: out of range (a 64-bit integer)")
        return out
    if t is float:
        if isinstance(value, bool):
            raise BBRLError(f"{where}={value!r}: expected a number")
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise BBRLError(f"{where}={value!r}: expected a number") from None
        if math.isnan(f):
            raise BBRLError(f"{where}={value!r}: expected a number, got NaN")
        if math.isinf(f):
            raise BBRLError(f"{where}={value!r}: expected a finite number")
        return f
    if t is str:
        if not isinstance(value, str):
            raise BBRLError(f"{where}={value!r}: expected a string")
        return value
    raise TypeError(t)


# Common checks ----------------------------------------------------------------------------


def in_unit_interval(v: float) -> str | None:
    return None if 0.0 <= v <= 1.0 else "must be in [0, 1]"


def positive(v: float) -> str | None:
    return None if v > 0 and math.isfinite(v) else "must be > 0 (and finite)"


def non_negative(v: float) -> str | None:
    return None if v >= 0 and math.isfinite(v) else "must be >= 0 (and finite)"


def at_least_one(v: int) -> str | None:
    return None if v >= 1 else "must be an integer >= 1"


def int_between(lo: int, hi: int) -> Callable[[int], str | None]:
    """A check: an integer in [lo, hi]."""

    def check(v: int) -> str | None:
        return None if lo <= v <= hi else f"must be an integer in [{lo}, {hi:,}]"

    return check


#: Largest memory a built-in agent may preallocate for one trajectory (search trees,
#: sampled models); configurations beyond it are refused up front (defined in
#: :mod:`bbrlcore.mdp._dense`, which the mdp room's dense draws share).
MAX_AGENT_MEMORY_BYTES = _MAX_AGENT_MEMORY_BYTES



COMPAT = Param(
    "compat",
    bool,
    default=False,
    doc="reproduce the original library's quirks",
)
