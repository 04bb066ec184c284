"""Loading and checking a configuration (``config.yaml``): presets, defaults, every key."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bbrlcore.agents.base import show_value
from bbrlcore.errors import BBRLError
from bbrlcore.plan.model import (
    DEFAULTS,
    SELECTIONS,
    VALIDATION_MDPS,
    AgentConfig,
    Experiment,
    Plan,
    preset_key,
)
from bbrlcore.protocol.test_sets import MAX_EPISODES, MAX_HORIZON, MAX_MDPS
from bbrlcore.seeds import MAX_SEED

# ---------------------------------------------------------------------------------------
# Loading and checking


def _fail(source: str, key: str, msg: str) -> BBRLError:
    return BBRLError(f"{source}: {key}: {msg}" if key else f"{source}: {msg}")


def apply_preset(
    config: Mapping[str, Any], overrides: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], set[str]]:
    """Base config, then the preset's top-level keys, then the command-line overrides.

    Returns the merged configuration and the top-level keys the preset replaced.
    """
    cfg = copy.deepcopy(dict(config))
    overrides = dict(overrides or {})
    preset = overrides.get("preset", cfg.get("preset"))
    from_preset: set[str] = set()
    if preset not in (None, "", "none"):
        presets = cfg.get("presets") or {}
        if not isinstance(presets, Mapping) or preset not in presets:
            names = ", ".join(presets) if isinstance(presets, Mapping) else ""
            raise BBRLError(f"preset={preset}: no such preset (defined: {names or 'none'})")
        overlay = presets[preset] or {}
        if not isinstance(overlay, Mapping):
            raise BBRLError(f"presets.{preset}: must be a mapping of top-level keys")
        for k, v in overlay.items():
            if k in ("preset", "presets"):
                raise BBRLError(f"presets.{preset}.{k}: a preset cannot set {k}")
            cfg[k] = copy.deepcopy(v)
            from_preset.add(k)
    variables = cfg.get("variables")
    for k, v in overrides.items():
        if (k not in DEFAULTS and isinstance(variables, Mapping) and k in variables):
            # a variable's name: the override sets the variable (a preset's knob)
            variables = cfg["variables"] = {**variables, k: copy.deepcopy(v)}
            # (Snakemake merges --config values into config.yaml's keys as well)
            cfg.pop(k, None)
            continue
        cfg[k] = copy.deepcopy(v)
        from_preset.discard(k)
        if k == "variables":
            variables = cfg["variables"]
    cfg["preset"] = None if preset in ("", "none") else preset
    return cfg, from_preset


#: A reference to a variable: a string ``$name`` (the whole value).
VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def substitute_variables(cfg: dict[str, Any], fail) -> None:
    """Replace every value ``$name`` of ``cfg`` (outside ``presets`` and ``variables``)
    by the value of ``variables.name``, in place; an unknown name is one line naming the
    key that refers to it.

    >>> cfg = {"variables": {"sizes": [10, 12]}, "experiments": [
    ...     {"test": {"family": "deepsea", "size": "$sizes"}, "prior": "uniform"}]}
    >>> substitute_variables(cfg, lambda k, m: ValueError(f"{k}: {m}"))
    >>> cfg["experiments"][0]["test"]["size"]
    [10, 12]
    """
    variables = cfg.get("variables") or {}
    if not isinstance(variables, Mapping):
        raise fail("variables", "must be a mapping name -> value")
    for name in variables:
        if not isinstance(name, str) or not VARIABLE.fullmatch(f"${name}"):
            raise fail(f"variables.{name}", "a variable's name is letters, digits and '_' "
                       "(not starting with a digit)")
        if name in DEFAULTS:
            raise fail(f"variables.{name}", "a top-level key's name: give the variable "
                       "another name")

    def sub(v: Any, key: str) -> Any:
        if isinstance(v, str):
            m = VARIABLE.fullmatch(v)
            if m is None:
                return v
            if m.group(1) not in variables:
                known = ", ".join(variables) or "none"
                raise fail(f"{key}={v}", f"no such variable (variables: {known})")
            return copy.deepcopy(variables[m.group(1)])
        if isinstance(v, Mapping):
            return {k: sub(x, f"{key}.{k}") for k, x in v.items()}
        if isinstance(v, list):
            return [sub(x, f"{key}[{j}]") for j, x in enumerate(v)]
        return v

    for k in list(cfg):
        if k not in ("presets", "variables"):
            cfg[k] = sub(cfg[k], k)


def check_yaml_file(path: str | Path) -> Any:
    """Parse a YAML file; a syntax error is one :class:`BBRLError` naming the file and the
    line (``config.yaml: line 17, column 9: ...``)."""
    import yaml

    p = Path(path)
    try:
        return yaml.safe_load(p.read_text())
    except OSError as exc:
        raise BBRLError(f"{p}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise BBRLError(f"{p}: not a text file (byte {exc.start} is not UTF-8): expected a "
                        "YAML configuration") from None
    except RecursionError:
        raise BBRLError(f"{p}: not valid YAML (nested too deeply)") from None
    except yaml.MarkedYAMLError as exc:
        def at(mark: Any) -> str:
            return f"line {mark.line + 1}, column {mark.column + 1}"

        msg = f"{p}: not valid YAML"
        if exc.problem_mark is not None:
            msg += f" at {at(exc.problem_mark)}"
        msg += f": {exc.problem or exc.context or 'syntax error'}"
        if exc.context and exc.context_mark is not None and exc.problem:
            msg += f" ({exc.context} at {at(exc.context_mark)})"
        raise BBRLError(msg) from None
    except yaml.YAMLError as exc:
        raise BBRLError(f"{p}: not valid YAML ({str(exc).splitlines()[0]})") from None


def read_configfiles(paths: Sequence[str | Path]) -> tuple[dict[str, Any], str]:
    """The configuration of ``snakemake --configfile FILE [FILE ...]``: each file read
    (a YAML error names the file and the line), a later file's top-level keys replacing
    an earlier's, and the name errors give (``my-study.yaml``; ``a.yaml + b.yaml``).

    The files are the whole configuration: the workflow does not merge them into
    ``config.yaml`` (Snakemake would merge nested mappings, so that a study's
    ``algorithms:`` gained the paper's), and keys they do not set take :data:`DEFAULTS`,
    as :func:`load` gives them to ``bbrl estimate FILE``.

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.yaml").write_text("n_mdps: 5\\nalgorithms: {random: {}, beb: {}}\\n")
    >>> _ = (d / "b.yaml").write_text("algorithms: {random: {}}\\n")
    >>> read_configfiles([d / "a.yaml", d / "b.yaml"])
    ({'n_mdps': 5, 'algorithms': {'random': {}}}, 'a.yaml + b.yaml')
    """
    out: dict[str, Any] = {}
    for p in map(Path, paths):
        cfg = check_yaml_file(p)
        if cfg is None:
            cfg = {}
        if not isinstance(cfg, Mapping):
            raise BBRLError(f"{p}: expected a mapping of configuration keys, found "
                            f"{type(cfg).__name__}")
        out.update(copy.deepcopy(dict(cfg)))
    return out, " + ".join(Path(p).name for p in paths)


def study_configuration(
    study: Any, configfiles: Sequence[str | Path] | None = None
) -> tuple[dict[str, Any], str] | None:
    r"""The configuration of a study of one's own given to the workflow, or ``None`` for
    ``config.yaml``: ``snakemake --config study=FILE`` (read here, so that a YAML error
    names the file and the line) or ``snakemake --configfile FILE [FILE ...]`` (which
    Snakemake parses first; its YAML errors name neither). Either is the whole
    configuration (:func:`read_configfiles`).

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "s.yaml").write_text("n_mdps: 5\n")
    >>> study_configuration(str(d / "s.yaml"))
    ({'n_mdps': 5}, 's.yaml')
    >>> study_configuration(None) is None
    True
    >>> _ = (d / "bad.yaml").write_text("algorithms: [random\n")
    >>> study_configuration(str(d / "bad.yaml"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    bbrlcore.errors.BBRLError: .../bad.yaml: not valid YAML at line 2, column 1: ...
    """
    if study is None:
        return read_configfiles(configfiles) if configfiles else None
    if configfiles:
        raise BBRLError("--config study=FILE: give a study either with --config study=FILE "
                        "or with --configfile, not both")
    if not isinstance(study, str) or not study.strip():
        raise BBRLError(f"--config study={study!r}: expected the path of a study's YAML "
                        "file (bbrl init writes one)")
    if not Path(study).is_file():
        raise BBRLError(f"--config study={study}: no such file (bbrl init {study} writes "
                        "one)")
    return read_configfiles([study])


def load(
    config: Mapping[str, Any] | str | Path,
    overrides: Mapping[str, Any] | None = None,
    *,
    source: str | None = None,
    calibration_dir: str | None = None,
) -> Plan:
    """Check ``config`` (a mapping or a YAML file) and expand it into a :class:`Plan`."""
    if isinstance(config, (str, Path)):

        p = Path(config)
        source = source or p.name
        config = check_yaml_file(p) or {}
        if not isinstance(config, Mapping):
            raise BBRLError(f"{p}: expected a mapping of configuration keys")
    source = source or "config.yaml"
    try:
        cfg, from_preset = apply_preset(config, overrides)
    except BBRLError as exc:
        raise BBRLError(f"{source}: {exc}") from None
    preset = cfg.get("preset")

    def where(key: str) -> str:
        return preset_key(key, preset, from_preset)

    def fail(key: str, msg: str) -> BBRLError:
        return _fail(source, where(key), msg)

    for k in cfg:
        if k not in DEFAULTS:
            names = [str(v) for v in cfg.get("variables") or {}] if isinstance(
                cfg.get("variables"), Mapping) else []
            raise fail(repr(k) if not isinstance(k, str) else k,
                       f"unknown key (known: {', '.join(DEFAULTS)}"
                       + (f"; variables: {', '.join(names)}" if names else "") + ")")
    substitute_variables(cfg, fail)
    for k, d in DEFAULTS.items():
        if k not in cfg or (cfg[k] is None and d is not None and d is not ...):
            if d is ...:
                raise fail(k, "required key missing")
            cfg[k] = copy.deepcopy(d)
    _check_scalars(cfg, fail)
    from bbrlcore import agents as agents_mod
    from bbrlcore.mdp import distributions

    dists = cfg["distributions"]
    if not isinstance(dists, Mapping):
        raise fail("distributions", "must be a mapping name -> file")
    loaded: dict[str, Any] = {}  # name -> FDM (the prior; a family test: its accurate prior)
    test_dists: dict[str, Any] = {}  # name -> test distribution where it is no FDM
    for name, path in dists.items():
        if not isinstance(name, str) or not distributions.SHORT_NAME.fullmatch(name):
            raise fail(f"distributions.{name}", "a distribution name is letters, digits, "
                       "'_', '.' and '+' (it names files and experiments)")
        clash = distributions.reserved(name)
        if clash:  # silently replacing the paper's GC, or a family, would be a wrong result
            raise fail(f"distributions.{name}", f"{clash}; give yours another name")
        if not isinstance(path, str) or not Path(path).is_file():
            raise fail(f"distributions.{name}", f"{path!r}: no such file")
        try:  # a malformed file is refused here, before any job
            test = distributions.load_test(path)
            if not isinstance(test, distributions.FDMDistribution):
                raise BBRLError(f"{path} holds the problem family test distribution "
                                f"{test.short_name}: name it in experiments (test: "
                                f"{test.short_name}, or test: {{family: {test.family}, "
                                "...}) instead of declaring its file")
            loaded[name] = distributions.renamed(test, name)
        except BBRLError as exc:
            raise fail(f"distributions.{name}", str(exc)) from None
    exps = cfg["experiments"]
    if not isinstance(exps, list) or not exps:
        raise fail("experiments", "must be a non-empty list of {test, prior}")
    experiments: list[Experiment] = []
    entry_of: list[int] = []  # the experiments entry each experiment comes from
    notes: list[str] = []
    for i, e in enumerate(exps):
        if not isinstance(e, Mapping) or not {"test", "prior"} <= set(e) or not set(e) <= {
                "test", "prior", "algorithms", "steps", *SETTING_KEYS, *INDICATOR_KEYS}:
            raise fail(f"experiments[{i}]", "must be a mapping with test, prior and optionally "
                       "algorithms (its own grids, instead of the global algorithms), "
                       f"the interaction's settings ({', '.join(SETTING_KEYS)}; steps with "
                       "a Colosseum benchmark test) and "
                       f"Colosseum's indicators ({', '.join(INDICATOR_KEYS)})")
        log_every = _indicators_of(e, i, fail)
        bench = _colosseum_entry(e, i, fail, notes)
        for ex in _experiments_of(e, i, fail, dists, loaded, test_dists,
                                  None if bench is None else list(bench)):
            try:
                ex = _in_setting(ex, e if bench is None else bench[ex.test], i, cfg, where,
                                 test_dists.get(ex.test, loaded[ex.test]))
            except BBRLError as exc:
                raise BBRLError(f"{source}: {exc}") from None
            # (the experiments kept carry their log_every: compare without it)
            if any(dataclasses.replace(x, log_every=ex.log_every) == ex
                   for x in experiments):
                raise fail(f"experiments[{i}]", f"experiment {ex.name} listed twice")
            if log_every is not None:
                ex = dataclasses.replace(ex, log_every=log_every)
            t, pr = loaded[ex.test], loaded[ex.prior]
            if (t.n_states, t.n_actions) != (pr.n_states, pr.n_actions):
                raise fail(
                    f"experiments[{i}]",
                    f"test {ex.test} has {t.n_states} states and {t.n_actions} actions, "
                    f"prior {ex.prior} has {pr.n_states} and {pr.n_actions}: they must be "
                    "equal",
                )
            clash = next((o for o in experiments if o.name == ex.name), None)
            if clash is not None:  # (a-b, c) and (a, b-c): names must identify experiments
                raise fail(f"experiments[{i}]", f"experiment {ex.test} x {ex.prior} and "
                           f"{clash.test} x {clash.prior} would both be named {ex.name}")
            experiments.append(ex)
            entry_of.append(i)

    if not experiments:
        raise fail("experiments", "no experiment: every entry selects nothing" + (
            f" ({notes[-1]})" if notes else ""))
    fsets = cfg["formula_sets"]
    if not isinstance(fsets, Mapping):
        raise fail("formula_sets", "must be a mapping name -> {max_size, seed}")
    for name, spec in fsets.items():
        if not isinstance(spec, Mapping) or not set(spec) <= {"max_size", "seed"} or (
            "max_size" not in spec
        ):
            raise fail(f"formula_sets.{name}", "must be {max_size: N[, seed: S]}")
        ms, sd = spec["max_size"], spec.get("seed", 1)
        if isinstance(ms, bool) or not isinstance(ms, int) or not 1 <= ms <= 8:
            raise fail(f"formula_sets.{name}.max_size={ms}", "must be an integer in [1, 8]")
        if isinstance(sd, bool) or not isinstance(sd, int) or sd < 0:
            raise fail(f"formula_sets.{name}.seed={sd}", "must be an integer >= 0")

    # agent configurations: the global grids, and an experiment's own where it has some
    blocks: dict[str, list[AgentConfig]] = {}

    def configs_of(algs: Any, key: str) -> list[AgentConfig]:
        if not isinstance(algs, Mapping) or not algs:
            raise fail(key, "must be a non-empty mapping algorithm -> grid")
        return _agent_configs(algs, key, cfg["compat_variants"], fail, fsets, cfg["score"])

    default_agents = configs_of(cfg["algorithms"], "algorithms")
    ext = cfg["extended_algorithms"]
    if not isinstance(ext, Mapping):
        raise fail("extended_algorithms", "must be a mapping algorithm -> grid")
    ext_agents = configs_of(ext, "extended_algorithms") if ext else []  # checked even if off
    if cfg["extended"]:
        paper = {a.algorithm for a in default_agents}
        for a in ext_agents:
            if a.algorithm in paper:
                raise fail(a.where, f"{a.algorithm} is also under algorithms: list it in one "
                           "place (extended: true adds extended_algorithms to algorithms)")
        default_agents = default_agents + ext_agents
    exp_agents: dict[str, list[str]] = {}
    own_of: dict[int, list[AgentConfig]] = {}
    for i, ex in zip(entry_of, experiments, strict=True):
        if "algorithms" in exps[i]:
            if i not in own_of:
                own_of[i] = configs_of(exps[i]["algorithms"], f"experiments[{i}].algorithms")
            blocks[ex.name] = own_of[i]
        exp_agents[ex.name] = [a.key for a in blocks.get(ex.name, default_agents)]
    out: list[AgentConfig] = []
    seen: dict[str, AgentConfig] = {}
    for a in [*default_agents, *(a for b in blocks.values() for a in b)]:
        if a.key not in seen:
            seen[a.key] = a
            out.append(a)
    used = {k for keys in exp_agents.values() for k in keys}
    out = [a for a in out if a.key in used]
    # cross-field checks: every configuration where it will be trained and run
    entry_index = {ex.name: i for i, ex in zip(entry_of, experiments, strict=True)}
    for a in out:
        alg = agents_mod.get(a.ref)
        for ex in experiments:  # the setting first: nothing is probed or planned before
            if ex.episode_length or a.key not in exp_agents[ex.name]:
                continue
            i = entry_index[ex.name]
            fix = ("give the experiment `episodes:` (E episodes of its natural length"
                   + (")" if "algorithms" in exps[i] else
                      "), or list " + alg.name + " only in the own algorithms: block of "
                      "episodic experiments"))
            try:
                alg.check_episodic(0, fix=fix)
            except BBRLError as exc:
                raise _fail(source, f"{where(f'experiments[{i}]')} ({ex.name})",
                            str(exc)) from None
        full = alg.parse_params(a.param_dict, stored=True)  # with the defaults
        settings = sorted({(ex.prior, ex.horizon) for ex in experiments
                           if a.key in exp_agents[ex.name]})
        for prior, horizon in settings:
            try:
                alg.check_setting(full, loaded[prior], cfg["gamma"], horizon)
            except BBRLError as exc:
                raise _fail(source, where(a.where), f"{exc} (gamma={cfg['gamma']:g}, "
                            f"horizon={horizon})") from None
        episodic = next((ex for ex in experiments if ex.episode_length
                         and a.key in exp_agents[ex.name]), None)
        if episodic is not None:
            try:
                alg.check_episodic(episodic.episode_length,
                                   source=f"experiment {episodic.name}", params=full)
            except BBRLError as exc:
                raise _fail(source, where(a.where), str(exc)) from None
    # every test set must fit in memory: refused here, with its size, not by a job
    from bbrlcore.protocol.test_sets import check_fits

    for test in sorted({ex.test for ex in experiments}):
        try:
            check_fits(test_dists.get(test, loaded.get(test)), int(cfg["n_mdps"]))
        except BBRLError as exc:
            raise _fail(source, f"n_mdps={cfg['n_mdps']}", str(exc)) from None
        if cfg["selection"] == "validation":  # (drawn only where some algorithm has a grid)
            try:
                check_fits(test_dists.get(test, loaded.get(test)), int(cfg["validation_mdps"]))
            except BBRLError as exc:
                raise _fail(source, where(f"validation_mdps={cfg['validation_mdps']}"),
                            str(exc)) from None
    available = {a.algorithm for a in out}
    plan = Plan(cfg, experiments, out, available, calibration_dir)
    plan.from_preset = from_preset
    plan.dists = loaded
    plan.test_dists = {k: v for k, v in test_dists.items()
                       if any(ex.test == k for ex in experiments)}
    plan.exp_agents = exp_agents
    plan.entry_of = entry_index
    plan.own_blocks = {i for i in own_of}
    plan.notes = notes
    return plan


#: The settings of an interaction: global keys, and keys of an ``experiments`` entry.
SETTING_KEYS = ("horizon", "episodes", "episode_length", "checkpoint_every")
#: Keys of an ``experiments`` entry asking for Colosseum's indicators in its runs.
INDICATOR_KEYS = ("indicators", "log_every")


def _indicators_of(e: Mapping[str, Any], i: int, fail) -> int | None:
    """The ``log_every`` of an entry's runs: ``indicators: true`` (Colosseum's expected
    indicators, :mod:`bbrlcore.mdp.indicators`) every ``log_every`` steps (default
    Colosseum's 100); None when not asked."""
    from bbrlcore.mdp.indicators import LOG_EVERY

    on = e.get("indicators", False)
    if not isinstance(on, bool):
        raise fail(f"experiments[{i}].indicators={on!r}", "expected true or false")
    if "log_every" not in e:
        return LOG_EVERY if on else None
    L = e["log_every"]
    if not on:
        raise fail(f"experiments[{i}].log_every={L!r}", "applies with indicators: true only")
    if isinstance(L, bool) or not isinstance(L, int) or L < 1:
        raise fail(f"experiments[{i}].log_every={L!r}", "must be an integer >= 1 (the steps "
                   "between two evaluations of the agent's policy; Colosseum's: 100)")
    return L


def _in_setting(ex: Experiment, e: Mapping[str, Any], i: int, cfg: Mapping[str, Any],
                where: Any, test: Any) -> Experiment:
    """``ex`` in the interaction's setting of its entry ``e`` (its keys, else the global
    ones; :func:`bbrlcore.protocol.test_sets.interaction`), labelled when it is not the
    global continuing setting without checkpoints (:attr:`Experiment.label`)."""
    import dataclasses

    from bbrlcore.protocol.test_sets import interaction

    def pick(k: str) -> tuple[Any, str]:
        if k in e:
            return e[k], f"experiments[{i}].{k}"
        return cfg[k], where(k)

    (E, kE), (H, kH) = pick("episodes"), pick("episode_length")
    (n, kn), (T, kT) = pick("checkpoint_every"), pick("horizon")
    if E is None and "episode_length" not in e:
        H = None  # (a global episode_length applies to episodic experiments only)
    if E is not None and "horizon" not in e:
        T = None  # (the global horizon is a continuing experiment's)
    keys = {"episodes": kE, "episode_length": kH, "checkpoint_every": kn, "horizon": kT}
    try:
        it = interaction(test, horizon=T, episodes=E, episode_length=H, checkpoint_every=n,
                         keys=keys)
    except BBRLError as exc:
        raise BBRLError(f"{exc} (experiment {ex.name})") from None
    label = it.label or ("" if it.horizon == cfg["horizon"] else f"T{it.horizon}")
    return dataclasses.replace(ex, horizon=it.horizon, episode_length=it.episode_length,
                               checkpoint_every=it.checkpoint_every, label=label)


#: What ``prior`` may say instead of a distribution's name, beside a family or built-in test.
PRIOR_KINDS = ("accurate", "uniform")


def _colosseum_entry(e: Mapping[str, Any], i: int, fail, notes: list[str]
                     ) -> dict[str, dict[str, Any]] | None:
    """A Colosseum benchmark entry (``test: {colosseum: [EC, ...], episodic: ...}``,
    ``steps: T``): each instance it stands for (in Colosseum's order) -> its entry in
    Colosseum's setting (:func:`colosseum_setting`); the selected instances bbrl does not
    express yet go to ``notes``, one line. None for any other entry (``steps`` refused
    there)."""
    test = e["test"]
    key = f"experiments[{i}]"
    if not (isinstance(test, Mapping) and "colosseum" in test):
        if "steps" in e:
            raise fail(f"{key}.steps", "applies to a Colosseum benchmark test ({colosseum: "
                       "[EC, EE, CC, CE]}) only; give horizon or episodes")
        return None
    from bbrlcore.mdp.families import colosseum_instances as CI

    extra = set(test) - {"colosseum", "episodic"}
    if extra:
        raise fail(f"{key}.test.{sorted(extra)[0]}", "a Colosseum benchmark test is "
                   "{colosseum: SETTINGS or INSTANCES[, episodic: true or false]}")
    for k in ("horizon", "episodes", "episode_length", "checkpoint_every"):
        if k in e:
            raise fail(f"{key}.{k}", "a Colosseum benchmark entry sets its interactions "
                       "by steps: (episodic instances in whole episodes of their length)")
    if "steps" not in e:
        raise fail(key, "a Colosseum benchmark entry needs steps: T (Colosseum's "
                   "500000), the steps of each interaction")
    steps = e["steps"]
    if isinstance(steps, float) and steps.is_integer():
        steps = int(steps)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise fail(f"{key}.steps={steps!r}", "expected an integer >= 1 (Colosseum's: "
                   "500000)")
    ep = test.get("episodic")
    if ep is not None and not isinstance(ep, bool):
        raise fail(f"{key}.test.episodic={ep!r}", "expected true, false or null (both)")
    raw = test["colosseum"]
    wanted = raw if isinstance(raw, list) else [raw]
    chosen: list[str] = []
    for j, w in enumerate(wanted):
        wk = f"{key}.test.colosseum" + (f"[{j}]" if isinstance(raw, list) else "")
        if isinstance(w, str) and f"Colosseum-{w}" in CI.INSTANCES:
            w = f"Colosseum-{w}"  # (CE-RiverSwim-0, as the notes name them)
        if w in CI.SETTINGS:
            chosen += [n for n in CI.INSTANCES if n.split("-")[1] == w]
        elif w in CI.INSTANCES:
            if CI.INSTANCES[w].problem_params is None:
                raise fail(f"{wk}={w}", f"bbrl does not express it yet (needs "
                           f"{CI.INSTANCES[w].needs})")
            chosen.append(w)
        else:
            raise fail(f"{wk}={w!r}", f"expected a setting ({', '.join(CI.SETTINGS)}) or "
                       "a Colosseum instance's name (bbrl families --colosseum lists them)")
    chosen = [n for n in CI.INSTANCES if n in set(chosen)
              and (ep is None or CI.INSTANCES[n].episodic == ep)]
    skipped = [n for n in chosen if CI.INSTANCES[n].problem_params is None]
    if skipped:
        why: dict[str, list[str]] = {}
        for n in skipped:  # (grouped by what bbrl lacks: MiniGrid forms, Taxi, ...)
            fam = CI.INSTANCES[n].cls.removesuffix("Episodic").removesuffix("Continuous")
            lacks = f"Colosseum's {fam}"
            why.setdefault(lacks, []).append(n.removeprefix("Colosseum-"))
        notes.append(f"experiments[{i}]: {len(skipped)} of the {len(chosen)} Colosseum "
                     "instances selected are skipped, bbrl does not express them yet ("
                     "bbrl families --colosseum says what each needs): " + "; ".join(
                         f"{', '.join(ns)} (needs {lacks})" for lacks, ns in why.items()))
    kept = [n for n in chosen if CI.INSTANCES[n].problem_params is not None]
    if not kept:  # (the continuing entry of a laptop run of episodic settings only)
        notes.append(f"experiments[{i}]: selects no Colosseum instance bbrl expresses "
                     f"({show_value(raw)}, episodic: {show_value(ep)}): no experiment")
    return {n: colosseum_setting(e, n, steps, f"{key}.steps") for n in kept}


def colosseum_setting(e: Mapping[str, Any], name: str, steps: int, key: str
                      ) -> dict[str, Any]:
    """The entry ``e`` in Colosseum's setting of instance ``name``, for ``steps`` steps:
    continuing, ``horizon: steps``; episodic, ``episodes: ⌊steps / H⌋`` of the natural
    length H (Colosseum's, :attr:`~bbrlcore.mdp.families.Family.episode_length`; its own
    loop cuts the last episode short at T instead), at most 10,000 checkpoints at episode
    ends: every d-th, the episodes rounded down to a multiple of d
    (Colosseum-EC-SimpleGrid-0, H = 17: 29,409 episodes, 499,953 steps, every 3rd);
    continuing, checkpoints every ``log_every`` steps (Colosseum's 100) when that divides
    T into at most 10,000, else the default.

    >>> colosseum_setting({}, "Colosseum-EC-DeepSea-0", 500_000, "steps")
    {'episodes': 100000, 'checkpoint_every': 50}
    >>> colosseum_setting({}, "Colosseum-EC-SimpleGrid-0", 500_000, "steps")
    {'episodes': 29409, 'checkpoint_every': 51}
    >>> colosseum_setting({}, "Colosseum-CE-RiverSwim-0", 500_000, "steps")
    {'horizon': 500000, 'episodes': None, 'checkpoint_every': 100}
    """
    from bbrlcore.mdp import distributions, families
    from bbrlcore.mdp.families import colosseum_instances as CI
    from bbrlcore.mdp.indicators import LOG_EVERY
    from bbrlcore.protocol.test_sets import DEFAULT_CHECKPOINTS as MAX_CHECKPOINTS

    out = {k: v for k, v in e.items() if k not in ("test", "prior", "algorithms", "steps")}
    if not CI.INSTANCES[name].episodic:  # (checkpoints: Colosseum's log interval)
        n = int(e.get("log_every", LOG_EVERY))
        return {**out, "horizon": steps, "episodes": None, "checkpoint_every":
                n if steps % n == 0 and steps // n <= MAX_CHECKPOINTS else None}
    H = families.episodic_form(distributions.load(name))[1]
    if steps < H:
        raise BBRLError(f"{key}={steps}: fewer than one episode of {name} ({H} steps)")
    E = steps // H
    d = -(-E // MAX_CHECKPOINTS)  # (every d-th episode end: at most 10,000 checkpoints)
    return {**out, "episodes": E // d * d, "checkpoint_every": H * d}


def _experiments_of(e: Mapping[str, Any], i: int, fail, declared: Mapping[str, Any],
                    loaded: dict[str, Any], test_dists: dict[str, Any],
                    instances: list[str] | None = None) -> list[Experiment]:
    """The experiments of entry ``experiments[i]``: its test (a distribution's name, or a
    problem family with its parameters, where a list of values is a ladder: one test per
    combination) times its prior (a name, ``accurate``, ``uniform``, or a list of them).
    Every distribution they name is loaded into ``loaded`` (and ``test_dists``)."""
    from bbrlcore.mdp import distributions, families

    tests: list[str] = []
    uniform_of: dict[str, str | None] = {}
    test = e["test"]
    if instances is not None:  # a Colosseum benchmark entry: its instances, by name
        for name in instances:
            _known(name, declared, loaded, test_dists)
            tests.append(name)
            uniform_of[name] = f"U{name}"
    elif isinstance(test, Mapping):
        for problem in _family_ladder(test, f"experiments[{i}].test", fail):
            name = problem.short_name
            if name in declared:
                raise fail(f"experiments[{i}].test", f"{name} is also declared under "
                           "distributions: rename that one")
            loaded.setdefault(name, problem.prior("accurate"))
            if not isinstance(problem.test, distributions.FDMDistribution):
                test_dists.setdefault(name, problem.test)
            uname = problem.prior("uniform").short_name
            uniform_of[name] = uname
            tests.append(name)
    else:
        if not isinstance(test, str) or not _known(test, declared, loaded, test_dists):
            raise fail(f"experiments[{i}].test={test}", _unknown(test))
        tests.append(test)
        if test in declared:
            uniform_of[test] = None
        elif test in distributions.BUILTINS:
            uniform_of[test] = next((u for u, a in distributions.ACCURATE_OF.items()
                                     if a == test), None)
        else:
            named = families.from_name(test)
            uniform_of[test] = (named[0].prior("uniform").short_name
                                if named is not None and named[1] == "test" else None)
    raw = e["prior"]
    priors = raw if isinstance(raw, list) else [raw]
    if not priors:
        raise fail(f"experiments[{i}].prior", "empty list of priors")
    out = []
    for k, pr in enumerate(priors):
        key = f"experiments[{i}].prior" + (f"[{k}]" if isinstance(raw, list) else "")
        if not isinstance(pr, str):
            raise fail(f"{key}={pr}", "expected a distribution's name, accurate or uniform "
                       "(each may end in +rbeta or +rnig: rewards unknown; +dir<alpha>: "
                       "Dirichlet(alpha) on every next state)")
        # (suffixes +rbeta / +rnig: the same prior, rewards unknown; mdp.reward_prior;
        # +dir<α>: Dirichlet(α) on every next state, mdp.transition_prior)
        from bbrlcore.mdp import transition_prior as TP

        try:
            pr, alpha, rkind = TP.split_suffixes(pr)
        except BBRLError as exc:
            raise fail(f"{key}={priors[k]}", str(exc)) from None
        for t in tests:
            if pr == "accurate":
                name = t
            elif pr == "uniform":
                name = uniform_of[t]
                if name is None:
                    raise fail(f"{key}=uniform", f"test {t} has no uniform prior (a "
                               "built-in or a problem family's has): name the prior")
                _known(name, declared, loaded, test_dists)
            else:
                if not _known(pr, declared, loaded, test_dists):
                    raise fail(f"{key}={pr}", _unknown(pr))
                name = pr
            if alpha is not None or rkind != "known":
                base_prior = loaded[name]
                name = f"{name}{TP.suffix_of(alpha, rkind)}"
                if name not in loaded:
                    loaded[name] = TP.with_suffixes(base_prior, alpha, rkind)
            out.append(Experiment(t, name))
    return out


def _known(name: Any, declared: Mapping[str, Any], loaded: dict[str, Any],
           test_dists: dict[str, Any]) -> bool:
    """Whether ``name`` is a distribution (declared, built-in or a family's name); loads
    it into ``loaded`` (and a family test that draws its structure into ``test_dists``)."""
    from bbrlcore.mdp import distributions, families

    if not isinstance(name, str):
        return False
    if name in loaded or name in declared:
        return True
    if name in distributions.BUILTINS:
        loaded[name] = distributions.builtin(name)
        return True
    named = families.from_name(name)
    if named is None:
        return False
    problem, kind = named
    if kind == "uniform":
        loaded[name] = problem.prior("uniform")
    else:
        loaded[name] = problem.prior("accurate")
        if not isinstance(problem.test, distributions.FDMDistribution):
            test_dists[name] = problem.test
    return True


def _unknown(name: Any) -> str:
    from bbrlcore.mdp import distributions, families

    why = families.name_error(name)
    if why is not None:
        return why
    return (f"unknown distribution (built-ins: {', '.join(distributions.BUILTINS)}; a "
            "problem family's name such as DeepSea-20; {family: NAME, ...}; or declare it "
            "under distributions:)")


def _family_ladder(test: Mapping[str, Any], key: str, fail) -> list[Any]:
    """The problems of ``test: {family: NAME, PARAM: VALUE or [VALUES], ...}``: every
    combination of the listed values (parameters in the family's order, the last varying
    fastest), each value checked by the family (one line naming the key)."""
    from bbrlcore.mdp import families

    fam = test.get("family")
    if fam is None:
        raise fail(key, "a problem family test is {family: NAME, PARAMETER: VALUE, ...} "
                   f"(families: {', '.join(families.FAMILIES)})")
    try:
        spec = families.get_family(fam)
    except BBRLError as exc:
        raise fail(f"{key}.family={fam}", str(exc)) from None
    values: dict[str, list[Any]] = {}
    for k, raw in test.items():
        if k == "family":
            continue
        p = spec.param(k) if isinstance(k, str) else None
        if p is None:
            known = ", ".join(q.name for q in spec.params) or "none"
            raise fail(f"{key}.{k}", f"unknown parameter of family {spec.name} "
                       f"(parameters: {known})")
        lst = raw if isinstance(raw, list) else [raw]
        if not lst:
            raise fail(f"{key}.{k}", "empty ladder (give at least one value)")
        typed = []
        for j, v in enumerate(lst):
            w = f"{key}.{k}" + (f"[{j}]" if isinstance(raw, list) else "")
            if isinstance(v, str):  # YAML reads 1e-6 as a string
                try:
                    v = float(v)
                except ValueError:
                    pass
            try:
                typed.append(spec.validate({k: v})[k])
            except BBRLError as exc:
                msg = str(exc)
                head = f"family {spec.name}: {k}={v!r}: "
                msg = msg[len(head):] if msg.startswith(head) else msg
                shown = repr(v) if isinstance(v, float) else show_value(v)
                raise fail(f"{w}={shown}", f"family {spec.name}: {msg}") from None
        values[k] = typed
    keys = [p.name for p in spec.params if p.name in values]
    out = []
    for combo in itertools.product(*(values[k] for k in keys)):
        # (validate refuses a value its name would not identify: one name, one problem)
        full = spec.validate(dict(zip(keys, combo, strict=True)))
        out.append(families.Problem(spec, full))
    return out


def _agent_configs(algs: Mapping[str, Any], key: str, compat_variants: bool, fail,
                   fsets: Mapping[str, Any], score: str = "discounted") -> list[AgentConfig]:
    """The configurations of an ``algorithms`` block (names or plugin references ->
    grids), checked by each algorithm's parameters; ``key`` names the block in errors.
    An ``optimal`` grid that does not give ``criterion`` gets the configuration's
    ``score``: the reference of the normalised scores is optimal for the score that
    ranks the agents (:mod:`bbrlcore.agents.optimal`)."""
    from bbrlcore import agents as agents_mod

    out: list[AgentConfig] = []
    seen: dict[str, str] = {}
    for spec_name, spec in algs.items():
        try:
            entry = agents_mod.registry.entry(str(spec_name))
            alg = entry.algorithm
        except BBRLError as exc:
            raise fail(f"{key}.{spec_name}", str(exc)) from None
        name = alg.name
        params = alg.params
        has_compat = any(p.name == "compat" for p in params)
        grids = spec if isinstance(spec, list) else [spec]
        if isinstance(spec, list) and not spec:
            raise fail(f"{key}.{spec_name}", "empty list of grids")
        for t, grid in enumerate(grids):
            gkey = f"{key}.{spec_name}" + (f"[{t}]" if isinstance(spec, list) else "")
            if grid is None:
                grid = {}
            if not isinstance(grid, Mapping):
                raise fail(gkey, "must be a mapping parameter -> value or list of values")
            combos = _expand(name, params, grid, gkey, fail, fsets)
            if entry.builtin and name == "optimal" and "criterion" not in grid:
                combos = [{**c, "criterion": score} for c in combos]
            for combo in combos:
                variants = [combo]
                if compat_variants and has_compat and "compat" not in grid:
                    variants.append({**combo, "compat": True})
                for c in variants:
                    ordered = tuple((p.name, c[p.name]) for p in params if p.name in c)
                    akey = _agent_id(alg, ordered, fsets, gkey, fail)
                    if akey in seen:
                        raise fail(gkey, f"configuration {akey} also listed in {seen[akey]}")
                    seen[akey] = gkey
                    out.append(AgentConfig(name, ordered, akey, "" if entry.builtin
                                           else entry.ref, entry.fingerprint, gkey))
    return out


def _check_scalars(cfg: dict[str, Any], fail) -> None:
    def integer(k: str, lo: int) -> None:
        v = cfg[k]
        if isinstance(v, float) and v.is_integer():
            v = cfg[k] = int(v)
        if isinstance(v, str):
            try:
                f = float(v)
            except ValueError:
                raise fail(f"{k}={v!r}", "expected an integer") from None
            if f.is_integer():
                v = cfg[k] = int(f)
        if isinstance(v, bool) or not isinstance(v, int):
            raise fail(f"{k}={v!r}", "expected an integer")
        if v < lo:
            raise fail(f"{k}={v}", f"must be >= {lo}")

    def number(k: str) -> float:
        v = cfg[k]
        if isinstance(v, str):
            try:
                v = float(v)
            except ValueError:
                raise fail(f"{k}={v!r}", "expected a number") from None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
            raise fail(f"{k}={v!r}", "expected a number")
        cfg[k] = float(v)
        return float(v)

    integer("n_mdps", 1)
    integer("horizon", 1)
    integer("test_seed", 0)
    integer("train_seed", 0)
    for k in ("test_seed", "train_seed"):
        if cfg[k] > MAX_SEED:
            raise fail(f"{k}={cfg[k]}", "must be <= 2^63 - 1 (seeds are 64-bit)")
    integer("n_mdps", 1)
    if cfg["n_mdps"] > MAX_MDPS:
        raise fail(f"n_mdps={cfg['n_mdps']}", f"must be <= {MAX_MDPS}")
    if cfg["horizon"] > MAX_HORIZON:
        raise fail(f"horizon={cfg['horizon']}", f"must be <= {MAX_HORIZON}")
    for k in ("episodes", "episode_length", "checkpoint_every"):
        if cfg[k] is not None:
            integer(k, 1)
    if cfg["episodes"] is not None and cfg["episodes"] > MAX_EPISODES:
        raise fail(f"episodes={cfg['episodes']}", f"must be <= {MAX_EPISODES}")
    if cfg["selection"] not in SELECTIONS:
        raise fail(f"selection={cfg['selection']!r}", "expected validation (each "
                   "algorithm's configuration chosen on validation MDPs, its score reported "
                   "on the test MDPs) or test (chosen on the test MDPs, the paper's)")
    if cfg["validation_mdps"] is None:
        cfg["validation_mdps"] = min(cfg["n_mdps"], VALIDATION_MDPS)
    integer("validation_mdps", 1)
    if cfg["validation_mdps"] > MAX_MDPS:
        raise fail(f"validation_mdps={cfg['validation_mdps']}", f"must be <= {MAX_MDPS}")
    integer("max_chunks", 1)
    integer("bootstrap_resamples", 100)
    integer("bootstrap_seed", 0)
    a = number("alpha")
    if not 0 < a < 1:
        raise fail(f"alpha={a}", "must be in (0, 1)")
    if cfg["multiple_comparisons"] not in ("none", "holm"):
        raise fail(f"multiple_comparisons={cfg['multiple_comparisons']!r}",
                   "expected none or holm")
    if cfg["versus"] is not None and (not isinstance(cfg["versus"], str)
                                      or not cfg["versus"].strip()):
        raise fail(f"versus={cfg['versus']!r}", "expected the name of an algorithm (the "
                   "report compares it with every other) or null")
    if cfg["score"] not in ("discounted", "undiscounted"):
        raise fail(f"score={cfg['score']!r}", "expected discounted (the discounted return, "
                   "the paper's) or undiscounted (the sum of rewards over the horizon)")
    g = number("gamma")
    if not 0 < g <= 1:
        raise fail(f"gamma={g}", "must be in (0, 1]")
    if not 0 < number("chunk_budget_minutes") < math.inf:
        raise fail(f"chunk_budget_minutes={cfg['chunk_budget_minutes']}",
                   "must be > 0 and finite")
    if not 0 < number("bundle_minutes") < math.inf:
        raise fail(f"bundle_minutes={cfg['bundle_minutes']}", "must be > 0 and finite")
    if not 0 < number("checkpoint_every_seconds") < math.inf:
        raise fail(f"checkpoint_every_seconds={cfg['checkpoint_every_seconds']}",
                   "must be > 0 and finite")
    for k, lo in (("runtime_safety", 0.0), ("runtime_min_minutes", 1.0),
                  ("runtime_retry_factor", 1.0)):
        v = number(k)
        if not lo <= v < 1e6:
            raise fail(f"{k}={v:g}", f"must be in [{lo:g}, 1e6)")
    for k in ("compat_variants", "extended"):
        if not isinstance(cfg[k], bool):
            raise fail(f"{k}={cfg[k]!r}", "expected true or false")
    if not isinstance(cfg["results_dir"], str) or not cfg["results_dir"]:
        raise fail("results_dir", "expected a directory name")
    rd = cfg["results_dir"]
    if not rd.isprintable() or "{" in rd or "}" in rd:
        raise fail(f"results_dir={rd!r}", "a directory name without braces (the workflow's "
                   "paths take { } as wildcards) or characters that are not printable")


def check_settings(values: Mapping[str, Any], options: Mapping[str, str]) -> dict[str, Any]:
    """Top-level settings ``values`` checked by the rules of a configuration's keys (the
    other keys at their :data:`DEFAULTS`), an error naming the command-line option that
    gave the key (``options``: key -> option): what ``bbrl init`` writes is refused as
    the workflow would refuse it, in the options' words. Returns ``values`` as the
    configuration holds them (``"1e3"`` is 1000).

    >>> check_settings({"episodes": "1e3"}, {"episodes": "--episodes"})
    {'episodes': 1000}
    >>> check_settings({"episodes": 0}, {"episodes": "--episodes"})
    Traceback (most recent call last):
    bbrlcore.errors.BBRLError: --episodes 0: must be >= 1
    >>> check_settings({"score": "regret"}, {"score": "--score"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    bbrlcore.errors.BBRLError: --score 'regret': expected discounted (...) or undiscounted ...
    """
    cfg = {k: copy.deepcopy(v) for k, v in DEFAULTS.items() if v is not ...}
    cfg.update(values)

    def fail(key: str, msg: str) -> BBRLError:
        k, eq, v = str(key).partition("=")
        return BBRLError(f"{options.get(k, k)}{' ' + v if eq else ''}: {msg}")

    _check_scalars(cfg, fail)
    return {k: cfg[k] for k in values}


def _expand(name, params, grid, gkey, fail, fsets) -> list[dict[str, Any]]:
    from bbrlcore.agents.base import coerce

    known = {p.name: p for p in params}
    values: dict[str, list[Any]] = {}
    for k, raw in grid.items():
        if k not in known:
            exp = ", ".join(known) or "none"
            raise fail(f"{gkey}.{k}", f"unknown parameter of {name} (expected: {exp})")
        p = known[k]
        lst = raw if isinstance(raw, list) else [raw]
        if not lst:
            raise fail(f"{gkey}.{k}", "empty grid (give at least one value)")
        typed = []
        for i, v in enumerate(lst):
            w = f"{gkey}.{k}" + (f"[{i}]" if isinstance(raw, list) else "")
            try:  # "1e-6" (a string to YAML) is accepted as a number
                tv = coerce(p, v, w)
            except BBRLError as exc:  # "<w>=<value>: <what is wrong>"
                keypart, _, msg = str(exc)[len(w):].partition(": ")
                raise fail(w + keypart, msg) from None
            if tv is not None and p.check is not None:
                err = p.check(tv)
                if err:
                    raise fail(f"{w}={show_value(tv)}", err)
            if k == "formula_set":
                _check_formula_set(tv, w, fail, fsets)
            typed.append(tv)
        values[k] = typed
    for p in params:
        if p.required and p.name not in values:
            raise fail(gkey, f"parameter {p.name} of {name} is required")
    keys = [p.name for p in params if p.name in values]
    return [dict(zip(keys, combo, strict=True)) for combo in
            itertools.product(*(values[k] for k in keys))]


def _check_formula_set(v: str, w: str, fail, fsets) -> None:
    if v in fsets or re.fullmatch(r"F[2-6]", v):
        return
    if not Path(v).exists():
        raise fail(
            f"{w}={v}",
            "unknown formula set (a name under formula_sets:, F2..F6 or an existing file)",
        )


def _agent_id(alg: Any, params: tuple[tuple[str, Any], ...], fsets: Mapping[str, Any],
              where: str, fail: Any) -> str:
    """The configuration's agent id, exactly as its runs record it (defaults included), so
    that one agent has one name in file names, ``--forcerun`` targets and results; a
    formula set of the configuration's ``formula_sets`` appears by the label its generated
    file will carry (``F3@s1``), another by :func:`~bbrlcore.agents.formulas.label_of`."""
    from bbrlcore.agents import formulas as F

    try:
        full = alg.parse_params(dict(params), source=where)
    except BBRLError as exc:
        raise fail(where, str(exc)) from None
    parts = [alg.name]
    for p in alg.params:
        v = full.get(p.name)
        if v is None:
            continue
        if p.name == "compat":
            if v:
                parts.append("compat=true")
            continue
        if p.id_omits_default and v == p.default:
            continue
        if p.name == "formula_set" and isinstance(v, str) and v in fsets:
            fs = fsets[v] or {}
            meta = {"source": "generate", "max_size": fs.get("max_size"),
                    "seed": fs.get("seed", F.DEFAULT_SEED)}
            for k in ("n_points", "range"):
                if k in fs:
                    meta[k] = fs[k]
            text = F._label(meta, [])
        elif p.id_value:
            text = p.id_value(v)
        else:
            text = show_value(v)
        parts.append(f"{p.name}={text}")
    return "__".join(parts)
