"""Dense Dirichlet draws (numba), shared by the mdp room (``draw_mdp`` of a prior
``+dir<α>``, :func:`bbrlcore.mdp.transition_prior.draw_dense`) and the agents room
(OPPS-DS's training MDPs, re-exported by :mod:`bbrlcore.agents._kernels`), and the memory
limit of a dense agent array."""

from __future__ import annotations

import numpy as np
from numba import njit

#: Largest memory a built-in agent may preallocate for one trajectory (search trees,
#: sampled models); configurations beyond it are refused up front. (Re-exported as
#: :data:`bbrlcore.agents.base.MAX_AGENT_MEMORY_BYTES`.)
MAX_AGENT_MEMORY_BYTES = 16 * 2**30


@njit(cache=True, error_model="numpy")
def dirichlet_row(alpha, out):
    """Draw ``out ~ Dir(alpha)`` as normalised Gamma variates.

    A zero concentration gives exactly zero probability. If the Gamma variates sum to
    less than 1e-300 (tiny concentrations), all mass goes to one uniformly chosen entry
    of the support.
    """
    n = alpha.shape[0]
    s = 0.0
    npos = 0
    for y in range(n):
        a = alpha[y]
        if a > 0.0:
            g = np.random.gamma(a, 1.0)
            out[y] = g
            s += g
            npos += 1
        else:
            out[y] = 0.0
    if s < 1e-300:
        pick = np.random.randint(0, max(npos, 1))
        for y in range(n):
            if alpha[y] > 0.0 or npos == 0:
                out[y] = 1.0 if pick == 0 else 0.0
                pick -= 1
            else:
                out[y] = 0.0
        return
    inv = 1.0 / s
    for y in range(n):
        out[y] *= inv


@njit(cache=True, error_model="numpy")
def dirichlet_all_rows(seed, alpha, out):
    """Seed numba's generator with ``seed`` and fill every row ``out[x, u]`` of the
    (nX, nU, nY) array with a draw of Dir(α, ..., α) over its nY entries
    (:func:`dirichlet_row`, the sampler of OPPS-DS's training draws under ``+dir<α>``,
    in the same order: rows x, then u). What
    :meth:`bbrlcore.mdp.distributions.FDMDistribution.draw_mdp` draws from a prior
    ``+dir<α>``."""
    np.random.seed(seed)
    nX, nU, nY = out.shape
    row = np.full(nY, alpha)
    for x in range(nX):
        for u in range(nU):
            dirichlet_row(row, out[x, u])
