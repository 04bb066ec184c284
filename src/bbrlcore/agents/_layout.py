"""Where a built-in agent's arrays live: the sparse rows it works on.

An agent's model of the transitions (its counts, posterior mean, sampled models) needs a
slot for every transition its prior allows (``theta > 0``) and every transition the test
MDPs can have (an observation outside the prior's support joins the model, as a dense
count array would take it). :func:`setting` joins the two layouts once per player
(:func:`bbrlcore.mdp.rows.union`; it is the prior's support itself when that holds the
test distribution's, as in every experiment of the paper and every family prior), puts
the prior's concentrations and rewards and the test rewards on it, and
:meth:`Setting.env` moves a test MDP onto it, so that the environment's slot ``k`` of a
transition is the model's: a kernel never searches a row.

On a dense :class:`~bbrlcore.agents.base.Episode` (no layout) the test layout is full
and so is the agent's: the kernels then run on dense arrays, as they did before sparse
rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from bbrlcore.agents.base import Episode
from bbrlcore.mdp import rows
from bbrlcore.mdp.rows import Layout


@dataclass(frozen=True, eq=False)
class Setting:
    """The arrays of a built-in agent on its layout (module docstring)."""

    layout: Layout
    #: the prior's concentrations and mean rewards on ``layout``
    theta: np.ndarray
    Rm: np.ndarray
    #: the test distribution's rewards (means, standard deviations) on ``layout``
    R: np.ndarray
    Rstd: np.ndarray
    #: slot of each test-layout slot in ``layout`` (None: the same layout)
    to_agent: np.ndarray | None
    test_nsucc: np.ndarray

    @property
    def succ(self) -> np.ndarray:
        return self.layout.succ

    @property
    def nsucc(self) -> np.ndarray:
        return self.layout.nsucc

    def env(self, P: np.ndarray) -> np.ndarray:
        """A test MDP (its values on the test layout) on the agent's layout."""
        if self.to_agent is None:
            return P
        return _moved(P, self.to_agent, self.test_nsucc, self.layout.width)


def setting(prior: Any, ep: Episode, extra: Layout | None = None) -> Setting:
    """The :class:`Setting` of an agent with prior ``prior`` on the test MDPs of ``ep``;
    ``extra``: more transitions the agent's model needs slots for. A prior with a
    Dirichlet on every next state (``+dir<α>``) gets α on every slot (``theta``), its
    layout joined with the prior's stored transitions (every reward it gives on a slot;
    the states outside a row's slots have concentration α and reward 0)."""
    test = ep.layout()
    lay = rows.union(prior.support_layout, test)
    if extra is not None:
        lay = rows.union(lay, extra)
    alpha = getattr(prior, "dirichlet_all", None)
    if alpha is not None:
        # (a Dirichlet on every next state: α on every slot, and the prior's stored
        # transitions joined, so that every reward it gives is on a slot and the states
        # outside a row's slots, each of concentration α too, pay none)
        lay = rows.union(lay, prior.entries)
        theta = np.where(lay.mask, float(alpha), 0.0)
    else:
        theta = _values(prior.support_layout, prior.theta_rows, lay)
    Rm = (prior.rewards_on(lay) if not lay.same_as(prior.support_layout)
          else np.array(prior.reward_rows))
    same = lay.same_as(test)
    to_agent = None if same else rows.slots_in(lay, test)
    # (writable copies: a read-only array is another numba type, and the kernels would
    # compile twice, for experiments whose layouts agree and for the others)
    R = np.array(ep.R, dtype=np.float64)
    Rstd = np.array(ep.Rstd, dtype=np.float64)
    if not same:
        R = _moved(np.ascontiguousarray(R), to_agent, test.nsucc, lay.width)
        Rstd = moved_stack(np.ascontiguousarray(Rstd), to_agent, test.nsucc, lay.width)
    return Setting(lay, np.ascontiguousarray(theta), np.ascontiguousarray(Rm),
                   np.ascontiguousarray(R), np.ascontiguousarray(Rstd), to_agent,
                   test.nsucc)


def moved_stack(values: np.ndarray, to_agent: np.ndarray, nsucc: np.ndarray, K: int
                ) -> np.ndarray:
    """:func:`_moved` on values of shape (b·nX, nU, K'): b blocks of (nX, nU, K') each
    moved (the reward laws' parameters, :func:`bbrlcore.mdp.environment.law_rows`)."""
    nX = nsucc.shape[0]
    b = values.shape[0] // nX
    if b == 1:
        return _moved(values, to_agent, nsucc, K)
    return np.concatenate([_moved(np.ascontiguousarray(values[i * nX:(i + 1) * nX]),
                                  to_agent, nsucc, K) for i in range(b)])


def _values(src: Layout, values: np.ndarray, dst: Layout) -> np.ndarray:
    if src.same_as(dst):
        return np.array(values, dtype=np.float64)
    return rows.move(values, src, dst)


@njit(cache=True, error_model="numpy")
def _moved(P, to_agent, nsucc, K):
    nX, nU, _ = P.shape
    out = np.zeros((nX, nU, K))
    for x in range(nX):
        for u in range(nU):
            for k in range(nsucc[x, u]):
                out[x, u, to_agent[x, u, k]] = P[x, u, k]
    return out
