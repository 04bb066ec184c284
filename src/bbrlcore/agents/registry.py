"""Finding algorithms: built-ins and plugins, one registry.

Every algorithm, the paper's eight, Optimal and the fixed-formula agent ``formula``
included, is an entry point of the group
``bbrl.agents`` (:data:`GROUP`): bbrl's own ``pyproject.toml`` declares the built-ins
there (the paper's nine, then the four beyond the paper, written as
:class:`~bbrlcore.agents.api.CompiledAgent` subclasses, then the exploration baselines
UCRL2 and Q-learning-UCB), and a plugin package declares its own the same way::

    [project.entry-points."bbrl.agents"]
    rmax = "bbrl_rmax:RMax"

Anywhere an algorithm name is accepted (``bbrl train --agent``, ``config.yaml``'s
``algorithms:``), a **reference** works too, for code that is not installed:
``package.module:NAME`` or ``path/to/file.py:NAME``. The object found is an
:class:`~bbrlcore.agents.base.Algorithm`, a :class:`~bbrlcore.agents.api.PythonAgent`
subclass or a :class:`~bbrlcore.agents.api.CompiledAgent` subclass.

Names are unique: a plugin whose name is a built-in's or another plugin's is refused,
naming both. Each entry records where it comes from, how another process loads it again
(:attr:`Entry.ref`: the workflow's jobs, possibly on a cluster node) and a
**fingerprint** of its code (the SHA-256 of its source files, plus its package's version
when installed), which the workflow puts in its jobs' parameters so that editing a plugin
reruns exactly its trainings and runs.

A plugin is the user's own code and runs with the user's permissions, like any import.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bbrlcore.agents.base import Algorithm, records_rewards
from bbrlcore.errors import BBRLError

#: The entry-point group of algorithms.
GROUP = "bbrl.agents"

#: bbrl's own entry points (as in its pyproject.toml; a test checks they agree), also used
#: where the installed metadata lacks them (a source tree that is not installed, or an
#: editable install made before a built-in was added).
BUILTIN_ENTRY_POINTS = {
    "random": "bbrlcore.agents.random_agent:ALGORITHM",
    "e-greedy": "bbrlcore.agents.egreedy:ALGORITHM",
    "soft-max": "bbrlcore.agents.softmax:ALGORITHM",
    "beb": "bbrlcore.agents.beb:ALGORITHM",
    "sboss": "bbrlcore.agents.sboss:ALGORITHM",
    "opps-ds": "bbrlcore.agents.opps_ds:ALGORITHM",
    "bamcp": "bbrlcore.agents.bamcp:ALGORITHM",
    "bfs3": "bbrlcore.agents.bfs3:ALGORITHM",
    "optimal": "bbrlcore.agents.optimal:ALGORITHM",
    "formula": "bbrlcore.agents.formula:ALGORITHM",
    # beyond the paper: compiled agents written with the public API (agents.EXTENDED;
    # psrl's built-in is an Algorithm playing its CompiledAgent's functions, and its
    # per-episode form)
    "psrl": "bbrlcore.agents.psrl:ALGORITHM",
    "boss": "bbrlcore.agents.boss:BOSS",
    "bolt": "bbrlcore.agents.bolt:BOLT",
    "mbie-eb": "bbrlcore.agents.mbie_eb:MBIEEB",
    # the exploration baselines of long interactions (agents.BASELINES)
    "ucrl2": "bbrlcore.agents.ucrl2:ALGORITHM",
    "q-learning-ucb": "bbrlcore.agents.q_ucb:ALGORITHM",
}

#: What an algorithm name may hold (it names files, jobs and agent ids).
NAME = re.compile(r"[a-z0-9][a-z0-9-]*")


@dataclass(frozen=True)
class Entry:
    """An algorithm and where it comes from."""

    name: str
    #: ``"built-in"``, ``"plugin <dist> <version>"`` or ``"file <path>"`` / ``"module <m>"``
    source: str
    #: how another process finds it: its name (entry points) or a reference
    ref: str
    #: SHA-256 of its source files (and its package's version); "" for built-ins
    fingerprint: str
    builtin: bool
    #: ``module:attr`` of the object (entry points) or None (already loaded)
    target: str | None = None
    _algorithm: Algorithm | None = None

    @property
    def algorithm(self) -> Algorithm:
        if self._algorithm is not None:
            return self._algorithm
        alg = _load_target(self.target or "", f"entry point {self.name!r} ({self.source})",
                           plugin=not self.builtin)
        if alg.name != self.name:
            raise BBRLError(f"entry point {self.name!r} ({self.source}) defines an algorithm "
                            f"named {alg.name!r}: the names must agree")
        object.__setattr__(self, "_algorithm", alg)
        return alg


_ENTRY_POINTS: dict[str, Entry] | None = None
_REFERENCES: dict[str, Entry] = {}


def is_reference(spec: str) -> bool:
    """``module:NAME`` or ``path/file.py:NAME`` (not a plain algorithm name)."""
    return ":" in spec


def entry_points() -> dict[str, Entry]:
    """Every algorithm declared under :data:`GROUP` (built-ins first), not yet imported.
    Two entry points with the same name are refused, naming both packages."""
    global _ENTRY_POINTS
    if _ENTRY_POINTS is not None:
        return _ENTRY_POINTS
    found: dict[str, Entry] = {}
    eps = list(importlib.metadata.entry_points(group=GROUP))
    order = list(BUILTIN_ENTRY_POINTS)

    meta: dict[int, tuple[str, str]] = {}  # a package's name and version, read once

    def name_version(dist: Any) -> tuple[str, str]:
        if id(dist) not in meta:  # (each .name parses the package's METADATA file)
            m = dist.metadata
            meta[id(dist)] = (m["Name"], m["Version"])
        return meta[id(dist)]

    def rank(ep: Any) -> tuple[int, int, str]:
        own_ep = ep.dist is not None and _norm(name_version(ep.dist)[0]) == "bbrlcore"
        return (0 if own_ep else 1,
                order.index(ep.name) if own_ep and ep.name in order else len(order), ep.name)

    for ep in sorted(eps, key=rank):
        dist = ep.dist
        builtin = dist is not None and _norm(name_version(dist)[0]) == "bbrlcore"
        source = "built-in" if builtin else (
            "plugin {} {}".format(*name_version(dist)) if dist is not None else "plugin")
        if not NAME.fullmatch(ep.name):
            raise BBRLError(f"entry point {ep.name!r} ({source}): an algorithm name is "
                            "lowercase letters, digits and '-'")
        if ep.name in found:
            if found[ep.name].source == source and found[ep.name].target == ep.value:
                continue  # the same declaration seen twice (editable installs)
            raise BBRLError(f"algorithm {ep.name!r} is declared twice: by "
                            f"{found[ep.name].source} ({found[ep.name].target}) and by "
                            f"{source} ({ep.value}); uninstall one of them")
        fp = "" if builtin else _fingerprint_module(ep.value.split(":", 1)[0], dist)
        found[ep.name] = Entry(ep.name, source, ep.name, fp, builtin, ep.value)
    for name, target in BUILTIN_ENTRY_POINTS.items():  # metadata older than the source
        if name not in found:  # (an editable install before a built-in was added)
            found[name] = Entry(name, "built-in", name, "", True, target)
    builtins = [n for n in BUILTIN_ENTRY_POINTS if n in found]
    _ENTRY_POINTS = {**{n: found[n] for n in builtins},
                     **{n: e for n, e in found.items() if n not in builtins}}
    return _ENTRY_POINTS


def _norm(dist_name: str) -> str:
    return re.sub(r"[-_.]+", "-", dist_name).lower()


def entry(spec: str) -> Entry:
    """The registry entry of an algorithm name or reference; :class:`BBRLError` if there
    is none, if it does not import, or if its name clashes with another algorithm."""
    if not isinstance(spec, str) or not spec:
        raise BBRLError(f"algorithm {spec!r}: expected a name or a reference")
    eps = entry_points()
    if spec in eps:
        return eps[spec]
    for e in _REFERENCES.values():
        if spec == e.name:
            return e
    if not is_reference(spec):
        raise BBRLError(f"unknown algorithm {spec!r} (known: {', '.join(eps)}; or a plugin "
                        "reference module:NAME or path/to/file.py:NAME)")
    return load_reference(spec)


def get(spec: str) -> Algorithm:
    """The :class:`Algorithm` called (or referenced by) ``spec``."""
    return entry(spec).algorithm


def load_reference(ref: str) -> Entry:
    """Import ``module:NAME`` or ``path/file.py:NAME`` and register what it defines."""
    key = _reference_key(ref)
    if key in _REFERENCES:
        return _REFERENCES[key]
    where, _, attr = ref.rpartition(":")
    if not where or not attr:
        raise BBRLError(f"plugin reference {ref!r}: expected module:NAME or path/file.py:NAME")
    if where.endswith(".py"):
        path = Path(where).resolve()
        if not path.is_file():
            raise BBRLError(f"plugin reference {ref!r}: {where}: no such file")
        module = _import_file(path, ref)
        source, stable = f"file {where}", f"{path}:{attr}"
        # the file and the modules beside it (what it may import: a constant changed in
        # a helper module beside the plugin must rerun its jobs)
        fp = _hash_files([path, *sibling_sources(path)])
    else:
        try:
            module = importlib.import_module(where)
        except BaseException as exc:  # noqa: BLE001 - the user's code: any error
            raise BBRLError(f"plugin reference {ref!r}: importing {where} failed: "
                            f"{type(exc).__name__}: {_first_line(exc)}") from None
        source, stable = f"module {where}", ref
        fp = _fingerprint_module(where, None)
    obj = getattr(module, attr, None)
    if obj is None:
        raise BBRLError(f"plugin reference {ref!r}: {where} defines no {attr!r}")
    alg = as_algorithm(obj, f"plugin reference {ref!r}", plugin=True)
    eps = entry_points()
    if alg.name in eps:
        raise BBRLError(f"plugin reference {ref!r} defines algorithm {alg.name!r}, which is "
                        f"already the {eps[alg.name].source} algorithm {alg.name!r}; "
                        "rename the plugin's algorithm")
    for other in _REFERENCES.values():
        if other.name == alg.name and other.ref != stable:
            raise BBRLError(f"plugin reference {ref!r} defines algorithm {alg.name!r}, which "
                            f"is already defined by {other.ref}")
    e = Entry(alg.name, source, stable, fp, False, None, alg)
    _REFERENCES[key] = e
    return e


def _reference_key(ref: str) -> str:
    where, _, attr = ref.rpartition(":")
    if where.endswith(".py"):
        return f"{Path(where).resolve()}:{attr}"
    return ref


def _import_file(path: Path, ref: str) -> Any:
    name = "bbrl_plugin_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BBRLError(f"plugin reference {ref!r}: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent))  # its own helper modules beside it
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - the user's code: any error
        del sys.modules[name]
        raise BBRLError(f"plugin reference {ref!r}: importing {path.name} failed: "
                        f"{type(exc).__name__}: {_first_line(exc)}") from None
    finally:
        sys.path.remove(str(path.parent))
    return module


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def _load_target(target: str, what: str, plugin: bool = False) -> Algorithm:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:  # noqa: BLE001 - the user's code: any error
        raise BBRLError(f"{what}: importing {module_name} failed: {type(exc).__name__}: "
                        f"{_first_line(exc)}") from None
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise BBRLError(f"{what}: {module_name} defines no {attr!r}")
    return as_algorithm(obj, what, plugin=plugin)


def as_algorithm(obj: Any, what: str, plugin: bool = False) -> Algorithm:
    """An :class:`Algorithm` from what a plugin defines (see the module docstring).

    ``plugin``: an :class:`Algorithm` object is the user's code, whose every callable
    then reports any error (``SystemExit`` included) as one line naming it (classes are
    handled so by :func:`~bbrlcore.agents.api.algorithm_of`)."""
    if isinstance(obj, Algorithm):
        alg = _guarded_algorithm(obj) if plugin else obj
    else:
        from bbrlcore.agents.api import CompiledAgent, PythonAgent, algorithm_of

        if isinstance(obj, type) and issubclass(obj, (PythonAgent, CompiledAgent)) or (
                isinstance(obj, type) and callable(getattr(obj, "act", None))):
            alg = algorithm_of(obj, what)
        else:
            raise BBRLError(f"{what}: {obj!r} is not an algorithm (an Algorithm, a PythonAgent "
                            "or CompiledAgent subclass, or a class with an act method)")
    if not isinstance(alg.name, str) or not NAME.fullmatch(alg.name):
        raise BBRLError(f"{what}: algorithm name {alg.name!r}: lowercase letters, digits "
                        "and '-' only")
    shown = alg.display_name
    if not isinstance(shown, str) or "\n" in shown or len(shown) > 60:
        raise BBRLError(f"{what}: display_name {shown!r}: one line of text, at most 60 "
                        "characters")
    return alg


def _guarded_algorithm(alg: Algorithm) -> Algorithm:
    """``alg`` (a plugin's own :class:`Algorithm`) whose callables report the user's
    errors as one :class:`BBRLError` naming it, and whose players raise
    :class:`~bbrlcore.agents.api.AgentError` (the runner adds the test MDP)."""
    import dataclasses

    from bbrlcore.agents.api import AgentError, _guarded, describe_error, user_call

    name, make = alg.name, alg.make_player

    def make_player(prior: Any, params: dict, trained: Any, episode: Any) -> Any:
        play = user_call(name, "make_player", make, prior, params, trained, episode)

        def guarded(P: Any, seed: int, *rewards: Any) -> Any:
            try:
                return play(P, seed, *rewards)
            except (BBRLError, KeyboardInterrupt):
                raise
            except BaseException as exc:  # noqa: BLE001 - the user's code: any error
                raise AgentError(f"{name}: play raised {describe_error(exc)}") from None

        if records_rewards(play):
            def guarded_recording(P: Any, seed: int, rewards: Any = None) -> Any:
                return guarded(P, seed, rewards)

            return guarded_recording

        def guarded_unrecorded(P: Any, seed: int) -> Any:  # play(P, seed): no rewards
            return guarded(P, seed)

        return guarded_unrecorded

    return dataclasses.replace(
        alg, make_player=make_player, train=_guarded(alg.train, name, "train"),
        setting_check=_guarded(alg.setting_check, name, "setting_check"),
        cost_features=_guarded(alg.cost_features, name, "cost_features"),
        offline_cost_features=_guarded(alg.offline_cost_features, name,
                                       "offline_cost_features"),
        prepare=_guarded(alg.prepare, name, "prepare"))


def _fingerprint_module(module_name: str, dist: Any) -> str:
    """SHA-256 of the source files of a module's top-level package (or of the module),
    plus the distribution's version when installed."""
    top = module_name.split(".", 1)[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    files: list[Path] = []
    if spec is not None and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            files += sorted(Path(loc).rglob("*.py"))
    elif spec is not None and spec.origin and spec.origin.endswith(".py"):
        files = [Path(spec.origin)]
    h = _hash_files(files)
    version = getattr(dist, "version", None)
    return f"{h}+{version}" if version else h


def sibling_sources(path: Path) -> list[Path]:
    """The other ``.py`` files of ``path``'s directory, sorted: the modules a plugin file
    can import from beside it (so its fingerprint and its compiled kernel's cache key
    change when one of them does)."""
    try:
        return sorted(f for f in path.parent.glob("*.py") if f != path and f.is_file())
    except OSError:
        return []


def _hash_files(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        if "__pycache__" in f.parts:
            continue
        h.update(f.name.encode())
        try:
            h.update(f.read_bytes())
        except OSError:
            continue
    return h.hexdigest()[:16]


def all_entries() -> list[Entry]:
    """Every algorithm: entry points (built-ins first), then loaded references."""
    return [*entry_points().values(), *_REFERENCES.values()]


def display_names(algorithms: list[str], refs: list[str]) -> dict[str, str]:
    """The display names declared by the plugins among ``algorithms`` (what the report
    shows for them): those of ``refs`` (loaded; a reference that does not load is an
    error) and installed plugins (found by name; one that does not import keeps its
    name).

    >>> display_names(["random", "beb"], [])
    {}
    """
    for ref in refs:
        entry(ref)
    out: dict[str, str] = {}
    for e in all_entries():
        if e.builtin or e.name not in algorithms:
            continue
        try:
            shown = e.algorithm.display_name
        except BBRLError:
            continue
        if shown:
            out[e.name] = shown
    return out


def reset() -> None:
    """Forget what was found (tests)."""
    global _ENTRY_POINTS
    _ENTRY_POINTS = None
    _REFERENCES.clear()
