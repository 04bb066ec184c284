"""Statistics of the benchmark (00-decisions §3): scores, intervals and the paired Z-test.

* The **score** of an agent is its mean discounted return over the N test MDPs, with the
  95% interval :math:`\\bar x \\pm 1.96\\, s/\\sqrt N` (``s`` the sample standard
  deviation, divisor N − 1). The paper's "2σ/N" is a typo.
* Two agents are compared by the **paired Z-test** of the paper's Appendix C, one-sided:
  over the paired differences :math:`d_i = a_i - b_i`,
  :math:`Z = \\bar d / (s_d/\\sqrt N)` (the statistic of ``scipy.stats.ttest_rel``), and
  ``a`` is significantly better than ``b`` when :math:`Z > \\Phi^{-1}(1-\\alpha)` (1.645 at
  α = 0.05). Identical return lists are "not different".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .errors import BBRLError

#: The normal quantile of the two-sided 95% interval.
Z95 = 1.96


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
    from scipy.stats import norm

    return float(norm.ppf(1.0 - alpha))


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
