"""Colosseum's tabular benchmark instances, as data, and the bbrl distributions they are.

Colosseum (Conserva & Rauber, NeurIPS 2022) benchmarks agents on four settings, each a
set of MDP instances given as gin files (``colosseum/benchmark/benchmark_<setting>/
mdp_configs/*.gin``): episodic communicating (``EC``), episodic ergodic (``EE``),
continuous communicating (``CC``) and continuous ergodic (``CE``), 80 instances in all
(results: the appendix's Tables 11-14). :data:`RAW` is every one of them as gin binds it
(a later binding of a key overrides an earlier one: ``TaxiContinuous.gin`` of the
continuous communicating benchmark binds ``prms_0`` twice, the second wins), written by
``tests/fixtures/colosseum/read_instances.py`` from Colosseum's repository.

Names
-----
An instance is named ``Colosseum-<setting>-<family>-<index>``: ``Colosseum-CC-DeepSea-1``
is ``prms_1`` of ``DeepSeaContinuous.gin`` in the continuous communicating benchmark. Its
uniform prior is ``U`` + the name, as for every family. ``bbrl families`` lists them all.

How they resolve
----------------
Every instance resolves to a bbrl distribution, wherever a distribution's name works
(configuration, ``bbrl distribution``, ``--test``), as bbrl's families express it
exactly: every RiverSwim (``current`` 0), DeepSea (``form`` 1), SimpleGrid (``other``
0.5; an even grid's ``start`` the central tile Colosseum's seed 0 draws,
:data:`SIMPLEGRID_SEED0_START`), FrozenLake instance (its ``lake`` the one
Colosseum's seed 0 draws, :data:`LAKES`; randomized actions included), MiniGrid-Empty
and MiniGrid-Rooms instance (Colosseum's form, ``form`` 1: its ``goal`` tile and
``starts`` the ones Colosseum's seed 0 draws, :data:`MINIGRID_EMPTY_SEED0`,
:data:`MINIGRID_ROOMS_SEED0`; each episode from one of the starts, uniformly) and
Taxi instance (Colosseum's form, ``form`` 1: its walls, ``length``, ``width``,
``space``, and its ``locations`` the three Colosseum's seed 0 draws,
:data:`TAXI_SEED0`; each episode from a waiting passenger, every one alike, 72 or 108):
all 80 (:attr:`Instance.needs`, what bbrl lacks, is None for each). Colosseum's
benchmark runs each instance at several seeds; a part its seed draws (a lake, an even
grid's start, a MiniGrid goal and starts, Taxi's locations) is here that of its first
seed, 0. Each resolves to its
family with those parameters and ``concentration`` 1e12
(:data:`INSTANCE_CONCENTRATION`): a Colosseum instance is one MDP, so every test MDP
drawn is that MDP (to about 1e-6 in each probability; deterministic rows exactly), and
its uniform prior (one pseudo-count on each transition the MDP has, the instance's
expected rewards) is what an agent learns it from. The episodic instances are played as
episodic experiments (``episodes: E``), whose natural length is Colosseum's
(:attr:`~bbrlcore.mdp.families.Family.episode_length`).


**Stochastic rewards** (``make_reward_stochastic``). Colosseum then pays every
transition a Beta draw whose law depends on the transition's category (its
``_get_reward_distribution``: optimal, sub-optimal or other; :data:`CATEGORIES`, read
off the family's deterministic reward of the transition), with parameters its
constructor sets (:func:`beta_parameters`: the gin file's three distributions when it
gives them, its defaults with ``reward_variance_multiplier`` otherwise). These are not
the family's ``reward_noise`` (a Beta around the deterministic mean): Colosseum changes
the means too (RiverSwim's "other" transitions pay 0.02 or 0.2/size/10 on average, not
0; SimpleGrid's corners 0.9 and 0.02, not 1 and 0). :func:`stochastic_test` builds the
instance's test distribution: the family's transitions, each with its Beta law
(``RewardLaws``) and that law's mean as its expected reward. Every expressed instance
equals Colosseum's own MDP at seed 0 state by state: transitions, each transition's
reward law (kind and parameters), expected rewards, starting state, H and optimal values
(``tests/test_colosseum_instances.py``).

Colosseum's FrozenLake names its horizontal moves mirrored (its RIGHT decreases its Y,
``_next_positions``): an instance takes Colosseum's action labels
(:data:`FROZENLAKE_ACTIONS`, :func:`action_labels`), and with ``randomize_actions`` the
mapping Colosseum's seed 0 draws per state (:data:`ACTION_MAPS`), so it equals
Colosseum's MDP action by action; bbrl keeps the holes as states no transition reaches
(Colosseum has none for them).

Examples
--------
>>> from bbrlcore.mdp.families import colosseum_instances as CI
>>> len(CI.INSTANCES), sum(i.problem_params is not None for i in CI.INSTANCES.values())
(80, 80)
>>> i = CI.INSTANCES["Colosseum-CE-RiverSwim-0"]
>>> i.setting, i.family, i.problem_params["p_lazy"], i.needs
('continuous ergodic', 'riverswim', 0.1, None)
>>> CI.INSTANCES["Colosseum-EC-Taxi-0"].stochastic, CI.INSTANCES["Colosseum-EC-Taxi-0"].needs
(True, None)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bbrlcore.mdp.families.frozenlake import lake_of

#: Concentration of an instance's test distribution: every drawn MDP is the instance.
INSTANCE_CONCENTRATION = 1e12

#: The settings: code → Colosseum's benchmark.
SETTINGS = {"EC": "episodic communicating", "EE": "episodic ergodic",
            "CC": "continuous communicating", "CE": "continuous ergodic"}

#: Colosseum's family (class name without Episodic/Continuous) → name part, bbrl family.
FAMILIES = {"DeepSea": "deepsea", "FrozenLake": "frozenlake",
            "MiniGridEmpty": "minigrid_empty", "MiniGridRooms": "minigrid_rooms",
            "RiverSwim": "riverswim", "SimpleGrid": "simplegrid", "Taxi": "taxi"}

#: Every instance: setting, Colosseum class, gin index, bindings (read_instances.py).
RAW: tuple[tuple[str, str, int, dict[str, Any]], ...] = (
    ('EC',
     'DeepSeaEpisodic',
     0,
     {'size': 5, 'p_rand': None, 'make_reward_stochastic': True, 'randomize_actions': False}),
    ('EC',
     'DeepSeaEpisodic',
     1,
     {'size': 25, 'p_rand': None, 'make_reward_stochastic': True, 'randomize_actions': False}),
    ('EC',
     'FrozenLakeEpisodic',
     0,
     {'size': 3,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': None,
      'p_frozen': 0.9,
      'p_rand': None}),
    ('EC',
     'MiniGridEmptyEpisodic',
     0,
     {'size': 6,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': None,
      'p_rand': None,
      'n_starting_states': 3}),
    ('EC',
     'MiniGridEmptyEpisodic',
     1,
     {'size': 6,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.35,
      'p_rand': None,
      'n_starting_states': 5}),
    ('EC',
     'MiniGridEmptyEpisodic',
     2,
     {'size': 6,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.25,
      'p_rand': 0.1,
      'n_starting_states': 3}),
    ('EC',
     'MiniGridEmptyEpisodic',
     3,
     {'size': 10,
      'make_reward_stochastic': False,
      'randomize_actions': False,
      'p_lazy': 0.1,
      'p_rand': None,
      'n_starting_states': 5}),
    ('EC',
     'MiniGridEmptyEpisodic',
     4,
     {'size': 10,
      'make_reward_stochastic': False,
      'randomize_actions': False,
      'p_lazy': 0.15,
      'p_rand': 0.1,
      'n_starting_states': 3}),
    ('EC',
     'MiniGridRoomsEpisodic',
     0,
     {'randomize_actions': False,
      'make_reward_stochastic': True,
      'room_size': 4,
      'n_rooms': 4,
      'p_rand': None,
      'p_lazy': None}),
    ('EC',
     'MiniGridRoomsEpisodic',
     1,
     {'randomize_actions': False,
      'make_reward_stochastic': False,
      'room_size': 3,
      'n_rooms': 9,
      'p_rand': None,
      'p_lazy': 0.05}),
    ('EC',
     'MiniGridRoomsEpisodic',
     2,
     {'randomize_actions': False,
      'make_reward_stochastic': False,
      'room_size': 3,
      'n_rooms': 9,
      'p_rand': None,
      'p_lazy': 0.1}),
    ('EC',
     'MiniGridRoomsEpisodic',
     3,
     {'randomize_actions': False,
      'make_reward_stochastic': False,
      'room_size': 3,
      'n_rooms': 4,
      'p_rand': None,
      'p_lazy': 0.15}),
    ('EC',
     'RiverSwimEpisodic',
     0,
     {'make_reward_stochastic': True,
      'randomize_actions': False,
      'size': 25,
      'p_lazy': 0.05,
      'p_rand': None,
      'sub_optimal_distribution': ('beta', (12.4, 124.0)),
      'optimal_distribution': ('beta', (0.01, 0.11)),
      'other_distribution': ('beta', (12.4, 1249.0))}),
    ('EC',
     'RiverSwimEpisodic',
     1,
     {'make_reward_stochastic': False,
      'randomize_actions': False,
      'size': 40,
      'p_lazy': None,
      'p_rand': None,
      'sub_optimal_distribution': None,
      'optimal_distribution': None,
      'other_distribution': None}),
    ('EC',
     'SimpleGridEpisodic',
     0,
     {'size': 10, 'randomize_actions': False, 'make_reward_stochastic': True, 'p_lazy': 0.5}),
    ('EC',
     'SimpleGridEpisodic',
     1,
     {'size': 13, 'randomize_actions': False, 'make_reward_stochastic': True, 'p_lazy': 0.4}),
    ('EC',
     'SimpleGridEpisodic',
     2,
     {'size': 13, 'randomize_actions': False, 'make_reward_stochastic': False, 'p_lazy': None}),
    ('EC',
     'SimpleGridEpisodic',
     3,
     {'size': 20, 'randomize_actions': False, 'make_reward_stochastic': True, 'p_lazy': 0.4}),
    ('EC',
     'TaxiEpisodic',
     0,
     {'randomize_actions': False,
      'make_reward_stochastic': True,
      'p_lazy': 0.01,
      'size': 4,
      'length': 1,
      'width': 1,
      'space': 1,
      'n_locations': 3,
      'p_rand': None,
      'default_r': ('beta', (0.7, 30.0)),
      'successfully_delivery_r': ('beta', (0.4, 0.1)),
      'failure_delivery_r': ('beta', (0.8, 50.0))}),
    ('EC',
     'TaxiEpisodic',
     1,
     {'randomize_actions': False,
      'make_reward_stochastic': True,
      'p_lazy': 0.2,
      'size': 5,
      'length': 1,
      'width': 1,
      'space': 1,
      'n_locations': 3,
      'p_rand': None,
      'default_r': ('beta', (0.7, 30.0)),
      'successfully_delivery_r': ('beta', (0.4, 0.1)),
      'failure_delivery_r': ('beta', (0.8, 50.0))}),
    ('EE',
     'DeepSeaEpisodic',
     0,
     {'size': 10, 'p_rand': 0.4, 'make_reward_stochastic': False, 'randomize_actions': False}),
    ('EE',
     'DeepSeaEpisodic',
     1,
     {'size': 13, 'p_rand': 0.3, 'make_reward_stochastic': True, 'randomize_actions': False}),
    ('EE',
     'FrozenLakeEpisodic',
     0,
     {'size': 4,
      'make_reward_stochastic': True,
      'randomize_actions': True,
      'p_lazy': 0.03,
      'p_frozen': 0.98,
      'p_rand': 0.001}),
    ('EE',
     'MiniGridEmptyEpisodic',
     0,
     {'size': 10,
      'make_reward_stochastic': False,
      'randomize_actions': False,
      'p_lazy': None,
      'p_rand': 0.05,
      'n_starting_states': 3}),
    ('EE',
     'MiniGridEmptyEpisodic',
     1,
     {'size': 10,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': None,
      'p_rand': 0.3,
      'n_starting_states': 3}),
    ('EE',
     'MiniGridEmptyEpisodic',
     2,
     {'size': 10,
      'make_reward_stochastic': False,
      'randomize_actions': False,
      'p_lazy': 0.05,
      'p_rand': 0.2,
      'n_starting_states': 3}),
    ('EE',
     'MiniGridEmptyEpisodic',
     3,
     {'size': 8,
      'make_reward_stochastic': False,
      'randomize_actions': False,
      'p_lazy': None,
      'p_rand': 0.3,
      'n_starting_states': 3}),
    ('EE',
     'MiniGridEmptyEpisodic',
     4,
     {'size': 8,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.02,
      'p_rand': 0.4,
      'n_starting_states': 3}),
    ('EE',
     'MiniGridEmptyEpisodic',
     5,
     {'size': 6,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.1,
      'p_rand': 0.05,
      'n_starting_states': 3}),
    ('EE',
     'MiniGridEmptyEpisodic',
     6,
     {'size': 4,
      'make_reward_stochastic': False,
      'randomize_actions': False,
      'p_lazy': 0.1,
      'p_rand': 0.4,
      'n_starting_states': 3}),
    ('EE',
     'MiniGridRoomsEpisodic',
     0,
     {'randomize_actions': False,
      'make_reward_stochastic': True,
      'room_size': 3,
      'n_rooms': 4,
      'p_rand': 0.001,
      'p_lazy': None}),
    ('EE',
     'MiniGridRoomsEpisodic',
     1,
     {'randomize_actions': False,
      'make_reward_stochastic': True,
      'room_size': 3,
      'n_rooms': 9,
      'p_rand': 0.1,
      'p_lazy': 0.01}),
    ('EE',
     'MiniGridRoomsEpisodic',
     2,
     {'randomize_actions': False,
      'make_reward_stochastic': True,
      'room_size': 4,
      'n_rooms': 4,
      'p_rand': 0.1,
      'p_lazy': 0.01}),
    ('EE',
     'RiverSwimEpisodic',
     0,
     {'make_reward_stochastic': True,
      'randomize_actions': False,
      'size': 5,
      'p_lazy': 0.1,
      'p_rand': 0.01,
      'sub_optimal_distribution': ('beta', (2.4, 24.0)),
      'optimal_distribution': ('beta', (0.01, 0.11)),
      'other_distribution': ('beta', (2.4, 249.0))}),
    ('EE',
     'RiverSwimEpisodic',
     1,
     {'make_reward_stochastic': True,
      'randomize_actions': False,
      'size': 30,
      'p_lazy': 0.01,
      'p_rand': 0.01,
      'sub_optimal_distribution': ('beta', (14.9, 149.0)),
      'optimal_distribution': ('beta', (0.01, 0.11)),
      'other_distribution': ('beta', (14.9, 1499.0))}),
    ('EE',
     'SimpleGridEpisodic',
     0,
     {'reward_type': 3,
      'size': 10,
      'randomize_actions': False,
      'make_reward_stochastic': True,
      'p_lazy': 0.2,
      'p_rand': 0.01}),
    ('EE',
     'SimpleGridEpisodic',
     1,
     {'reward_type': 3,
      'size': 16,
      'randomize_actions': False,
      'make_reward_stochastic': True,
      'p_lazy': 0.2,
      'p_rand': 0.2}),
    ('EE',
     'SimpleGridEpisodic',
     2,
     {'reward_type': 3,
      'size': 16,
      'randomize_actions': False,
      'make_reward_stochastic': False,
      'p_lazy': 0.01,
      'p_rand': 0.2}),
    ('EE',
     'TaxiEpisodic',
     0,
     {'randomize_actions': False,
      'make_reward_stochastic': True,
      'p_lazy': 0.001,
      'size': 4,
      'length': 1,
      'width': 1,
      'space': 1,
      'n_locations': 3,
      'p_rand': 0.01,
      'default_r': ('beta', (0.8, 20.0)),
      'successfully_delivery_r': ('beta', (1.0, 0.1)),
      'failure_delivery_r': ('beta', (0.8, 50.0))}),
    ('EE',
     'TaxiEpisodic',
     1,
     {'randomize_actions': False,
      'make_reward_stochastic': True,
      'p_lazy': 0.01,
      'size': 4,
      'length': 1,
      'width': 1,
      'space': 1,
      'n_locations': 3,
      'p_rand': 0.2,
      'default_r': ('beta', (0.8, 6.0)),
      'successfully_delivery_r': ('beta', (1.0, 0.1)),
      'failure_delivery_r': ('beta', (0.8, 40.0))}),
    ('CC',
     'DeepSeaContinuous',
     0,
     {'size': 40, 'p_rand': None, 'make_reward_stochastic': True, 'randomize_actions': False}),
    ('CC',
     'DeepSeaContinuous',
     1,
     {'size': 40, 'p_rand': None, 'make_reward_stochastic': False, 'randomize_actions': False}),
    ('CC',
     'DeepSeaContinuous',
     2,
     {'size': 35, 'p_rand': None, 'make_reward_stochastic': True, 'randomize_actions': False}),
    ('CC',
     'FrozenLakeContinuous',
     0,
     {'size': 4,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.01,
      'p_frozen': 0.95,
      'p_rand': None}),
    ('CC',
     'FrozenLakeContinuous',
     1,
     {'size': 5,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.35,
      'p_frozen': 0.9,
      'p_rand': None}),
    ('CC',
     'MiniGridEmptyContinuous',
     0,
     {'size': 12,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.25,
      'p_rand': None,
      'n_starting_states': 3,
      'optimal_distribution': ('beta', (1.0, 0.11)),
      'other_distribution': ('beta', (1.0, 4.0))}),
    ('CC',
     'MiniGridEmptyContinuous',
     1,
     {'size': 12,
      'make_reward_stochastic': False,
      'randomize_actions': False,
      'p_lazy': 0.3,
      'p_rand': None,
      'n_starting_states': 3,
      'optimal_distribution': None,
      'other_distribution': None}),
    ('CC',
     'MiniGridEmptyContinuous',
     2,
     {'size': 8,
      'make_reward_stochastic': False,
      'randomize_actions': False,
      'p_lazy': 0.3,
      'p_rand': None,
      'n_starting_states': 3,
      'optimal_distribution': None,
      'other_distribution': None}),
    ('CC',
     'MiniGridEmptyContinuous',
     3,
     {'size': 8,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.7,
      'p_rand': None,
      'n_starting_states': 3,
      'optimal_distribution': ('beta', (1.0, 0.11)),
      'other_distribution': ('beta', (1.0, 4.0))}),
    ('CC',
     'MiniGridEmptyContinuous',
     4,
     {'size': 12,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.7,
      'p_rand': None,
      'n_starting_states': 3,
      'optimal_distribution': ('beta', (1.0, 0.11)),
      'other_distribution': ('beta', (1.0, 4.0))}),
    ('CC',
     'MiniGridRoomsContinuous',
     0,
     {'randomize_actions': False,
      'make_reward_stochastic': True,
      'room_size': 5,
      'n_rooms': 9,
      'p_rand': None,
      'p_lazy': 0.3}),
    ('CC',
     'MiniGridRoomsContinuous',
     1,
     {'randomize_actions': False,
      'make_reward_stochastic': True,
      'room_size': 3,
      'n_rooms': 9,
      'p_rand': None,
      'p_lazy': 0.5}),
    ('CC',
     'MiniGridRoomsContinuous',
     2,
     {'randomize_actions': False,
      'make_reward_stochastic': True,
      'room_size': 5,
      'n_rooms': 9,
      'p_rand': None,
      'p_lazy': 0.5}),
    ('CC',
     'RiverSwimContinuous',
     0,
     {'make_reward_stochastic': True,
      'randomize_actions': False,
      'size': 25,
      'p_lazy': 0.1,
      'p_rand': None}),
    ('CC',
     'RiverSwimContinuous',
     1,
     {'make_reward_stochastic': True,
      'randomize_actions': False,
      'size': 90,
      'p_lazy': 0.03,
      'p_rand': None}),
    ('CC',
     'SimpleGridContinuous',
     0,
     {'size': 15,
      'randomize_actions': False,
      'make_reward_stochastic': True,
      'p_lazy': 0.2,
      'p_rand': None,
      'sub_optimal_distribution': ('beta', (0.3, 49.0)),
      'optimal_distribution': ('beta', (2.0, 0.11)),
      'other_distribution': ('beta', (0.3, 4.0))}),
    ('CC',
     'SimpleGridContinuous',
     1,
     {'size': 16,
      'randomize_actions': False,
      'make_reward_stochastic': False,
      'p_lazy': 0.065,
      'p_rand': None,
      'sub_optimal_distribution': None,
      'optimal_distribution': None,
      'other_distribution': None}),
    ('CC',
     'SimpleGridContinuous',
     2,
     {'size': 25,
      'randomize_actions': False,
      'make_reward_stochastic': True,
      'p_lazy': 0.1,
      'p_rand': None,
      'sub_optimal_distribution': ('beta', (0.3, 49.0)),
      'optimal_distribution': ('beta', (2.0, 0.11)),
      'other_distribution': ('beta', (0.3, 4.0))}),
    ('CC',
     'SimpleGridContinuous',
     3,
     {'size': 25,
      'randomize_actions': False,
      'make_reward_stochastic': False,
      'p_lazy': 0.3,
      'p_rand': None,
      'sub_optimal_distribution': None,
      'optimal_distribution': None,
      'other_distribution': None}),
    ('CC',
     'TaxiContinuous',
     0,
     {'randomize_actions': False,
      'make_reward_stochastic': True,
      'p_lazy': 0.01,
      'size': 4,
      'length': 1,
      'width': 1,
      'space': 1,
      'n_locations': 3,
      'p_rand': None,
      'default_r': ('beta', (0.7, 30.0)),
      'successfully_delivery_r': ('beta', (0.4, 0.1)),
      'failure_delivery_r': ('beta', (0.8, 50.0))}),
    ('CE',
     'DeepSeaContinuous',
     0,
     {'size': 20, 'p_rand': 0.1, 'make_reward_stochastic': False, 'randomize_actions': False}),
    ('CE',
     'FrozenLakeContinuous',
     0,
     {'size': 5,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.01,
      'p_frozen': 0.95,
      'p_rand': 0.05}),
    ('CE',
     'MiniGridEmptyContinuous',
     0,
     {'size': 12,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.05,
      'p_rand': 0.495,
      'n_starting_states': 3}),
    ('CE',
     'MiniGridEmptyContinuous',
     1,
     {'size': 12,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.1,
      'p_rand': 0.395,
      'n_starting_states': 3}),
    ('CE',
     'MiniGridEmptyContinuous',
     2,
     {'size': 10,
      'make_reward_stochastic': False,
      'randomize_actions': False,
      'p_lazy': 0.02,
      'p_rand': 0.7,
      'n_starting_states': 3}),
    ('CE',
     'MiniGridEmptyContinuous',
     3,
     {'size': 14,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.02,
      'p_rand': 0.6,
      'n_starting_states': 3}),
    ('CE',
     'MiniGridEmptyContinuous',
     4,
     {'size': 10,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.1,
      'p_rand': 0.21,
      'n_starting_states': 3,
      'optimal_distribution': ('beta', (1.0, 0.11)),
      'other_distribution': ('beta', (1.0, 4.0))}),
    ('CE',
     'MiniGridEmptyContinuous',
     5,
     {'size': 14,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.02,
      'p_rand': 0.4,
      'n_starting_states': 3,
      'optimal_distribution': ('beta', (0.5, 0.11)),
      'other_distribution': ('beta', (1.5, 4.0))}),
    ('CE',
     'MiniGridEmptyContinuous',
     6,
     {'size': 14,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.05,
      'p_rand': 0.31,
      'n_starting_states': 3,
      'optimal_distribution': ('beta', (1.0, 0.11)),
      'other_distribution': ('beta', (1.0, 4.0))}),
    ('CE',
     'MiniGridEmptyContinuous',
     7,
     {'size': 14,
      'make_reward_stochastic': True,
      'randomize_actions': False,
      'p_lazy': 0.1,
      'p_rand': 0.6,
      'n_starting_states': 3,
      'optimal_distribution': ('beta', (0.3, 0.11)),
      'other_distribution': ('beta', (2.0, 4.0))}),
    ('CE',
     'MiniGridRoomsContinuous',
     0,
     {'randomize_actions': False,
      'make_reward_stochastic': True,
      'room_size': 3,
      'n_rooms': 16,
      'p_rand': 0.1,
      'p_lazy': 0.4}),
    ('CE',
     'MiniGridRoomsContinuous',
     1,
     {'randomize_actions': False,
      'make_reward_stochastic': False,
      'room_size': 5,
      'n_rooms': 9,
      'p_rand': 0.3,
      'p_lazy': 0.4}),
    ('CE',
     'RiverSwimContinuous',
     0,
     {'make_reward_stochastic': False,
      'randomize_actions': False,
      'size': 30,
      'p_lazy': 0.1,
      'p_rand': 0.2}),
    ('CE',
     'RiverSwimContinuous',
     1,
     {'make_reward_stochastic': True,
      'randomize_actions': False,
      'size': 50,
      'p_lazy': 0.1,
      'p_rand': 0.1}),
    ('CE',
     'RiverSwimContinuous',
     2,
     {'make_reward_stochastic': True,
      'randomize_actions': False,
      'size': 80,
      'p_lazy': 0.001,
      'p_rand': 0.2}),
    ('CE',
     'RiverSwimContinuous',
     3,
     {'make_reward_stochastic': False,
      'randomize_actions': False,
      'size': 80,
      'p_lazy': 0.1,
      'p_rand': 0.01}),
    ('CE',
     'SimpleGridContinuous',
     0,
     {'size': 15,
      'randomize_actions': False,
      'make_reward_stochastic': True,
      'p_lazy': 0.4,
      'p_rand': 0.4}),
    ('CE',
     'SimpleGridContinuous',
     1,
     {'size': 10,
      'randomize_actions': False,
      'make_reward_stochastic': False,
      'p_lazy': 0.2,
      'sub_optimal_distribution': None,
      'optimal_distribution': None,
      'other_distribution': None,
      'p_rand': 0.01}),
    ('CE',
     'SimpleGridContinuous',
     2,
     {'size': 20,
      'randomize_actions': False,
      'make_reward_stochastic': False,
      'p_lazy': 0.1,
      'sub_optimal_distribution': None,
      'optimal_distribution': None,
      'other_distribution': None,
      'p_rand': 0.1}),
    ('CE',
     'TaxiContinuous',
     0,
     {'randomize_actions': False,
      'make_reward_stochastic': True,
      'p_lazy': 0.01,
      'size': 4,
      'length': 1,
      'width': 1,
      'space': 1,
      'n_locations': 3,
      'p_rand': 0.1,
      'default_r': ('beta', (0.8, 20.0)),
      'successfully_delivery_r': ('beta', (1.0, 0.1)),
      'failure_delivery_r': ('beta', (0.8, 50.0))}),
)


#: The lake of each FrozenLake instance as Colosseum builds it at seed 0 (its
#: ``FrozenLakeMDP.lake``, Gym's ``generate_random_map`` after ``np.random.seed(0)``; rows
#: from its X = 0, ``H`` a hole), printed by ``tests/fixtures/colosseum/make_fixtures.py
#: --lakes``. Colosseum's benchmark runs each instance at several seeds, each its own
#: lake; bbrl's instance is the first seed's.
LAKES: dict[str, tuple[str, ...]] = {
    "Colosseum-EC-FrozenLake-0": ("SFF", "FFF", "FFG"),
    "Colosseum-EE-FrozenLake-0": ("SFFF", "FFFF", "FFFF", "FFFG"),
    "Colosseum-CC-FrozenLake-0": ("SFFF", "FFFF", "HFFF", "FFFG"),
    "Colosseum-CC-FrozenLake-1": ("SFFFF", "FFFHF", "FFFHF", "FFFFF", "HFFFG"),
    "Colosseum-CE-FrozenLake-0": ("SFFFF", "FFFHF", "FFFFF", "FFFFF", "HFFFG"),
}


#: Colosseum's FrozenLake actions in bbrl's ``frozenlake`` labels: its action a moves as
#: bbrl's ``FROZENLAKE_ACTIONS[a]`` (its RIGHT decreases its Y, its LEFT increases it,
#: ``_next_positions``: bbrl's left and right). An instance takes Colosseum's labels.
FROZENLAKE_ACTIONS = (0, 3, 2, 1)

#: ``randomize_actions``: the action mapping Colosseum's seed 0 draws per state
#: (``_get_action_mapping``), by bbrl state ``r·size + c``, printed by ``make_fixtures.py
#: --action-maps``. Its transitions key the transition of action a under ``mapping[a]``
#: (``mdp_creation.instantiate_transitions``): the agent's action b plays the inverse
#: mapping's action; its rewards take ``mapping[b]`` (``get_reward_distribution``), the
#: other way round, which makes no difference where the reward depends on the next state
#: only (FrozenLake: the goal or not).
ACTION_MAPS: dict[str, tuple[tuple[int, ...], ...]] = {
    "Colosseum-EE-FrozenLake-0": (
        (3, 0, 2, 1), (1, 3, 0, 2), (3, 1, 2, 0), (1, 3, 2, 0), (0, 1, 3, 2), (3, 0, 1, 2),
        (3, 2, 0, 1), (0, 1, 3, 2), (2, 0, 1, 3), (2, 1, 0, 3), (0, 2, 1, 3), (1, 3, 2, 0),
        (2, 3, 0, 1), (0, 2, 1, 3), (2, 3, 1, 0), (0, 2, 1, 3)),
}

#: The central tile an even SimpleGrid instance starts on at Colosseum's seed 0, as
#: bbrl's ``start`` (its ``_calculate_starting_nodes`` shuffles the four central tiles with
#: the seed): 3 for every even instance of the benchmarks (read off the fixtures
#: ``instances/Colosseum-*-SimpleGrid-*.npz`` of ``make_fixtures.py --instances``, whose
#: start a test checks). Another seed may start on another tile.
SIMPLEGRID_SEED0_START = 3

#: The goal tile and the starts of each MiniGrid-Empty instance as Colosseum's seed 0
#: draws them (its ``_get_starting_node_sampler``: a side, a goal tile on the opposite
#: side, ``n_starting_states`` tiles of the side each with a heading), in bbrl's
#: ``minigrid_empty`` indices (tile ``r·size + c`` with r = size − 1 − Colosseum's Y,
#: c = its X; start state ``4·tile + heading``, the headings Colosseum's): read off the
#: fixtures ``instances/Colosseum-*-MiniGridEmpty-*.npz`` of ``make_fixtures.py
#: --instances`` (the goal: the tile whose entering transitions pay the optimal reward;
#: the starts: the starting distribution's states), which a test checks.
MINIGRID_EMPTY_SEED0: dict[str, tuple[int, tuple[int, ...]]] = {
    "Colosseum-EC-MiniGridEmpty-0": (35, (1, 74, 96)),
    "Colosseum-EC-MiniGridEmpty-1": (35, (1, 27, 50, 74, 96)),
    "Colosseum-EC-MiniGridEmpty-2": (35, (1, 74, 96)),
    "Colosseum-EC-MiniGridEmpty-3": (59, (2, 120, 160, 203, 280)),
    "Colosseum-EC-MiniGridEmpty-4": (59, (2, 203, 280)),
    "Colosseum-EE-MiniGridEmpty-0": (59, (2, 203, 280)),
    "Colosseum-EE-MiniGridEmpty-1": (59, (2, 203, 280)),
    "Colosseum-EE-MiniGridEmpty-2": (59, (2, 203, 280)),
    "Colosseum-EE-MiniGridEmpty-3": (63, (33, 162, 192)),
    "Colosseum-EE-MiniGridEmpty-4": (63, (33, 162, 192)),
    "Colosseum-EE-MiniGridEmpty-5": (35, (1, 74, 96)),
    "Colosseum-EE-MiniGridEmpty-6": (15, (3, 19, 51)),
    "Colosseum-CC-MiniGridEmpty-0": (71, (144, 240, 338)),
    "Colosseum-CC-MiniGridEmpty-1": (71, (144, 240, 338)),
    "Colosseum-CC-MiniGridEmpty-2": (63, (33, 162, 192)),
    "Colosseum-CC-MiniGridEmpty-3": (63, (33, 162, 192)),
    "Colosseum-CC-MiniGridEmpty-4": (71, (144, 240, 338)),
    "Colosseum-CE-MiniGridEmpty-0": (71, (144, 240, 338)),
    "Colosseum-CE-MiniGridEmpty-1": (71, (144, 240, 338)),
    "Colosseum-CE-MiniGridEmpty-2": (59, (2, 203, 280)),
    "Colosseum-CE-MiniGridEmpty-3": (83, (283, 394, 673)),
    "Colosseum-CE-MiniGridEmpty-4": (59, (2, 203, 280)),
    "Colosseum-CE-MiniGridEmpty-5": (83, (283, 394, 673)),
    "Colosseum-CE-MiniGridEmpty-6": (83, (283, 394, 673)),
    "Colosseum-CE-MiniGridEmpty-7": (83, (283, 394, 673)),
}

#: The goal tile and the two starts (``n_starting_states`` 2, Colosseum's default) of each
#: MiniGrid-Rooms instance as Colosseum's seed 0 draws them (its
#: ``_get_starting_node_sampler``: a start corner room and another goal corner room, a
#: goal tile in it, the first two of the start room's shuffled (tile, heading) pairs), in
#: bbrl's ``minigrid_rooms`` indices (tile: its index in ``layout(room_size, n_rooms)``,
#: Colosseum's (X, Y); start state ``4·tile + heading``), read off the fixtures
#: ``instances/Colosseum-*-MiniGridRooms-*.npz`` as :data:`MINIGRID_EMPTY_SEED0`.
MINIGRID_ROOMS_SEED0: dict[str, tuple[int, tuple[int, ...]]] = {
    "Colosseum-EC-MiniGridRooms-0": (61, (158, 162)),
    "Colosseum-EC-MiniGridRooms-1": (65, (281, 291)),
    "Colosseum-EC-MiniGridRooms-2": (65, (281, 291)),
    "Colosseum-EC-MiniGridRooms-3": (22, (97, 107)),
    "Colosseum-EE-MiniGridRooms-0": (22, (97, 107)),
    "Colosseum-EE-MiniGridRooms-1": (65, (281, 291)),
    "Colosseum-EE-MiniGridRooms-2": (61, (158, 162)),
    "Colosseum-CC-MiniGridRooms-0": (207, (808, 872)),
    "Colosseum-CC-MiniGridRooms-1": (65, (281, 291)),
    "Colosseum-CC-MiniGridRooms-2": (207, (808, 872)),
    "Colosseum-CE-MiniGridRooms-0": (130, (553, 563)),
    "Colosseum-CE-MiniGridRooms-1": (207, (808, 872)),
}

#: The three locations (Colosseum's (X, Y)) of each Taxi instance as Colosseum's seed 0
#: draws them (its ``locations``: one per quadrant, apart), read off the fixtures
#: ``instances/Colosseum-*-Taxi-*.npz`` (the passengers' and destinations' tiles), which
#: a test checks. Its walls are not drawn (``length``, ``width``, ``space`` 1 in every
#: instance: :func:`~bbrlcore.mdp.families.taxi.colosseum_tiles`).
TAXI_SEED0: dict[str, tuple[tuple[int, int], ...]] = {
    "Colosseum-EC-Taxi-0": ((0, 0), (1, 2), (3, 0)),
    "Colosseum-EC-Taxi-1": ((0, 0), (3, 3), (4, 0)),
    "Colosseum-EE-Taxi-0": ((0, 0), (1, 2), (3, 0)),
    "Colosseum-EE-Taxi-1": ((0, 0), (1, 2), (3, 0)),
    "Colosseum-CC-Taxi-0": ((0, 0), (1, 2), (3, 0)),
    "Colosseum-CE-Taxi-0": ((0, 0), (1, 2), (3, 0)),
}


@dataclass(frozen=True)
class Instance:
    """One Colosseum benchmark instance.

    ``params`` are its gin bindings; ``stochastic`` whether its rewards are random
    (``make_reward_stochastic``); ``family`` bbrl's family of the same problem (None:
    none yet); ``problem_params`` the bbrl parameters that are exactly this MDP (None when
    bbrl cannot express it yet, and ``needs`` says what it lacks).
    """

    name: str
    setting: str
    cls: str
    index: int
    params: dict[str, Any]
    stochastic: bool
    family: str | None
    problem_params: dict[str, Any] | None
    needs: str | None

    @property
    def episodic(self) -> bool:
        return self.cls.endswith("Episodic")


def _ctl(kw: dict[str, Any]) -> dict[str, float]:
    return {"p_rand": float(kw.get("p_rand") or 0.0), "p_lazy": float(kw.get("p_lazy") or 0.0)}


#: Colosseum's reward categories of a family, by the deterministic reward of bbrl's
#: family (Colosseum's own deterministic values, ``_get_reward_distribution``): a
#: transition whose deterministic reward is the value is of the category.
CATEGORIES: dict[str, dict[str, Any]] = {
    "RiverSwim": {"optimal": 1.0, "sub_optimal": lambda kw: 5 / 1000, "other": 0.0},
    "DeepSea": {"optimal": 1.0, "sub_optimal": lambda kw: 1.0 / kw["size"] ** 2,
                "other": 0.0},
    "SimpleGrid": {"optimal": 1.0, "sub_optimal": 0.0, "other": 0.5},
    "FrozenLake": {"goal_r": 1.0, "default_r": 0.0},
    "MiniGridEmpty": {"optimal": 1.0, "other": 0.0},
    "MiniGridRooms": {"optimal": 1.0, "other": 0.0},
    "Taxi": {"default_r": 0.1, "successfully_delivery_r": 1.0, "failure_delivery_r": 0.0},
}


def beta_parameters(base: str, kw: dict[str, Any], episodic: bool
                    ) -> dict[str, tuple[float, float]]:
    """Colosseum's Beta law ``(a, b)`` of each reward category of a stochastic instance,
    as its constructor sets them (``make_reward_stochastic``): the three distributions the
    gin file gives when it gives all three, otherwise Colosseum's defaults with its
    ``reward_variance_multiplier`` c (1 unless bound):

    * RiverSwim: sub-optimal mean m = 0.2 (0.2/size episodic), optimal 0.9: sub-optimal
      Beta(c, c(1/m − 1)), optimal Beta(c, c(1/0.9 − 1)), other Beta(c, c(10/m − 1));
    * DeepSea (returns 1 and 0.5): sub-optimal (a left move) Beta(c, c(size/0.5 − 1)),
      optimal Beta(c(size − 1), c), other Beta(c, 10c(size/0.5 − 1));
    * SimpleGrid (means 0.9 and 0.2): optimal corner Beta(c, c(1/0.9 − 1)), sub-optimal
      corner Beta(c, c(10/0.2 − 1)), other Beta(c, c(1/0.2 − 1)).
    * FrozenLake (returns 1 and 0.1; its ``goal_r`` and ``default_r``): a transition into
      the goal Beta(c(size² − 1), c), every other Beta(c, c(size²/0.1 − 1)).
    * MiniGrid-Empty and MiniGrid-Rooms (n the side of the grid: ``size``, or
      ``room_size``·√``n_rooms``): a transition into the goal tile (optimal)
      Beta(c(n² − 1), c), every other Beta(c, c(n² − 1)).
    * Taxi (its ``default_r``, ``successfully_delivery_r``, ``failure_delivery_r``; every
      benchmark instance gives them): Beta(c, c(1/0.2 − 1)), Beta(c, c(1/0.9 − 1)),
      Beta(c, c(10/0.2 − 1)).

    >>> beta_parameters("RiverSwim", {"size": 5}, True)["sub_optimal"]
    (1.0, 24.0)
    """
    given = {k: kw.get(k if k.endswith("_r") else f"{k}_distribution")
             for k in CATEGORIES[base]}
    if all(v is not None for v in given.values()):
        out = {}
        for k, (law, args) in given.items():
            if law != "beta":
                raise ValueError(f"{base}: {k}_distribution {law!r} is not a Beta")
            out[k] = (float(args[0]), float(args[1]))
        return out
    c = float(kw.get("reward_variance_multiplier", 1.0))
    if base == "RiverSwim":
        m, opt = 0.2 / (kw["size"] if episodic else 1), 0.9
        return {"sub_optimal": (c, c * (1 / m - 1)), "optimal": (c, c * (1 / opt - 1)),
                "other": (c, c * (10 / m - 1))}
    if base == "DeepSea":
        n, ret_opt, ret_sub = kw["size"], 1.0, 0.5
        return {"sub_optimal": (c, c * (n / ret_sub - 1)),
                "optimal": (c * (n / ret_opt - 1), c),
                "other": (c, c * 10 * (n / ret_sub - 1))}
    if base == "FrozenLake":
        n2, ret_opt, ret_sub = kw["size"] ** 2, 1.0, 0.1
        return {"default_r": (c, c * (n2 / ret_sub - 1)), "goal_r": (c * (n2 / ret_opt - 1), c)}
    if base == "Taxi":
        sub, opt = 0.2, 0.9
        return {"default_r": (c, c * (1 / sub - 1)),
                "successfully_delivery_r": (c, c * (1 / opt - 1)),
                "failure_delivery_r": (c, c * (10 / sub - 1))}
    if base in ("MiniGridEmpty", "MiniGridRooms"):
        n = kw["size"] if base == "MiniGridEmpty" else int(
            kw["room_size"] * kw.get("n_rooms", 4) ** 0.5)
        return {"optimal": (c * (n ** 2 - 1), c), "other": (c, c * (n ** 2 - 1))}
    if base == "SimpleGrid":
        opt, sub = 0.9, 0.2
        return {"sub_optimal": (c, c * (10 / sub - 1)), "optimal": (c, c * (1 / opt - 1)),
                "other": (c, c * (1 / sub - 1))}
    raise ValueError(f"no Colosseum reward laws for {base}")


def _express(name: str, base: str, kw: dict[str, Any]
             ) -> tuple[dict[str, Any] | None, str | None]:
    """bbrl's parameters of an instance, or what bbrl lacks to express it."""
    needs = []
    if kw.get("make_reward_stochastic") and base not in CATEGORIES:
        needs.append("stochastic rewards")
    if kw.get("randomize_actions") and name not in ACTION_MAPS:
        needs.append("randomized actions")
    if needs:
        return None, "; ".join(needs)
    c = {"concentration": INSTANCE_CONCENTRATION}
    if base == "RiverSwim":
        return {"size": kw["size"], "current": 0, **_ctl(kw), **c}, None
    if base == "DeepSea":
        return {"size": kw["size"], "form": 1, "p_rand": _ctl(kw)["p_rand"], **c}, None
    if base == "FrozenLake":
        return {"size": kw["size"], "p_frozen": float(kw["p_frozen"]), "slip": 0.5,
                **_ctl(kw), **c, "lake": lake_of(LAKES[name])}, None
    if base == "MiniGridEmpty":
        from bbrlcore.mdp.families.minigrid_empty import starts_code

        goal, starts = MINIGRID_EMPTY_SEED0[name]
        return {"size": kw["size"], **_ctl(kw), **c, "form": 1, "goal": goal,
                "starts": starts_code(kw["size"], starts)}, None
    if base == "Taxi":
        from bbrlcore.mdp.families.taxi import locations_code

        walls = {k: int(kw[k]) for k in ("length", "width", "space")}
        return {"size": kw["size"], **_ctl(kw), **c, "form": 1,
                "locations": locations_code(kw["size"], TAXI_SEED0[name], **walls),
                **walls}, None
    if base == "MiniGridRooms":
        from bbrlcore.mdp.families.minigrid_rooms import starts_code as rooms_code

        goal, starts = MINIGRID_ROOMS_SEED0[name]
        size, n_rooms = kw["room_size"], kw.get("n_rooms", 4)
        return {"size": size, "n_rooms": n_rooms,
                "n_starts": kw.get("n_starting_states", 2), **_ctl(kw), **c, "form": 1,
                "goal": goal, "starts": rooms_code(size, n_rooms, starts)}, None
    start = SIMPLEGRID_SEED0_START if kw["size"] % 2 == 0 else 0
    return {"size": kw["size"], "reward_type": int(kw.get("reward_type", 3)), **_ctl(kw),
            "other": 0.5, "start": start, **c}, None


