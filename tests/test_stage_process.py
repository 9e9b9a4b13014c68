"""A stage command and the process that runs its notebook: an interrupt or a termination of the
command reaches the stage's process once and is not mistaken for a native crash, and a command
killed outright does not leave its stage running.

Each test runs `python -m pressurebench.pipeline.notebook_run` on a notebook whose cell writes its
process id and waits, and signals the command once that file exists. It then waits for the state
it asserts (the command's exit, the stage process gone) up to `support.WAIT_S`: a command stopped
by a signal still renders its failed notebook's report, which takes a minute on a busy machine.
The cell waits longer than that bound, so only the signal can end it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from support import WAIT_S

pytestmark = pytest.mark.slow


def waiting_notebook(tmp_path: Path) -> tuple[Path, Path]:
    started = tmp_path / "stage.pid"
    nb = nbformat.v4.new_notebook(metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    })
    nb.cells = [
        nbformat.v4.new_code_cell("params_path = ''", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            "import os, time\n"
            f"open({str(started)!r}, 'w').write(str(os.getpid()))\n"
            f"time.sleep({10 * WAIT_S})"
        ),
    ]
    path = tmp_path / "wait.ipynb"
    nbformat.write(nb, path)
    return path, started


def start_command(tmp_path: Path) -> tuple[subprocess.Popen, int]:
    notebook, started = waiting_notebook(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pressurebench.pipeline.notebook_run", str(notebook),
         str(tmp_path / "reports" / "wait"), "-p", "params_path", "absent.yaml"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + WAIT_S
    while not started.exists() or not started.read_text():
        if time.monotonic() > deadline or proc.poll() is not None:
            pytest.fail(f"the stage never started its cell: {proc.communicate()}")
        time.sleep(0.05)
    return proc, int(started.read_text())


def ended(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_until_ended(pid: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not ended(pid):
        if time.monotonic() > deadline:
            pytest.fail(f"stage process {pid} kept running")
        time.sleep(0.05)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signalled_command_stops_its_stage_and_reports_no_crash(tmp_path, signum):
    proc, stage = start_command(tmp_path)
    assert os.getpgid(stage) != os.getpgid(proc.pid)  # a terminal's Ctrl-C reaches it once
    proc.send_signal(signum)
    _out, err = proc.communicate(timeout=WAIT_S)
    wait_until_ended(stage, WAIT_S)
    assert "died natively" not in err
    if signum == signal.SIGTERM:  # the stage's process died of it: 128 + the signal
        assert proc.returncode == 128 + signum, err
        assert f"stopped by {signal.Signals(signum).name}" in err
    else:  # the cell was interrupted: stopped on request, said in one line, no traceback
        assert proc.returncode == 130, err
        lines = [line for line in err.splitlines() if line.strip()]
        assert lines[-1].startswith("pressurebench: wait stopped by Ctrl-C (SIGINT)"), err
        assert "Traceback" not in err and "please report" not in err


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_command_killed_outright_does_not_leave_its_stage_running(tmp_path):
    proc, stage = start_command(tmp_path)
    proc.kill()
    proc.communicate(timeout=WAIT_S)
    wait_until_ended(stage, WAIT_S)
