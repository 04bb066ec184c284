"""A crash of a plugin's code names the plugin (issue #33): ``bbrl run`` and ``bbrl train``
play in a watched child process (``bbrlcore.cli._watch``, ``bbrlcore.crash``), and the
cached kernel of a compiled plugin is keyed by numba's code-generation settings, so
``NUMBA_BOUNDSCHECK=1`` turns an out-of-bounds index into one error line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from bbrlcore import crash
from bbrlcore import protocol as E
from bbrlcore.agents import registry
from bbrlcore.mdp import distributions as D

BBRL = str(Path(sys.executable).parent / "bbrl")

#: A compiled plugin writing far out of bounds at step 3 (a segmentation fault without
#: bounds checks; numba's IndexError with them).
OOB = """
import numpy as np
from numba import njit
from bbrlcore.agents import CompiledAgent


@njit
def reset(setup):
    return np.zeros(4)


@njit
def act(state, x):
    return 0


@njit
def observe(state, x, u, y, r):
    t = int(state[0])
    state[0] += 1.0
    if t == 3:
        state[t * 100_000_000_000] = r


class OOB(CompiledAgent):
    "Writes out of bounds at the fourth step."
    name = "oob-NAME"
    reset = reset
    act = act
    observe = observe
"""


@pytest.fixture(autouse=True)
def fresh_registry():
    registry.reset()
    yield
    registry.reset()


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)  # (NUMBA_CACHE_DIR set by bbrlcore: the kernels are shared)
    env.pop(crash.ENV, None)
    env.pop("BBRL_WATCH", None)
    env.update(extra)
    return env


@pytest.mark.slow
def test_a_plugin_that_crashes_the_process_is_named_and_boundscheck_names_the_step(tmp_path):
    """Without bounds checks: exit 139 (the signal), nothing written, and one line naming
    the plugin, the agent, the test MDP and the step, on stderr and at the end of the
    log. With ``NUMBA_BOUNDSCHECK=1`` (after the kernel was compiled and cached without
    it at training): numba's IndexError, one line naming the same."""
    tag = uuid.uuid4().hex[:8]
    plug = tmp_path / "oob.py"
    plug.write_text(OOB.replace("NAME", tag))
    E.write_test_set(E.new_test_set(D.builtin("GC"), 2, 0.95, 20, 0), tmp_path / "ts.parquet")
    agent = E.train_agent(f"{plug}:OOB", {}, D.builtin("GC"), gamma=0.95, horizon=20,
                          progress=False)  # compiles the kernel, cached on disk
    E.write_agent(agent, tmp_path / "a.parquet")
    run = [BBRL, "--log", str(tmp_path / "run.log"), "run", "--experiment",
           str(tmp_path / "ts.parquet"), "--agent", str(tmp_path / "a.parquet"), "-o",
           str(tmp_path / "r.parquet")]
    notes = tmp_path / "tmp"  # (the watcher leaves no temporary file)
    notes.mkdir()
    r = subprocess.run(run, capture_output=True, text=True, env=_env(TMPDIR=str(notes)),
                       timeout=600)
    assert r.returncode == 128 + signal.SIGSEGV, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert line.startswith("bbrl: error: the process crashed (SIGSEGV"), line
    for needle in (f"agent oob-{tag} (plugin {plug}:OOB) on GC-GC", "test MDP 0",
                   "at step 3", "NUMBA_BOUNDSCHECK=1", f"(log: {tmp_path / 'run.log'})"):
        assert needle in line, (needle, line)
    log = (tmp_path / "run.log").read_text().strip().splitlines()
    assert log[-1] == line.removesuffix(f" (log: {tmp_path / 'run.log'})")
    assert not (tmp_path / "r.parquet").exists()
    assert not list(notes.iterdir())

    r = subprocess.run(run[:1] + run[3:], capture_output=True, text=True,
                       env=_env(NUMBA_BOUNDSCHECK="1"), timeout=600)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (f"bbrl: error: agent oob-{tag}, test MDP 0: oob-{tag}: "
                                "IndexError at step 3: index is out of bounds"), r.stderr
    assert not (tmp_path / "r.parquet").exists()


