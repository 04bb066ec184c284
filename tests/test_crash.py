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
    assert line.endswith(
        f"while playing agent oob-{tag} (plugin {plug}:OOB) on GC-GC: an out-of-bounds "
        "index in observe at test MDP 0, step 3 (found by playing it again with bounds "
        f"checks, NUMBA_BOUNDSCHECK=1) (log: {tmp_path / 'run.log'})"), line
    log = (tmp_path / "run.log").read_text().strip().splitlines()
    assert log[-1] == line.removesuffix(f" (log: {tmp_path / 'run.log'})")
    assert not (tmp_path / "r.parquet").exists()
    assert not list(notes.iterdir())  # (the diagnostic run's numba cache removed too)

    r = subprocess.run(run[:1] + run[3:], capture_output=True, text=True,
                       env=_env(NUMBA_BOUNDSCHECK="1"), timeout=600)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (f"bbrl: error: agent oob-{tag}, test MDP 0: oob-{tag}: "
                                "IndexError in observe at step 3: index is out of bounds"
                                ), r.stderr
    assert not (tmp_path / "r.parquet").exists()


#: A compiled plugin whose episode_start writes out of bounds at k = 0 (OOB) inside a
#: larger buffer (a view of 4 of its 64 entries: nothing crashes there without bounds
#: checks), in a watched process that then dies of SIGSEGV at exit, after writing its
#: table: what a memory fault that surfaces late looks like, deterministically.
LATE = """
import atexit
import os
import signal

import numpy as np
from numba import njit
from bbrlcore.agents import CompiledAgent


@njit
def reset(setup):
    buf = np.zeros(64)
    return (buf[:4], buf)


@njit
def act(state, x):
    return 0


@njit
def observe(state, x, u, y, r):
    state[1][63] += r


@njit
def episode_start(state, k):
    if OOB and k == 0:
        state[0][10] = 1.0


class Late(CompiledAgent):
    name = "late-NAME"
    reset, act, observe, episode_start = reset, act, observe, episode_start

    def setup(self):
        return (0,)


def _segfault():
    os.kill(os.getpid(), signal.SIGSEGV)


if os.environ.get("BBRL_WATCHED_BY"):  # (a watched bbrl: never pytest itself)
    atexit.register(_segfault)
"""


def _late_inputs(tmp_path: Path, oob: bool) -> tuple[Path, str]:
    """A results directory (DeepSea-4: its prior, an episodic test set of 3 MDPs) and the
    reference of a LATE plugin."""
    from bbrlcore.mdp import families

    tag = uuid.uuid4().hex[:8]
    plug = tmp_path / "late.py"
    plug.write_text(LATE.replace("NAME", tag).replace("OOB", str(oob)))
    root = tmp_path / "results"
    D.write_parquet(D.load("DeepSea-4"), root / "distributions" / "P.parquet")
    E.write_test_set(E.new_test_set(families.make("deepsea", size=4).test, 3, 0.95, 40, 0,
                                    episode_length=4), root / "test_sets" / "T.parquet")
    return root, f"{plug}:Late"


def _spec(root: Path, ref: str) -> str:
    import json

    return json.dumps({"bundle": "b", "kind": "run", "version": "x", "root": str(root),
                       "seed": 0, "gamma": 0.95, "horizon": 40,
                       "agents": {"late": {"ref": ref, "params": {}}},
                       "units": [["late", "P", "E", "T", 0, 2], ["late", "P", "E", "T", 2, 3]]})


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "batch"])
def test_a_crash_after_the_table_is_written_leaves_no_table_and_finds_the_place(
        tmp_path, command):
    """The process dies of SIGSEGV at exit, after writing its tables: nothing is left
    behind (the tables, the results kept for a later attempt, the directories made for
    them), no "wrote" line, exit 139; the line names the fault's place (episode_start at
    k = 0, test MDP 0, before step 0: found by a diagnostic run with bounds checks),
    not the step the note held when the process died (test MDP 2, step 39)."""
    root, ref = _late_inputs(tmp_path, oob=True)
    if command == "run":
        agent = E.train_agent(ref, {}, D.load("DeepSea-4"), horizon=40, progress=False)
        E.write_agent(agent, tmp_path / "a.parquet")
        argv = ["run", "--experiment", str(root / "test_sets" / "T.parquet"), "--agent",
                str(tmp_path / "a.parquet"), "-o", str(tmp_path / "out" / "r.parquet")]
    else:
        argv = ["batch", "--spec", _spec(root, ref), "--partial", str(tmp_path / "partial")]
    def files() -> list[Path]:  # (but the plugin's bytecode, written when imported)
        return sorted(p for p in tmp_path.rglob("*")
                      if p.is_file() and "__pycache__" not in p.parts)

    before = files()
    notes = tmp_path / "tmp"
    notes.mkdir()
    r = subprocess.run([BBRL, *argv], capture_output=True, text=True,
                       env=_env(TMPDIR=str(notes)), timeout=600)
    assert r.returncode == 128 + signal.SIGSEGV, (r.returncode, r.stderr)
    assert r.stdout == ""  # (no "wrote ...": nothing was)
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("bbrl: error: the process crashed (SIGSEGV"), line
    assert line.endswith(f"(plugin {ref}) on DeepSea-4-DeepSea-4: an out-of-bounds "
                         "index in episode_start(k=0) at test MDP 0, before step 0 (found "
                         "by playing it again with bounds checks, NUMBA_BOUNDSCHECK=1)"), line
    after = files()
    assert after == before, set(after) - set(before)
    assert not (tmp_path / "out").exists() and not (root / "runs").exists()
    assert not list(notes.iterdir())


