r"""The public agent API: benchmark your own algorithm beside the paper's.

Three ways to write an algorithm, all found by the same registry
(:mod:`bbrlcore.agents.registry`) and run by the same protocol (one trajectory per test
MDP, starting from the prior; the package owns the loop, the environment, the seeding, the
return, the per-step rewards and the timing). The posterior, drawing a model from it and
solving a model are public helpers (:mod:`bbrlcore.agents.bayes`), the functions the
built-ins are made of.

**A Python agent** (:class:`PythonAgent`): the original library's ``Agent`` in Python
names. ``train(prior, ctx)`` is offline learning (optional; what it returns is stored in
the agent artefact, its wall time is the offline time); ``reset()`` starts a trajectory
from the prior; ``act(state) -> action``; ``observe(state, action, next_state, reward)``.
Parameters are declared with :class:`~bbrlcore.agents.base.Param`, exactly like the
built-ins', so parsing, agent ids, configuration grids and error messages are the same:

>>> import numpy as np
>>> from bbrlcore.agents import Param, PythonAgent, bayes, in_unit_interval
>>> class Greedy(PythonAgent):
...     "e-Greedy on the posterior mean (its Q-function solved after every step)."
...     name = "my-egreedy"
...     display_name = "My e-Greedy"      # optional: the report's name for it
...     params = (Param("epsilon", float, required=True, check=in_unit_interval,
...                     doc="probability of a uniformly random action"),)
...
...     def reset(self):
...         self.counts = self.prior.theta.copy()
...         self.q = self.solve()
...
...     def solve(self, q=None):
...         P = bayes.mean_model(self.counts)
...         return bayes.q_values(P, self.prior.reward, self.gamma, self.horizon, q)
...
...     def act(self, state):
...         if self.rng.random() < self.p["epsilon"]:
...             return int(self.rng.integers(self.n_actions))
...         return int(np.argmax(self.q[state]))
...
...     def observe(self, state, action, next_state, reward):
...         self.counts[state, action, next_state] += 1
...         self.q = self.solve(self.q)           # warm-started from the last one

The agent sees ``self.p`` (its parsed parameters), ``self.prior`` (the
:class:`~bbrlcore.mdp.distributions.FDMDistribution` it was trained on: concentrations
``theta`` and the known rewards ``reward``), ``self.n_states``, ``self.n_actions``,
``self.gamma``, ``self.horizon``, ``self.learned`` (what ``train`` returned) and
``self.rng``, a :class:`numpy.random.Generator` made from the trajectory's seed (set
before each ``reset``); on large problems, its sparse rows too (``self.layout``,
``self.theta_rows``, ``self.reward_rows``: "Large problems" below), and
``self.reward_prior`` (:class:`~bbrlcore.mdp.reward_prior.RewardPrior`: ``known``, the
paper's protocol, or ``beta`` / ``nig`` for a prior named ``...+rbeta`` / ``...+rnig``
whose rewards are unknown; an agent that learns them says so with the class attribute
``reward_priors = ("known", "beta", "nig")``, else such a prior is refused for it in one
line, and it must not then read the prior's reward table). A state and an action are
integers. To try it by hand, make its
:class:`~bbrlcore.agents.base.Algorithm` and play one trajectory (``bbrl train`` and
``bbrl run`` do the same with a reference ``path/to/file.py:Greedy``):

>>> from bbrlcore import protocol
>>> from bbrlcore.agents import registry
>>> from bbrlcore.mdp import distributions as D
>>> ts = protocol.new_test_set(D.builtin("GC"), 2, 0.95, 50, seed=0)
>>> alg = registry.as_algorithm(Greedy, "example")
>>> alg.agent_id(alg.parse_params({"epsilon": "0.1"}))
'my-egreedy__epsilon=0.1'
>>> play = alg.make_player(D.builtin("GC"), alg.parse_params({"epsilon": "0.1"}), None,
...                        ts.episode())
>>> rewards = np.empty(50)                     # the reward of each step, filled
>>> ret, counters = play(ts.mdps[0], 7, rewards)  # (discounted return, counters)
>>> bool(ret > 0), counters.size, bool(np.isclose(ret, np.sum(0.95 ** np.arange(50) * rewards)))
(True, 0, True)

**A compiled agent** (:class:`CompiledAgent`): the fast path. ``reset``, ``act`` and
``observe`` are numba ``@njit`` functions over plain arrays, and the package compiles the
whole trajectory around them (:func:`trajectory_kernel`), one compiled call per
trajectory like the built-ins. The method ``setup(self)`` (Python, once per run; it sees
the same attributes as a Python agent's methods) returns a tuple of arrays and numbers;
``reset(setup) -> state`` builds the per-trajectory state (any numba value, e.g. a tuple
of arrays) from it; ``act(state, x) -> int``; ``observe(state, x, u, y, r)`` updates it in
place. Random numbers inside them come from numba's ``np.random``, seeded with the
trajectory's seed before ``reset``:

>>> from numba import njit
>>> from bbrlcore.agents import CompiledAgent
>>> @njit
... def reset(setup):
...     theta, R, gamma, horizon, epsilon = setup
...     N, Np, P, supp, nsupp = bayes.mean_model_init(theta)
...     Q = np.zeros(theta.shape[:2])
...     bayes.q_solve(P, R, supp, nsupp, gamma, horizon, Q)
...     return N, Np, P, supp, nsupp, Q, R, gamma, horizon, epsilon
>>> @njit
... def act(state, x):
...     Q, epsilon = state[5], state[9]
...     if np.random.random() < epsilon:
...         return np.random.randint(0, Q.shape[1])
...     return bayes.argmax_random_tie(Q[x])
>>> @njit
... def observe(state, x, u, y, r):
...     N, Np, P, supp, nsupp, Q, R, gamma, horizon, epsilon = state
...     bayes.mean_model_update(N, Np, P, supp, nsupp, x, u, y)
...     bayes.q_solve(P, R, supp, nsupp, gamma, horizon, Q)
>>> class GreedyJit(CompiledAgent):
...     "e-Greedy on the posterior mean, compiled."
...     name = "my-egreedy-jit"
...     params = Greedy.params
...     reset, act, observe = reset, act, observe
...
...     def setup(self):
...         return (np.ascontiguousarray(self.prior.theta, dtype=np.float64),
...                 np.ascontiguousarray(self.prior.reward, dtype=np.float64),
...                 float(self.gamma), int(self.horizon), float(self.p["epsilon"]))
>>> alg = registry.as_algorithm(GreedyJit, "example")
>>> play = alg.make_player(D.builtin("GC"), alg.parse_params({"epsilon": "0.1"}), None,
...                        ts.episode())
>>> ret, counters = play(ts.mdps[0], 7)
>>> bool(ret > 0)
True

**Compiled once, not once per process.** The loop around an agent's functions is cached
on disk by numba (:mod:`bbrlcore.agents._kernel_cache`): keyed by the code of the
functions (and of the ``@njit`` functions they call), bbrlcore's sources and numba's
version, compiled when the agent is trained (``bbrl train`` refuses code that does not
compile), and loaded by every later process, a workflow's run jobs on a cluster
included. Functions defined where numba cannot cache them (an interactive session, a
doctest) are compiled once per process instead. Write them in a module file, with
``@njit(cache=True)`` so that numba caches them too.

The algorithms beyond the paper (:mod:`~bbrlcore.agents.psrl`,
:mod:`~bbrlcore.agents.boss`, :mod:`~bbrlcore.agents.bolt`,
:mod:`~bbrlcore.agents.mbie_eb`) are built-in compiled agents written this way: examples
of the API at full speed.

**A whole trajectory kernel**: an :class:`~bbrlcore.agents.base.Algorithm` with its own
``make_player``, as the built-ins do. Its players get the test MDPs on sparse rows (below)
when it says ``sparse=True``; an ``Algorithm`` written before them (``sparse`` False) gets
dense ``(nX, nU, nX)`` arrays, as it always did, up to 50 million entries per MDP
(:data:`bbrlcore.protocol.runner.MAX_DENSE_ENTRIES`; beyond, one line refusing it).

**Large problems: sparse rows.** The examples above work on dense ``(nX, nU, nX)``
arrays: right for the paper's problems, wasteful on a DeepSea of 902 states, where each
such array has 1.6 million entries of which 3,600 can be non-zero and every Q-iteration
sweep pays for all of them. The package stores test MDPs, and runs every built-in agent,
on **sparse rows** (:mod:`bbrlcore.mdp.rows`: the successors of each state-action pair,
padded to the widest row), and gives a plugin the same form besides the dense prior:

* ``self.layout`` — a :class:`~bbrlcore.mdp.rows.Layout`: ``succ`` (nX, nU, K), the
  successors of each pair in increasing order, and ``nsucc`` (nX, nU), how many. It is
  the prior's support joined with the test MDPs' transitions, so every transition the
  agent can observe has a slot (a slot the prior rules out has concentration 0);
* ``self.theta_rows`` and ``self.reward_rows`` — the prior's concentrations and the
  known rewards on those slots, arrays (nX, nU, K);
* :func:`bbrlcore.agents.bayes.slot` ``(self.layout, x, u, y)`` — the slot ``k`` of a
  transition (``-1``: none);
* :func:`~bbrlcore.agents.bayes.q_values` and :func:`~bbrlcore.agents.bayes.state_values`
  with ``layout=self.layout`` — the same solvers on rows, in time proportional to the
  transitions.

``self.prior.theta`` and ``self.prior.reward`` stay there (an FDM prior holds dense
arrays up to 50 million entries), so an agent may keep working on dense arrays where
they are small. The e-Greedy above on rows: counts on the slots, and the same
trajectories as the dense one:

>>> class GreedyRows(Greedy):
...     "e-Greedy on the posterior mean, on sparse rows."
...     name = "my-egreedy-rows"
...
...     def reset(self):
...         self.counts = self.theta_rows.copy()          # (nX, nU, K)
...         self.q = self.solve()
...
...     def solve(self, q=None):
...         P = self.counts / self.counts.sum(axis=2, keepdims=True)
...         return bayes.q_values(P, self.reward_rows, self.gamma, self.horizon, q,
...                               layout=self.layout)
...
...     def observe(self, state, action, next_state, reward):
...         k = bayes.slot(self.layout, state, action, next_state)
...         self.counts[state, action, k] += 1
...         self.q = self.solve(self.q)
>>> rows_alg = registry.as_algorithm(GreedyRows, "example")
>>> eps = rows_alg.parse_params({"epsilon": "0.1"})
>>> play_rows = rows_alg.make_player(D.builtin("GC"), eps, None, ts.episode())
>>> play_dense = registry.as_algorithm(Greedy, "example").make_player(
...     D.builtin("GC"), eps, None, ts.episode())
>>> play_rows(ts.mdps[1], 7)[0] == play_dense(ts.mdps[1], 7)[0]
True
>>> from bbrlcore.mdp import families
>>> deep = families.make("deepsea", size=30)             # 902 states, 2 actions
>>> big = protocol.new_test_set(deep.test, 1, 0.95, 50, seed=0)
>>> big.mdps.shape                    # each test MDP on its rows: (nX, nU, K), K = 2
(1, 902, 2, 2)
>>> play_big = rows_alg.make_player(deep.prior("accurate"), eps, None, big.episode())
>>> ret, _ = play_big(big.mdps[0], 7)                     # a fraction of a second
>>> bool(np.isfinite(ret))
True

A compiled agent does the same in its ``setup`` (return ``self.layout.succ``,
``self.layout.nsucc``, ``self.theta_rows``, ``self.reward_rows``) with the numba helpers
on rows listed in :mod:`bbrlcore.agents.bayes` (the posterior mean, the posterior and its
draws, the solvers); its ``observe`` still receives the successor state ``y``, whose slot
:func:`~bbrlcore.mdp.rows.slot_of` finds. The built-in e-Greedy, BEB, PSRL and BOLT are
written so.

**Episodes.** In an episodic experiment (``episodes: E`` in ``config.yaml``, ``bbrl
experiment new --episodes E``) the package's loop returns the environment to the initial
state after every ``episode_length`` H steps (``self.episode_length`` on a Python or
compiled agent's instance; 0 in a continuing one) and keeps the agent as it is: what it
learned carries over, ``reset`` is called once per interaction. An agent that acts
differently at an episode's start (a new posterior sample, a plan over the H steps left)
defines ``episode_start``: a method ``episode_start(self, k)`` of a Python agent, an
``@njit`` function ``episode_start(state, k)`` of a compiled one, called before the first
action of episode k = 0, 1, ..., E−1 (k = 0 right after ``reset``) and never in a
continuing interaction. Without it nothing changes: a plugin written before episodes
plays episodic experiments as it is.

**Stochastic rewards and starting distributions** (:mod:`bbrlcore.mdp.environment`). On
a test distribution with reward laws, ``observe`` receives the reward drawn at that step
from its law (Gaussian, Bernoulli, Beta; the trajectory's stream draws it), while the
prior's ``reward`` (``self.reward_rows``) holds the expected rewards; with a starting
distribution, each episode's first state is a draw of it. The package's loops (Python
and compiled) draw both; the kernels take them as ``gaussian`` = 2 (``Rstd`` then stacks
the laws' parameters: :func:`bbrlcore.mdp.environment.law_rows`) and ``initial_state``
the starts array (:func:`bbrlcore.mdp.environment.start_array`). A class's own
``trajectory`` kernel is given an int ``initial_state`` and a Gaussian flag as before, and
is refused on a test set with laws or starts.

**Its current policy.** A Python agent may define ``policy(self)``, returning its
current best policy: ``(nX,)`` actions or ``(nX, nU)`` probabilities (episodic: also
``(H, nX)`` / ``(H, nX, nU)``, one per step of the episode;
:func:`bbrlcore.mdp.evaluation.as_policy`). A run that asks for Colosseum's indicators
(``bbrl run --indicators``, :mod:`bbrlcore.mdp.indicators`) calls it every ``log_every``
steps, after ``observe``, and evaluates it exactly on the test MDP; without it the
indicators are unavailable for the agent (said once, the columns null). A compiled
agent may define an ``@njit`` function ``policy(state, out)`` writing its current policy
into ``out``, a float64 array (Hp, nX, nU) the package allocates: Hp = 1 in a continuing
interaction, Hp = H in an episodic one (``out[h]`` the policy at step h of the episode; a
policy that does not depend on the step is written into each ``out[h]``), each state's
action probabilities summing to 1, every entry written (``out`` is filled with NaN
before each call). The package calls it inside the compiled loop at the same rows
(:func:`indicator_kernel`, generated and cached on disk like :func:`trajectory_kernel`),
checks it and evaluates it there; it must not change the state nor draw random numbers,
and the trajectory is the one without indicators, bit for bit. A malformed policy is
one line naming the agent and the step (``my-agent: policy at step 100: the action
probabilities of state 3 sum to 2, not 1``).

Errors of the user's code (an exception in any of its methods, ``SystemExit`` included;
an action that is not an integer in ``[0, nU)``; functions that do not compile, or that
take other arguments than the loop gives them) stop the run with one line naming the
algorithm (and, while playing, the test MDP, the hook and its step: ``RuntimeError in
observe at step 11``, ``RuntimeError in episode_start(k=3), before step 12``,
:func:`hook_place`). An ``episode_start`` that is not a method ``episode_start(self, k)``
(or an ``@njit`` function), and a compiled agent's ``policy`` that is not an ``@njit``
function, are refused when the class is read, before any trajectory.
Anything a plugin prints goes to stderr (stdout carries bbrl's own output).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np
from numba import njit, types
from numba.extending import overload

from bbrlcore import crash
from bbrlcore.agents._indicators import final_weight as ind_final_weight
from bbrlcore.agents._indicators import gain_from as ind_gain_from
from bbrlcore.agents._indicators import is_row as ind_is_row
from bbrlcore.agents._indicators import needs_evaluation as ind_needs_evaluation
from bbrlcore.agents._indicators import row_continuing as ind_row_continuing
from bbrlcore.agents._indicators import row_episodic as ind_row_episodic
from bbrlcore.agents._kernels import env_reset, env_reward_rows, env_step_rows
from bbrlcore.agents.base import (
    FLOAT64,
    Algorithm,
    CostFeatures,
    Episode,
    OfflineCostFeatures,
    Param,
    TrainContext,
    Trained,
    reward_buffer,
)
from bbrlcore.errors import BBRLError
from bbrlcore.mdp.evaluation import POLICY_SUM_ATOL, episode_values_stochastic
from bbrlcore.mdp.reward_prior import reward_prior_of
from bbrlcore.mdp.rows import read_only as _readonly


class AgentError(BBRLError):
    """The user's agent code failed (or played an invalid action) during a trajectory.
    :func:`bbrlcore.protocol.run_agent` adds the test MDP to the message. ``step``: the
    step played (or before which a hook ran); ``error`` (the exception's type name),
    ``hook`` and ``place`` (:func:`hook_place`): where an exception of the user's code
    was raised, when it was."""

    def __init__(self, message: str, step: int | None = None, *, error: str = "",
                 hook: str = "", place: str = "") -> None:
        super().__init__(message)
        self.step = step
        self.error = error
        self.hook = hook
        self.place = place


#: The hooks of an agent the package's loop calls, by the code the compiled loop writes
#: into ``status[3]`` while it runs one (``status[4]``: the episode k of
#: ``episode_start``), so that an exception is reported with its hook and step.
HOOKS = ("reset", "episode_start", "act", "observe", "counter_values", "policy")
_RESET, _START, _ACT, _OBSERVE, _COUNT, _POLICY = range(len(HOOKS))


def hook_place(hook: str, step: int, k: int = 0, horizon: int = 0) -> tuple[str, str]:
    """Where a hook of an agent runs in a trajectory of ``horizon`` steps: ``(hook, place)``
    for the messages of an error raised there. ``step``: the step played by ``act`` and
    ``observe``, the step before which ``episode_start`` runs (episode ``k``).

    >>> hook_place("observe", 11)
    ('observe', 'at step 11')
    >>> hook_place("episode_start", 12, 3)
    ('episode_start(k=3)', 'before step 12')
    >>> hook_place("reset", 0), hook_place("counter_values", 0, horizon=200)
    (('reset', 'before step 0'), ('counter_values', 'after step 199'))
    """
    if hook == "reset":
        return hook, "before step 0"
    if hook == "episode_start":
        return f"episode_start(k={k})", f"before step {step}"
    if hook == "counter_values":
        return hook, f"after step {horizon - 1}"
    return hook, f"at step {step}"


def hook_error(name: str, exc: BaseException, hook: str, step: int, k: int = 0,
               horizon: int = 0) -> AgentError:
    """The :class:`AgentError` of an exception ``exc`` raised by hook ``hook`` of agent
    ``name``: ``name: Type in hook, place: message``, e.g. ``my-agent: RuntimeError in
    episode_start(k=3), before step 12: boom`` (:func:`hook_place`)."""
    where, place = hook_place(hook, step, k, horizon)
    sep = " " if place.startswith("at ") else ", "
    what = describe_error(exc).replace(":", f" in {where}{sep}{place}:", 1)
    return AgentError(f"{name}: {what}", max(step, 0), error=type(exc).__name__,
                      hook=where, place=place)


@contextlib.contextmanager
def plugin_output() -> Iterator[None]:
    """What the user's code prints goes to stderr (stdout carries bbrl's own output)."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def describe_error(exc: BaseException) -> str:
    """``Type: first line`` of an exception raised by a plugin's code; ``SystemExit`` (a
    plugin calling ``sys.exit``) says so."""
    if isinstance(exc, SystemExit):
        return (f"SystemExit({exc.code!r}): the plugin called sys.exit (or exit), which "
                "would end bbrl")
    return f"{type(exc).__name__}: {_first_line(exc)}"


