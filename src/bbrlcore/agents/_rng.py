r"""A small, fast random-number generator for the numba kernels: xoshiro256**.

numba's built-in ``np.random`` functions read a hidden per-thread Mersenne Twister: each
draw costs about 12 ns on this machine class and ``np.random.seed`` about 1.5 µs, which
dominates the cheapest agents (SBOSS in compat mode spends most of a 250-step trajectory
in the generator). The generator here keeps its whole state in a plain ``uint64[4]``
array that the kernel owns and passes explicitly, draws in about 1.5 ns and is seeded in
a few nanoseconds.

* **Generator.** xoshiro256** (D. Blackman and S. Vigna, "Scrambled linear pseudorandom
  number generators", ACM TOMS 47(4), 2021): period :math:`2^{256}-1`, passes BigCrush.
* **Seeding.** The 256-bit state is four outputs of splitmix64 started at the seed, the
  authors' recommended way to expand a 64-bit seed (an all-zero state cannot occur).
* **Uniforms.** The top 53 bits of an output, :math:`U = \lfloor z/2^{11}\rfloor\,2^{-53}`
  in :math:`[0, 1)`; ``rng_randint(rs, n)`` is :math:`\lfloor U n \rfloor` (bias below
  :math:`n\,2^{-53}`).
* **Exponential** variates by the 256-layer ziggurat (G. Marsaglia and W. W. Tsang, "The
  ziggurat method for generating random variables", J. Stat. Softw. 5(8), 2000; the
  layout numpy uses: 53-bit abscissae, tables computed here to 40 digits): 99% of draws
  cost one 64-bit output, a table look-up and a multiplication, no logarithm.
* **Normal** variates by the Marsaglia polar method, **Gamma** variates by Marsaglia and
  Tsang's squeeze method ("A simple method for generating gamma variables", ACM TOMS
  26(3), 2000), with :math:`\Gamma(a) = \Gamma(a+1)\,U^{1/a}` for :math:`a < 1`; small
  integer shapes k use the exact identity :math:`\Gamma(k, 1) = \sum_{i\le k} E_i`, a
  sum of k standard exponentials (the Dirichlet rows of integer priors: Dir(1, ..., 1)
  is k = 1 everywhere).

Every kernel that uses it creates its state once per trajectory with
``rs = rng_new(seed)`` from the trajectory seed of the seed tree (``bbrlcore.seeds``), so
results depend only on that seed.

>>> rs = rng_new(42)
>>> 0.0 <= rng_uniform(rs) < 1.0
True
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_TWO_M53 = 1.0 / 9007199254740992.0  # 2**-53


def _exponential_ziggurat_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Tables ``(ke, we, fe, r)`` of the 256-layer exponential ziggurat (53-bit layout).

    Layer i has right edge x_i (x_255 = r, the base strip's edge) and equal area
    v; ``ke[i]`` is the fast-accept threshold x_{i-1}/x_i scaled to 2^53, ``we[i]`` the
    abscissa scale x_i / 2^53 and ``fe[i] = exp(-x_i)``. Computed with 40-digit decimals.
    """
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 40
        m2 = Decimal(2) ** 53
        de = Decimal("7.697117470131487")
        ve = Decimal("3.949659822581572e-3")
        te = de
        q = ve / (-de).exp()
        ke = [0] * 256
        we = [Decimal(0)] * 256
        fe = [Decimal(0)] * 256
        ke[0] = int(de / q * m2)
        ke[1] = 0
        we[0] = q / m2
        we[255] = de / m2
        fe[0] = Decimal(1)
        fe[255] = (-de).exp()
        for i in range(254, 0, -1):
            de = -(ve / de + (-de).exp()).ln()
            ke[i + 1] = int(de / te * m2)
            te = de
            fe[i] = (-de).exp()
            we[i] = de / m2
    return (np.array(ke, dtype=np.uint64), np.array([float(v) for v in we]),
            np.array([float(v) for v in fe]), 7.697117470131487)