def test_the_kernel_key_follows_numbas_code_generation_settings(monkeypatch):
    """numba's cache index ignores NUMBA_BOUNDSCHECK, NUMBA_OPT, ...: the kernel key does
    not (a kernel compiled without bounds checks is never loaded with them)."""
    from numba.core import config

    from bbrlcore.agents import no_counters
    from bbrlcore.agents._kernel_cache import codegen_settings, kernel_key
    from bbrlcore.agents.psrl import _act, _observe, _reset

    fns = (_reset, _act, _observe, no_counters)
    base, settings = kernel_key(fns), codegen_settings()
    assert "BOUNDSCHECK=None" in settings and "OPT=3" in settings
    keys = {base}
    for name, value in (("BOUNDSCHECK", 1), ("BOUNDSCHECK", 0), ("DEBUGINFO_DEFAULT", 1),
                        ("LOOP_VECTORIZE", 0), ("CPU_NAME", "generic")):
        with monkeypatch.context() as m:
            m.setattr(config, name, value)
            assert f"{name}={value!r}" in codegen_settings()
            keys.add(kernel_key(fns))
    assert len(keys) == 6
    assert kernel_key(fns) == base


def test_the_default_numba_cache_directory_follows_the_settings(monkeypatch):
    """bbrlcore's own cached kernels too: NUMBA_BOUNDSCHECK=1 gets a directory of its own."""
    import bbrlcore

    for k in bbrlcore.CODEGEN_ENV:
        monkeypatch.delenv(k, raising=False)
    plain = bbrlcore._default_numba_cache_dir()
    monkeypatch.setenv("NUMBA_BOUNDSCHECK", "1")
    checked = bbrlcore._default_numba_cache_dir()
    monkeypatch.setenv("NUMBA_BOUNDSCHECK", "")  # (empty: numba's default, as unset)
    assert bbrlcore._default_numba_cache_dir() == plain
    monkeypatch.setenv("NUMBA_OPT", "0")
    assert len({plain, checked, bbrlcore._default_numba_cache_dir()}) == 3
    assert checked.startswith(plain + "-")


