"""The Debian installs of the test helpers wait for another install's dpkg lock instead of
skipping (issue #23): the command lines carry a lock timeout, and a lock apt-get does not
wait for by itself is retried. (Nothing is installed here: subprocess is replaced.)"""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

import slurm_cluster
import system_tools


@pytest.fixture
def fake_apt(monkeypatch):
    """Record apt-get command lines; answer with the queued (returncode, stderr)."""
    calls, answers = [], []

    def run(cmd, **kw):
        calls.append(cmd)
        rc, err = answers.pop(0) if answers else (0, "")
        return SimpleNamespace(returncode=rc, stderr=err, stdout="")

    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(system_tools.time, "sleep", lambda s: None)
    return calls, answers


def test_every_apt_get_command_waits_for_the_dpkg_lock(fake_apt):
    calls, _ = fake_apt
    system_tools.apt_install(["chromium"])
    assert [c[3] for c in calls] == ["update", "install"]
    for c in calls:
        assert c[:3] == ["apt-get", "-o", f"DPkg::Lock::Timeout={system_tools.LOCK_TIMEOUT_S}"]
    assert system_tools.LOCK_TIMEOUT_S >= 600


def test_a_held_lock_is_retried_and_other_failures_are_not(fake_apt):
    calls, answers = fake_apt
    answers += [(100, "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1"),
                (100, "E: Unable to lock directory /var/lib/apt/lists/"), (0, ""), (0, "")]
    system_tools.apt_install(["texlive-latex-recommended"])
    assert [c[3] for c in calls] == ["update", "update", "update", "install"]
    calls.clear()
    answers += [(0, ""), (100, "E: Unable to locate package nosuch")]
    with pytest.raises(system_tools.Unavailable, match="Unable to locate package nosuch"):
        system_tools.apt_install(["nosuch"])
    assert len(calls) == 2


def test_the_slurm_cluster_installs_through_the_same_helper(fake_apt, monkeypatch):
    calls, answers = fake_apt
    monkeypatch.setattr(slurm_cluster, "_which_all", lambda: ["slurmd"])
    monkeypatch.setattr(slurm_cluster.shutil, "which", lambda b: "/usr/bin/" + b)
    monkeypatch.setattr(slurm_cluster.os, "geteuid", lambda: 0)
    answers += [(0, ""), (100, "E: broken")]
    with pytest.raises(slurm_cluster.SlurmUnavailable, match="E: broken"):
        slurm_cluster.ensure_installed()
    assert all("DPkg::Lock::Timeout=600" in " ".join(c) for c in calls) and len(calls) == 2
