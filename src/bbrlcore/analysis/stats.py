"""Statistics of the benchmark: scores, intervals and the paired Z-test.

* The **score** of an agent is its mean discounted return over the N test MDPs, with the
  95% interval :math:`\\bar x \\pm 1.96\\, s/\\sqrt N` (``s`` the sample standard
  deviation, divisor N − 1). The paper's "2σ/N" is a typo.
* Two agents are compared by the **paired Z-test** of the paper's Appendix C, one-sided:
  over the paired differences :math:`d_i = a_i - b_i`,
  :math:`Z = \\bar d / (s_d/\\sqrt N)` (the statistic of ``scipy.stats.ttest_rel``), and
  ``a`` is significantly better than ``b`` when :math:`Z > \\Phi^{-1}(1-\\alpha)` (1.645 at
  α = 0.05). Identical return lists are "not different".
* **Multiple comparisons.** "Among the best" makes m comparisons (every other algorithm
  against the reference), each at level α by default (the paper's procedure): the
  per-comparison error is α, and the family-wise error rate (the probability of at least
  one false "significantly worse") is only bounded by min(1, m·α) (Bonferroni's
  inequality). :func:`holm` is Holm's step-down procedure (Holm 1979, "A simple
  sequentially rejective multiple test procedure", Scand. J. Statist. 6:65–70): sort the
  m one-sided p-values :math:`p_{(1)} \\le \\dots \\le p_{(m)}`, reject
  :math:`H_{(1)}, \\dots, H_{(k)}` for the largest k such that
  :math:`p_{(i)} < \\alpha/(m-i+1)` for every :math:`i \\le k`. It keeps the family-wise
  error rate at most α under any dependence between the tests (they share the
  reference, so they are dependent) and rejects at least what Bonferroni (α/m each)
  rejects. :func:`familywise_error` gives the level each choice guarantees. Both
  statements are as approximate as the normal approximation of Z, and the reference is
  chosen with the same data (the best mean), which the guarantees do not account for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from bbrlcore.errors import BBRLError

#: The normal quantile of the two-sided 95% interval.
Z95 = 1.96

#: Corrections for multiple comparisons accepted by :func:`among the best
#: <bbrlcore.analysis.constraints.among_best>` and the ``multiple_comparisons`` config key.
CORRECTIONS = ("none", "holm")


def mean_ci(x: Sequence[float] | np.ndarray, z: float = Z95) -> tuple[float, float, float]:
    """Mean and interval ``mean ± z·s/√N`` of ``x``; the interval collapses for N = 1.

    Examples
    --------
    >>> mean_ci([1.0, 2.0, 3.0])[0]
    2.0
    """
    a = np.asarray(x, dtype=np.float64)
    if a.size == 0:
        raise BBRLError("mean_ci: no values")
    m = float(a.mean())
    if a.size < 2:
        return m, m, m
    half = z * float(a.std(ddof=1)) / math.sqrt(a.size)
    return m, m - half, m + half


def paired_z(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Paired Z statistic of ``a - b`` (equals ``scipy.stats.ttest_rel(a, b).statistic``).

    Returns 0.0 when the differences are all zero (identical lists), ``±inf`` when they
    are all equal and non-zero, and NaN for fewer than two pairs.
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise BBRLError(f"paired_z: {x.size} and {y.size} values cannot be paired")
    if x.size < 2:
        return float("nan")
    d = x - y
    md = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        if md == 0.0:
            return 0.0
        return math.copysign(math.inf, md)
    return md / (sd / math.sqrt(d.size))


def z_threshold(alpha: float = 0.05) -> float:
    """One-sided critical value :math:`\\Phi^{-1}(1-\\alpha)` (1.645 at α = 0.05)."""
    if not (0.0 < alpha < 1.0):
        raise BBRLError(f"alpha={alpha}: must be in (0, 1)")
    # scipy.stats.norm.ppf is scipy.special.ndtri (importing scipy.stats: half a second)
    from scipy.special import ndtri

    return float(ndtri(1.0 - alpha))


def significantly_better(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, alpha: float = 0.05
) -> bool:
    """Whether ``a`` is significantly better than ``b`` (one-sided paired Z-test)."""
    z = paired_z(a, b)
    return bool(z > z_threshold(alpha))


def significantly_different(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, alpha: float = 0.05
) -> bool:
    """Whether either list is significantly better than the other (each one-sided)."""
    z = paired_z(a, b)
    t = z_threshold(alpha)
    return bool(z > t or z < -t)


def z_pvalue(z: float) -> float:
    """One-sided p-value :math:`1-\\Phi(z)` of a Z statistic (NaN stays NaN).

    ``z > z_threshold(alpha)`` exactly when ``z_pvalue(z) < alpha``.

    Examples
    --------
    >>> round(z_pvalue(1.6448536269514722), 6)
    0.05
    >>> z_pvalue(float("inf"))
    0.0
    """
    from scipy.special import ndtr  # scipy.stats.norm.sf(z) is ndtr(-z)

    return float(ndtr(-z))


def check_correction(correction: str) -> str:
    """Return ``correction`` if it is one of :data:`CORRECTIONS`, else raise BBRLError."""
    if correction not in CORRECTIONS:
        raise BBRLError(
            f"correction={correction!r}: must be one of {', '.join(CORRECTIONS)}"
        )
    return correction


def holm(pvalues: Sequence[float] | np.ndarray, alpha: float = 0.05) -> np.ndarray:
    """Holm's step-down rejections of m hypotheses at family-wise level ``alpha``.

    The i-th smallest p-value (1-based) is compared with ``alpha / (m - i + 1)``; the
    procedure stops at the first that is not below its threshold, and the hypotheses from
    there on are kept. A NaN p-value (a test that could not be made) is never rejected
    and still counts in m (conservative). The inequality is strict so that, for m = 1,
    Holm rejects exactly when the uncorrected test does (``z > z_threshold(alpha)``).

    Parameters
    ----------
    pvalues : sequence of float
        One p-value per hypothesis, in any order.
    alpha : float
        Family-wise error level, in (0, 1).

    Returns
    -------
    numpy.ndarray of bool
        ``True`` where the hypothesis is rejected, in the order of ``pvalues``.

    Examples
    --------
    Thresholds 0.05/4, 0.05/3, 0.05/2, 0.05/1 for the sorted p-values 0.01, 0.015, 0.03,
    0.04: the first two pass (0.01 < 0.0125, 0.015 < 0.0167), the third fails
    (0.03 >= 0.025), so the last two are kept although 0.04 < 0.05.

    >>> holm([0.04, 0.01, 0.03, 0.015]).tolist()
    [False, True, False, True]
    """
    if not (0.0 < alpha < 1.0):
        raise BBRLError(f"alpha={alpha}: must be in (0, 1)")
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    m = p.size
    reject = np.zeros(m, dtype=bool)
    key = np.where(np.isnan(p), np.inf, p)
    for i, j in enumerate(np.argsort(key, kind="stable")):
        if not (key[j] < alpha / (m - i)):
            break
        reject[j] = True
    return reject


def holm_adjusted(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values: :math:`\\tilde p_{(i)} = \\max_{j \\le i} \\min(1,
    (m-j+1)\\,p_{(j)})`; hypothesis i is rejected by :func:`holm` at level α when its
    adjusted p-value is below α (NaN stays NaN).

    Examples
    --------
    >>> holm_adjusted([0.04, 0.01, 0.03, 0.015]).round(4).tolist()
    [0.06, 0.04, 0.06, 0.045]
    """
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    m = p.size
    out = np.full(m, np.nan)
    ok = ~np.isnan(p)
    order = np.argsort(np.where(ok, p, np.inf), kind="stable")
    running = 0.0
    for i, j in enumerate(order):
        if not ok[j]:
            break
        running = max(running, min(1.0, (m - i) * p[j]))
        out[j] = running
    return out


def familywise_error(m: int, alpha: float = 0.05, correction: str = "none") -> float:
    """The family-wise error level guaranteed for m one-sided comparisons.

    ``"none"`` (each comparison at α, the paper's procedure): min(1, m·α), Bonferroni's
    bound, which is what can be guaranteed for dependent tests (independent ones would
    give 1 − (1 − α)^m); ``"holm"``: α. With m = 0 nothing can be wrong: 0.

    Examples
    --------
    >>> familywise_error(4, 0.05)
    0.2
    >>> familywise_error(6, 0.05, "holm")
    0.05
    """
    if not (0.0 < alpha < 1.0):
        raise BBRLError(f"alpha={alpha}: must be in (0, 1)")
    check_correction(correction)
    if m <= 0:
        return 0.0
    if correction == "holm":
        return float(alpha)
    return float(min(1.0, m * alpha))
