r"""Colosseum's published tables, and how close bbrl's runs of its instances come to them.

Colosseum (M. Conserva and P. Rauber, "Hardness in Markov Decision Processes: Theory and
Practice", NeurIPS 2022) publishes, in its appendix's Tables 11-14, for each of its 80
tabular benchmark instances and each of its agents (PSRL, Q-learning, and UCRL2 in the
continuing settings), the **normalised expected cumulative regret at T, divided by T**
(its "Norm. cumulative regret": the regret of the agent's current policy, evaluated
exactly every 100 steps, each evaluation normalised by :math:`V^* - V^-` or
:math:`\rho^* - \rho^-`), as mean ± standard deviation over 20 seeds, and how many of
the 20 seeds completed the T = 500,000 steps within its 10-minute limit per
interaction (a cut run keeps its last policy for the remaining steps). They ship inside
the package (``bbrlcore/analysis/data/colosseum_published.tsv``, 200 rows, parsed from the
appendix by ``tests/fixtures/colosseum/parse_tables.py``).

**bbrl's number** is the same quantity: a run with Colosseum's indicators
(``indicators: true``, ``bbrl run --indicators``) records ``normalised_expected_regret``,
the same sum; divided by the run's horizon T it is the table's value, one per test MDP
(each of a Colosseum instance's test MDPs is that instance, drawn at its own seed: the
test MDPs are bbrl's seeds). Not to be confused with bbrl's *realised* regret (the run
tables' ``regret``, of the rewards actually collected), which Colosseum's tables do not
print. bbrl's mean comes with a 95% interval :math:`\bar x \pm 1.96\,s/\sqrt n`.

**The verdict** (:func:`verdict_of`), per instance and agent:

* Colosseum completed 20 of 20 seeds: a Welch-type comparison of the two means,

  .. math:: z = \frac{\operatorname{sign}(d)\,\max(|d| - 0.005,\ 0)}
                {\sqrt{s_b^2/n_b + (s_c + 0.005)^2/20}}, \qquad d = m_b - m_c,

  with bbrl's mean, standard deviation and seed count :math:`m_b, s_b, n_b` and
  Colosseum's :math:`m_c, s_c` (its 20 seeds). The printed numbers are rounded to 2
  decimals: the difference is allowed their rounding (0.005) and Colosseum's standard
  deviation is taken at the top of its rounding interval (a printed 0.00 is at most
  0.005). *agrees* when :math:`|z| \le 3`, else *differs*. No t-quantiles, no
  correction for the 200 comparisons: at 3 standard errors a few "differs" among many
  rows can be chance.
* Colosseum completed k < 20 seeds: its number mixes complete runs with runs cut by its
  10-minute limit, whose policy stopped learning — *cut*: "Colosseum's run was cut by its
  10-minute limit (k of 20 seeds)", and bbrl's complete run is the new number (no
  agree/differ).
* The appendix's text does not show the completed seeds (two rows, their mean ± std from
  the appendix's summary table): *unknown seeds*, z shown.
* bbrl played another horizon than Colosseum's T = 500,000, or fewer than 2 test MDPs:
  *not comparable* (a normalised regret per step falls as T grows).
* No bbrl run of the instance with that agent's algorithm and its indicators: *not run*,
  with why (bbrl's algorithm plays episodic interactions only, as Q-learning-UCB, where
  the setting is continuing; the instance is not expressed by bbrl yet: its
  :attr:`~bbrlcore.mdp.families.colosseum_instances.Instance.needs`; not in the results;
  no agent of the algorithm; no indicators recorded).

**Agents.** Colosseum's PSRL, Q-learning and UCRL2 are bbrl's ``psrl``,
``q-learning-ucb`` and ``ucrl2`` (:data:`AGENTS`); every bbrl agent of that algorithm on
the instance is compared (one row each), and the row says when it is not Colosseum's
configuration: Colosseum's Q-learning is ``q-learning-ucb`` with ``form=colosseum`` (its
benchmark's hyperparameters:
:data:`bbrlcore.agents.q_ucb.COLOSSEUM_BENCHMARK`), its UCRL2 ``ucrl2`` with
``form=colosseum`` (:data:`bbrlcore.agents.ucrl2.COLOSSEUM_BENCHMARK`); its PSRL uses a
tuned Dirichlet concentration and a Normal-inverse-gamma reward prior, bbrl's PSRL the experiment's
prior. Colosseum's other agents (:data:`UNMAPPED`: the non-tabular bsuite baselines of
its Table 15, not in Tables 11-14) have no bbrl counterpart.

Examples
--------
>>> t = published_table()
>>> t.height, sorted(t["setting"].unique()), sorted(t["colosseum_agent"].unique())
(200, ['CC', 'CE', 'EC', 'EE'], ['PSRL', 'Q-learning', 'UCRL2'])
>>> r = t.filter(pl.col("instance") == "Colosseum-CC-RiverSwim-0",
...              pl.col("algorithm") == "ucrl2")
>>> r.select("colosseum_mdp", "mean", "std", "completed").row(0)
('RiverSwim (1)', 0.0, 0.0, 20)
>>> verdict_of(0.02, 0.01, 20, 0.02, 0.01, 20)[0]
'agrees'
>>> verdict_of(0.10, 0.01, 20, 0.02, 0.01, 20)[0]
'differs'
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import polars as pl

from bbrlcore.errors import BBRLError

#: Where Colosseum's numbers come from.
CITATION = ('M. Conserva, P. Rauber, "Hardness in Markov Decision Processes: Theory and '
            'Practice", NeurIPS 2022 (Colosseum), appendix E.4, Tables 11-14')

PUBLISHED_FILE = Path(__file__).parent / "data" / "colosseum_published.tsv"

#: Colosseum's agents → bbrl's algorithm.
AGENTS = {"PSRL": "psrl", "Q-learning": "q-learning-ucb", "UCRL2": "ucrl2"}
#: Colosseum's agents without a bbrl counterpart, and why.
UNMAPPED = {
    "ActorCritic": "non-tabular bsuite baseline (Table 15, not Tables 11-14); bbrl has "
                   "no neural agents",
    "ActorCriticRNN": "non-tabular bsuite baseline (Table 15); bbrl has no neural agents",
    "BootDQN": "non-tabular bsuite baseline (Table 15); bbrl has no neural agents",
    "DQN": "non-tabular bsuite baseline (Table 15); bbrl has no neural agents",
}
#: Colosseum's seeds per interaction, its T, its time limit (minutes).
SEEDS = 20
HORIZON = 500_000
LIMIT_MINUTES = 10
#: |z| at most this: agrees.
AGREE_Z = 3.0
#: Half a unit of the printed numbers' last decimal.
ROUNDING = 0.005
#: Half-width of bbrl's 95% interval in standard errors.
Z95 = 1.96
#: The run table's column (÷ horizon) that is Colosseum's table metric.
COLUMN = "normalised_expected_regret"

#: The verdicts, as :func:`compare` writes them.
VERDICTS = ("agrees", "differs", "cut", "unknown seeds", "not comparable", "not run")

#: Columns of :func:`compare`'s table, in order.
COMPARISON_COLUMNS: dict[str, Any] = {
    "setting": pl.Utf8, "table": pl.Int64, "instance": pl.Utf8, "colosseum_mdp": pl.Utf8,
    "colosseum_agent": pl.Utf8, "algorithm": pl.Utf8, "experiment": pl.Utf8,
    "agent": pl.Utf8, "published_mean": pl.Float64, "published_std": pl.Float64,
    "completed": pl.Int64, "n": pl.Int64, "mean": pl.Float64, "std": pl.Float64,
    "ci_low": pl.Float64, "ci_high": pl.Float64, "horizon": pl.Int64,
    "log_every": pl.Int64, "z": pl.Float64, "verdict": pl.Utf8, "why": pl.Utf8,
    "note": pl.Utf8,
}


def published_table() -> pl.DataFrame:
    """Colosseum's 200 published rows (Tables 11-14): ``setting, table, instance (bbrl's
    name), colosseum_mdp, colosseum_agent, algorithm (bbrl's), metric, mean, std,
    completed (null where the appendix's text does not show it), seeds, source``."""
    try:
        return pl.read_csv(PUBLISHED_FILE, separator="\t", comment_prefix="#",
                           schema_overrides={"mean": pl.Float64, "std": pl.Float64,
                                             "completed": pl.Int64, "seeds": pl.Int64,
                                             "table": pl.Int64})
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise BBRLError(f"{PUBLISHED_FILE}: cannot read the shipped table ({exc})") from None


def is_colosseum(tests: list[str]) -> bool:
    """Whether any of ``tests`` (test distribution names) is a Colosseum instance."""
    from bbrlcore.mdp.families.colosseum_instances import INSTANCES

    return any(t in INSTANCES for t in tests)


def welch_z(mb: float, sb: float, nb: int, mc: float, sc: float, nc: int = SEEDS) -> float:
    """The module docstring's z: bbrl's mean, std, seeds against Colosseum's printed
    mean and std over ``nc`` seeds, the printed numbers' rounding allowed.

    Examples
    --------
    >>> welch_z(0.004, 0.0, 20, 0.0, 0.0)  # within the rounding of a printed 0.00
    0.0
    >>> round(welch_z(0.5, 0.1, 25, 0.4, 0.1), 2)
    3.08
    """
    d = float(mb) - float(mc)
    se = math.sqrt(float(sb) ** 2 / nb + (float(sc) + ROUNDING) ** 2 / nc)
    return math.copysign(max(abs(d) - ROUNDING, 0.0), d) / se


def verdict_of(mb: float, sb: float | None, nb: int, mc: float, sc: float,
               completed: int | None, horizon: int | None = HORIZON
               ) -> tuple[str, float | None, str]:
    """(verdict, z, why) of bbrl's (mean, std, seeds) against a published row (see the
    module docstring)."""
    if horizon is not None and int(horizon) != HORIZON:
        return ("not comparable", None,
                f"bbrl played T = {int(horizon):,} steps, Colosseum T = {HORIZON:,}: a "
                "regret per step depends on T")
    if nb < 2 or sb is None:
        return "not comparable", None, f"bbrl has {nb} test MDP(s): no spread to test with"
    z = welch_z(mb, sb, nb, mc, sc)
    if completed is None:
        return ("unknown seeds", z, "the appendix's text does not show how many of "
                "Colosseum's seeds completed (mean ± std from its summary table)")
    if completed < SEEDS:
        return ("cut", z, f"Colosseum's run was cut by its {LIMIT_MINUTES}-minute limit "
                f"({completed} of {SEEDS} seeds); bbrl's complete run is the new number")
    ok = abs(z) <= AGREE_Z
    return ("agrees" if ok else "differs", z,
            f"|z| {'≤' if ok else '>'} {AGREE_Z:g} (Welch-type, rounding allowed)")


#: Colosseum's benchmark's tuned PSRL priors (its ``cached_hyperparameters/
#: agent_configs``): the Dirichlet concentration on every next state (PSRLEpisodic) and
#: the NIG reward prior means (PSRLEpisodic, PSRLContinuous).
COLOSSEUM_PSRL_ALPHA = 0.32345772625210756
COLOSSEUM_PSRL_MEAN = {True: 0.41854463543357456, False: 0.23589883401606418}


def agent_note(algorithm: str, agent: str, prior: str = "", episodic: bool = True) -> str:
    """What of bbrl's agent ``agent`` (played under the prior named ``prior`` on an
    episodic or continuing instance) is not Colosseum's benchmark configuration ("" if
    nothing known).

    Examples
    --------
    >>> agent_note("q-learning-ucb", "q-learning-ucb__c=1")
    "Jin et al.'s update (form=jin), not Colosseum's (form=colosseum)"
    >>> agent_note("ucrl2", "ucrl2__delta=0.05__form=colosseum")
    ''
    >>> agent_note("psrl", "psrl__form=colosseum",
    ...            "UColosseum-CC-RiverSwim-0+rnig0.23589883401606418", episodic=False)
    ''
    >>> print(agent_note("psrl", "psrl", "UColosseum-EC-DeepSea-0+rnig0.41854463543357456"))
    bbrl's PSRL knows the transitions' support (Colosseum's: a Dirichlet of 0.3235 on every
    next state)
    """
    if algorithm == "q-learning-ucb":
        if "form=colosseum" not in agent:
            return "Jin et al.'s update (form=jin), not Colosseum's (form=colosseum)"
        if "bonus=bernstein" not in agent:
            return "Colosseum's update with the Hoeffding bonus; its benchmark's is Bernstein"
        return ""
    if algorithm == "psrl":
        if "form=colosseum" in agent:
            return _psrl_colosseum_note(agent, prior)
        return _psrl_note(prior, episodic)
    if algorithm == "ucrl2":
        if "form=colosseum" not in agent:
            return ("Jaksch et al.'s UCRL2 (form=jaksch), not Colosseum's (form=colosseum: "
                    "its Bernstein bounds scaled by its tuned alpha_p 0.988 and alpha_r "
                    "0.103)")
        if "alpha_p=" in agent or "alpha_r=" in agent:
            return ("Colosseum's UCRL2 with other alpha_p or alpha_r than its benchmark's "
                    "(0.988, 0.103)")
        return ""
    return ""


def _psrl_colosseum_note(agent: str, prior: str) -> str:
    """What of ``psrl --param form=colosseum`` (Colosseum's PSRLContinuous, its own
    transition prior) is not Colosseum's benchmark configuration."""
    from bbrlcore.mdp.reward_prior import nig_mean_of
    from bbrlcore.mdp.transition_prior import split_suffixes

    out = []
    if "_weight=" in agent:
        out.append("Colosseum's PSRLContinuous with other weights than its benchmark's")
    try:
        rkind = split_suffixes(prior)[2] if prior else "known"
    except BBRLError:
        rkind = "known"
    mean, want = nig_mean_of(rkind), COLOSSEUM_PSRL_MEAN[False]
    if mean is not None and mean != want:
        out.append(f"a Normal-inverse-gamma reward prior of mean {mean:g} (Colosseum's: "
                   f"{want:.4g})")
    return "; ".join(out)


def _psrl_note(prior: str, episodic: bool) -> str:
    """What of bbrl's PSRL under ``prior`` is not Colosseum's benchmark PSRL."""
    from bbrlcore.mdp.reward_prior import nig_mean_of
    from bbrlcore.mdp.transition_prior import split_suffixes

    if not prior:
        return ("bbrl's PSRL learns from the experiment's prior; Colosseum's uses its tuned "
                "Dirichlet concentration and a Normal-inverse-gamma reward prior")
    try:
        _, alpha, rkind = split_suffixes(prior)
    except BBRLError:
        alpha, rkind = None, "known"
    out = []
    if not episodic:
        out.append("bbrl's continuing PSRL is Ouyang et al.'s (a new sample when an "
                   "episode doubles), not Colosseum's PSRLContinuous (form=colosseum)")
    if alpha is None:
        out.append("bbrl's PSRL knows the transitions' support (Colosseum's: a Dirichlet of "
                   f"{COLOSSEUM_PSRL_ALPHA:.4g} on every next state)")
    elif abs(alpha - COLOSSEUM_PSRL_ALPHA) > 1e-9 and episodic:
        out.append(f"a Dirichlet of {alpha:g} on every next state (Colosseum's: "
                   f"{COLOSSEUM_PSRL_ALPHA:.4g})")
    mean, want = nig_mean_of(rkind), COLOSSEUM_PSRL_MEAN[episodic]
    if mean is None:
        out.append("rewards " + ("known" if rkind == "known" else f"under a {rkind} prior")
                   + " (Colosseum's: a Normal-inverse-gamma prior)")
    elif mean != want:
        out.append(f"a Normal-inverse-gamma reward prior of mean {mean:g} (Colosseum's: "
                   f"{want:.4g})")
    return "; ".join(out)


def _why_not_run(instance: str, algorithm: str, runs: pl.DataFrame) -> str:
    from bbrlcore.mdp.families.colosseum_instances import INSTANCES
    from bbrlcore.protocol.training import episodic_only

    inst = INSTANCES[instance]
    why = episodic_only(algorithm)
    if not inst.episodic and why:
        return (f"bbrl's {algorithm} plays episodic interactions only "
                f"({why}): no counterpart of Colosseum's continuing agent")
    if inst.needs:
        return f"bbrl does not express this instance yet (it needs {inst.needs})"
    on = runs.filter(pl.col("test") == instance)
    if on.is_empty():
        return "not in these results"
    mine = on.filter(pl.col("algorithm") == algorithm)
    if mine.is_empty():
        return f"no {algorithm} agent on it in these results"
    if COLUMN not in mine.columns or mine["log_every"].is_null().all():
        return "its runs have no expected indicators (run with indicators: true)"
    return "its runs' expected indicators are unavailable for this agent"


def bbrl_values(runs: pl.DataFrame) -> pl.DataFrame:
    """Per experiment and agent on a Colosseum instance, bbrl's table value
    (``normalised_expected_regret`` / horizon) over its test MDPs: ``experiment, test,
    algorithm, agent, n, mean, std, ci_low, ci_high, horizon, log_every`` (rows without
    the indicator left out)."""
    from bbrlcore.mdp.families.colosseum_instances import INSTANCES

    need = {"experiment", "test", "algorithm", "agent", "horizon"}
    missing = need - set(runs.columns)
    if missing:
        raise BBRLError(f"runs: lack the column(s) {', '.join(sorted(missing))} (expected "
                        "bbrl run tables)")
    cols = {"experiment": pl.Utf8, "test": pl.Utf8, "algorithm": pl.Utf8, "agent": pl.Utf8,
            "n": pl.Int64, "mean": pl.Float64, "std": pl.Float64, "ci_low": pl.Float64,
            "ci_high": pl.Float64, "horizon": pl.Int64, "log_every": pl.Int64}
    if COLUMN not in runs.columns:
        return pl.DataFrame(schema=cols)
    r = runs.filter(pl.col("test").is_in(list(INSTANCES)), pl.col(COLUMN).is_not_null())
    v = (pl.col(COLUMN) / pl.col("horizon"))
    out = r.group_by("experiment", "test", "algorithm", "agent", maintain_order=True).agg(
        pl.len().alias("n"), v.mean().alias("mean"), v.std().alias("std"),
        pl.col("horizon").max().alias("horizon"), pl.col("horizon").min().alias("h_min"),
        pl.col("log_every").max().alias("log_every"))
    odd = out.filter(pl.col("horizon") != pl.col("h_min"))
    if odd.height:
        o = odd.row(0, named=True)
        raise BBRLError(f"runs: {o['experiment']} {o['agent']}: test MDPs of different "
                        f"horizons ({o['h_min']} and {o['horizon']})")
    half = Z95 * pl.col("std") / pl.col("n").sqrt()
    return out.with_columns((pl.col("mean") - half).alias("ci_low"),
                            (pl.col("mean") + half).alias("ci_high")).select(
        [pl.col(c).cast(t) for c, t in cols.items()])


def compare(runs: pl.DataFrame) -> pl.DataFrame:
    """Colosseum's published rows beside bbrl's runs (module docstring), for every
    setting of which ``runs`` (merged run tables, test MDPs) hold an instance: one row per
    bbrl agent of the row's algorithm on the instance, or one *not run* row. Columns:
    :data:`COMPARISON_COLUMNS`; empty when the runs hold no Colosseum instance.

    Examples
    --------
    >>> runs = pl.DataFrame({"experiment": "E", "test": "Colosseum-CE-RiverSwim-0",
    ...     "algorithm": "ucrl2", "agent": "ucrl2", "horizon": 500_000, "log_every": 100,
    ...     "normalised_expected_regret": [2500.0, 3500.0, 3000.0]})
    >>> t = compare(runs)
    >>> t.height, t["setting"].unique().to_list()
    (60, ['CE'])
    >>> r = t.filter(pl.col("agent") == "ucrl2").row(0, named=True)
    >>> r["published_mean"], round(r["mean"], 6), r["verdict"]
    (0.0, 0.006, 'agrees')
    """
    from bbrlcore.mdp.families.colosseum_instances import INSTANCES, SETTINGS

    tests = runs["test"].unique().to_list() if "test" in runs.columns else []
    settings = {INSTANCES[t].setting for t in tests if t in INSTANCES}
    if not settings:
        return pl.DataFrame(schema=COMPARISON_COLUMNS)
    ours = bbrl_values(runs)
    rows = []
    for p in published_table().iter_rows(named=True):
        if SETTINGS[p["setting"]] not in settings:
            continue
        base = {"setting": p["setting"], "table": p["table"], "instance": p["instance"],
                "colosseum_mdp": p["colosseum_mdp"], "colosseum_agent": p["colosseum_agent"],
                "algorithm": p["algorithm"], "published_mean": p["mean"],
                "published_std": p["std"], "completed": p["completed"]}
        mine = ours.filter(pl.col("test") == p["instance"],
                           pl.col("algorithm") == p["algorithm"])
        if mine.is_empty():
            rows.append({**base, "verdict": "not run",
                         "why": _why_not_run(p["instance"], p["algorithm"], runs)})
            continue
        for o in mine.iter_rows(named=True):
            verdict, z, why = verdict_of(o["mean"], o["std"], o["n"], p["mean"], p["std"],
                                         p["completed"], o["horizon"])
            rows.append({**base, "experiment": o["experiment"], "agent": o["agent"],
                         "n": o["n"], "mean": o["mean"], "std": o["std"],
                         "ci_low": o["ci_low"], "ci_high": o["ci_high"],
                         "horizon": o["horizon"], "log_every": o["log_every"], "z": z,
                         "verdict": verdict, "why": why,
                         "note": agent_note(p["algorithm"], o["agent"],
                                            _prior_of(o["experiment"], o["test"]),
                                            INSTANCES[p["instance"]].episodic)})
    return pl.DataFrame(rows, schema=COMPARISON_COLUMNS)


def _prior_of(experiment: str, test: str) -> str:
    """The prior's name in an experiment's name ``<test>-<prior>[@<setting>]``."""
    return experiment.removeprefix(f"{test}-").split("@")[0]


def counts(table: pl.DataFrame) -> dict[str, int]:
    """How many rows of a :func:`compare` table have each verdict (every verdict listed)."""
    return {v: int((table["verdict"] == v).sum()) for v in VERDICTS}


def counts_text(table: pl.DataFrame) -> str:
    """One sentence of :func:`counts`."""
    c = counts(table)
    compared = c["agrees"] + c["differs"]
    return (f"Agree: {c['agrees']} of the {compared} rows Colosseum completed (within "
            f"{AGREE_Z:g} standard errors). Cut by Colosseum's {LIMIT_MINUTES}-minute "
            f"limit: {c['cut']} (bbrl's complete run is the new number). Colosseum's seeds "
            f"not legible: {c['unknown seeds']}. Not comparable: {c['not comparable']}. "
            f"Not run: {c['not run']}.")


def _f(v: float | None, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.{digits}f}"


def not_run(table: pl.DataFrame) -> list[dict[str, Any]]:
    """The *not run* rows of a :func:`compare` table grouped by why: ``{"why": ...,
    "items": ["Colosseum-CC-Taxi-0 (PSRL, Q-learning, UCRL2)", ...]}`` in table order."""
    groups: dict[str, dict[str, list[str]]] = {}
    for r in table.filter(pl.col("verdict") == "not run").iter_rows(named=True):
        groups.setdefault(r["why"], {}).setdefault(r["instance"], []).append(
            r["colosseum_agent"])
    return [{"why": why, "items": [f"{i} ({', '.join(a)})" for i, a in inst.items()]}
            for why, inst in groups.items()]


def text_table(table: pl.DataFrame) -> str:
    """The comparison as plain text (``bbrl compare-published``): one line per row bbrl
    ran, the reasons (``why`` beyond agree/differ, and the agent notes) as numbered notes,
    the rows not run grouped by why."""
    head = ["instance", "Colosseum", "agent", "Colosseum (seeds)", "bbrl [95% CI] (n)",
            "z", "verdict", "note"]
    notes: list[str] = []
    lines = []
    for r in table.filter(pl.col("verdict") != "not run").iter_rows(named=True):
        done = "?" if r["completed"] is None else str(r["completed"])
        pub = f"{r['published_mean']:.2f} ± {r['published_std']:.2f} ({done}/{SEEDS})"
        ours = "–" if r["mean"] is None else (
            f"{_f(r['mean'])} [{_f(r['ci_low'])}, {_f(r['ci_high'])}] ({r['n']})")
        z = "–" if r["z"] is None else f"{r['z']:+.1f}"
        marks = []
        for text in (r["why"] if r["verdict"] not in ("agrees", "differs") else None,
                     r["note"]):
            if text:
                if text not in notes:
                    notes.append(text)
                marks.append(f"[{notes.index(text) + 1}]")
        lines.append([r["instance"], r["colosseum_agent"], r["agent"] or "–", pub, ours, z,
                      r["verdict"], " ".join(marks)])
    widths = [max([len(h), *(len(x[i]) for x in lines)]) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:{w}s}}" for w in widths)
    out = [fmt.format(*head).rstrip(), "  ".join("-" * w for w in widths)]
    out += [fmt.format(*x).rstrip() for x in lines]
    out += ["", "Colosseum's normalised expected cumulative regret / T (Tables 11-14: mean ± "
            "std over its 20 seeds) beside bbrl's normalised_expected_regret / T (mean, 95% "
            "interval over its test MDPs).", counts_text(table), f"Source: {CITATION}."]
    out += [f"[{i + 1}] {n}" for i, n in enumerate(notes)]
    for g in not_run(table):
        out += [f"Not run, {g['why']}: {', '.join(g['items'])}."]
    return "\n".join(out)