def action_labels(inst: Instance, n_states: int) -> Any:
    """(nX, nU) int: the family's action that the instance's action a plays in state x
    (None: the family's labels are Colosseum's). FrozenLake: :data:`FROZENLAKE_ACTIONS`
    after the instance's :data:`ACTION_MAPS` (a state Colosseum has no node for, a hole,
    keeps the identity mapping).

    >>> action_labels(INSTANCES["Colosseum-CC-FrozenLake-0"], 16)[0].tolist()
    [0, 3, 2, 1]
    """
    import numpy as np

    if not inst.cls.startswith("FrozenLake"):
        return None
    m = np.tile(np.arange(4), (n_states, 1))
    rows = ACTION_MAPS.get(inst.name, ())
    if rows:  # (its transitions: action mapping[a] plays action a, ACTION_MAPS)
        m[: len(rows)] = np.argsort(np.asarray(rows), axis=1)
    return np.asarray(FROZENLAKE_ACTIONS)[m]


def relabelled(test: Any, labels: Any) -> Any:
    """An FDM ``test`` with its actions relabelled per state: the new action a of state x
    is the old action ``labels[x, a]`` (each row of ``labels`` a permutation)."""
    import numpy as np

    from bbrlcore.mdp.distributions import FDMDistribution

    nX, nU = test.n_states, test.n_actions
    e = test._data
    x, rest = np.divmod(e.keys, nU * nX)
    u, y = np.divmod(rest, nX)
    inv = np.empty_like(labels)
    np.put_along_axis(inv, labels, np.arange(nU)[None, :].repeat(nX, 0), axis=1)
    keys = (x * nU + inv[x, u]) * nX + y
    order = np.argsort(keys)
    out = FDMDistribution.from_entries(test.name, test.short_name, nX, nU, keys[order],
                                       e.theta[order], e.reward[order], test.initial_state)
    return _with_starts(out, test)


