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
``minigrid_rooms``        MiniGrid-Rooms (Chevalier-Boisvert et al.; Colosseum)
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

import re
from functools import cached_property
from typing import Any

from bbrlcore.errors import BBRLError
from bbrlcore.mdp.distributions import FDMDistribution
from bbrlcore.mdp.families import (
    chain,
    colosseum_instances,
    deepsea,
    doubleloop,
    frozenlake,
    gc,
    gdl,
    grid,
    minigrid_empty,
    minigrid_rooms,
    riverswim,
    simplegrid,
    sixarms,
    taxi,
)
from bbrlcore.mdp.families._base import (
    Family,
    FamilyDistribution,
    Param,
    Problem,
    Rewards,
    support,
    support_keys,
)

__all__ = ["FAMILIES", "Family", "FamilyDistribution", "Param", "Problem", "Rewards",
           "accurate_prior", "colosseum_instances", "episodic_form", "from_dict", "from_name",
           "get_family", "instance_problem", "make", "parse_name", "support",
           "support_keys"]

#: Every family, by id.
FAMILIES: dict[str, Family] = {
    m.FAMILY.name: m.FAMILY
    for m in (chain, doubleloop, riverswim, sixarms, deepsea, frozenlake, simplegrid,
              minigrid_empty, minigrid_rooms, taxi, gc, gdl, grid)
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
    from bbrlcore.mdp.environment import from_environment_dict

    return from_environment_dict(
        test, {k: d[k] for k in ("reward_laws", "starts") if k in d}, source)


#: Short names split at their dashes, except the one of a float's exponent (``1e-05``).
_SPLIT = re.compile(r"(?<![0-9]e)-")
#: One part of a short name after the display name: a tag (none for ``size``) and a value.
_PART = re.compile(r"([a-z]*)([0-9][0-9.e+-]*)")


def parse_name(name: Any) -> tuple[Family, dict[str, Any], bool] | None:
    """The family, complete parameters and whether it is the uniform prior (a leading
    ``U``) of a short name such as ``DeepSea-20``, ``UDeepSea-20-prand0.05`` or ``GC-7``;
    None when ``name`` is not exactly the name :meth:`Family.names` gives some valid
    parameters (the canonical form: default values are never written).

    >>> spec, params, uniform = parse_name("UDeepSea-20-prand0.05")
    >>> spec.name, params["size"], params["p_rand"], uniform
    ('deepsea', 20, 0.05, True)
    >>> parse_name("DeepSea-20-prand0"), parse_name("DeepSea-1"), parse_name("Foo-3")
    (None, None, None)
    """
    return _parse(name)[0]


def name_error(name: Any) -> str | None:
    """Why a name that starts like a family's (``DeepSea-100``) names none of its
    distributions (a :class:`BBRLError` text naming the family and the parameter, or the
    canonical name); None if it names one or does not look like a family's.

    >>> name_error("DeepSea-1")
    'family deepsea: size=1: must be an integer in [2, 70]'
    """
    return _parse(name)[1]


def _parse(name: Any) -> tuple[tuple[Family, dict[str, Any], bool] | None, str | None]:
    if not isinstance(name, str):
        return None, None
    inst = _instance(name)
    if inst is not None:
        (i, uniform) = inst
        if i.problem_params is None:
            return None, (f"Colosseum's benchmark instance {i.cls} prms_{i.index} "
                          f"({i.setting}) needs {i.needs}, which bbrl lacks yet (issue #42)")
        return (FAMILIES[i.family], dict(i.problem_params), uniform), None
    error = None
    candidates = [(name, False)] + ([(name[1:], True)] if name.startswith("U") else [])
    for text, uniform in candidates:
        parts = _SPLIT.split(text)
        spec = _BY_DISPLAY.get(parts[0])
        if spec is None:
            continue
        raw: dict[str, Any] = {}
        for part in parts[1:]:
            m = _PART.fullmatch(part)
            p = None if m is None else spec.param("size") if m.group(1) == "" else next(
                (q for q in spec.params if q.name != "size" and q.tag == m.group(1)), None)
            if m is None or p is None or p.name in raw:
                tags = ", ".join(f"{q.tag} ({q.name})" for q in spec.params if q.name != "size")
                error = (f"family {spec.name}: {part!r} in {name!r} is no parameter (a size, "
                         f"or a tag and a value; tags: {tags or 'none'})")
                break
            try:
                raw[p.name] = int(m.group(2)) if p.kind is int else float(m.group(2))
            except ValueError:
                error = f"family {spec.name}: {p.name}={m.group(2)!r}: must be {p.range_text()}"
                break
        else:
            try:
                full = spec.validate(raw)
            except BBRLError as exc:
                error = str(exc)
                continue
            canonical = spec.names(full)[0]
            if canonical == text:
                return (spec, full, uniform), None
            error = (f"family {spec.name}: {name!r} is not the name of these parameters: "
                     f"write {'U' if uniform else ''}{canonical}")
    return None, error


def _instance(name: str) -> tuple[colosseum_instances.Instance, bool] | None:
    """The Colosseum instance a name (or ``U`` + it) names, and whether it is the uniform
    prior's name; None if it names none."""
    if name in colosseum_instances.INSTANCES:
        return colosseum_instances.INSTANCES[name], False
    if name[:1] == "U" and name[1:] in colosseum_instances.INSTANCES:
        return colosseum_instances.INSTANCES[name[1:]], True
    return None


def instance_problem(name: str) -> Problem:
    """The problem of a Colosseum benchmark instance
    (:mod:`~bbrlcore.mdp.families.colosseum_instances`), named as the instance: its test
    distribution is ``name``, its uniform prior ``U`` + ``name``; one :class:`BBRLError`
    line saying what bbrl lacks when it cannot express the instance yet.

    >>> p = instance_problem("Colosseum-CE-RiverSwim-0")
    >>> p.short_name, p.family, p.params["current"], p.prior("uniform").short_name
    ('Colosseum-CE-RiverSwim-0', 'riverswim', 0, 'UColosseum-CE-RiverSwim-0')
    >>> instance_problem("Colosseum-EC-Taxi-9")
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: 'Colosseum-EC-Taxi-9': no Colosseum benchmark instance ...
    """
    inst = colosseum_instances.INSTANCES.get(name)
    if inst is None:
        raise BBRLError(f"{name!r}: no Colosseum benchmark instance of that name "
                        "(bbrl families lists them)")
    if inst.problem_params is None:
        raise BBRLError(f"{name}: {_parse(name)[1]}")
    spec = FAMILIES[inst.family]
    p = _InstanceProblem(spec, spec.validate(inst.problem_params))
    p.instance = inst
    canonical = p.short_name
    p.short_name = name
    p.name = f"Colosseum {inst.setting} {inst.cls} #{inst.index} ({canonical})"
    return p


class _InstanceProblem(Problem):
    """A Colosseum instance: its family's test distribution with Colosseum's action labels
    and reward laws where they differ (:func:`colosseum_instances.instance_test`)."""

    instance: colosseum_instances.Instance

    @cached_property
    def test(self) -> Any:
        return colosseum_instances.instance_test(self.instance, Problem.test.func(self))


def from_name(name: Any) -> tuple[Problem, str] | None:
    """The problem a short name names and which of its distributions: ``"test"`` (the
    test distribution, whose accurate prior has the same name) or ``"uniform"`` (its
    uniform prior, named ``U`` + the test's name); None if it names none (:func:`parse_name`).

    >>> p, kind = from_name("URiverSwim-8")
    >>> p.short_name, kind, p.prior("uniform").short_name
    ('RiverSwim-8', 'uniform', 'URiverSwim-8')
    """
    parsed = parse_name(name)
    if parsed is None:
        return None
    spec, params, uniform = parsed
    inst = _instance(name)
    if inst is not None:
        return instance_problem(inst[0].name), "uniform" if uniform else "test"
    return Problem(spec, params), "uniform" if uniform else "test"


def accurate_prior(test: FamilyDistribution | FDMDistribution) -> FDMDistribution:
    """The accurate prior of a test distribution: the test itself when it is an FDM, the
    moment-matched FDM (:meth:`FamilyDistribution.accurate_prior`) otherwise. It has the
    test's mean model, support, rewards and initial state, so it stands for the test
    wherever an FDM is needed (a gym environment's default prior, the cost model)."""
    if isinstance(test, FDMDistribution):
        return test
    return test.accurate_prior()


def episodic_form(test: Any) -> tuple[Family | None, int | None]:
    """The family of a test distribution (None: a distribution of no family, such as
    one read from a ``.dat`` file) and the natural episode length H of its episodic form
    (None: the family has none, it is continuing only; :attr:`Family.episode_length`).

    >>> spec, H = episodic_form(make("deepsea", size=20).test)
    >>> spec.name, H
    ('deepsea', 20)
    >>> episodic_form(make("chain").test)[1] is None, episodic_form(make("gc").test)[1]
    (True, None)
    """
    fam = getattr(test, "family", None)
    if isinstance(fam, str) and fam in FAMILIES and isinstance(getattr(test, "params", None),
                                                               dict):
        spec, params = FAMILIES[fam], test.params
    else:  # an FDM test of a family (RiverSwim-6, GC): its name says which
        parsed = parse_name(getattr(test, "short_name", None))
        if parsed is None or parsed[2]:
            return None, None
        spec, params, _ = parsed
    if spec.episode_length is None:
        return spec, None
    return spec, int(spec.episode_length(params))


def episodic_families() -> list[str]:
    """The families with an episodic form.

    >>> episodic_families()
    ['riverswim', 'deepsea', 'frozenlake', 'simplegrid', 'minigrid_empty', 'minigrid_rooms',
     'taxi']
    """
    return [n for n, f in FAMILIES.items() if f.episode_length is not None]


#: Families by display name (the start of their short names).
_BY_DISPLAY: dict[str, Family] = {f.display: f for f in FAMILIES.values()}
