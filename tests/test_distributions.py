import zlib

import numpy as np
import pytest

from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D


def test_builtins_equal_the_original_files(shared):
    files = sorted((shared / "data" / "distributions").glob("*.dat"))
    assert len(files) == 6
    for f in files:
        d = D.read_dat(f)
        b = D.builtin(d.short_name)
        assert b.same_as(d), f
        # byte-identical when written back
        assert b.to_dat() == f.read_text(), f


def test_builtin_shapes_and_names():
    expect = {"GC": (5, 3), "GDL": (9, 2), "Grid": (25, 4), "UGC": (5, 3), "UGDL": (9, 2),
              "UGrid": (25, 4)}
    for name, (nx, nu) in expect.items():
        d = D.builtin(name)
        assert (d.n_states, d.n_actions, d.short_name) == (nx, nu, name)
        if name.startswith("U"):
            assert (d.theta == 1).all()


def test_dat_round_trip_plain_and_zlib(tmp_path):
    rng = np.random.default_rng(1)
    theta = rng.integers(0, 3, size=(4, 2, 4)).astype(float)
    theta[:, :, 0] += 0.5
    d = D.FDMDistribution("Test distribution", "T", theta, rng.normal(size=(4, 2, 4)), -1,
                          "gaussian", rng.random((4, 2, 4)))
    for compress in (False, True):
        p = tmp_path / f"d{compress}.dat"
        D.write_dat(d, p, compress=compress)
        raw = p.read_bytes()
        assert (raw[:2] == b"\x78\xda") == compress
        back = D.read_dat(p)
        assert back.name == d.name and back.initial_state == -1
        assert np.allclose(back.theta, d.theta, rtol=1e-14)
        assert np.allclose(back.reward, d.reward, rtol=1e-14)
        assert np.allclose(back.reward_variance, d.reward_variance, rtol=1e-14)


def test_parquet_round_trip(tmp_path):
    d = D.builtin("Grid")
    D.write_parquet(d, tmp_path / "g.parquet")
    assert D.load(tmp_path / "g.parquet").same_as(d)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda s: "\n".join(s.split("\n")[:30]), "truncated"),
        (lambda s: s.replace("DirMultiDistribution\n155", "DirMultiDistribution\n154"), "155"),
        (lambda s: s.replace("1\t1\t0\t0\t0", "1\t-1\t0\t0\t0", 1), "negative"),
        (lambda s: s.replace("1\t1\t0\t0\t0", "1\t1\t0\t0", 1), "4 values"),
        (lambda s: s.replace("IMDPDistribution", "IMDP"), "expected section"),
        (lambda s: s.replace("1\t1\t0\t0\t0", "1\tx\t0\t0\t0", 1), "non-number"),
    ],
)
def test_malformed_dat_is_one_clear_error(tmp_path, mutate, message):
    text = D.builtin("GC").to_dat()
    p = tmp_path / "bad.dat"
    p.write_text(mutate(text))
    with pytest.raises(BBRLError) as e:
        D.read_dat(p)
    msg = str(e.value)
    assert str(p) in msg and message in msg and "\n" not in msg


def test_zero_concentration_gives_exactly_zero_probability():
    d = D.builtin("Grid")
    rng = np.random.default_rng(0)
    for _ in range(20):
        P = d.draw_mdp(rng)
        assert (P[d.theta == 0] == 0).all()
        assert np.allclose(P.sum(axis=2), 1.0)
        assert (P[d.theta > 0] > 0).all()


def test_draws_follow_the_dirichlet():
    d = D.builtin("UGC")  # rows Dir(1,1,1,1,1): mean 0.2, var 4/150
    rng = np.random.default_rng(3)
    P = np.stack([d.draw_mdp(rng) for _ in range(2000)])
    assert abs(P.mean() - 0.2) < 0.005
    assert abs(P[:, 0, 0, 0].var() - 4 / 150) < 0.004


def test_mean_model():
    d = D.builtin("GC")
    m = d.mean_model()
    assert np.allclose(m[d.theta > 0], 0.5)


def test_unknown_name_and_missing_file():
    with pytest.raises(BBRLError, match="unknown distribution 'GX'"):
        D.load("GX")
    with pytest.raises(BBRLError, match="no such file"):
        D.load("nope/GC.dat")


def test_horizon_for_epsilon():
    # paper §3.2: T = ceil(log(eps (1-gamma) / Rmax) / log gamma)
    assert D.horizon_for_epsilon(0.01, 0.95, 10) == 194
    assert D.horizon_for_epsilon(0.01, 0.95, 2) == 162


def test_zlib_detection_is_by_content(tmp_path):
    p = tmp_path / "gc.txt"
    p.write_bytes(zlib.compress(D.builtin("GC").to_dat().encode(), 9))
    assert D.read_dat(p).same_as(D.builtin("GC"))


@pytest.mark.parametrize("name, why", [
    ("gc", "differs from the built-in distribution 'GC' only in case"),
    ("UGC+rbeta", "is a prior of the built-in distribution 'UGC' (suffix '+rbeta')"),
    ("sixarms", "differs from the problem family's distribution 'SixArms' only in case"),
    ("deepsea-20", "differs from the problem family's distribution 'DeepSea-20' only in case"),
    ("URiverSwim-6+rnig", "is a prior of the problem family's distribution 'URiverSwim-6'"),
    ("Colosseum-EC-Taxi-0", "is the name of a Colosseum benchmark instance"),
    ("ucolosseum-ce-deepsea-0", "differs from the Colosseum benchmark instance "
                                "'UColosseum-CE-DeepSea-0' only in case"),
])
def test_reserved_names_refused_when_renaming(name, why):
    """A distribution of one's own may not take a name that passes, up to case or a
    prior's suffix, for a built-in, a family's or a Colosseum instance's distribution
    (its results would merge with theirs)."""
    assert why in D.reserved(name)
    if not D.SHORT_NAME.fullmatch(name):  # '-' is refused before (names of files)
        return
    with pytest.raises(BBRLError, match="give it another name"):
        D.renamed(D.builtin("GC"), name)


@pytest.mark.parametrize("name", ["MyChain", "RiverSwim7", "My+thing", "GCX"])
def test_own_names_allowed(name):
    assert D.reserved(name) is None