@pytest.mark.slow
def test_a_crash_the_diagnostic_run_does_not_find_names_no_place(tmp_path):
    """Without an out-of-bounds index to find, the place is unknown: the step the note
    held when the process died (test MDP 1, step 39 of the last trajectory) is not
    given as the fault's."""
    root, ref = _late_inputs(tmp_path, oob=False)
    agent = E.train_agent(ref, {}, D.load("DeepSea-4"), horizon=40, progress=False)
    E.write_agent(agent, tmp_path / "a.parquet")
    r = subprocess.run([BBRL, "run", "--experiment", str(root / "test_sets" / "T.parquet"),
                        "--agent", str(tmp_path / "a.parquet"), "--mdps", "0:2", "-o",
                        str(tmp_path / "r.parquet")], capture_output=True, text=True,
                       env=_env(), timeout=600)
    assert r.returncode == 128 + signal.SIGSEGV, (r.returncode, r.stderr)
    line = r.stderr.strip().splitlines()[-1]
    assert line.endswith(f"while playing agent {agent.agent_id} (plugin {ref}) on "
                         "DeepSea-4-DeepSea-4; where is unknown: playing it again "
                         "with bounds checks (NUMBA_BOUNDSCHECK=1) found no out-of-bounds "
                         "index (the fault may have shown long after its cause)"), line
    assert "test MDP" not in line and "step" not in line
    assert not (tmp_path / "r.parquet").exists() and r.stdout == ""
    r = subprocess.run([BBRL, "run", "--experiment", str(root / "test_sets" / "T.parquet"),
                        "--agent", str(tmp_path / "a.parquet"), "--mdps", "0:2", "-o",
                        str(tmp_path / "r.parquet")], capture_output=True, text=True,
                       env=_env(BBRL_DIAGNOSE="0"), timeout=600)
    assert r.returncode == 128 + signal.SIGSEGV, (r.returncode, r.stderr)
    assert r.stderr.strip().splitlines()[-1].endswith(
        "; where is unknown: not looked for (BBRL_DIAGNOSE=0); run it again with bounds "
        "checks (NUMBA_BOUNDSCHECK=1) to turn an out-of-bounds index of a compiled plugin "
        "into an IndexError naming the hook, the test MDP and the step")


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
    what is done and the test MDP reach the watcher's line; the step a compiled plugin's
    note held is never given as a fault's place (it may be long past it): a diagnostic
    run's error is, or the place is said to be unknown."""
    monkeypatch.setattr(crash, "_note", None)
    s = crash.status()
    assert s.tolist() == [0, 0, 0, 0, 0] and s.dtype == np.int64
    crash.doing("anything")  # nothing to write to
    crash.at_mdp(3)
    crash.error_at("IndexError", "act", "at step 3", 0)

    note = crash.new_note()
    assert crash.read(note) == ("", None, None) and crash.read_error(note) is None
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
    assert crash.plugin_fault(signal.SIGSEGV, what, mdp)
    assert not crash.plugin_fault(signal.SIGKILL, what, mdp)
    assert not crash.plugin_fault(signal.SIGSEGV, "playing agent random (built-in) on GC-GC",
                                  0)
    crash.error_at("IndexError", "episode_start(k=2)", "before step 8", 5)
    found = crash.read_error(note)
    assert found == (what, "IndexError", "episode_start(k=2)", "before step 8", 5)
    line = crash.describe(signal.SIGSEGV, what, mdp, step, found)
    assert line.startswith("the process crashed (SIGSEGV, segmentation fault")
    assert line.endswith("while playing agent x (plugin p.py:X) on GC-GC: an out-of-bounds "
                         "index in episode_start(k=2) at test MDP 5, before step 8 (found by "
                         "playing it again with bounds checks, NUMBA_BOUNDSCHECK=1)")
    line = crash.describe(signal.SIGSEGV, what, mdp, step, None, "not found")
    assert line.endswith("while playing agent x (plugin p.py:X) on GC-GC; where is unknown: "
                         "not found")
    assert "12" not in line and "test MDP" not in line
    assert crash.describe(signal.SIGSEGV, "playing agent random (built-in) on GC-GC", 4,
                          0).endswith("on GC-GC (at test MDP 4 when it died)")
    assert crash.describe(signal.SIGKILL, "", None, None) == (
        "the process was killed (SIGKILL, from outside, often the system's when memory "
        "runs out) before it played any agent")
    assert crash.describe(signal.SIGKILL, what, 2).endswith(
        "on GC-GC (at test MDP 2 when it was killed)")
    assert crash.describe(99, "x", None, None) == "the process crashed (signal 99) while x"
    crash.doing("é" * 5000)  # (cut to the note's size, never inside a character)
    assert crash.read(note)[0] == "é" * (crash.TEXT_BYTES // 2)
    crash.use(None)
    assert crash.status() is not status


def test_outputs_wait_for_the_watcher_only_in_a_watched_child(tmp_path, monkeypatch,
                                                              capsys):
    """Outside a watched child a finished output is renamed at once and its line printed;
    in one, both are listed for the watcher (renamed after a clean exit); in a
    diagnostic run, nothing is written at all."""
    import tempfile

    from bbrlcore.formats import artefacts

    monkeypatch.delenv(crash.DIAGNOSING_ENV, raising=False)
    crash.use(None)
    table = E.run_agent(E.new_test_set(D.builtin("GC"), 1, 0.95, 5, 0),
                        E.train_agent("random", {}, D.builtin("GC"), progress=False),
                        progress=False)
    E.write_run(table, tmp_path / "now.parquet", {})
    assert (tmp_path / "now.parquet").is_file()
    crash.announce("wrote now.parquet")
    assert capsys.readouterr().out == "wrote now.parquet\n"

    with tempfile.TemporaryFile() as outputs:
        crash.use(crash.new_note(), outputs)
        try:
            E.write_run(table, tmp_path / "sub" / "later.parquet", {})
            crash.announce("wrote later.parquet")
            staged = crash.location(tmp_path / "sub" / "later.parquet")
            kept = tmp_path / "kept.parquet"
            crash.kept(kept)
            entries = crash.read_outputs(outputs.fileno())
        finally:
            crash.use(None)
    assert not (tmp_path / "sub" / "later.parquet").exists() and staged.is_file()
    assert staged.parent == tmp_path / "sub" and staged.name.startswith(".later.parquet.")
    assert entries == [
        {"publish": [str(staged), str(tmp_path / "sub" / "later.parquet")],
         "dirs": [str(tmp_path / "sub")]},
        {"say": "wrote later.parquet"}, {"kept": str(kept)}]
    assert artefacts.read_artefact(staged, "run")[0].height == 1
    assert capsys.readouterr().out == ""

    monkeypatch.setenv(crash.DIAGNOSING_ENV, "1")
    E.write_run(table, tmp_path / "new" / "diag.parquet", {})
    crash.announce("wrote diag.parquet")
    assert not (tmp_path / "new").exists() and capsys.readouterr().out == ""


SLEEPY = """
import time
from pathlib import Path
from bbrlcore.agents import PythonAgent


class Sleepy(PythonAgent):
    name = "sleepy-NAME"

    def act(self, state):
        Path(MARKER).touch()  # (playing: the test's signal may come)
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
    marker = tmp_path / "playing"
    plug.write_text(SLEEPY.replace("NAME", uuid.uuid4().hex[:8])
                    .replace("MARKER", repr(str(marker))))
    E.write_test_set(E.new_test_set(D.builtin("GC"), 2, 0.95, 200, 0), tmp_path / "ts.parquet")
    E.write_agent(E.train_agent(f"{plug}:Sleepy", {}, D.builtin("GC"), progress=False),
                  tmp_path / "a.parquet")
    p = subprocess.Popen([BBRL, "run", "--experiment", str(tmp_path / "ts.parquet"),
                          "--agent", str(tmp_path / "a.parquet"), "-o",
                          str(tmp_path / "r.parquet"), "-q"], env=_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the signal once the child plays (its first decision; 400 decisions of 0.2 s
        # each remain), not after a delay: a busy machine may not have started it yet
        while not marker.exists() and p.poll() is None:
            time.sleep(0.05)
        kids: list[int] = _children(p.pid)
        assert marker.exists() and kids, "the watched child did not start"
        p.send_signal(sig)
        _, err = p.communicate(timeout=600)
        assert p.returncode in (-sig, 128 + sig), (p.returncode, err)
        deadline = time.time() + 300  # (dying: a bound in case it does not)
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
