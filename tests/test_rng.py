"""The kernels' own generator (agents/_rng.py): bit-exact xoshiro256**, and the
distributions of its uniform, integer, normal and Gamma draws."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from scipy import stats

from bbrlcore.agents._rng import (
    rng_exponential,
    rng_fill_uniform,
    rng_gamma,
    rng_new,
    rng_next,
    rng_normal,
    rng_randint,
    rng_uniform,
)

MASK = (1 << 64) - 1


def _splitmix64_py(seed: int, n: int) -> list[int]:
    out, z = [], seed & MASK
    for _ in range(n):
        z = (z + 0x9E3779B97F4A7C15) & MASK
        w = z
        w = ((w ^ (w >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        w = ((w ^ (w >> 27)) * 0x94D049BB133111EB) & MASK
        out.append(w ^ (w >> 31))
    return out


def _xoshiro_py(s: list[int], n: int) -> list[int]:
    """Reference xoshiro256** (Blackman & Vigna), Python integers."""
    def rotl(x: int, k: int) -> int:
        return ((x << k) | (x >> (64 - k))) & MASK

    s = list(s)
    out = []
    for _ in range(n):
        out.append((rotl((s[1] * 5) & MASK, 7) * 9) & MASK)
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
    return out


@njit
def _draw(kind, seed, n, a):
    rs = rng_new(seed)
    out = np.empty(n)
    for i in range(n):
        if kind == 0:
            out[i] = rng_uniform(rs)
        elif kind == 1:
            out[i] = rng_randint(rs, int(a))
        elif kind == 2:
            out[i] = rng_normal(rs)
        elif kind == 4:
            out[i] = rng_exponential(rs)
        else:
            out[i] = rng_gamma(rs, a)
    return out


@pytest.mark.parametrize("seed", [0, 1, 42, 2**32 - 1, 2**62 + 12345])
def test_bit_exact_xoshiro256starstar(seed):
    rs = rng_new(seed)
    state = _splitmix64_py(seed, 4)
    assert [int(v) for v in rs] == state
    assert [int(rng_next(rs)) for _ in range(20)] == _xoshiro_py(state, 20)


def test_same_seed_same_stream_and_seeds_differ():
    a = _draw(0, 7, 1000, 0.0)
    assert np.array_equal(a, _draw(0, 7, 1000, 0.0))
    assert not np.array_equal(a, _draw(0, 8, 1000, 0.0))


def test_uniform():
    u = _draw(0, 1, 200_000, 0.0)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3


def test_fill_uniform_is_the_same_stream_in_blocks():
    """The tree searches' buffer refills give exactly the successive uniforms."""
    rs = rng_new(11)
    buf = np.empty(1000)
    rng_fill_uniform(rs, buf[:300])
    rng_fill_uniform(rs, buf[300:])
    assert np.array_equal(buf, _draw(0, 11, 1000, 0.0))


def test_randint():
    k = _draw(1, 2, 120_000, 6.0).astype(int)
    assert k.min() == 0 and k.max() == 5
    counts = np.bincount(k, minlength=6)
    assert stats.chisquare(counts).pvalue > 1e-3


def test_normal():
    z = _draw(2, 3, 100_000, 0.0)
    assert stats.kstest(z, "norm").pvalue > 1e-3


def test_the_written_out_ziggurat_tables_are_the_computed_ones():
    from bbrlcore.agents import _rng

    ke, we, fe, r = _rng._exponential_ziggurat_tables()
    assert ke.dtype == _rng._ZIG_KE.dtype == np.uint64
    assert np.array_equal(ke, _rng._ZIG_KE)
    assert np.array_equal(we, _rng._ZIG_WE) and np.array_equal(fe, _rng._ZIG_FE)
    assert r == _rng._ZIG_R


def test_exponential_ziggurat():
    e = _draw(4, 5, 400_000, 0.0)
    assert (e >= 0).all()
    assert stats.kstest(e, "expon").pvalue > 1e-3
    # the tail beyond the base strip's edge r = 7.697 (probability e^-r = 4.5e-4)
    tail = e[e > 7.697117470131487]
    assert abs(len(tail) / len(e) - np.exp(-7.697117470131487)) < 1e-4
    assert stats.kstest(tail - 7.697117470131487, "expon").pvalue > 1e-3


@pytest.mark.parametrize("a", [0.05, 0.3, 1.0, 2.0, 2.5, 7.0, 8.0, 9.0, 31.7])
def test_gamma(a):
    g = _draw(3, 4, 60_000, a)
    assert (g >= 0).all()
    assert stats.kstest(g, stats.gamma(a).cdf).pvalue > 1e-3