def user_call(name: str, what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, the code of plugin ``name`` (its prints sent to stderr): anything it
    raises, ``SystemExit`` included (``KeyboardInterrupt`` aside), becomes one
    :class:`BBRLError` naming the plugin and ``what`` it was doing."""
    try:
        with plugin_output():
            return fn(*args)
    except (BBRLError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001 - the user's code: any error
        raise BBRLError(f"{name}: {what} raised {describe_error(exc)}") from None


def _guarded(fn: Callable[..., Any] | None, name: str, what: str) -> Callable[..., Any] | None:
    """``fn`` calling through :func:`user_call` (None stays None)."""
    if fn is None:
        return None

    def call(*args: Any) -> Any:
        return user_call(name, what, fn, *args)

    return call


class _AgentBase:
    #: The algorithm's name (lowercase letters, digits and '-'): the first part of its
    #: agent ids (``name__param=value``).
    name: ClassVar[str] = ""
    #: The name the report shows (optional; default: :attr:`name`).
    display_name: ClassVar[str] = ""
    #: Its parameters, in the order agent ids list them.
    params: ClassVar[tuple[Param, ...]] = ()
    #: Names of integer counters reported after each trajectory (extra run-table columns).
    counters: ClassVar[tuple[str, ...]] = ()
    #: Optional cross-field check ``(params, prior, gamma, horizon) -> error text | None``.
    setting_check: ClassVar[Callable[..., str | None] | None] = None
    #: Optional work amounts of a trajectory (:data:`~bbrlcore.agents.base.CostFeatures`);
    #: without them the cost model probes the algorithm.
    cost_features: ClassVar[CostFeatures | None] = None
    offline_cost_features: ClassVar[OfflineCostFeatures | None] = None
    #: Optional line about a whole run ``(params, totals, n_steps) -> text | None``, from
    #: the sums of its :attr:`counters` (:attr:`~bbrlcore.agents.base.Algorithm.run_note`).
    run_note: ClassVar[Callable[..., str | None] | None] = None

    #: The reward priors it learns under (:data:`bbrlcore.mdp.reward_prior.REWARD_PRIORS`):
    #: ``("known",)`` by default, and a prior whose rewards are unknown (``UGC+rbeta``) is
    #: refused for it in one line; an agent that learns the rewards says
    #: ``("known", "beta", "nig")`` (or the ones it handles) and reads
    #: ``self.reward_prior``.
    reward_priors: ClassVar[tuple[str, ...]] = ("known",)
    #: True for an agent that takes a prior with a Dirichlet on every next state
    #: (``+dir<α>``, :mod:`bbrlcore.mdp.transition_prior`; ``self.prior.dirichlet_all``
    #: is α; its ``theta_rows`` are then α on every slot, and the states outside a row's
    #: slots have α each); False (the default): such a prior is refused for it in one line.
    dirichlet_all: ClassVar[bool] = False

    def __init__(self, params: dict[str, Any], prior: Any, learned: Any = None,
                 gamma: float = 0.95, horizon: int = 250) -> None:
        self.p = params
        self.prior = prior
        self.learned = learned
        self.gamma = gamma
        self.horizon = horizon
        #: H: the steps of an episode (0: a continuing interaction; set when the agent is
        #: placed on a test set)
        self.episode_length = 0
        self.n_states = int(prior.n_states)
        self.n_actions = int(prior.n_actions)
        self.rng = np.random.default_rng(0)
        # sparse rows (bbrlcore.mdp.rows): the prior's support until the agent is placed
        # on a test set (then joined with the test MDPs' transitions, _place)
        self.layout = prior.support_layout
        self.theta_rows = prior.theta_rows
        self.reward_rows = prior.reward_rows
        #: what the prior says about the rewards (:class:`~bbrlcore.mdp.reward_prior.
        #: RewardPrior`: ``kind`` known, beta or nig, and its hyper-parameters)
        self.reward_prior = reward_prior_of(prior)

    def train(self, prior: Any, ctx: TrainContext) -> Any:
        """Offline learning from ``prior`` (optional). Return anything JSON-able (numbers,
        strings, lists, dicts; numpy arrays become lists): it is stored in the agent
        artefact and given back as ``self.learned``. ``ctx`` has the seed, γ and horizon
        of offline learning and a ``progress(done, total)`` callback."""
        return None


class PythonAgent(_AgentBase):
    """Base class of an agent written in Python (see the module docstring)."""

    def reset(self) -> None:
        """Start a trajectory again from the prior (``self.rng`` is already set)."""

    def act(self, state: int) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def observe(self, state: int, action: int, next_state: int, reward: float) -> None:
        """Learn from one transition."""

    def episode_start(self, k: int) -> None:
        """Optional: episode ``k`` (0, 1, ..., E−1) of an episodic interaction starts, the
        environment being back in its initial state; called before the episode's first
        :meth:`act` (k = 0 right after :meth:`reset`), never in a continuing interaction.
        Default: nothing (what the agent learned is kept across episodes)."""

    def counter_values(self) -> tuple[int, ...]:
        """The values of :attr:`counters` after a trajectory."""
        return ()


class CompiledAgent(_AgentBase):
    """Base class of a compiled agent: ``reset``, ``act`` and ``observe`` are numba
    ``@njit`` functions (plain functions assigned to the class); ``setup`` prepares their
    inputs in Python (see the module docstring). The package's loop around them is
    compiled once and cached on disk (:func:`trajectory_kernel`). Optional ``@njit``
    hooks: ``counter_values``, ``episode_start`` and ``policy`` (its current policy, for
    Colosseum's indicators: written into a preallocated array, evaluated inside the
    compiled loop by :func:`indicator_kernel`)."""

    reset: ClassVar[Any] = None
    act: ClassVar[Any] = None
    observe: ClassVar[Any] = None
    #: Optional ``@njit`` ``(state) -> int64 array`` of the :attr:`counters` (or a Python
    #: function of the final state, returned to Python after each trajectory).
    counter_values: ClassVar[Any] = None
    #: Optional ``@njit`` ``(state, k) -> None``: episode ``k`` (0, 1, ..., E−1) of an
    #: episodic interaction starts (the environment back in its initial state), called
    #: inside the compiled loop before the episode's first ``act`` (k = 0 right after
    #: ``reset``), never in a continuing interaction. Default: nothing.
    episode_start: ClassVar[Any] = None
    #: Optional ``@njit`` ``(state, out) -> None``: the agent's current best policy, for
    #: Colosseum's indicators (``bbrl run --indicators``). ``out`` is a float64 array
    #: (Hp, nX, nU), Hp = 1 in a continuing interaction and H (the episode length) in an
    #: episodic one (``out[h]``: the policy at step h of the episode), filled with NaN
    #: before each call; write each state's action probabilities (rows summing to 1; a
    #: deterministic policy: a 1 at its action). Called inside the compiled loop at
    #: Colosseum's rows only (every ``log_every`` steps, after ``observe``, and once at
    #: the end); it must not change the state nor draw random numbers (the trajectory is
    #: the one without indicators). Default: none (the indicators are unavailable).
    policy: ClassVar[Any] = None
    #: Optional: a kernel of the package's loop of the class's own (an ``@njit`` function
    #: calling :func:`trajectory_loop`), played instead of :func:`trajectory_kernel`'s:
    #: ``trajectory(setup, P, R, Rstd, gaussian, initial_state, gamma, horizon, seed,
    #: status, rewards)``, passing ``rewards`` on to the loop (a kernel without it, as
    #: written before bbrl recorded rewards, still runs; its rows carry no rewards).
    #: Not needed: that one is cached on disk too.
    trajectory: ClassVar[Any] = None

    def setup(self) -> tuple:
        """Inputs of ``reset`` (a tuple of arrays and numbers), once per run. Default:
        ``(theta, reward)`` of the prior, as float64 arrays."""
        return (np.ascontiguousarray(self.prior.theta, dtype=np.float64),
                np.ascontiguousarray(self.prior.reward, dtype=np.float64))


# ---------------------------------------------------------------------------------------
# From a class to an Algorithm


def algorithm_of(cls: type, what: str) -> Algorithm:
    """The :class:`Algorithm` of a :class:`PythonAgent` or :class:`CompiledAgent`
    subclass (or of any class with an ``act`` method), checking what it must define."""
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or not name:
        raise BBRLError(f"{what}: {cls.__name__} has no algorithm name (a class attribute "
                        "name = 'my-algorithm')")
    display = getattr(cls, "display_name", "") or ""  # checked by registry.as_algorithm
    params = tuple(getattr(cls, "params", ()) or ())
    if not all(isinstance(p, Param) for p in params):
        raise BBRLError(f"{what}: {cls.__name__}.params must be a tuple of Param")
    counters = tuple(getattr(cls, "counters", ()) or ())
    compiled = isinstance(cls, type) and issubclass(cls, CompiledAgent)
    # the package's loops play on sparse rows; a compiled agent's own dense kernel not
    own = getattr(cls, "trajectory", None) if compiled else None
    sparse = not (own is not None and hasattr(own, "py_func"))
    prepare = None
    if compiled:
        missing = [m for m in ("reset", "act", "observe")
                   if not hasattr(getattr(cls, m, None), "py_func")]
        if missing:
            raise BBRLError(f"{what}: {cls.__name__} must define {', '.join(missing)} as numba "
                            "@njit functions (a CompiledAgent)")
        start = getattr(cls, "episode_start", None)
        if start is not None and not hasattr(start, "py_func"):
            raise BBRLError(f"{what}: {cls.__name__}.episode_start must be a numba @njit "
                            "function episode_start(state, k), called before each "
                            "episode's first act (a CompiledAgent), or left out; got "
                            f"{_shown(start)}")
        pol = getattr(cls, "policy", None)
        if pol is not None and not hasattr(pol, "py_func"):
            raise BBRLError(f"{what}: {cls.__name__}.policy must be a numba @njit function "
                            "policy(state, out) writing the agent's current policy into "
                            "out (a CompiledAgent), or left out; got "
                            f"{_shown(pol)}")
        if pol is not None and not sparse:
            raise BBRLError(f"{what}: {cls.__name__}.policy needs the package's trajectory "
                            "loop: a class with its own trajectory kernel "
                            "(CompiledAgent.trajectory) cannot have it")
        make_player = _compiled_player(cls, name, counters)

        def prepare(prior: Any, params: dict, trained: Trained | None, ep: Episode) -> None:
            make_player(prior, params, trained, ep)  # compiles (or finds it compiled)
    else:
        for m in ("act",):
            if not callable(getattr(cls, m, None)) or getattr(cls, m) is PythonAgent.act:
                raise BBRLError(f"{what}: {cls.__name__} must define the method {m}(state)")
        wrong = _not_a_method(cls, "episode_start", 1)
        if wrong:
            raise BBRLError(f"{what}: {cls.__name__}.episode_start must be a method "
                            "episode_start(self, k), called before each episode's first "
                            f"act (a PythonAgent), or left out; got {wrong}")
        make_player = _python_player(cls, name, counters)
    trains = getattr(cls, "train", None) not in (None, _AgentBase.train)
    return Algorithm(
        name=name,
        params=params,
        make_player=make_player,
        train=_trainer(cls, name) if trains else None,
        counters=counters,
        has_compat=any(p.name == "compat" for p in params),
        doc=(cls.__doc__ or "").strip(),
        setting_check=_guarded(getattr(cls, "setting_check", None), name, "setting_check"),
        cost_features=_guarded(getattr(cls, "cost_features", None), name, "cost_features"),
        offline_cost_features=_guarded(getattr(cls, "offline_cost_features", None), name,
                                       "offline_cost_features"),
        display_name=display,
        run_note=_guarded(getattr(cls, "run_note", None), name, "run_note"),
        prepare=prepare,
        indicator_player=(_python_indicator_player(cls, name, counters)
                          if not compiled and callable(getattr(cls, "policy", None))
                          else _compiled_indicator_player(cls, name, counters)
                          if compiled and getattr(cls, "policy", None) is not None
                          else None),
        sparse=sparse,
        # the package's loops return to the initial state after every episode; a compiled
        # agent's own dense kernel (written before episodes) does not
        episodic=sparse,
        reward_priors=_reward_priors(cls, what),
        dirichlet_all=getattr(cls, "dirichlet_all", False) is True,
    )


def _reward_priors(cls: type, what: str) -> tuple[str, ...]:
    """The class's ``reward_priors``, checked (one line naming it otherwise)."""
    from bbrlcore.mdp.reward_prior import REWARD_PRIORS

    v = getattr(cls, "reward_priors", ("known",))
    if (not isinstance(v, (tuple, list)) or not v
            or any(k not in REWARD_PRIORS for k in v)):
        raise BBRLError(f"{what}: {cls.__name__}.reward_priors must be a non-empty tuple of "
                        f"{', '.join(REWARD_PRIORS)}; got {v!r}")
    return tuple(v)


def _shown(v: Any) -> str:
    """A value in a message: ``int 5``, ``function plain (not decorated with @njit)``."""
    import inspect

    if inspect.isfunction(v):
        return f"function {v.__name__} (not decorated with @njit)"
    text = repr(v)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(v).__name__} {text}"