def _ziggurat_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The tables :func:`_exponential_ziggurat_tables` computes, as written out in
    ``_ziggurat_tables.py`` (computing them took 40 ms of every process's start-up;
    ``tests/test_rng.py`` checks they agree to the last bit)."""
    from bbrlcore.agents import _ziggurat_tables as Z

    return (np.array(Z.KE, dtype=np.uint64), np.array(Z.WE), np.array(Z.FE), Z.R)


_ZIG_KE, _ZIG_WE, _ZIG_FE, _ZIG_R = _ziggurat_tables()


@njit(cache=True, error_model="numpy")
def _splitmix64(z):
    z = z + np.uint64(0x9E3779B97F4A7C15)
    w = z
    w = (w ^ (w >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    w = (w ^ (w >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z, w ^ (w >> np.uint64(31))


@njit(cache=True, error_model="numpy")
def rng_new(seed):
    """A fresh generator state (``uint64[4]``) expanded from a seed in [0, 2**63)."""
    rs = np.empty(4, dtype=np.uint64)
    z = np.uint64(seed)
    for i in range(4):
        z, out = _splitmix64(z)
        rs[i] = out
    return rs


# The generator's functions come in two forms: ``*_s`` functions take the four state
# words as scalars and return ``(value, s0, s1, s2, s3)``, so a hot loop can keep the state
# in registers (stores to other arrays then never force it back to memory); the ``rng_*``
# functions take the ``uint64[4]`` state array and are thin wrappers.


@njit(cache=True, error_model="numpy", inline="always")
def next_s(s0, s1, s2, s3):
    """xoshiro256**: the next 64-bit output and the new state."""
    t = s1 * np.uint64(5)
    t = (t << np.uint64(7)) | (t >> np.uint64(57))
    result = t * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << np.uint64(45)) | (s3 >> np.uint64(19))
    return result, s0, s1, s2, s3


@njit(cache=True, error_model="numpy", inline="always")
def uniform_s(s0, s1, s2, s3):
    """A uniform double in [0, 1) (53 random bits)."""
    z, s0, s1, s2, s3 = next_s(s0, s1, s2, s3)
    return float(z >> np.uint64(11)) * _TWO_M53, s0, s1, s2, s3


@njit(cache=True, error_model="numpy", inline="always")
def exponential_s(s0, s1, s2, s3):
    """A standard exponential variate (ziggurat)."""
    while True:
        z, s0, s1, s2, s3 = next_s(s0, s1, s2, s3)
        ri = z >> np.uint64(3)
        idx = np.int64(ri & np.uint64(0xFF))
        ri = ri >> np.uint64(8)
        x = float(ri) * _ZIG_WE[idx]
        if ri < _ZIG_KE[idx]:
            return x, s0, s1, s2, s3  # inside the layer's rectangle: ~99% of draws
        u, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
        if idx == 0:
            return _ZIG_R - math.log1p(-u), s0, s1, s2, s3  # the tail beyond r
        if (_ZIG_FE[idx - 1] - _ZIG_FE[idx]) * u + _ZIG_FE[idx] < math.exp(-x):
            return x, s0, s1, s2, s3


@njit(cache=True, error_model="numpy", inline="always")
def normal_s(s0, s1, s2, s3):
    """A standard normal variate (Marsaglia polar method)."""
    while True:
        a, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
        b, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
        a = 2.0 * a - 1.0
        b = 2.0 * b - 1.0
        q = a * a + b * b
        if 0.0 < q < 1.0:
            return a * math.sqrt(-2.0 * math.log(q) / q), s0, s1, s2, s3


@njit(cache=True, error_model="numpy", inline="always")
def gamma_s(a, s0, s1, s2, s3):
    """A Gamma(a, 1) variate, a > 0.

    Integer shapes up to 8 (posterior counts of integer priors) are sums of ``a``
    standard exponentials; other shapes use Marsaglia and Tsang's method (a separate,
    not inlined, function: it keeps the hot loops of the integer case small).
    """
    if a <= 8.0 and a == math.floor(a):
        g, s0, s1, s2, s3 = exponential_s(s0, s1, s2, s3)
        for _i in range(int(a) - 1):
            e, s0, s1, s2, s3 = exponential_s(s0, s1, s2, s3)
            g += e
        return g, s0, s1, s2, s3
    return _gamma_mt_s(a, s0, s1, s2, s3)


@njit(cache=True, error_model="numpy")
def _gamma_mt_s(a, s0, s1, s2, s3):
    """Marsaglia and Tsang's Gamma(a, 1) sampler (boosted for a < 1)."""
    boost = 1.0
    if a < 1.0:
        # Gamma(a) = Gamma(a + 1) * U^(1/a); may underflow to 0 for tiny a (callers
        # that normalise handle an all-zero sum)
        u, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
        boost = (1.0 - u) ** (1.0 / a)
        a += 1.0
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        z, s0, s1, s2, s3 = normal_s(s0, s1, s2, s3)
        v = 1.0 + c * z
        if v <= 0.0:
            continue
        v = v * v * v
        u, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
        u = 1.0 - u
        z2 = z * z
        if u < 1.0 - 0.0331 * z2 * z2:
            return d * v * boost, s0, s1, s2, s3
        if math.log(u) < 0.5 * z2 + d * (1.0 - v + math.log(v)):
            return d * v * boost, s0, s1, s2, s3


