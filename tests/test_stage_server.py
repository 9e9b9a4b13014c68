"""Stage processes forked from a warm server behave as the fresh processes they replace: the
command's arguments, working directory, environment, umask and standard streams, its exit code
(a death by a signal included), signals relayed both ways, and a new server whenever a fresh
process would import something else.

Each test has its own temporary directory (TMPDIR), so its own servers; the module the stage
runs is a probe written there.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from pressurebench import stage_server

pytestmark = pytest.mark.slow

PROBE = textwrap.dedent("""
    import json, os, signal, sys, time
    what = sys.argv[1]
    if what == "report":
        mask = os.umask(0); os.umask(mask)
        print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "umask": mask,
                          "marker": os.environ.get("PROBE_MARKER"), "pid": os.getpid(),
                          "ppid": os.getppid(), "main": __name__,
                          "stdout_tty": sys.stdout.isatty()}))
        print("to stderr", file=sys.stderr)
    elif what == "exit":
        raise SystemExit(int(sys.argv[2]))
    elif what == "raise":
        raise RuntimeError("probe failed")
    elif what == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif what == "wait":
        def stopped(signum, frame):
            print(f"stage got {signal.Signals(signum).name}", flush=True)
            raise SystemExit(7)
        signal.signal(signal.SIGTERM, stopped)
        open(sys.argv[2], "w").write(str(os.getpid()))
        time.sleep(60)
""")
CLIENT = (
    "import sys; from pressurebench import stage_server; "
    "code = stage_server.call('probe', sys.argv[1:], ['faulthandler']); "
    "print('no server', file=sys.stderr) if code is None else None; "
    "raise SystemExit(99 if code is None else code if code >= 0 else 128 - code)"
)


@pytest.fixture
def short_tmp():
    """A temporary directory short enough for socket paths (pytest's own are too long)."""
    path = Path(tempfile.mkdtemp(prefix="pbss-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def env(tmp_path, short_tmp):
    """The environment of a stage command: its own TMPDIR (so its own servers), the probe on the
    import path, a short idle time."""
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "probe.py").write_text(PROBE)
    values = {**os.environ, "TMPDIR": str(short_tmp), "PYTHONPATH": str(tmp_path / "mods"),
              stage_server.IDLE_ENV: "30", "PROBE_MARKER": "from the command"}
    yield values
    for pid in servers(values):
        os.kill(pid, signal.SIGTERM)


def servers(env: dict[str, str]) -> list[int]:
    """The pids of the stage servers whose sockets live under this test's TMPDIR."""
    out = subprocess.run(["ps", "-eww", "-o", "pid=,args="], capture_output=True, text=True, check=True)
    return [int(line.split()[0]) for line in out.stdout.splitlines()
            if "pressurebench.stage_server" in line and env["TMPDIR"] in line]


def command(env, *args, cwd, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CLIENT, *args], env=env, cwd=cwd, text=True,
                          capture_output=True, timeout=120, check=False, **kwargs)


def test_the_stage_gets_the_commands_arguments_directory_environment_umask_and_streams(env, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    first = command(env, "report", "a b", cwd=work)
    assert first.returncode == 0, first.stderr
    seen = json.loads(first.stdout)
    assert seen["argv"] == ["report", "a b"] and seen["main"] == "__main__"
    assert seen["cwd"] == str(work) and seen["marker"] == "from the command"
    assert seen["umask"] == 0o022 and seen["stdout_tty"] is False
    assert first.stderr == "to stderr\n"
    [server] = servers(env)
    assert seen["ppid"] == server  # forked by the server, not started by the command

    second = command({**env, "DVC_STAGE": "aggregate@x"}, "report", cwd=work,
                     preexec_fn=lambda: os.umask(0o077))
    again = json.loads(second.stdout)
    assert again["umask"] == 0o077 and again["ppid"] == server and again["pid"] != seen["pid"]
    assert servers(env) == [server]  # DVC's per-stage variable does not ask for a new server


def test_a_preloaded_stage_module_runs_as_main_without_a_warning(env, tmp_path):
    """The server imported `pressurebench.running.notebook_run` while warming up; `python -m` would not
    have it loaded, and runpy warns ("found in sys.modules") on every stage unless it goes."""
    client = CLIENT.replace("'probe'", "'pressurebench.running.notebook_run'")
    ran = subprocess.run([sys.executable, "-c", client, "--help"], env=env, cwd=tmp_path,
                         text=True, capture_output=True, timeout=120, check=False)
    assert ran.returncode == 0 and ran.stdout.startswith("usage:"), ran.stderr
    assert ran.stderr == ""
    assert servers(env)  # it ran in a forked stage, not in a fresh process


def test_exit_codes_are_the_stages_own(env, tmp_path):
    assert command(env, "exit", "3", cwd=tmp_path).returncode == 3
    failed = command(env, "raise", cwd=tmp_path)
    assert failed.returncode == 1 and "RuntimeError: probe failed" in failed.stderr
    crashed = command(env, "segfault", cwd=tmp_path)
    assert crashed.returncode == 128 + signal.SIGSEGV  # the client's way of saying -11
    assert "Fatal Python error: Segmentation fault" in crashed.stderr  # -X faulthandler kept


def test_a_terminated_command_terminates_its_stage(env, tmp_path):
    started = tmp_path / "stage.pid"
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, "wait", str(started)], env=env,
                            cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not started.exists() or not started.read_text():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert "stage got SIGTERM" in out and proc.returncode == 7


def test_a_killed_command_does_not_leave_its_stage_running(env, tmp_path):
    started = tmp_path / "stage.pid"
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, "wait", str(started)], env=env,
                            cwd=tmp_path, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not started.exists() or not started.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    stage = int(started.read_text())
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{stage}").exists() and "Z" not in Path(f"/proc/{stage}/stat").read_text().split()[2]:
        assert time.monotonic() < deadline, "the stage kept running after its command was killed"
        time.sleep(0.05)


