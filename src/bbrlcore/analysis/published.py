r"""The paper's published numbers, and how close a run comes to them.

The paper — M. Castronovo, D. Ernst, A. Couëtoux and R. Fonteneau, "Benchmarking for
Bayesian Reinforcement Learning", PLOS ONE 11(6): e0157088, 2016,
doi:10.1371/journal.pone.0157088 — prints, for each of its six experiments, the best agent
of each algorithm with its score (the tables of §5.3.1 and §5.3.2: 48 rows), and in its
text the sequences of algorithms among the best as the online-time bound grows. Both ship
inside the package (``bbrlcore/analysis/data/published.tsv``, ``published_sequences.tsv``), with
the original program's reference figures (``reference_scores.tsv``, a copy of
``shared/data/reference_scores.tsv``: N = 500, γ = 0.95, T = 250).

**Intervals to standard errors.** The paper's text gives the 95% interval as
:math:`\bar J \pm 2\sigma/N`, a typo: the original export computes the
half-width :math:`h = 1.96\,s/\sqrt N` (checked numerically there) and the
tables print it rounded to 2 decimals. So a published ``m ± h`` has the standard error
:math:`h/1.96` (:func:`standard_error`; the rounding of m and h, at most 0.005 each, is
ignored). Ours is the same: half the width of the summary's interval, over 1.96.

**The comparison** (:func:`compare`). For every published row whose agent the results
contain, in the compat variant (the original's quirks) or the default
one: our score, the two-sample statistic

.. math:: z = (m_{ours} - m_{pub}) / \sqrt{se_{ours}^2 + se_{pub}^2}

(the test MDPs are not the same, so the samples are independent), and the verdict
*agrees* when :math:`|z| \le 3` (within 3 standard errors), else *differs*. The verdict
uses the variant the published number carries: compat for Soft-max, BEB and SBOSS, whose
published numbers carry the reference's quirks, the default otherwise;
both variants' z are given. Known reasons for a difference (:func:`known_reasons`: the
original's quirks, a formula's operand order, the reference scores) are written beside each row.

**Selection bias.** Each published row is the best of a grid (the highest of many noisy
means), so it overestimates that configuration's true score; a run of that configuration
alone is expected to fall below it, by up to a few standard errors for large grids. The
original program's own figure for the same configuration, where ``reference_scores.tsv``
has one, is not selected that way and is shown beside it (several reference runs of one
configuration are pooled: mean of the means, standard error
:math:`\sqrt{\sum se_i^2}/k`).

Examples
--------
>>> t = published_table()
>>> t.height, t["experiment"].n_unique(), t["algorithm"].n_unique()
(48, 6, 8)
>>> t.filter(pl.col("experiment") == "GC-GC", pl.col("algorithm") == "opps-ds")["agent"][0]
'formula__formula=X2_X0_DIV'
>>> round(standard_error(1.96), 6)
1.0
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import polars as pl

from bbrlcore.errors import BBRLError

#: The paper the published numbers come from.
CITATION = ('M. Castronovo, D. Ernst, A. Couëtoux, R. Fonteneau, "Benchmarking for '
            'Bayesian Reinforcement Learning", PLOS ONE 11(6): e0157088, 2016, '
            "doi:10.1371/journal.pone.0157088")

DATA = Path(__file__).parent / "data"
PUBLISHED_FILE = DATA / "published.tsv"
SEQUENCES_FILE = DATA / "published_sequences.tsv"
REFERENCE_FILE = DATA / "reference_scores.tsv"

#: |z| at most this many standard errors: the published and our scores agree.
AGREE_Z = 3.0
#: Half-width of a 95% interval in standard errors (the original's 1.96·s/√N).
Z95 = 1.96

#: The algorithms whose published numbers carry the original's quirks (compat mode).
QUIRKY = ("soft-max", "beb", "sboss")

SELECTION_BIAS_NOTE = (
    "Each published row is the best agent of its algorithm over a grid of configurations: "
    "the maximum of many noisy means, biased upwards. A run of that configuration alone is "
    "expected to score somewhat lower; the original program's own figure for the same "
    "configuration (reference_scores.tsv, not selected) is shown where there is one.")

SEQUENCE_NOTE = (
    "Our implementation is faster than the original, so the online-time bounds at which "
    "algorithms enter the top differ from the paper's; compare the order in which "
    "algorithms appear, not the bounds.")

#: Columns of :func:`compare`'s table, in order.
COMPARISON_COLUMNS: dict[str, Any] = {
    "experiment": pl.Utf8, "section": pl.Utf8, "algorithm": pl.Utf8,
    "paper_agent": pl.Utf8, "agent": pl.Utf8, "compat_agent": pl.Utf8,
    "published_mean": pl.Float64, "published_halfwidth": pl.Float64,
    "n": pl.Int64,
    "mean_compat": pl.Float64, "halfwidth_compat": pl.Float64, "z_compat": pl.Float64,
    "mean_default": pl.Float64, "halfwidth_default": pl.Float64, "z_default": pl.Float64,
    "variant": pl.Utf8, "z": pl.Float64, "verdict": pl.Utf8,
    "reference_mean": pl.Float64, "reference_halfwidth": pl.Float64,
    "reference_runs": pl.Int64, "z_reference": pl.Float64,
    "alternative_agent": pl.Utf8, "mean_alternative": pl.Float64,
    "halfwidth_alternative": pl.Float64, "z_alternative": pl.Float64,
    "reasons": pl.Utf8,
}


# ---------------------------------------------------------------------------------------
# Shipped data


def _read_tsv(path: Path, **kw: Any) -> pl.DataFrame:
    try:
        return pl.read_csv(path, separator="\t", comment_prefix="#", **kw)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise BBRLError(f"{path}: cannot read the shipped table ({exc})") from None


def _parse_kv(spec: str | None, where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for kv in (spec or "").split(";"):
        if not kv.strip():
            continue
        if "=" not in kv:
            raise BBRLError(f"{where}: {kv!r} is not key=value")
        k, v = kv.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def published_table() -> pl.DataFrame:
    """The paper's 48 best-agent rows: ``experiment, test, prior, section, algorithm
    (the paper's), paper_agent (the table's wording), agent_algorithm, params (bbrl's
    k=v;k=v), agent (bbrl's id, default mode), compat_agent (the compat variant's id, null
    where the algorithm has none), mean, halfwidth, se`` (:func:`standard_error`)."""
    t = _read_tsv(PUBLISHED_FILE, schema_overrides={
        "params": pl.Utf8, "mean": pl.Float64, "halfwidth": pl.Float64,
        "compat_agent": pl.Utf8, "alternative_agent": pl.Utf8})
    return t.with_columns(
        pl.col("experiment").str.split("-").list.get(0).alias("test"),
        pl.col("experiment").str.split("-").list.get(1).alias("prior"),
        pl.col("params").fill_null(""),
        (pl.col("halfwidth") / Z95).alias("se"),
    ).select("experiment", "test", "prior", "section", "algorithm", "paper_agent",
             "agent_algorithm", "params", "agent", "compat_agent", "alternative_agent",
             "mean", "halfwidth", "se")


def paper_sequences() -> pl.DataFrame:
    """The paper's time-constraint sequences (§5.3 text): ``experiment, step, algorithms``
    (a list of names, as the report names algorithms)."""
    t = _read_tsv(SEQUENCES_FILE, schema_overrides={"algorithms": pl.Utf8})
    return t.with_columns(pl.col("algorithms").str.split(", "))


def reference_table() -> pl.DataFrame:
    """The original program's figures (``reference_scores.tsv``) with bbrl's agent id of
    each configuration (``agent``, compat variant where flagged) and the standard error."""
    t = _read_tsv(REFERENCE_FILE, schema_overrides={"params": pl.Utf8, "compat": pl.Utf8,
                                                    "agent": pl.Utf8})
    return t.with_columns(
        (pl.col("test") + "-" + pl.col("prior")).alias("experiment"),
        (pl.col("ci95_halfwidth") / Z95).alias("se"),
    )


# ---------------------------------------------------------------------------------------
# Statistics


def standard_error(halfwidth: float) -> float:
    """The standard error behind a printed 95% half-width ``1.96·s/√N``: ``h / 1.96``."""
    return float(halfwidth) / Z95


def two_sample_z(m1: float, se1: float, m2: float, se2: float) -> float:
    """``(m1 − m2) / √(se1² + se2²)`` for independent samples; 0 when both standard
    errors are 0 and the means equal, ±inf when they differ.

    Examples
    --------
    >>> round(two_sample_z(42.0, 0.3, 40.0, 0.4), 6)
    4.0
    >>> two_sample_z(0.0, 0.0, 0.0, 0.0)
    0.0
    """
    se = math.hypot(se1, se2)
    d = float(m1) - float(m2)
    if se == 0.0:
        return 0.0 if d == 0.0 else math.copysign(math.inf, d)
    return d / se


def verdict(z: float | None) -> str | None:
    """``agrees`` (|z| ≤ 3), ``differs``, or None without a score."""
    if z is None or (isinstance(z, float) and math.isnan(z)):
        return None
    return "agrees" if abs(z) <= AGREE_Z else "differs"


def known_reasons(algorithm: str, params: dict[str, str]) -> str:
    """Why our score may differ from the published one, for a published row (the
    paper's algorithm and bbrl's parameters as the table gives them); "" if none known.

    Examples
    --------
    >>> "2.5 acts as 2" in known_reasons("beb", {"beta": "2.5"})
    True
    >>> known_reasons("beb", {"beta": "16"}), known_reasons("bamcp", {"K": "500"})
    ('', '')
    """
    if algorithm == "soft-max":
        return ("Soft-max: the original compares a uniform draw with unnormalised weights "
                "exp(Q/τ), so it always plays action 0 on these benchmarks; "
                "compat reproduces it, the default mode is the published algorithm and is "
                "expected to differ")
    if algorithm == "beb":
        beta = float(params.get("beta", "nan"))
        if beta.is_integer():
            return ""
        return (f"BEB: the original truncates β to an integer ({beta:g} acts as "
                f"{int(beta)}); compat reproduces it, the default mode uses "
                "the real β")
    if algorithm == "sboss":
        return ("SBOSS: the original's deviation is NaN for rows with a zero prior "
                "concentration, so it never resamples there, and rows without samples get "
                "filler actions; compat reproduces it, the default mode "
                "resamples as published")
    if algorithm == "opps-ds":
        return ("OPPS-DS: played as the formula the table names (the formula agent, no "
                "offline search); the table gives neither the formula set nor the budget "
                "that selected it, and that formula was the best of many trainings "
                "(selection bias); our F5/F6 are other random draws of the sets")
    return ""


# ---------------------------------------------------------------------------------------
# The comparison


def _ours(summary: pl.DataFrame) -> dict[tuple[str, str], dict[str, Any]]:
    need = {"experiment", "agent", "mean", "ci_low", "ci_high", "n"}
    missing = need - set(summary.columns)
    if missing:
        raise BBRLError(f"summary: lacks the column(s) {', '.join(sorted(missing))} "
                        "(expected a bbrl summary table)")
    out = {}
    for r in summary.iter_rows(named=True):
        half = (float(r["ci_high"]) - float(r["ci_low"])) / 2.0
        out[(r["experiment"], r["agent"])] = {"mean": float(r["mean"]), "half": half,
                                              "se": half / Z95, "n": int(r["n"])}
    return out


def _pooled_reference() -> dict[tuple[str, str], tuple[float, float, int]]:
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for r in reference_table().iter_rows(named=True):
        out.setdefault((r["experiment"], r["agent"]), []).append((r["mean"], r["se"]))
    pooled = {}
    for key, runs in out.items():
        k = len(runs)
        mean = sum(m for m, _ in runs) / k
        se = math.sqrt(sum(s * s for _, s in runs)) / k
        pooled[key] = (mean, se, k)
    return pooled


def compare(summary: pl.DataFrame) -> pl.DataFrame:
    """Every published row whose agent ``summary`` contains (compat or default variant),
    beside our scores, with z, verdict, known reasons and the reference figure (see the
    module docstring). Columns: :data:`COMPARISON_COLUMNS`.

    ``summary`` is a bbrl summary table (``results/summary.parquet``): ``experiment``,
    ``agent``, ``n``, ``mean``, ``ci_low``, ``ci_high``.

    Examples
    --------
    >>> s = pl.DataFrame({"experiment": ["GC-GC"], "agent": ["beb__beta=2.5__compat=true"],
    ...                   "n": [500], "mean": [42.0], "ci_low": [40.04], "ci_high": [43.96]})
    >>> r = compare(s).row(0, named=True)
    >>> r["published_mean"], r["variant"], round(r["z"], 3), r["verdict"]
    (41.72, 'compat', 0.215, 'agrees')
    """
    ours = _ours(summary)
    ref = _pooled_reference()
    rows = []
    for p in published_table().iter_rows(named=True):
        exp = p["experiment"]
        d = ours.get((exp, p["agent"]))
        c = ours.get((exp, p["compat_agent"])) if p["compat_agent"] else None
        if d is None and c is None:
            continue

        def z_of(o: dict[str, Any] | None, p: dict[str, Any] = p) -> float | None:
            if o is None:
                return None
            return two_sample_z(o["mean"], o["se"], p["mean"], p["se"])

        zc, zd = z_of(c), z_of(d)
        want_compat = p["algorithm"] in QUIRKY and p["compat_agent"] is not None
        if (want_compat and c is not None) or d is None:
            variant, z, o, pid = "compat", zc, c, p["compat_agent"]
        else:
            variant, z, o, pid = "default", zd, d, p["agent"]
        r = ref.get((exp, pid))
        params = _parse_kv(p["params"], PUBLISHED_FILE.name)
        reasons = known_reasons(p["algorithm"], params)
        alt_id = alt = z_alt = None
        if p["alternative_agent"]:
            alt_id = p["alternative_agent"]
            alt = ours.get((exp, alt_id))
            z_alt = z_of(alt)
            note = (f"the table's notation does not say which operand its original "
                    f"formula pushed first (RPN 'a b DIV' is a/b): {alt_id} swaps them")
            if alt and z_alt is not None:
                note += f" and scores {alt['mean']:.2f} ± {alt['half']:.2f} (z = {z_alt:+.1f})"
            reasons = f"{reasons}; {note}" if reasons else note
        if want_compat and variant == "default" and known_reasons(p["algorithm"], params):
            reasons = ("only the default variant was run; the published number carries the "
                       "original's quirks (compat)" + (f"; {reasons}" if reasons else ""))
        rows.append({
            "experiment": exp, "section": p["section"], "algorithm": p["algorithm"],
            "paper_agent": p["paper_agent"], "agent": p["agent"],
            "compat_agent": p["compat_agent"],
            "published_mean": p["mean"], "published_halfwidth": p["halfwidth"],
            "n": o["n"] if o else None,
            "mean_compat": c["mean"] if c else None,
            "halfwidth_compat": c["half"] if c else None, "z_compat": zc,
            "mean_default": d["mean"] if d else None,
            "halfwidth_default": d["half"] if d else None, "z_default": zd,
            "variant": variant, "z": z, "verdict": verdict(z),
            "reference_mean": r[0] if r else None,
            "reference_halfwidth": r[1] * Z95 if r else None,
            "reference_runs": r[2] if r else None,
            "z_reference": (two_sample_z(o["mean"], o["se"], r[0], r[1])
                            if r and o else None),
            "alternative_agent": alt_id, "mean_alternative": alt["mean"] if alt else None,
            "halfwidth_alternative": alt["half"] if alt else None, "z_alternative": z_alt,
            "reasons": reasons,
        })
    return pl.DataFrame(rows, schema=COMPARISON_COLUMNS)


def counts(table: pl.DataFrame) -> tuple[int, int]:
    """(rows that agree, rows compared) of a :func:`compare` table."""
    return (int((table["verdict"] == "agrees").sum()),
            int(table["verdict"].is_not_null().sum()))


def sequences(summary: pl.DataFrame, returns: dict[str, dict[str, Any]],
              alpha: float = 0.05) -> pl.DataFrame:
    """Per experiment of the paper present in ``summary``: our time-constraint sequence
    (:func:`bbrlcore.report.constraints.constraint_sequence`) beside the paper's.

    Two of ours: ``compat`` (an algorithm with compat agents is represented by them, the
    behaviour the paper measured) and ``default`` (compat agents left out). ``returns``
    maps experiment -> agent -> per-MDP returns (paired by test-MDP index). Columns:
    ``experiment, paper, ours_compat, ours_default`` (the sequences as the paper writes
    them), ``reversed_compat, reversed_default`` (pairs of algorithms whose order of first
    appearance is reversed, "A before B" meaning the paper shows A first, empty if the order
    agrees), and ``order_agrees`` (no reversed pair in the compat sequence).
    """
    from bbrlcore.analysis import constraints

    paper = paper_sequences()
    rows = []
    for exp in summary["experiment"].unique(maintain_order=True).to_list():
        ps = paper.filter(pl.col("experiment") == exp).sort("step")["algorithms"].to_list()
        if not ps:
            continue
        s = summary.filter(pl.col("experiment") == exp)
        out: dict[str, Any] = {"experiment": exp, "paper": constraints.sequence_text(ps)}
        for variant in ("compat", "default"):
            if variant == "compat":
                with_compat = set(s.filter(pl.col("compat"))["algorithm"].to_list())
                keep = s.filter(pl.col("compat") | ~pl.col("algorithm").is_in(
                    list(with_compat)))
            else:
                keep = s.filter(~pl.col("compat"))
            keep = keep.with_columns(pl.col("algorithm").replace_strict(
                constraints.NICE, default=pl.col("algorithm")).alias("family"))
            seq = constraints.constraint_sequence(keep, returns.get(exp, {}), alpha)
            ours = seq["algorithms"].to_list()
            rev = constraints.reversed_pairs(ps, ours)
            out[f"ours_{variant}"] = constraints.sequence_text(ours)
            out[f"reversed_{variant}"] = "; ".join(f"{a} before {b}" for a, b in rev)
        out["order_agrees"] = out["reversed_compat"] == ""
        rows.append(out)
    return pl.DataFrame(rows, schema={
        "experiment": pl.Utf8, "paper": pl.Utf8, "ours_compat": pl.Utf8,
        "ours_default": pl.Utf8, "reversed_compat": pl.Utf8, "reversed_default": pl.Utf8,
        "order_agrees": pl.Boolean})


def _fmt(v: float | None, digits: int = 2, sign: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:+.{digits}f}" if sign else f"{v:.{digits}f}"


def text_table(table: pl.DataFrame) -> str:
    """The comparison as plain text (``bbrl compare-published``): one line per published
    row, known reasons as numbered notes below the table."""
    head = ["experiment", "published agent", "published", "ours compat", "z", "ours default",
            "z", "verdict", "reference (original)", "note"]
    notes: list[str] = []
    lines = []

    def score(m: float | None, h: float | None) -> str:
        return "–" if m is None else f"{_fmt(m)} ± {_fmt(h)}"

    for r in table.iter_rows(named=True):
        ref = "–" if r["reference_mean"] is None else (
            score(r["reference_mean"], r["reference_halfwidth"])
            + (f" ({r['reference_runs']} runs)" if (r["reference_runs"] or 0) > 1 else ""))
        verdict_text = "–" if r["verdict"] is None else f"{r['verdict']} ({r['variant']})"
        note = ""
        if r["reasons"]:
            if r["reasons"] not in notes:
                notes.append(r["reasons"])
            note = f"[{notes.index(r['reasons']) + 1}]"
        lines.append([r["experiment"], r["paper_agent"],
                      score(r["published_mean"], r["published_halfwidth"]),
                      score(r["mean_compat"], r["halfwidth_compat"]),
                      _fmt(r["z_compat"], 1, sign=True),
                      score(r["mean_default"], r["halfwidth_default"]),
                      _fmt(r["z_default"], 1, sign=True), verdict_text, ref, note])
    widths = [max([len(h), *(len(x[i]) for x in lines)]) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:{w}s}}" for w in widths)
    out = [fmt.format(*head).rstrip(), "  ".join("-" * w for w in widths)]
    out += [fmt.format(*x).rstrip() for x in lines]
    agree, total = counts(table)
    out += ["", f"{agree} of {total} published rows agree within {AGREE_Z:g} standard errors "
            "(verdict on the compat variant for Soft-max, BEB and SBOSS, the default "
            "otherwise).", SELECTION_BIAS_NOTE]
    out += [f"[{i + 1}] {n}" for i, n in enumerate(notes)]
    return "\n".join(out)
