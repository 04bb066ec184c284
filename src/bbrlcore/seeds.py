"""The seed tree.

Every random draw flows from one tree of :class:`numpy.random.SeedSequence`:

* test MDP ``i`` of a test set with seed ``S``: ``SeedSequence([S, i])``;
* the trajectory of agent ``a`` on test MDP ``i``: ``SeedSequence([S, h(a), i])``, where
  ``h(a)`` is a 64-bit number from the SHA-256 of the agent id (never Python's ``hash()``,
  which changes between processes); the 32-bit integer it generates seeds the trajectory
  kernel and is recorded in the run table's ``seed`` column;
* offline learning with seed ``s``: ``SeedSequence([s, h(agent id), ...])`` (agent-specific);
* the **validation set** of a test set with seed ``S`` (the MDPs on which each algorithm's
  configuration is chosen, ``selection: validation``) has the seed
  :func:`validation_seed` ``(S)``, drawn from ``SeedSequence([S, VALIDATION_TAG])`` into
  ``[2^62, 2^63)`` and never ``S`` itself: its MDP ``i`` is ``SeedSequence([V, i])``, a
  draw no test set seeded below ``2^62`` (every seed written by hand) makes.

So chunking a run, reordering jobs or moving to another machine gives the same returns.
"""

from __future__ import annotations

import hashlib

import numpy as np

#: Largest seed of a test set or of offline learning (seeds are stored as int64).
MAX_SEED = 2**63 - 1


def check_seed(seed: int, where: str) -> int:
    """``seed`` if it is an integer in [0, :data:`MAX_SEED`]; else a :class:`BBRLError`
    naming ``where`` (``--seed``, ``test_seed``, ...)."""
    from bbrlcore.errors import BBRLError

    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise BBRLError(f"{where} {seed}: must be an integer in [0, 2^63 - 1]")
    return seed


#: The branch of the seed tree that derives a validation seed from a test seed (the
#: ASCII bytes of "valid").
VALIDATION_TAG = 0x76616C6964


def validation_seed(test_seed: int) -> int:
    """The seed of the validation set of the test set seeded ``test_seed``: from
    ``SeedSequence([test_seed, VALIDATION_TAG])``, in ``[2^62, 2^63)`` (so it never
    equals a seed below ``2^62``, such as every test seed written by hand) and never
    ``test_seed`` itself.

    >>> v = validation_seed(0)
    >>> 2**62 <= v < 2**63 and v != validation_seed(1) and v == validation_seed(0)
    True
    """
    check_seed(test_seed, "test seed")
    words = np.random.SeedSequence([test_seed, VALIDATION_TAG]).generate_state(4, np.uint32)
    for k in range(0, len(words), 2):
        v = 2**62 | ((int(words[k]) << 32 | int(words[k + 1])) & (2**62 - 1))
        if v != test_seed:
            return v
    raise AssertionError("unreachable: two 62-bit draws equal to the test seed")  # pragma: no cover


def id_hash64(agent_id: str) -> int:
    """A stable 64-bit number from the SHA-256 of ``agent_id``."""
    return int.from_bytes(hashlib.sha256(agent_id.encode()).digest()[:8], "little")


def mdp_rng(test_seed: int, index: int) -> np.random.Generator:
    """Generator drawing test MDP ``index`` of the test set seeded ``test_seed``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([test_seed, index])))


def trajectory_seed(test_seed: int, agent_id: str, index: int) -> int:
    """The 32-bit integer seeding the trajectory of ``agent_id`` on MDP ``index``."""
    ss = np.random.SeedSequence([test_seed, id_hash64(agent_id), index])
    return int(ss.generate_state(1, np.uint32)[0])


def trajectory_seeds(test_seed: int, agent_id: str, indices: np.ndarray) -> np.ndarray:
    h = id_hash64(agent_id)
    return np.array(
        [
            np.random.SeedSequence([test_seed, h, int(i)]).generate_state(1, np.uint32)[0]
            for i in indices
        ],
        dtype=np.int64,
    )