def _not_a_method(cls: type, name: str, n_args: int) -> str:
    """"" when ``cls.name`` is absent or a method taking ``n_args`` arguments besides
    ``self``; else what it is instead (``int 5``, ``a method episode_start(self)``)."""
    import inspect

    fn = inspect.getattr_static(cls, name, None)
    if fn is None:
        return ""
    if isinstance(fn, staticmethod):
        fn, bound = fn.__func__, n_args
    elif isinstance(fn, classmethod):
        fn, bound = fn.__func__, n_args + 1  # (cls)
    elif inspect.isfunction(fn):
        bound = n_args + 1  # (self)
    else:
        bound = n_args  # (a callable object: called as it is)
    if not callable(fn):
        return _shown(fn)
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # (a callable without a signature to read)
        return ""
    try:
        sig.bind(*range(bound))
    except TypeError:
        return f"a method {name}({', '.join(sig.parameters)})"
    return ""


def _instance(cls: type, params: dict, prior: Any, learned: Any, gamma: float,
              horizon: int) -> Any:
    if issubclass(cls, _AgentBase):
        return cls(params, prior, learned, gamma, horizon)
    obj = cls.__new__(cls)  # a duck-typed class: set the same attributes
    _AgentBase.__init__(obj, params, prior, learned, gamma, horizon)
    init = getattr(cls, "__init__", None)
    if init is not None and init is not object.__init__:
        try:
            init(obj)
        except TypeError:
            pass
    return obj


