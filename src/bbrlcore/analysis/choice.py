"""The rule by which each family's configuration is chosen, without the data: which
column a table is ranked by and the sentence that says so.

The lowest layer of the selection: :mod:`bbrlcore.analysis.results` (the summary's
markdown), :mod:`bbrlcore.analysis.constraints` and :mod:`bbrlcore.analysis.selection`
(which re-exports these names, their public home) all use it, and it imports none of
them, so the analysis modules import each other in one direction only
(``tests/test_analysis_imports.py``).
"""

from __future__ import annotations

import polars as pl


def selection_of(table: pl.DataFrame) -> str:
    """``"validation"`` when ``table`` (a summary, a best-agent table) was chosen on
    validation MDPs, else ``"test"``."""
    return "validation" if "validation_mean" in table.columns else "test"


def selection_key(table: pl.DataFrame) -> pl.Expr:
    """What each family's best agent is chosen by in ``table``: the validation mean when
    the table has one (an algorithm with one configuration has none: its test mean, the
    only candidate anyway), else the test mean (the paper's)."""
    if "validation_mean" in table.columns:
        return pl.coalesce(pl.col("validation_mean"), pl.col("mean"))
    return pl.col("mean")


def selection_text(selection: str, n_validation: int | str | None = None) -> str:
    """The sentence every report page and the summary say about the selection
    (``n_validation``: the number of validation MDPs, or a text such as "20 to 50 (by
    experiment)").

    >>> selection_text("test").split(":")[0]
    "Each algorithm's configuration is chosen on the test MDPs themselves, as the paper does"
    """
    if selection == "validation":
        on = f"{n_validation} validation MDPs" if n_validation else "validation MDPs"
        return (f"Each algorithm's configuration is chosen on {on} (the same distribution, "
                "another seed) and its score is reported on the test MDPs, which played no "
                "part in the choice (selection: validation). Grid: how many configurations "
                "each algorithm was tried in (its tuning budget).")
    return ("Each algorithm's configuration is chosen on the test MDPs themselves, as the "
            "paper does: its score is biased upwards, the more so the larger its grid "
            "(selection: test; selection: validation chooses on other MDPs). Grid: how many "
            "configurations each algorithm was tried in (its tuning budget).")