@njit(cache=True, error_model="numpy", inline="always")
def rng_next(rs):
    """The next 64-bit output of xoshiro256** (advances ``rs`` in place)."""
    z, rs[0], rs[1], rs[2], rs[3] = next_s(rs[0], rs[1], rs[2], rs[3])
    return z


@njit(cache=True, error_model="numpy", inline="always")
def rng_uniform(rs):
    """A uniform double in [0, 1) (53 random bits)."""
    u, rs[0], rs[1], rs[2], rs[3] = uniform_s(rs[0], rs[1], rs[2], rs[3])
    return u


@njit(cache=True, error_model="numpy", inline="always")
def rng_uniform_pos(rs):
    """A uniform double in (0, 1] (never 0, so its logarithm is finite)."""
    return 1.0 - rng_uniform(rs)


@njit(cache=True, error_model="numpy", inline="always")
def rng_randint(rs, n):
    """A uniform integer in {0, ..., n-1} (n >= 1)."""
    k = np.int64(rng_uniform(rs) * n)
    return k if k < n else n - 1


@njit(cache=True, error_model="numpy", inline="always")
def rng_exponential(rs):
    """A standard exponential variate (ziggurat)."""
    x, rs[0], rs[1], rs[2], rs[3] = exponential_s(rs[0], rs[1], rs[2], rs[3])
    return x


@njit(cache=True, error_model="numpy", inline="always")
def rng_normal(rs):
    """A standard normal variate (Marsaglia polar method)."""
    z, rs[0], rs[1], rs[2], rs[3] = normal_s(rs[0], rs[1], rs[2], rs[3])
    return z


@njit(cache=True, error_model="numpy", inline="always")
def rng_gamma(rs, a):
    """A Gamma(a, 1) variate, a > 0 (see :func:`gamma_s`)."""
    g, rs[0], rs[1], rs[2], rs[3] = gamma_s(a, rs[0], rs[1], rs[2], rs[3])
    return g


@njit(cache=True, error_model="numpy")
def rng_fill_uniform(rs, buf):
    """Fill ``buf`` with uniforms in [0, 1) (the same numbers as successive
    :func:`rng_uniform` calls). Tree searches read their uniforms from such a buffer, so
    that the generator's state is not carried through their long loops."""
    s0, s1, s2, s3 = rs[0], rs[1], rs[2], rs[3]
    for i in range(buf.shape[0]):
        v, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
        buf[i] = v
    rs[0], rs[1], rs[2], rs[3] = s0, s1, s2, s3