def _new_agent(cls: type, name: str, params: dict, prior: Any, learned: Any, gamma: float,
               horizon: int) -> Any:
    return user_call(name, "__init__", _instance, cls, params, prior, learned, gamma, horizon)


def _place(agent: Any, prior: Any, ep: Episode) -> None:
    """Give the agent its sparse rows (:class:`~bbrlcore.agents._layout.Setting`): the
    layout of its prior's support joined with the test MDPs' (``agent.layout``), the
    prior's concentrations and rewards on it (``agent.theta_rows``,
    ``agent.reward_rows``)."""
    from bbrlcore.agents._layout import setting

    st = setting(prior, ep)
    agent.layout = st.layout
    agent.theta_rows = st.theta
    agent.reward_rows = st.Rm
    agent.episode_length = int(ep.episode_length)


def _trainer(cls: type, name: str) -> Callable[..., Trained]:
    def train(prior: Any, params: dict, ctx: TrainContext) -> Trained:
        agent = _new_agent(cls, name, params, prior, None, ctx.gamma, ctx.horizon)
        learned = user_call(name, "train", agent.train, prior, ctx)
        return Trained(info={"learned": _jsonable(learned, name)})

    return train


def _jsonable(v: Any, name: str) -> Any:
    import json

    def conv(o: Any) -> Any:
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, np.generic):
            return o.item()
        raise TypeError(type(o).__name__)

    try:
        return json.loads(json.dumps(v, default=conv, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise BBRLError(f"{name}: train must return something JSON-able (numbers, strings, "
                        f"lists, dicts, numpy arrays), not {exc}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def _action(a: Any, nU: int, name: str, step: int) -> int:
    if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
        raise AgentError(f"{name}: act returned {a!r} ({type(a).__name__}) at step {step}, "
                         f"expected an integer action in [0, {nU})", step)
    if not 0 <= a < nU:
        raise AgentError(f"{name}: act returned {int(a)} at step {step}, outside [0, {nU})",
                         step)
    return int(a)


def _py_start(start: np.ndarray, nX: int, env: np.random.Generator) -> int:
    """A starting state drawn with the Python player's generator
    (:func:`bbrlcore.mdp.environment.start_array`: m = 0 uniform, m = 1 fixed)."""
    m = start.shape[1]
    if m == 0:
        return int(env.integers(nX))
    if m == 1:
        return int(start[0, 0])
    i = int(np.searchsorted(start[1], env.random(), side="right"))
    return int(start[0, min(i, m - 1)])


def _py_law_reward(R: np.ndarray, Rstd: np.ndarray, x: int, u: int, k: int,
                   env: np.random.Generator) -> float:
    """A draw of slot k's reward law (:func:`bbrlcore.agents._kernels.env_law_reward`)
    with the Python player's generator."""
    nX = R.shape[0]
    kind = Rstd[x, u, k]
    if kind == 0.0:
        return float(R[x, u, k])
    loc, scale = float(Rstd[nX + x, u, k]), float(Rstd[2 * nX + x, u, k])
    if kind == 1.0:
        return loc + scale * float(env.standard_normal())
    a = float(Rstd[3 * nX + x, u, k])
    if kind == 2.0:
        return loc + scale if env.random() < a else loc
    return loc + scale * float(env.beta(a, float(Rstd[4 * nX + x, u, k])))


def _python_player(cls: type, name: str, counters: tuple[str, ...]):
    def make_player(prior: Any, params: dict, trained: Trained | None, ep: Episode):
        return _python_trajectory(cls, name, counters, prior, params, trained, ep, None)

    return make_player


def _python_indicator_player(cls: type, name: str, counters: tuple[str, ...]):
    """The :attr:`~bbrlcore.agents.base.Algorithm.indicator_player` of a Python agent
    with a ``policy`` method: Colosseum's indicators of ``self.policy()`` at the rows."""
    def indicator_player(prior: Any, params: dict, trained: Trained | None, ep: Episode,
                         log_every: int):
        from bbrlcore.agents._indicators import Request

        return _python_trajectory(cls, name, counters, prior, params, trained, ep,
                                  Request(ep, log_every))

    return indicator_player


def _python_trajectory(cls: type, name: str, counters: tuple[str, ...], prior: Any,
                       params: dict, trained: Trained | None, ep: Episode, req: Any):
    """A Python agent's player; with ``req`` (an :class:`._indicators.Request`) one that
    also returns Colosseum's indicators of its ``policy()`` (the same trajectory)."""
    learned = (trained.info or {}).get("learned") if trained is not None else None
    agent = _new_agent(cls, name, params, prior, learned, ep.gamma, ep.horizon)
    _place(agent, prior, ep)
    R, Rstd = np.asarray(ep.R), np.asarray(ep.Rstd)
    mode, starts = int(ep.gaussian), ep.start
    lay = ep.layout()
    succ, nsucc = lay.succ, lay.nsucc
    nC = len(counters)
    # (a class written before episodes has no episode_start: nothing to call; one
    # that is not a method was refused when the class was read, algorithm_of)
    start = getattr(agent, "episode_start", None) or (lambda k: None)

    if req is not None:
        from bbrlcore.agents import _indicators as IK

        L, T = req.log_every, int(ep.horizon)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None) -> Any:
        rewards = reward_buffer(rewards, ep.horizon)
        nX, nU, _ = P.shape
        if req is not None:
            evr = req.evaluator(P)
            refs = req.refs(evr)
            acc, hist = IK.ind_alloc(T, L)
            Vc = np.zeros(nX)

            def log_row(t: int, final: bool, x: int, s: int) -> None:
                w = IK.final_weight(T, L) if final else L
                pol = agent.policy() if IK.needs_evaluation(acc) else None
                try:
                    if evr.episodic:
                        V = Vc if pol is None else evr.episode_values(pol)
                        IK.row_episodic(acc, hist, t, T, w, final, V, s, refs[0],
                                        refs[1], refs[2], refs[3], Vc)
                    else:
                        g = 0.0 if pol is None else evr.gain(pol, x)
                        IK.row_continuing(acc, hist, t, T, w, final, g, refs[4],
                                          refs[5])
                except BBRLError as exc:
                    raise AgentError(f"{name}: policy() at step {t}: {exc}",
                                     t) from None
        H = int(ep.episode_length)
        left = H if H > 0 else -1  # steps left in the episode
        env_ss, agent_ss = np.random.SeedSequence(int(seed)).spawn(2)
        env = np.random.Generator(np.random.PCG64(env_ss))
        agent.rng = np.random.Generator(np.random.PCG64(agent_ss))
        cdf = np.cumsum(P, axis=2)  # (the test MDP on its sparse rows)
        step, k_ep, hook = 0, 0, "reset"  # (where the user's code runs: its errors)
        ret, disc = 0.0, 1.0
        # (run_agent sends the user's prints to stderr around the whole run)
        try:
            agent.reset()
            x = _py_start(starts, nX, env)
            s0 = x  # the episode's start
            if H > 0:
                hook = "episode_start"
                start(0)
            for step in range(ep.horizon):
                hook = "act"
                a = _action(agent.act(x), nU, name, step)
                row = cdf[x, a]
                k = min(int(np.searchsorted(row, env.random(), side="right")),
                        int(nsucc[x, a]) - 1)
                while P[x, a, k] == 0.0 and k > 0:  # rounding at the row's end
                    k -= 1
                y = int(succ[x, a, k])
                r = float(R[x, a, k])
                if mode == 1:
                    r += float(Rstd[x, a, k]) * float(env.standard_normal())
                elif mode == 2:
                    r = _py_law_reward(R, Rstd, x, a, k, env)
                rewards[step] = r
                ret += disc * r
                disc *= ep.gamma
                hook = "observe"
                agent.observe(x, a, y, r)
                x = y
                if req is not None and step > 0 and step % L == 0:
                    hook = "policy"
                    log_row(step, False, x, s0)
                left -= 1
                if left == 0 and step + 1 < ep.horizon:  # the episode's end
                    left = H
                    x = _py_start(starts, nX, env)
                    s0 = x
                    k_ep, hook = (step + 1) // H, "episode_start"
                    start(k_ep)
            if req is not None:  # the final row (after a last episode: the next start)
                if H > 0 and ep.horizon % H == 0:
                    s0 = _py_start(starts, nX, env)
                hook = "policy"
                log_row(ep.horizon - 1, True, x, s0)
            hook = "counter_values"
            cnt = np.asarray(agent.counter_values(), dtype=np.int64) if nC else _NONE
        except (AgentError, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - the user's code: any error
            at = k_ep * H if hook == "episode_start" else step
            raise hook_error(name, exc, hook, at, k_ep, ep.horizon) from None
        if cnt.shape != (nC,):
            raise AgentError(f"{name}: counter_values returned {cnt.size} values, "
                             f"expected {nC} ({', '.join(counters)})")
        if req is not None:
            return ret, cnt, IK.finish(acc, evr, rewards, T)
        return ret, cnt

    return play


_NONE = np.zeros(0, dtype=np.int64)


@njit(error_model="numpy")
def compiled_trajectory(reset, act, observe, setup, P, R, Rstd, gaussian, initial_state,
                        gamma, horizon, seed, status, rewards=None):
    """One trajectory of a compiled agent: the package's loop (:func:`trajectory_loop`)
    around its functions, given as arguments; returns ``(discounted return, final agent
    state)`` (and fills ``rewards``, when given, as the loop does).

    ``status[0]`` holds the step being played, ``status[1]`` an invalid action (the
    trajectory stops and returns with ``status[2] = 1``); a status of 5 entries also
    gets the hook being run (``status[3]``, its index in :data:`HOOKS`) and the episode
    of ``episode_start`` (``status[4]``; ``status[0]`` is then the step it runs before),
    for the message of an error raised there. Not cached: it takes functions as
    arguments, so it is compiled once per process for each agent (outside the timing).
    The package itself plays compiled agents with :func:`trajectory_kernel` (the same
    loop, specialised once per agent and cached on disk).
    """
    return trajectory_loop(reset, act, observe, final_state, setup, P, R, Rstd, gaussian,
                           initial_state, gamma, horizon, seed, status, rewards)


def record_reward(rewards, t, r):  # pragma: no cover - numba's (see the overload below)
    """``rewards[t] = r`` inside a compiled loop; nothing when ``rewards`` is None (a
    kernel calling :func:`trajectory_loop` without a rewards array, as before bbrl
    recorded them): resolved by type when the loop is compiled, so neither costs a
    branch."""
    if rewards is not None:
        rewards[t] = r


@overload(record_reward, inline="always")
def _record_reward(rewards, t, r):
    if rewards is None or isinstance(rewards, (types.NoneType, types.Omitted)):
        def nothing(rewards, t, r):
            return None

        return nothing

    def store(rewards, t, r):
        rewards[t] = r

    return store


def start_episode(episode_start, state, k):  # pragma: no cover - numba's (overload below)
    """``episode_start(state, k)`` inside a compiled loop; nothing when ``episode_start``
    is None (an agent without the hook, or a kernel written before episodes): resolved by
    type when the loop is compiled."""
    if episode_start is not None:
        episode_start(state, k)


@overload(start_episode, inline="always")
def _start_episode(episode_start, state, k):
    if episode_start is None or isinstance(episode_start, (types.NoneType, types.Omitted)):
        def nothing(episode_start, state, k):
            return None

        return nothing

    def call(episode_start, state, k):
        episode_start(state, k)

    return call


@njit(cache=True, error_model="numpy")
def no_episode_start(state, k):
    """``episode_start`` of a compiled agent without one: nothing."""
    return None


@njit(cache=True, error_model="numpy")
def no_policy(state, out):
    """``policy`` of a compiled agent without one (never called: its indicator kernel is
    never compiled)."""
    return None


@njit(cache=True, error_model="numpy")
def check_policy(out, atol):
    """Kernel: ``(0, ...)`` when every row of ``out`` (Hp, nX, nU) is a distribution over
    the actions; ``(1, h, x, u, value)`` at the first entry that is not a finite number
    >= 0 (NaN: an entry the policy left unwritten); ``(2, h, x, -1, sum)`` at the first
    row whose sum is not within ``atol`` of 1."""
    Hp, nX, nU = out.shape
    for h in range(Hp):
        for x in range(nX):
            s = 0.0
            for u in range(nU):
                v = out[h, x, u]
                if not (v >= 0.0) or v == np.inf:
                    return 1, h, x, u, v
                s += v
            if abs(s - 1.0) > atol:
                return 2, h, x, -1, s
    return 0, 0, 0, 0, 0.0


#: The slots of ``ind``'s problem array (:func:`indicator_arrays`): the check's code,
#: the row's step, and where (h, x, u) and the value or sum of :func:`check_policy`.
_BAD_SIZE = 6


def indicator_arrays(req: Any, evr: Any) -> tuple:  # (evr None: the types only)
    """``ind``, the indicator arguments of :func:`trajectory_loop_rows` for one test MDP:
    ``(L, acc, hist, out, V0, Vc, rbar, optimal_start, worst_start, mu0, H, optimal,
    worst, scratch_i, scratch_f, bad)``: the request's ``log_every``, the accumulator and
    its history (:func:`bbrlcore.agents._indicators.ind_alloc`), the policy buffer
    ``out`` (Hp, nX, nU) (Hp = H episodic, 1 continuing), the evaluation's work arrays,
    the test MDP's expected rewards and references (:class:`~bbrlcore.agents._indicators.
    Request`) and the problem of a malformed policy (``bad``)."""
    from bbrlcore.agents import _indicators as IK

    T, L = int(req.ep.horizon), int(req.log_every)
    nX, nU = (int(n) for n in req.nsucc.shape)
    acc, hist = IK.ind_alloc(T, L)
    if evr is None:  # (arrays of the right types: to compile the kernel)
        refs: tuple = (np.zeros(nX), np.zeros(nX), np.zeros(nX), 1, 1.0, 0.0)
        rbar = np.zeros((nX, nU))
    else:
        refs, rbar = req.refs(evr), evr.rbar
    si, sf = IK.gain_scratch(req.nsucc)
    Hp = req.H if req.episodic else 1
    f64 = np.float64
    return (L, acc, hist, np.full((Hp, nX, nU), np.nan), np.zeros(nX), np.zeros(nX),
            np.ascontiguousarray(rbar, dtype=f64),
            np.ascontiguousarray(refs[0], dtype=f64), np.ascontiguousarray(refs[1], dtype=f64),
            np.ascontiguousarray(refs[2], dtype=f64), int(refs[3]), float(refs[4]),
            float(refs[5]), si, sf, np.zeros(_BAD_SIZE))


@njit(error_model="numpy", inline="always")
def policy_row(ind, policy, state, P, succ, nsucc, T, episode_length, t, x, s, final,
               status, hooks):
    """One of Colosseum's rows of a compiled agent with a ``policy`` hook
    (:mod:`bbrlcore.agents._indicators`): at an in-loop row (``t`` > 0 a multiple of L)
    or the ``final`` one, ``policy(state, out)`` writes the agent's current policy into
    ``out`` (filled with NaN before), which is checked (:func:`check_policy`) and
    evaluated on the test MDP (``P`` on its rows ``succ``, ``nsucc``): episodic,
    :math:`V^\\pi_0` from the episode's start ``s``; continuing, the gain from the
    current state ``x``. False (and the problem in ``ind``'s last array) for a
    malformed policy."""
    (L, acc, hist, out, V0, Vc, rbar, refs_s, refs_w, mu0, Hr, opt, worst, si, sf,
     bad) = ind
    if not final and not ind_is_row(t, L):
        return True
    tt = T - 1 if final else t
    w = ind_final_weight(T, L) if final else L
    episodic = episode_length > 0
    g = 0.0
    if ind_needs_evaluation(acc):
        out[:] = np.nan
        if hooks:
            status[0] = tt
            status[3] = 5  # policy (HOOKS)
        policy(state, out)
        code, h, z, u, v = check_policy(out, POLICY_SUM_ATOL)
        if code != 0:
            bad[0] = code
            bad[1] = tt
            bad[2] = h
            bad[3] = z
            bad[4] = u
            bad[5] = v
            return False
        if episodic:
            episode_values_stochastic(succ, nsucc, P, rbar, out, Hr, V0)
        else:
            g = ind_gain_from(succ, nsucc, P, rbar, out[0], np.zeros(1, np.int64), True, x,
                              si, sf)
    if episodic:
        ind_row_episodic(acc, hist, tt, T, w, final, V0, s, refs_s, refs_w, mu0, Hr, Vc)
    else:
        ind_row_continuing(acc, hist, tt, T, w, final, g, opt, worst)
    return True


def indicator_row(ind, policy, state, P, succ, nsucc, T, episode_length, t, x, s, final,
                  status, hooks):  # pragma: no cover - numba's (see the overload below)
    """:func:`policy_row` inside a compiled loop; nothing (True) when ``ind`` is None (a
    trajectory without indicators): resolved by type when the loop is compiled."""
    return True


@overload(indicator_row, inline="always")
def _indicator_row(ind, policy, state, P, succ, nsucc, T, episode_length, t, x, s, final,
                   status, hooks):
    if ind is None or isinstance(ind, (types.NoneType, types.Omitted)):
        def nothing(ind, policy, state, P, succ, nsucc, T, episode_length, t, x, s, final,
                    status, hooks):
            return True

        return nothing

    def row(ind, policy, state, P, succ, nsucc, T, episode_length, t, x, s, final, status,
            hooks):
        return policy_row(ind, policy, state, P, succ, nsucc, T, episode_length, t, x, s,
                          final, status, hooks)

    return row


def final_indicator_row(ind, policy, state, P, succ, nsucc, T, episode_length, x, s,
                        initial_state, status, hooks):  # pragma: no cover - numba's
    """Colosseum's final row (:func:`policy_row`) after the loop; when the last step
    ended an episode, from the next episode's start (drawn here, after the trajectory,
    as Colosseum's loop has already reset). Nothing (True) when ``ind`` is None."""
    return True


@overload(final_indicator_row, inline="always")
def _final_indicator_row(ind, policy, state, P, succ, nsucc, T, episode_length, x, s,
                         initial_state, status, hooks):
    if ind is None or isinstance(ind, (types.NoneType, types.Omitted)):
        def nothing(ind, policy, state, P, succ, nsucc, T, episode_length, x, s,
                    initial_state, status, hooks):
            return True

        return nothing

    def row(ind, policy, state, P, succ, nsucc, T, episode_length, x, s, initial_state,
            status, hooks):
        if episode_length > 0 and T % episode_length == 0:
            s = env_reset(initial_state, P.shape[0])
        return policy_row(ind, policy, state, P, succ, nsucc, T, episode_length, T - 1, x,
                          s, True, status, hooks)

    return row


@njit(error_model="numpy", inline="always")
def trajectory_loop(reset, act, observe, counter_values, setup, P, R, Rstd, gaussian,
                    initial_state, gamma, horizon, seed, status, rewards=None,
                    episode_length=0, episode_start=None):
    """The package's trajectory loop around a compiled agent's functions, returning
    ``(discounted return, counter_values(final state))`` and writing the reward of step
    ``t`` into ``rewards[t]`` (a float64 array of length ``horizon``; optional, for kernels
    written before bbrl recorded rewards).

    ``episode_length`` H > 0 makes the interaction **episodic**: after every H steps the
    environment returns to the initial state and ``episode_start(state, k)`` (an
    ``@njit`` function, optional) is called before episode k's first action, k = 0
    right after ``reset``; the agent's state is kept. H = 0 (the default): one
    continuing trajectory, as before.

    Inlined into its caller at compile time (``inline="always"``), so a kernel that calls
    it with module-level ``@njit`` functions is an ordinary function of arrays and numbers:
    :func:`trajectory_kernel` writes such a kernel for each agent, cached on disk.
    (On a dense MDP ``P`` of shape (nX, nU, nX): :func:`trajectory_loop_rows` on the
    full layout, the same trajectory.)
    """
    nX, nU, _ = P.shape
    succ = np.empty((nX, nU, nX), dtype=np.int64)
    for x in range(nX):
        for u in range(nU):
            for y in range(nX):
                succ[x, u, y] = y
    nsucc = np.full((nX, nU), nX, dtype=np.int64)
    return trajectory_loop_rows(reset, act, observe, counter_values, setup, P, succ, nsucc,
                                R, Rstd, gaussian, initial_state, gamma, horizon, seed,
                                status, rewards, episode_length, episode_start)


@njit(error_model="numpy", inline="always")
def trajectory_loop_rows(reset, act, observe, counter_values, setup, P, succ, nsucc, R,
                         Rstd, gaussian, initial_state, gamma, horizon, seed, status,
                         rewards=None, episode_length=0, episode_start=None, ind=None,
                         policy=None):
    """:func:`trajectory_loop` on a test MDP stored on sparse rows (``P[x, u, k]`` the
    probability of the transition to ``succ[x, u, k]``, ``R`` and ``Rstd`` on the same
    slots, :mod:`bbrlcore.mdp.rows`): the agent's functions see states, actions and
    rewards only, as with a dense MDP, and the same draws give the same trajectory
    (episodes as :func:`trajectory_loop`'s). ``gaussian``: the rewards' mode (0 constant,
    1 Gaussian, 2 reward laws, :func:`bbrlcore.agents._kernels.env_reward_rows`);
    ``initial_state``: a state, -1, or a starts array
    (:func:`bbrlcore.agents._kernels.env_reset`).

    ``ind`` (a tuple of arrays, :func:`indicator_arrays`) and ``policy`` (the agent's
    ``@njit`` ``policy(state, out)``) add Colosseum's indicators: at Colosseum's rows
    (every ``L`` steps after ``observe``, and once after ``counter_values``) the agent's
    policy is written into a buffer, checked and evaluated exactly on the test MDP, and
    the row accumulated into ``ind``'s accumulator (:func:`policy_row`); the trajectory
    (draws, rewards, return, counters) is the one without them. A malformed policy
    stops the trajectory with ``status[2] = 2`` and the problem in ``ind``. Without
    ``ind`` (None) nothing of it is compiled."""
    np.random.seed(seed)
    nX, nU, _ = P.shape
    status[2] = 0
    # (a status of 5 entries or more, the package's: the hook being run, status[3], and
    # the episode of episode_start, status[4], for the message of an error raised there)
    hooks = status.shape[0] >= 5
    status[0] = 0
    if hooks:
        status[3] = 0  # reset (HOOKS)
    state = reset(setup)
    x = env_reset(initial_state, nX)
    s0 = x  # the episode's start (Colosseum's episodic rows)
    ret = 0.0
    disc = 1.0
    left = episode_length if episode_length > 0 else -1  # steps left in the episode
    if episode_length > 0:
        if hooks:
            status[3] = 1  # episode_start
            status[4] = 0
        start_episode(episode_start, state, 0)
    for t in range(horizon):
        status[0] = t
        if hooks:
            status[3] = 2  # act
        u = act(state, x)
        if u < 0 or u >= nU:
            status[1] = u
            status[2] = 1
            if hooks:
                status[3] = 4  # counter_values
            return ret, counter_values(state)
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        record_reward(rewards, t, r)
        ret += disc * r
        disc *= gamma
        y = succ[x, u, k]
        if hooks:
            status[3] = 3  # observe
        observe(state, x, u, y, r)
        x = y
        if not indicator_row(ind, policy, state, P, succ, nsucc, horizon, episode_length,
                             t, x, s0, False, status, hooks):
            status[2] = 2  # a malformed policy (ind says what)
            if hooks:
                status[3] = 4  # counter_values
            return ret, counter_values(state)
        left -= 1
        if left == 0 and t + 1 < horizon:  # the episode's end: back to the initial state
            left = episode_length
            x = env_reset(initial_state, nX)
            s0 = x
            if hooks:
                status[0] = t + 1  # (the step it runs before)
                status[3] = 1  # episode_start
                status[4] = (t + 1) // episode_length
            start_episode(episode_start, state, (t + 1) // episode_length)
    if hooks:
        status[3] = 4  # counter_values
    counts = counter_values(state)
    # Colosseum's final row (after the counters: they are the same with or without it)
    if not final_indicator_row(ind, policy, state, P, succ, nsucc, horizon, episode_length,
                               x, s0, initial_state, status, hooks):
        status[2] = 2
    return ret, counts


@njit(cache=True, error_model="numpy")
def no_counters(state):
    """``counter_values`` of an agent without counters: an empty int64 array."""
    return np.zeros(0, dtype=np.int64)


@njit(cache=True, error_model="numpy")
def final_state(state):
    """``counter_values`` returning the agent's final state itself (to Python, where the
    class's own Python ``counter_values`` reads it)."""
    return state


#: Kernels made in this process, by their functions: (kernel, its form with indicators,
#: compile lock or None).
_KERNELS: dict[tuple[Any, ...], tuple[Any, Any, str | None]] = {}


def _closure_kernel(reset: Any, act: Any, observe: Any, count: Any, start: Any,
                    policy: Any = None) -> tuple[Any, Any]:
    @njit(error_model="numpy")
    def kernel(setup, P, succ, nsucc, R, Rstd, gaussian, initial_state, gamma, horizon, seed,
               status, rewards=None, episode_length=0):
        return trajectory_loop_rows(reset, act, observe, count, setup, P, succ, nsucc, R,
                                    Rstd, gaussian, initial_state, gamma, horizon, seed,
                                    status, rewards, episode_length, start)

    @njit(error_model="numpy")
    def kernel_ind(setup, P, succ, nsucc, R, Rstd, gaussian, initial_state, gamma, horizon,
                   seed, status, rewards, episode_length, ind):
        return trajectory_loop_rows(reset, act, observe, count, setup, P, succ, nsucc, R,
                                    Rstd, gaussian, initial_state, gamma, horizon, seed,
                                    status, rewards, episode_length, start, ind, policy)

    return kernel, kernel_ind


def _kernel_and_lock(reset: Any, act: Any, observe: Any, counter_values: Any,
                     cache: bool, episode_start: Any = None, policy: Any = None,
                     indicators: bool = False) -> tuple[Any, str | None]:
    """The kernel of the loop around the functions (with ``indicators``, its form with
    Colosseum's indicators of ``policy``: :func:`indicator_kernel`) and the path of its
    compile lock (None: a closure compiled in the process)."""
    count = counter_values if counter_values is not None else no_counters
    start = episode_start if episode_start is not None else no_episode_start
    pol = policy if policy is not None else no_policy
    cache = cache and os.environ.get("BBRL_KERNEL_CACHE", "1") != "0"
    key = (reset, act, observe, count, start, pol, cache)
    if key not in _KERNELS:
        out: tuple[Any, Any, str | None] | None = None
        if cache:
            from bbrlcore.agents._kernel_cache import kernel_module

            try:
                module = kernel_module((reset, act, observe, count, start, pol))
                out = (module.trajectory, module.trajectory_ind, module.LOCK)
            except Exception:  # noqa: BLE001 - nowhere to write it, code that cannot be
                out = None  # keyed (defined interactively), numba unable to cache: in the
                # process
        if out is None:
            out = (*_closure_kernel(reset, act, observe, count, start, pol), None)
        _KERNELS[key] = out
    kernel, kernel_ind, lock = _KERNELS[key]
    return (kernel_ind if indicators else kernel), lock


def trajectory_kernel(reset: Any, act: Any, observe: Any, counter_values: Any = None, *,
                      cache: bool = True, episode_start: Any = None) -> Any:
    """The trajectory loop on sparse rows (:func:`trajectory_loop_rows`) specialised to
    one agent's ``@njit`` functions: ``kernel(setup, P, succ, nsucc, R, Rstd, gaussian,
    initial_state, gamma, horizon, seed, status, rewards=None, episode_length=0) ->
    (discounted return, counters)``, where ``counters`` is ``counter_values(state)`` (an
    empty int64 array without it), ``rewards`` (a float64 array of length ``horizon``)
    receives the reward of each step, and ``episode_length`` H > 0 returns to the initial
    state after every H steps, calling ``episode_start(state, k)`` (optional) before
    episode k's first action.

    The functions are compile-time constants of the kernel, so a call only passes arrays
    and numbers (no per-call typing of function arguments, the agent's state never boxed
    back into Python objects). With ``cache`` (the default) the kernel is a module-level
    function of a small generated module, cached on disk by numba and compiled once for
    all processes (:mod:`bbrlcore.agents._kernel_cache`); where nothing can be cached
    (functions defined interactively, a directory that cannot be written), with
    ``cache=False`` and with the environment variable ``BBRL_KERNEL_CACHE=0`` it is a
    closure compiled once per process. Memoised per process.
    """
    return _kernel_and_lock(reset, act, observe, counter_values, cache, episode_start)[0]


def indicator_kernel(reset: Any, act: Any, observe: Any, counter_values: Any = None, *,
                     cache: bool = True, episode_start: Any = None,
                     policy: Any = None) -> Any:
    """:func:`trajectory_kernel` with Colosseum's indicators of the agent's ``@njit``
    ``policy(state, out)`` (:func:`policy_row`): ``kernel(setup, P, succ, nsucc, R, Rstd,
    gaussian, initial_state, gamma, horizon, seed, status, rewards, episode_length, ind)
    -> (discounted return, counters)``, ``ind`` the arrays of :func:`indicator_arrays`
    (its accumulator filled in place). The same trajectory as the kernel without
    indicators; generated, cached and memoised the same way (a second function of the
    same generated module)."""
    return _kernel_and_lock(reset, act, observe, counter_values, cache, episode_start,
                            policy, indicators=True)[0]


def _writable(v: Any) -> Any:
    """``setup`` with its read-only arrays copied (its type then does not depend on where
    the prior came from)."""
    if isinstance(v, tuple):
        return tuple(_writable(e) for e in v)
    if isinstance(v, np.ndarray) and not v.flags.writeable:
        return v.copy()
    return v


def _compile(kernel: Any, args: tuple, lock: str | None, name: str,
             fns: tuple[Any, ...]) -> None:
    """Compile ``kernel`` for ``args`` (or load it from numba's cache), before any
    trajectory: code that does not compile is one line naming the plugin, the function
    and the cause."""
    from bbrlcore.agents._kernel_cache import compile_locked

    try:
        compile_locked(kernel, args, lock)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - numba's errors of the user's code
        raise BBRLError(f"{name}: {compile_message(exc, fns, args[0])}") from None


def _compiled_player(cls: type, name: str, counters: tuple[str, ...]):
    def make_player(prior: Any, params: dict, trained: Trained | None, ep: Episode):
        return _compiled_trajectory(cls, name, counters, prior, params, trained, ep, None)

    return make_player


def _compiled_indicator_player(cls: type, name: str, counters: tuple[str, ...]):
    """The :attr:`~bbrlcore.agents.base.Algorithm.indicator_player` of a compiled agent
    with a ``policy`` hook: Colosseum's indicators of ``policy(state, out)`` at the rows,
    inside the compiled loop (:func:`indicator_kernel`)."""
    def indicator_player(prior: Any, params: dict, trained: Trained | None, ep: Episode,
                         log_every: int):
        from bbrlcore.agents._indicators import Request

        return _compiled_trajectory(cls, name, counters, prior, params, trained, ep,
                                    Request(ep, log_every))

    return indicator_player


def policy_problem(bad: np.ndarray, episodic: bool) -> str:
    """What :func:`check_policy` found wrong with a compiled agent's policy (``bad``:
    the slots of :func:`indicator_arrays`' last array), in words.

    >>> policy_problem(np.array([2.0, 100, 0, 3, -1, 1.25]), False)
    'the action probabilities of state 3 sum to 1.25, not 1'
    >>> policy_problem(np.array([1.0, 100, 4, 3, 1, -0.5]), True)
    'the probability of action 1 in state 3 at step 4 of the episode is -0.5, not a number >= 0'
    """
    code, h, x, u, v = int(bad[0]), int(bad[2]), int(bad[3]), int(bad[4]), float(bad[5])
    where = f"state {x}" + (f" at step {h} of the episode" if episodic else "")
    if code == 2:
        return f"the action probabilities of {where} sum to {v:.6g}, not 1"
    shown = "nan (an entry left unwritten?)" if np.isnan(v) else f"{v:.6g}"
    return f"the probability of action {u} in {where} is {shown}, not a number >= 0"


def _compiled_trajectory(cls: type, name: str, counters: tuple[str, ...], prior: Any,
                         params: dict, trained: Trained | None, ep: Episode, req: Any):
    """A compiled agent's player; with ``req`` (an :class:`._indicators.Request`) one that
    also returns Colosseum's indicators of its ``policy`` hook (the same trajectory)."""
    nC = len(counters)
    count_fn = getattr(cls, "counter_values", None) if nC else None
    in_python = count_fn is not None and not hasattr(count_fn, "py_func")
    learned = (trained.info or {}).get("learned") if trained is not None else None
    check = getattr(cls, "setting_check", None)
    if check is not None:
        err = user_call(name, "setting_check", check, params, prior, ep.gamma,
                        ep.horizon)
        if err:
            raise BBRLError(f"{name}: {err}")
    agent = _new_agent(cls, name, params, prior, learned, ep.gamma, ep.horizon)
    _place(agent, prior, ep)
    setup = user_call(name, "setup", agent.setup)
    if not isinstance(setup, tuple):
        raise BBRLError(f"{name}: setup must return a tuple (the inputs of reset)")
    setup = _writable(setup)
    R = _readonly(np.ascontiguousarray(ep.R, dtype=np.float64))
    Rstd = _readonly(np.ascontiguousarray(ep.Rstd, dtype=np.float64))
    # (the step being played: in a watched `bbrl run`, shared with the watcher, which
    # names it if the plugin crashes the process: bbrlcore.crash)
    status = crash.status()
    own = getattr(cls, "trajectory", None)
    start = getattr(cls, "episode_start", None)
    pol_fn = getattr(cls, "policy", None) if req is not None else None
    fns = (cls.reset, cls.act, cls.observe, final_state if in_python else count_fn,
           start, pol_fn)
    gaussian, initial_state = int(ep.gaussian), ep.start
    gamma, horizon = float(ep.gamma), int(ep.horizon)
    dense_of = None
    extra: tuple = ()  # (the package's loop: the episode length)
    if own is not None and hasattr(own, "py_func"):
        if req is not None:  # (refused when the class is read: algorithm_of)
            raise BBRLError(f"{name}: its own trajectory kernel (CompiledAgent.trajectory) "
                            "cannot compute Colosseum's indicators of its policy")
        if ep.episode_length > 0:
            raise BBRLError(f"{name}: its own trajectory kernel (CompiledAgent."
                            "trajectory) cannot play episodic interactions; leave it "
                            "out (the package's loop does episodes)")
        # the class's own kernel of the dense loop (written before sparse rows: its
        # Algorithm is not sparse, so the runner gives it dense MDPs; given an
        # Episode on rows all the same, it gets its MDPs made dense)
        if int(ep.gaussian) > 1 or ep.starts is not None:
            raise BBRLError(f"{name}: its own trajectory kernel (CompiledAgent."
                            "trajectory) cannot play reward laws or starting "
                            "distributions; leave it out (the package's loop does)")
        # (its kernel was written for an initial state and a Gaussian flag)
        gaussian, initial_state = bool(ep.gaussian), int(ep.initial_state)
        kernel, lock = own, None
        records = _takes_rewards(own)
        lead: tuple = ()
        if ep.succ is not None:
            from bbrlcore.mdp import rows

            dense_of = ep.layout()
            R = _readonly(np.ascontiguousarray(rows.scatter(ep.R, dense_of)))
            Rstd = _readonly(np.ascontiguousarray(rows.scatter(ep.Rstd, dense_of)))
    else:
        kernel, lock = _kernel_and_lock(*fns[:4], True, start, pol_fn,
                                        indicators=req is not None)
        records = True
        lay = ep.layout()
        lead = (lay.succ, lay.nsucc)
        extra = (int(ep.episode_length),)
    # compiled now (or loaded from the cache), outside any timing; R stands for P
    args = (setup, R, *lead, R, Rstd, gaussian, initial_state, gamma, horizon, 0, status)
    shape = (horizon,)
    typing = () if req is None else (indicator_arrays(req, None),)  # (its types only)
    _compile(kernel, (*args, np.empty(horizon), *extra, *typing) if records else args, lock,
             name, fns)
    episodic = int(ep.episode_length) > 0

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        status[:] = 0
        status[3] = -1  # (no hook yet: the package's loop says which one it runs)
        if dense_of is not None:
            from bbrlcore.mdp import rows

            P = rows.scatter(np.asarray(P, dtype=np.float64), dense_of)
        P = _readonly(np.ascontiguousarray(P, dtype=np.float64))
        if records and not (type(rewards) is np.ndarray and rewards.shape == shape
                            and rewards.dtype is FLOAT64):  # (the runner's rows)
            rewards = reward_buffer(rewards, horizon)
        ind: tuple = ()
        if req is not None:  # the test MDP's references, the accumulator
            evr = req.evaluator(P)
            ind = (indicator_arrays(req, evr),)
        try:  # (run_agent sends the user's prints to stderr around the whole run)
            if records:
                ret, out = kernel(setup, P, *lead, R, Rstd, gaussian, initial_state,
                                  gamma, horizon, int(seed), status, rewards, *extra,
                                  *ind)
            else:
                ret, out = kernel(setup, P, *lead, R, Rstd, gaussian, initial_state,
                                  gamma, horizon, int(seed), status)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - the user's code (or its typing)
            from numba.core.errors import NumbaError

            if isinstance(exc, NumbaError):
                raise BBRLError(f"{name}: {compile_message(exc, fns, setup)}") from None
            if not 0 <= status[3] < len(HOOKS):  # (a kernel of its own: no hooks)
                raise AgentError(f"{name}: {type(exc).__name__} at step "
                                 f"{int(status[0])}: {_first_line(exc)}",
                                 int(status[0]), error=type(exc).__name__) from None
            raise hook_error(name, exc, HOOKS[int(status[3])], int(status[0]),
                             int(status[4]), horizon) from None
        if status[2] == 2:  # a malformed policy (ind says what)
            bad = ind[0][-1]
            raise AgentError(f"{name}: policy at step {int(bad[1])}: "
                             f"{policy_problem(bad, episodic)}", int(bad[1]),
                             hook="policy", place=f"at step {int(bad[1])}")
        if status[2]:
            raise AgentError(f"{name}: act returned {int(status[1])} at step "
                             f"{int(status[0])}, outside [0, {P.shape[1]})",
                             int(status[0]))
        if in_python:
            cnt = np.asarray(user_call(name, "counter_values", count_fn, out),
                             dtype=np.int64)
        else:
            cnt = np.asarray(out, dtype=np.int64) if nC else _NONE
        if cnt.shape != (nC,):
            raise AgentError(f"{name}: counter_values returned {cnt.size} values, "
                             f"expected {nC}")
        if req is not None:
            from bbrlcore.agents._indicators import finish

            return float(ret), cnt, finish(ind[0][1], evr, rewards, horizon)
        return float(ret), cnt

    if not records:  # a kernel of its own without the rewards: play(P, seed)
        def play_unrecorded(P: np.ndarray, seed: int) -> tuple[float, np.ndarray]:
            return play(P, seed)

        return play_unrecorded
    return play


def _takes_rewards(kernel: Any) -> bool:
    """Whether a compiled agent's own trajectory kernel (``CompiledAgent.trajectory``)
    takes the rewards array after ``status`` (11 arguments) or not (10, written before
    bbrl recorded rewards: its rows then carry none)."""
    import inspect

    try:
        return len(inspect.signature(kernel.py_func).parameters) >= 11
    except (TypeError, ValueError):
        return False


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NOISE = ("Failed in ", "During:", "File ", "^", "<source", "Enable logging",
          "This error may have been", "This is not usually a problem", "For more information",
          "- argument", "Resolution failure", "raised from")
_TYPING = ("No implementation of function", "Unknown attribute", "Cannot unify",
           "Invalid use of", "No conversion", "Use of unsupported", "Untyped global name",
           "Cannot determine Numba type")


def numba_cause(exc: BaseException, place: bool = True) -> str:
    """The line of a numba compilation error that states its cause (numba's first line
    that is not a banner), with the signature it could not type and the specific error
    behind a rejected candidate, and where in the user's code (not bbrlcore's) it is:
    e.g. ``NameError: name 'foo' is not defined (plug.py, line 12)``."""
    text = _ANSI.sub("", str(exc))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    i = next((k for k, ln in enumerate(lines) if not ln.startswith(_NOISE)), None)
    if i is None:
        return lines[0][:300] if lines else type(exc).__name__
    cause = lines[i]
    if cause.startswith(_TYPING):
        cause = f"TypingError: {cause}"
    if cause.endswith("signature:") and i + 1 < len(lines):
        cause += " " + lines[i + 1].lstrip("> ")
    for k, ln in enumerate(lines[:-1]):
        if ln.endswith("raised a specific error:"):
            cause += f" ({lines[k + 1]})"
            break
    cause = re.sub(r"\s+", " ", cause)
    if len(cause) > 300:
        cause = cause[:297] + "..."
    where = _user_place(text) if place else ""
    return f"{cause} ({where})" if where else cause


def _user_place(text: str) -> str:
    """``file, line n`` of the innermost place of a numba error that is in the user's
    code (not bbrlcore's, nor numba's), or ""."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for path, line in reversed(re.findall(r'File "([^"]+)", line (\d+):', text)):
        full = os.path.abspath(path)
        if full.startswith(here + os.sep) or path.startswith("<") or "numba" in full.split(
                os.sep):
            continue
        return f"{os.path.basename(path)}, line {line}"
    return ""


def _def_line(fn: Any) -> str:
    """``file, line n`` of the ``def`` of an ``@njit`` function (after its decorators)."""
    import linecache

    code = fn.py_func.__code__
    line = code.co_firstlineno
    for k in range(line, line + 20):
        if linecache.getline(code.co_filename, k).lstrip().startswith("def "):
            line = k
            break
    return f"{os.path.basename(code.co_filename)}, line {line}"


def _role(fn: Any, role: str) -> str:
    """``act``, or ``act (my_act)`` when the function has another name."""
    name = getattr(getattr(fn, "py_func", fn), "__name__", role)
    return role if name.strip("_") == role else f"{role} ({name})"


#: The arguments the package's loop calls each function of a compiled agent with.
SIGNATURES = {"reset": "(setup)", "act": "(state, x)", "observe": "(state, x, u, y, r)",
              "counter_values": "(state)", "episode_start": "(state, k)",
              "policy": "(state, out)"}


def _arity_problem(fn: Any, role: str) -> str:
    """``episode_start (one_arg) takes (state), expected (state, k) (plug.py, line 9)``
    when the Python function behind ``fn`` cannot be called with the arguments the loop
    gives ``role`` (:data:`SIGNATURES`), else ""."""
    import inspect

    expected = SIGNATURES[role]
    n = expected.count(",") + 1
    try:
        sig = inspect.signature(fn.py_func)
    except (TypeError, ValueError, AttributeError):  # (none to read: numba will tell)
        return ""
    try:
        sig.bind(*range(n))
    except TypeError:
        shown = "(" + ", ".join(sig.parameters) + ")"
        return (f"{_role(fn, role)} takes {shown}, expected {role}{expected} "
                f"({_def_line(fn)})")
    return ""


def _diagnose(fns: tuple[Any, ...], setup: tuple) -> str:
    """Which of an agent's functions (reset, act, observe, counters and, when given,
    episode_start and policy) does not compile with the types the loop gives it, and why: ``act
    does not compile: ...``, ``act returns float64, not an integer action`` or
    ``episode_start takes (state), expected episode_start(state, k)``; "" when each
    compiles alone."""
    from numba import typeof, types
    from numba.core.errors import NumbaError

    reset, act, observe, count = fns[:4]
    start = fns[4] if len(fns) > 4 else None
    policy = fns[5] if len(fns) > 5 else None
    i64, f64 = types.int64, types.float64
    roles = [(reset, "reset"), (act, "act"), (observe, "observe"), (start, "episode_start"),
             (policy, "policy")]
    if count is not None and hasattr(count, "py_func") and count is not final_state:
        roles.append((count, "counter_values"))
    for fn, role in roles:  # (called with the wrong number of arguments: said at once)
        if fn is not None and hasattr(fn, "py_func"):
            wrong = _arity_problem(fn, role)
            if wrong:
                return wrong

    def typed(fn: Any, role: str, sig: tuple) -> Any:
        try:
            fn.compile(sig)
        except NumbaError as exc:
            cause = numba_cause(exc, place=False)
            where = _user_place(_ANSI.sub("", str(exc))) or _def_line(fn)
            args = f"; its arguments: {', '.join(map(str, sig))}" if "Typing" in cause else ""
            raise _Diagnosis(f"{_role(fn, role)} does not compile ({where}): {cause}{args}"
                             ) from None
        return fn.overloads[sig].signature.return_type

    try:
        state = typed(reset, "reset", (typeof(setup),))
        action = typed(act, "act", (state, i64))
        if not isinstance(action, types.Integer):
            return f"{_role(act, 'act')} returns {action}, not an integer action"
        typed(observe, "observe", (state, i64, action, i64, f64))
        if start is not None and hasattr(start, "py_func"):
            typed(start, "episode_start", (state, i64))
        if policy is not None and hasattr(policy, "py_func"):
            typed(policy, "policy", (state, types.Array(f64, 3, "C")))
        if count is not None and hasattr(count, "py_func"):
            typed(count, "counter_values", (state,))
    except _Diagnosis as d:
        return str(d)
    return ""


class _Diagnosis(Exception):
    pass


def compile_message(exc: BaseException, fns: tuple[Any, ...] | None = None,
                    setup: tuple | None = None) -> str:
    """One line saying why a compiled agent's trajectory does not compile: the function
    at fault and numba's cause (:func:`numba_cause`) when ``fns`` (reset, act, observe,
    counters and, optionally, episode_start and policy) and ``setup`` are given and one of them
    fails alone (or takes other arguments than the loop gives it), else numba's cause.
    (Called on the error path only: it types each function again.)"""
    if fns is not None and setup is not None:
        try:
            found = _diagnose(fns, setup)
        except Exception:  # noqa: BLE001 - a diagnosis only
            found = ""
        if found:
            return found
    hooks = "reset/act/observe" + ("/episode_start" if fns is not None and len(fns) > 4
                                   and fns[4] is not None else "") + (
        "/policy" if fns is not None and len(fns) > 5 and fns[5] is not None else "")
    return f"its {hooks} do not compile with the trajectory loop: {numba_cause(exc)}"
