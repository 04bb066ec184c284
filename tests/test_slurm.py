"""`snakemake --profile slurm` end to end on a real single-node Slurm cluster (issue 7).

Brings up munged, slurmctld and slurmd on loopback (installing the Debian packages when
they are missing), runs the workflow's tiny preset with the repository's ``slurm``
profile plus a test-only override (status-check timing, partition, kept logs), checks
that the jobs really went through Slurm, and that the results equal those of a local run
of the same preset (timing columns excluded). Outside CI, a machine where Slurm cannot
be installed skips with the reason; with CI=true it fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from slurm_cluster import SingleNodeSlurm, SlurmUnavailable

ROOT = Path(__file__).resolve().parents[1]
TIMING = ["online_time_s", "offline_time_s", "online_time_per_decision_s"]

TEST_PROFILE = """\
# test-only override of ../slurm: a fast status check, the test partition, kept logs
slurm-init-seconds-before-status-checks: 2
slurm-keep-successful-logs: true
latency-wait: 5
jobs: 4
default-resources:
  slurm_partition: debug
  cpus_per_task: 1
  mem_mb: 500
  runtime: 10
"""


def _workflow_copy(dest: Path) -> Path:
    """The workflow, with a preset ``tiny-plugin``: the tiny preset plus a plugin file
    (examples/my_agents.py, by reference), which the jobs import on the compute node."""
    import yaml

    dest.mkdir(parents=True)
    for name in ("Snakefile", "config.yaml"):
        shutil.copy2(ROOT / name, dest / name)
    for name in ("workflow", "slurm", "envs", "profiles"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "slurm-test").mkdir()
    (dest / "slurm-test" / "config.v8+.yaml").write_text(TEST_PROFILE)
    cfg = yaml.safe_load((dest / "config.yaml").read_text())
    tiny = dict(cfg["presets"]["tiny"])
    tiny["algorithms"] = {**tiny["algorithms"],
                          f"{ROOT / 'examples' / 'my_agents.py'}:MyGreedyJit": {
                              "epsilon": [0.1]}}
    cfg["presets"]["tiny-plugin"] = tiny
    (dest / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return dest


def _snakemake(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    import bbrlcore  # noqa: F401  (NUMBA_CACHE_DIR shared with the jobs)

    env["NUMBA_CACHE_DIR"] = os.environ["NUMBA_CACHE_DIR"]
    p = subprocess.Popen([sys.executable, "-m", "snakemake", *args], cwd=cwd, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # Snakemake waits forever on SIGTERM
        out, _ = p.communicate()
        pytest.fail(f"snakemake timed out after {timeout} s:\n{out[-3000:]}")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(p.args, p.returncode, out, "")


def _frames(results: Path) -> dict[str, pl.DataFrame]:
    out = {}
    for f in sorted(results.rglob("*.parquet")):
        rel = str(f.relative_to(results))
        if rel.startswith(("warmup", "logs", "report", "probes")):
            continue  # the report's time bounds and maps, and probes, depend on timings
        df = pl.read_parquet(f)
        out[rel] = df.drop([c for c in TIMING if c in df.columns])
    return out


@pytest.mark.slow
@pytest.mark.slurm
def test_tiny_preset_through_slurm_equals_local(tmp_path):
    wf = _workflow_copy(tmp_path / "wf")
    try:
        cluster = SingleNodeSlurm(mem_mb=8000).start()
    except SlurmUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but a Slurm cluster cannot be brought up here: {exc}")
        pytest.skip(f"no Slurm cluster here: {exc}")
    try:
        r = _snakemake(["--profile", "slurm", "--profile", "slurm-test", "--config",
                        "preset=tiny-plugin", f"results_dir={tmp_path / 'slurm-results'}"],
                       wf, timeout=900)
        assert r.returncode == 0, r.stdout[-4000:]
        records = cluster.job_records()
    finally:
        cluster.stop()
    # the jobs really ran under Slurm: the executor's logs and the controller's records
    logs = list((wf / ".snakemake" / "slurm_logs").rglob("*.log"))
    assert logs, "no Slurm job logs written"
    completed = [line for line in records.splitlines() if "COMPLETED" in line]
    assert len(completed) >= 3, records
    leftover = subprocess.run(["pgrep", "-x", "slurmctld|slurmd|munged"],
                              capture_output=True, text=True).stdout
    assert not leftover.strip(), f"daemons left running: {leftover}"

    r = _snakemake(["--cores", "2", "--config", "preset=tiny-plugin",
                    f"results_dir={tmp_path / 'local-results'}"], wf, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:]
    via_slurm = _frames(tmp_path / "slurm-results")
    local = _frames(tmp_path / "local-results")
    assert via_slurm.keys() == local.keys() and any("merged" in k for k in local)
    merged = local["merged/GC-UGC.parquet"]
    assert "my-greedy-jit__epsilon=0.1" in set(merged["agent"])  # the plugin, on the node
    for name, df in local.items():
        assert_frame_equal(via_slurm[name], df, check_row_order=True), name


LIMIT_PRESET = {
    # one run job that lasts 75 s or more but uses no CPU (60 MDPs x 10 decisions of a
    # random agent waiting 1/8 s before each: the cores stay with the tests running beside
    # this one), a first time limit of one minute, and six minutes on the retry. Its probe
    # (3 trajectories) waits 4 s.
    "n_mdps": 60,
    "horizon": 10,
    "experiments": [{"test": "GC", "prior": "GC"}],
    "formula_sets": {},
    "algorithms": {f"{ROOT / 'tests' / 'pausing_agent.py'}:PausingRandom": {
        "pause": [0.125]}},
    "max_chunks": 1,
    "runtime_safety": 0,
    "runtime_min_minutes": 1,
    "runtime_retry_factor": 6,
}


@pytest.mark.slow
@pytest.mark.slurm
@pytest.mark.timeout(1800)
def test_a_job_killed_at_its_time_limit_gets_a_longer_one(tmp_path):
    """A run job whose first time limit is too short is killed by Slurm (TIMEOUT); its
    retry (Snakemake's attempt 2) is submitted with a limit runtime_retry_factor times
    longer and completes: a cluster run converges instead of failing the same way."""
    import yaml

    wf = _workflow_copy(tmp_path / "wf")
    cfg = yaml.safe_load((wf / "config.yaml").read_text())
    cfg["presets"]["limit"] = LIMIT_PRESET
    (wf / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    try:
        cluster = SingleNodeSlurm(mem_mb=8000).start()
    except SlurmUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but a Slurm cluster cannot be brought up here: {exc}")
        pytest.skip(f"no Slurm cluster here: {exc}")
    try:
        # up to the merged table (the summary and the report would be two more jobs)
        r = _snakemake([str(tmp_path / "res" / "merged" / "GC-GC.parquet"),
                        "--profile", "slurm", "--profile", "slurm-test", "--config",
                        "preset=limit", f"results_dir={tmp_path / 'res'}"], wf, timeout=1200)
        jobs = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i|%T|%l|%k"],
                              capture_output=True, text=True).stdout
    finally:
        cluster.stop()
    assert r.returncode == 0, r.stdout[-4000:]
    runs = sorted((line.split("|") for line in jobs.splitlines()
                   if "rule_run" in line), key=lambda f: int(f[0]))
    assert [(state, limit) for _, state, limit, _ in runs] == [
        ("TIMEOUT", "1:00"), ("COMPLETED", "6:00")], jobs
    merged = pl.read_parquet(tmp_path / "res" / "merged" / "GC-GC.parquet")
    assert merged.height == LIMIT_PRESET["n_mdps"]
