"""Problem families: classic exploration problems as parametrised test distributions.

Each family is one module (its problem, figure in words and reference in the docstring);
:func:`make` turns a family and its parameters into a :class:`Problem`: the test
distribution plus an accurate and a uniform prior, both FDM distributions, so every agent
runs on every family unchanged. The framework (parameters, names, drawn structure, how the
priors are computed) is described in :mod:`bbrlcore.mdp.families._base`.

========================  ===========================================================
family                    problem
========================  ===========================================================
``chain``                 Chain (Strens 2000)
``doubleloop``            Double-loop (Dearden, Friedman & Russell 1998)
``riverswim``             RiverSwim (Strehl & Littman 2008)
``sixarms``               SixArms (Strehl & Littman 2008)
``deepsea``               DeepSea (Osband et al. 2019, bsuite)
``frozenlake``            FrozenLake (Colosseum)
``simplegrid``            SimpleGrid (Colosseum)
``minigrid_empty``        MiniGrid-Empty (Chevalier-Boisvert et al.; Colosseum)
``taxi``                  Taxi (Dietterich 2000; Colosseum)
``gc``, ``gdl``, ``grid`` the BBRL paper's GC, GDL and Grid (defaults: the built-ins)
========================  ===========================================================

Examples
--------
>>> from bbrlcore.mdp import families
>>> p = families.make("deepsea", size=20, p_rand=0.05)
>>> p.short_name, type(p.test).__name__
('DeepSea-20-prand0.05', 'DeepSeaDistribution')
>>> families.make("deepsea", size=1)
Traceback (most recent call last):
...
bbrlcore.errors.BBRLError: family deepsea: size=1: must be an integer in [2, 70]
>>> families.from_dict(p.test.to_dict(), "example").short_name
'DeepSea-20-prand0.05'
"""

from __future__ import annotations

from typing import Any

from bbrlcore.errors import BBRLError
from bbrlcore.mdp.distributions import FDMDistribution
from bbrlcore.mdp.families import (
    chain,
    deepsea,
    doubleloop,
    frozenlake,
    gc,
    gdl,
    grid,
    minigrid_empty,
    riverswim,
    simplegrid,
    sixarms,
    taxi,
)
from bbrlcore.mdp.families._base import Family, FamilyDistribution, Param, Problem, support

__all__ = ["FAMILIES", "Family", "FamilyDistribution", "Param", "Problem", "from_dict",
           "get_family", "make", "support"]

#: Every family, by id.
FAMILIES: dict[str, Family] = {
    m.FAMILY.name: m.FAMILY
    for m in (chain, doubleloop, riverswim, sixarms, deepsea, frozenlake, simplegrid,
              minigrid_empty, taxi, gc, gdl, grid)
}


def get_family(name: str) -> Family:
    """The family ``name`` (one :class:`BBRLError` line listing the families if unknown)."""
    try:
        return FAMILIES[name]
    except (KeyError, TypeError):
        raise BBRLError(f"unknown problem family {name!r} "
                        f"(families: {', '.join(FAMILIES)})") from None


def make(family: str, /, **params: Any) -> Problem:
    """The problem ``family`` with ``params`` (others at their defaults), validated
    up front: any problem is one :class:`BBRLError` line naming the family and the
    parameter.

    >>> make("gc").short_name, make("chain", slip=0.1).short_name
    ('GC', 'Chain-5-slip0.1')
    """
    spec = get_family(family)
    return Problem(spec, spec.validate(params))


def from_dict(d: Any, source: str = "distribution") -> FamilyDistribution | FDMDistribution:
    """Rebuild the test distribution of :meth:`FamilyDistribution.to_dict` through
    :func:`make`; any problem (malformed, unknown family, bad parameter, names or sizes
    that the parameters no longer give) is one :class:`BBRLError` naming ``source``."""
    if not isinstance(d, dict) or not isinstance(d.get("params"), dict):
        raise BBRLError(f"{source}: malformed embedded family distribution "
                        "(needs 'family' and a 'params' object)")
    try:
        test = make(d.get("family"), **{str(k): v for k, v in d["params"].items()}).test
    except BBRLError as exc:
        raise BBRLError(f"{source}: embedded distribution: {exc}") from None
    for key in ("short_name", "name", "n_states", "n_actions", "initial_state"):
        if key in d and d[key] != getattr(test, key):
            raise BBRLError(
                f"{source}: embedded distribution: family {d['family']} with these "
                f"parameters gives {key} {getattr(test, key)!r}, the file says {d[key]!r} "
                "(written by another version?)")
    return test