def test_a_different_environment_or_package_gets_a_server_of_its_own(env, tmp_path, monkeypatch):
    assert command(env, "report", cwd=tmp_path).returncode == 0
    assert command({**env, "PROBE_MARKER": "other"}, "report", cwd=tmp_path).returncode == 0
    assert len(servers(env)) == 2
    base = stage_server.server_key(["faulthandler"])
    assert stage_server.server_key([]) != base
    monkeypatch.setenv("DVC_STAGE", "simulate@b")
    assert stage_server.server_key(["faulthandler"]) == base


def test_a_changed_package_file_changes_the_key(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "module.py").write_text("A = 1\n")
    (package / "__pycache__").mkdir()
    before = stage_server._tree_state(package)
    (package / "__pycache__" / "module.cpython-311.pyc").write_bytes(b"bytecode")
    assert stage_server._tree_state(package) == before  # bytecode written on import: no change
    (package / "module.py").write_text("A = 22\n")
    assert stage_server._tree_state(package) != before


def test_an_idle_server_exits_and_its_socket_goes(env, tmp_path):
    short = {**env, stage_server.IDLE_ENV: "1"}
    assert command(short, "report", cwd=tmp_path).returncode == 0
    sockets = list(Path(env["TMPDIR"]).glob("pressurebench-*/*.sock"))
    assert len(sockets) == 1
    deadline = time.monotonic() + 20
    while servers(short) or sockets[0].exists():
        assert time.monotonic() < deadline
        time.sleep(0.1)


@pytest.mark.parametrize("idle", ["0", "soon"])
def test_no_server_when_turned_off(env, tmp_path, idle):
    off = command({**env, stage_server.IDLE_ENV: idle}, "report", cwd=tmp_path)
    assert off.returncode == 99 and "no server" in off.stderr and not servers(env)


def test_no_server_when_the_socket_directory_is_not_private(env, tmp_path):
    shared = Path(env["TMPDIR"]) / f"pressurebench-{os.getuid()}"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    result = command(env, "report", cwd=tmp_path)
    assert result.returncode == 99 and not servers(env)


def test_two_commands_at_once_start_one_server_and_both_run(env, tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", CLIENT, "report", str(i)], env=env,
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    assert sorted(json.loads(out)["argv"][1] for out, _ in outs) == ["0", "1"]
    assert len(servers(env)) == 1


def test_a_server_killed_outright_is_replaced(env, tmp_path):
    assert command(env, "report", cwd=tmp_path).returncode == 0
    [server] = servers(env)
    os.kill(server, signal.SIGKILL)  # leaves its socket file behind, with nobody listening
    deadline = time.monotonic() + 10
    while server in servers(env):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    again = command(env, "report", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    [replacement] = servers(env)
    assert replacement != server and json.loads(again.stdout)["ppid"] == replacement
