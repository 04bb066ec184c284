"""A real single-node Slurm cluster on loopback, for the tests (spec 04 §B).

:class:`SingleNodeSlurm` installs the Debian packages when they are missing (``munge``,
``slurmctld``, ``slurmd``, ``slurm-client``), saves any existing ``/etc/slurm/slurm.conf``
and munge key, writes a minimal configuration (proctrack/linuxproc, task/none, no
accounting), and runs ``munged``, ``slurmctld`` and ``slurmd`` **in the foreground as
children of the test**, so it stops exactly those processes (and cancels every job)
when the test ends, passes or fails, and restores the saved files.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from system_tools import apt_install

PACKAGES = ["munge", "slurmctld", "slurmd", "slurm-client"]
BINARIES = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scancel"]
SLURM_CONF = Path("/etc/slurm/slurm.conf")
MUNGE_KEY = Path("/etc/munge/munge.key")


class SlurmUnavailable(RuntimeError):
    """Slurm cannot be installed or started here (the reason is the message)."""


def _which_all() -> list[str]:
    missing = []
    for b in BINARIES:
        if shutil.which(b) is None and not Path("/usr/sbin", b).exists():
            missing.append(b)
    return missing


def ensure_installed() -> None:
    missing = _which_all()
    if not missing:
        return
    if shutil.which("apt-get") is None:
        raise SlurmUnavailable(f"Slurm binaries missing ({', '.join(missing)}) and no apt-get")
    if os.geteuid() != 0:
        raise SlurmUnavailable("Slurm binaries missing and not root: cannot apt-get install")
    apt_install(PACKAGES, timeout=900, error=SlurmUnavailable)  # waits for the dpkg lock
    still = _which_all()
    if still:
        raise SlurmUnavailable(f"installed {PACKAGES} but still missing: {', '.join(still)}")


def _sbin(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


class SingleNodeSlurm:
    """Context manager: a single-node Slurm cluster for the duration of a test."""

    def __init__(self, partition: str = "debug", cpus: int | None = None,
                 mem_mb: int = 4000) -> None:
        self.partition = partition
        self.cpus = cpus or os.cpu_count() or 1
        self.mem_mb = mem_mb
        self.host = socket.gethostname()
        self.procs: list[subprocess.Popen] = []
        self.saved: dict[Path, Path | None] = {}
        self.created_dirs: list[Path] = []
        self.tmp = Path(tempfile.mkdtemp(prefix="bbrl-slurm-"))
        self.logs = self.tmp / "logs"
        self.logs.mkdir()

    # ------------------------------------------------------------------------------
    def _save(self, path: Path) -> None:
        if path.exists():
            backup = self.tmp / ("saved-" + path.name)
            shutil.copy2(path, backup)
            self.saved[path] = backup
        else:
            self.saved[path] = None

    def _restore(self) -> None:
        for path, backup in self.saved.items():
            if backup is None:
                path.unlink(missing_ok=True)
            else:
                shutil.copy2(backup, path)

    def _mkdir(self, path: Path, mode: int = 0o755) -> None:
        if not path.exists():
            path.mkdir(parents=True)
            self.created_dirs.append(path)
        path.chmod(mode)

    def _spawn(self, name: str, cmd: list[str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        self.procs.append(p)
        return p

    def config_text(self) -> str:
        spool = self.tmp / "spool"
        return "\n".join([
            "ClusterName=bbrltest",
            f"SlurmctldHost={self.host}(127.0.0.1)",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"StateSaveLocation={spool}/ctld",
            f"SlurmdSpoolDir={spool}/d",
            f"SlurmctldPidFile={self.tmp}/slurmctld.pid",
            f"SlurmdPidFile={self.tmp}/slurmd.pid",
            f"SlurmctldLogFile={self.logs}/slurmctld-file.log",
            f"SlurmdLogFile={self.logs}/slurmd-file.log",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "MpiDefault=none",
            "ReturnToService=2",
            "MinJobAge=600",
            "SlurmdTimeout=60",
            f"NodeName={self.host} NodeAddr=127.0.0.1 CPUs={self.cpus} "
            f"RealMemory={self.mem_mb} State=UNKNOWN",
            f"PartitionName={self.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            "",
        ])

    # ------------------------------------------------------------------------------
    def start(self) -> SingleNodeSlurm:
        ensure_installed()
        for p in (SLURM_CONF, MUNGE_KEY):
            self._save(p)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        self._mkdir(SLURM_CONF.parent)
        (self.tmp / "spool" / "ctld").mkdir(parents=True)
        (self.tmp / "spool" / "d").mkdir(parents=True)
        SLURM_CONF.write_text(self.config_text())
        # munge: a fresh key and our own socket directory (executable by all)
        self._mkdir(MUNGE_KEY.parent, 0o700)
        MUNGE_KEY.write_bytes(os.urandom(1024))
        MUNGE_KEY.chmod(0o400)
        run = Path("/run/munge")
        self._mkdir(run, 0o755)
        self._mkdir(Path("/var/lib/munge"), 0o711)
        self._mkdir(Path("/var/log/munge"), 0o700)
        self._spawn("munged", [_sbin("munged"), "-F", "--force",
                               f"--key-file={MUNGE_KEY}"])
        self._wait(lambda: subprocess.run(["munge", "-n"], capture_output=True).returncode == 0
                   if shutil.which("munge") else Path("/run/munge/munge.socket.2").exists(),
                   20, "munged did not come up")
        self._spawn("slurmctld", [_sbin("slurmctld"), "-D", "-i"])
        self._spawn("slurmd", [_sbin("slurmd"), "-D"])
        self._wait(self._node_idle, 60, "the Slurm node did not become idle")

    def _node_idle(self) -> bool:
        for p in self.procs:
            if p.poll() is not None:
                raise SlurmUnavailable(f"a Slurm daemon exited (see {self.logs}): "
                                       f"{self._tail()}")
        r = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True)
        return r.returncode == 0 and r.stdout.strip() in ("idle", "mix", "alloc")

    def _tail(self) -> str:
        out = []
        for f in sorted(self.logs.glob("*.log")):
            lines = f.read_text(errors="replace").strip().splitlines()
            if lines:
                out.append(f"{f.name}: {lines[-1]}")
        return "; ".join(out)

    def _wait(self, cond, timeout: float, what: str) -> None:
        t0 = time.time()
        while time.time() - t0 < timeout:
            if cond():
                return
            time.sleep(0.5)
        raise SlurmUnavailable(f"{what} within {timeout:.0f} s ({self._tail()})")

    def stop(self) -> None:
        if shutil.which("scancel"):
            subprocess.run(["scancel", "--full", "-u", "root"], capture_output=True, timeout=30)
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.time() + 15
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(5)
        self.procs.clear()
        self._restore()

    def job_records(self) -> str:
        r = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i %j %T %k"],
                           capture_output=True, text=True)
        return r.stdout

    def __enter__(self) -> SingleNodeSlurm:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