def test_the_note_and_the_crash_line(monkeypatch):
    """Outside a watched process the note costs nothing (status: a plain array); inside,
    what is done, the test MDP and the step reach the watcher's line."""
    monkeypatch.setattr(crash, "_note", None)
    s = crash.status()
    assert s.tolist() == [0, 0, 0] and s.dtype == np.int64
    crash.doing("anything")  # nothing to write to
    crash.at_mdp(3)

    note = crash.new_note()
    assert crash.read(note) == ("", None, None)
    crash.use(note)
    crash.doing("training agent x (plugin p.py:X) on GC")
    assert crash.read(note) == ("training agent x (plugin p.py:X) on GC", None, None)
    crash.doing("playing agent x (plugin p.py:X) on GC-GC")
    status = crash.status()
    assert crash.read(note) == ("playing agent x (plugin p.py:X) on GC-GC", None, None)
    crash.at_mdp(7)
    status[0] = 12
    what, mdp, step = crash.read(note)
    assert (what, mdp, step) == ("playing agent x (plugin p.py:X) on GC-GC", 7, 12)
    line = crash.describe(signal.SIGSEGV, what, mdp, step)
    assert line.startswith("the process crashed (SIGSEGV, segmentation fault")
    assert line.endswith("while playing agent x (plugin p.py:X) on GC-GC, test MDP 7, at "
                         "step 12; run it again with NUMBA_BOUNDSCHECK=1 to turn an "
                         "out-of-bounds index of a compiled plugin into an IndexError "
                         "naming the step")
    assert "NUMBA_BOUNDSCHECK" not in crash.describe(signal.SIGSEGV, "playing agent "
                                                     "random (built-in) on GC-GC", 0, 0)
    assert crash.describe(signal.SIGKILL, "", None, None) == (
        "the process was killed (SIGKILL, from outside, often the system's when memory "
        "runs out) before it played any agent")
    assert crash.describe(99, "x", None, None) == "the process crashed (signal 99) while x"
    crash.doing("é" * 5000)  # (cut to the note's size, never inside a character)
    assert crash.read(note)[0] == "é" * ((crash.SIZE - 32 - 1) // 2)
    crash.use(None)
    assert crash.status() is not status


SLEEPY = """
import time
from bbrlcore.agents import PythonAgent


class Sleepy(PythonAgent):
    name = "sleepy-NAME"

    def act(self, state):
        time.sleep(0.2)
        return 0
"""


def _children(pid: int) -> list[int]:
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    except FileNotFoundError:  # pragma: no cover - no pgrep
        pytest.skip("pgrep is not available")
    return [int(p) for p in out.stdout.split()]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_signal_to_the_command_reaches_its_child(tmp_path, sig):
    """SIGTERM (a scheduler's) is passed on; after SIGKILL of the command the child dies
    with it: nothing keeps running, nothing is written."""
    plug = tmp_path / "sleepy.py"
    plug.write_text(SLEEPY.replace("NAME", uuid.uuid4().hex[:8]))
    E.write_test_set(E.new_test_set(D.builtin("GC"), 2, 0.95, 200, 0), tmp_path / "ts.parquet")
    E.write_agent(E.train_agent(f"{plug}:Sleepy", {}, D.builtin("GC"), progress=False),
                  tmp_path / "a.parquet")
    p = subprocess.Popen([BBRL, "run", "--experiment", str(tmp_path / "ts.parquet"),
                          "--agent", str(tmp_path / "a.parquet"), "-o",
                          str(tmp_path / "r.parquet"), "-q"], env=_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        kids: list[int] = []
        while time.time() < deadline and not kids:
            kids = _children(p.pid)
            time.sleep(0.1)
        assert kids, "the watched child did not start"
        time.sleep(1.0)
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
        assert p.returncode in (-sig, 128 + sig), (p.returncode, err)
        deadline = time.time() + 30
        while time.time() < deadline and any(_alive(k) for k in kids):
            time.sleep(0.1)
        assert not any(_alive(k) for k in kids)
        assert not (tmp_path / "r.parquet").exists()
        assert "crashed" not in err  # asked to end: no crash line
    finally:
        if p.poll() is None:
            p.kill()
        for k in _children(p.pid):
            os.kill(k, signal.SIGKILL)


def test_watch_off_and_other_commands_run_in_the_process(monkeypatch):
    from bbrlcore.cli import _watch

    monkeypatch.delenv(crash.ENV, raising=False)
    monkeypatch.setattr(_watch.faulthandler, "enable", lambda **kw: None)
    assert _watch.watched(["families"], "families") is None
    monkeypatch.setenv("BBRL_WATCH", "0")
    assert _watch.watched(["run", "--help"], "run") is None
    monkeypatch.delenv("BBRL_WATCH")
    monkeypatch.setenv(crash.ENV, "/nonexistent")  # the child itself
    assert _watch.watched(["run", "--help"], "run") is None
    assert _watch._log_of(["--log", "a.log", "run"]) == "a.log"
    assert _watch._log_of(["--log=b.log", "run", "--log", "c"]) == "b.log"
    assert _watch._log_of(["run", "--log", "c"]) is None


def test_a_watched_command_passes_its_exit_status_and_output(tmp_path):
    """The watched `bbrl run`: a bad input is the same one line and status 2."""
    r = subprocess.run([BBRL, "run", "--experiment", str(tmp_path / "missing.parquet"),
                        "--agent", str(tmp_path / "a.parquet"), "-o",
                        str(tmp_path / "r.parquet")], capture_output=True, text=True,
                       env=_env(), timeout=300)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "missing.parquet" in r.stderr
    assert r.stdout == ""


def test_a_plugin_that_aborts_in_training_is_named(tmp_path):
    """A Python plugin killing its process from its train (os.abort: SIGABRT): one line
    naming the agent, the plugin and the prior; nothing written."""
    plug = tmp_path / "abort.py"
    plug.write_text(textwrap.dedent("""
        import os
        from bbrlcore.agents import PythonAgent


        class Abort(PythonAgent):
            name = "abort-NAME"

            def train(self, prior, ctx):
                os.abort()

            def act(self, state):
                return 0
        """).replace("NAME", "x"))
    r = subprocess.run([BBRL, "train", "--agent", f"{plug}:Abort", "--prior", "GC", "-o",
                        str(tmp_path / "a.parquet")], capture_output=True, text=True,
                       env=_env(), timeout=300)
    assert r.returncode == 128 + signal.SIGABRT, (r.returncode, r.stderr)
    assert r.stderr.strip().splitlines()[-1] == (
        "bbrl: error: the process crashed (SIGABRT, aborted) while training agent abort-x "
        f"(plugin {plug}:Abort) on GC")
    assert not (tmp_path / "a.parquet").exists()