def _with_starts(d: Any, test: Any) -> Any:
    """``d`` with the starting distribution of ``test`` (when it has one)."""
    from bbrlcore.mdp.environment import with_environment

    starts = getattr(test, "starts", None)
    return d if starts is None else with_environment(d, starts=starts)


def instance_test(inst: Instance, test: Any) -> Any:
    """The test distribution of an instance from its family's ``test`` (same parameters):
    Colosseum's action labels (:func:`action_labels`) and, with stochastic rewards, its
    reward laws (:func:`stochastic_test`); ``test`` itself when neither applies."""
    labels = action_labels(inst, test.n_states)
    if labels is not None:
        test = relabelled(test, labels)
    return stochastic_test(inst, test) if inst.stochastic else test


def stochastic_test(inst: Instance, test: Any) -> Any:
    """The test distribution of a stochastic-reward instance from its family's
    deterministic one ``test`` (an FDM, same transitions): each transition of its support
    gets Colosseum's Beta law of its category (:data:`CATEGORIES`,
    :func:`beta_parameters`) and that law's mean as its expected reward; the
    deterministic rewards on impossible transitions are dropped."""
    import numpy as np

    from bbrlcore.mdp.distributions import FDMDistribution
    from bbrlcore.mdp.environment import RewardLaws, with_environment

    base = inst.cls.removesuffix("Episodic").removesuffix("Continuous")
    laws = beta_parameters(base, inst.params, inst.episodic)
    e = test._data
    on = e.theta > 0
    keys, theta, det = e.keys[on], e.theta[on], e.reward[on]
    a, b = np.zeros(keys.size), np.zeros(keys.size)
    seen = np.zeros(keys.size, bool)
    for cat, value in CATEGORIES[base].items():
        v = value(inst.params) if callable(value) else value
        hit = det == v
        if (hit & seen).any():
            raise AssertionError(f"{inst.name}: two categories pay {v}")
        a[hit], b[hit] = laws[cat]
        seen |= hit
    if not seen.all():
        raise AssertionError(f"{inst.name}: a transition's reward "
                             f"{det[np.argmin(seen)]} is of no Colosseum category")
    mean = a / (a + b)
    nX, nU = test.n_states, test.n_actions
    d = FDMDistribution.from_entries(test.name, test.short_name, nX, nU, keys, theta, mean,
                                     test.initial_state)
    n = keys.size
    return with_environment(d, RewardLaws.make(nX, nU, keys, ["beta"] * n, np.zeros(n),
                                               np.ones(n), a, b, what=inst.name),
                            getattr(test, "starts", None))


def _instances() -> dict[str, Instance]:
    out = {}
    for code, cls, index, kw in RAW:
        base = cls.removesuffix("Episodic").removesuffix("Continuous")
        name = f"Colosseum-{code}-{base}-{index}"
        problem_params, needs = _express(name, base, kw)
        out[name] = Instance(name, SETTINGS[code], cls, index, dict(kw),
                             bool(kw.get("make_reward_stochastic")), FAMILIES[base],
                             problem_params, needs)
    return out


#: Every instance by name (``Colosseum-<setting>-<family>-<index>``).
INSTANCES: dict[str, Instance] = _instances()
