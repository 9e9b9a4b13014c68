"""Stage processes forked from a warm process that has already imported what stages use.

Every stage notebook runs in a process of its own (`notebook_run`), so that a
native crash kills that process and not the one that reports it. Started cold,
such a process spends most of a short stage's time before its first cell:
importing pandas, SciPy, matplotlib, pydantic, papermill, nbconvert and the
package, and compiling the report's templates. A stage server pays that once:
the first stage command starts it, it imports and warms everything up, and each
stage command then asks it for a process, which it forks. The forked process
gets the command's own standard streams (passed over the socket), working
directory, environment, umask and arguments, and runs `python -m <module>` as a
fresh interpreter would; the stage command relays signals to it and returns
its exit status, a death by a signal included.

A server is keyed by everything a fresh process would see differently: the
interpreter, the import path (and the installed packages' directories), every
file of this package, and the environment (less the variables DVC sets per
stage). A change to any of them means a new server, never a stale import. The
server lives in its own session, holds none of the command's files open (DVC
waits for those to close), and exits after `PRESSUREBENCH_STAGE_SERVER_IDLE`
seconds (default 120) without a stage; 0 turns it off, and every stage starts
cold as before. When no server can be used (the socket directory is not private,
the platform cannot fork, the server failed to start), the command starts its
own process, as before; the results are the same either way.
"""

from __future__ import annotations

import argparse
import array
import atexit
import base64
import fcntl
import gc
import hashlib
import importlib
import io
import json
import os
import runpy
import select
import signal
import site
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

IDLE_ENV = "PRESSUREBENCH_STAGE_SERVER_IDLE"
DEFAULT_IDLE_SECONDS = 120.0
START_TIMEOUT_SECONDS = 120.0
PROTOCOL = 1
# Set by DVC for each stage command (`dvc.stage.run.prepare_kwargs`) or by the shell: they differ
# between stage commands of one run, and no import reads them. The process still gets them.
PER_COMMAND_ENV = frozenset({"DVC_STAGE", "DVC_ROOT", "PWD", "OLDPWD", "SHLVL", "_"})
# What stage processes import: loaded once by the server. Optional ones are skipped if absent.
PRELOAD = (
    "pressurebench.running.notebook_run", "pressurebench.running.notebook_engine", "pressurebench.running.notebook_session",
    "pressurebench.running.stage_failure", "pressurebench.reports.render", "pressurebench.reports.models_note",
    "pressurebench.stages.gen_metrics", "pressurebench.stages.gen_scenarios",
    "pressurebench.stages.simulate", "pressurebench.stages.evaluate", "pressurebench.stages.aggregate",
    "pressurebench.reports.figures", "pressurebench.reports.tables", "pressurebench.reports.pressure",
    "pressurebench.reports.judge", "pressurebench.reports.fidelity", "pressurebench.reports.views",
    "pressurebench.run_totals", "pressurebench.llm.providers.registry",
    "papermill", "matplotlib.pyplot", "matplotlib_inline.backend_inline", "seaborn",
    "scipy.stats",
)
_HEADER = struct.Struct("!I")


def idle_seconds() -> float:
    """How long a server waits for the next stage; 0 (or an unreadable value) means no server."""
    raw = os.environ.get(IDLE_ENV, "")
    if not raw:
        return DEFAULT_IDLE_SECONDS
    try:
        value = float(raw)
    except ValueError:
        return 0.0
    return value if 0 < value < float("inf") else 0.0


def _tree_state(root: Path) -> list[tuple[str, int, int]]:
    return sorted(
        (str(p.relative_to(root)), st.st_mtime_ns, st.st_size)
        for p in root.rglob("*")
        if "__pycache__" not in p.parts and p.is_file() and (st := p.stat())
    )


def server_key(xoptions: list[str]) -> str:
    """What makes a warm process equal to a fresh one, hashed: see the module's docstring."""
    package = Path(__file__).resolve().parent
    # A fresh process's import path follows from the interpreter, the working directory, the
    # environment and the site directories (their .pth files and installed packages).
    sites = []
    for entry in (*site.getsitepackages(), site.getusersitepackages()):
        try:
            sites.append((entry, os.stat(entry).st_mtime_ns))
        except OSError:
            sites.append((entry, None))
    state = {
        "protocol": PROTOCOL,
        "python": [os.path.realpath(sys.executable), sys.version, sys.flags.optimize],
        "xoptions": sorted(xoptions),
        "cwd": os.getcwd(),
        "sites": sites,
        "package": [str(package), _tree_state(package)],
        "env": sorted((k, v) for k, v in os.environ.items() if k not in PER_COMMAND_ENV),
        "uid": os.getuid(),
    }
    return hashlib.sha256(json.dumps(state, default=str).encode()).hexdigest()


def socket_path(key: str) -> Path | None:
    """Where the server for `key` listens: in this user's private directory under the temporary
    directory (or /tmp, where that path would be too long for a socket); None if neither is
    private to this user."""
    for base in dict.fromkeys((tempfile.gettempdir(), "/tmp")):
        directory = Path(base) / f"pressurebench-{os.getuid()}"
        path = directory / f"{key[:24]}.sock"
        if len(os.fsencode(path)) > 100:  # sun_path holds 104-108 bytes, depending on the platform
            continue
        try:
            directory.mkdir(mode=0o700, exist_ok=True)
            st = directory.lstat()
        except OSError:
            return None
        private = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077
        return path if private else None
    return None


def _send(conn: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    """One length-prefixed JSON message. The server and a stage's process both write to the
    command's socket (the stage's pid, its exit code) in either order; each message is a few
    dozen bytes in one write, so theirs never interleave."""
    body = json.dumps(message).encode()
    data = _HEADER.pack(len(body)) + body
    if fds:
        conn.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        conn.sendall(data)


class _Reader:
    """Length-prefixed JSON messages from a stream socket, with any descriptors passed along."""

    def __init__(self, conn: socket.socket):
        self.conn, self.buffer, self.fds = conn, b"", []

    def read(self) -> dict | None:
        """The next message, or None at the end of the stream."""
        while True:
            if len(self.buffer) >= _HEADER.size:
                (size,) = _HEADER.unpack_from(self.buffer)
                if len(self.buffer) >= _HEADER.size + size:
                    body = self.buffer[_HEADER.size:_HEADER.size + size]
                    self.buffer = self.buffer[_HEADER.size + size:]
                    return json.loads(body)
            data, fds, _flags, _addr = socket.recv_fds(self.conn, 65536, 8)
            self.fds += fds
            if not data:
                return None
            self.buffer += data


# --- the stage command's side -------------------------------------------------------------


def call(module: str, args: list[str], xoptions: list[str]) -> int | None:
    """Run `python -X<option>… -m <module> <args>` in a process forked from a warm server; its
    exit code (negative: killed by that signal, as `subprocess` reports it). None when no server
    could take it (nothing was run): the caller starts its own process."""
    idle = idle_seconds()
    if idle == 0 or not hasattr(os, "fork") or not hasattr(socket, "AF_UNIX"):
        return None
    key = server_key(xoptions)
    path = socket_path(key)
    if path is None:
        return None
    conn = _connect(path) or _start(path, path.with_suffix(".lock"), idle, xoptions)
    if conn is None:
        return None
    with conn:
        reader = _Reader(conn)
        try:
            _send(conn, {"key": key, "module": module, "args": args, "cwd": os.getcwd(),
                         "env": dict(os.environ), "umask": _umask()}, fds=[0, 1, 2])
            reply = reader.read()
        except OSError:
            return None
        if reply and "exit" in reply:  # a stage quick enough to end before the server spoke
            return reply["exit"]
        if not reply or "pid" not in reply:
            return None
        return _wait(reader, reply["pid"])


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _connect(path: Path) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except OSError:
        conn.close()
        return None
    return conn


def _start(path: Path, lock_path: Path, idle: float, xoptions: list[str]) -> socket.socket | None:
    """Start a server for `path` (one at a time: another command may be starting it) and connect.

    The process started here exits once its server listens (the server is its fork), so no
    process of the command's outlives it and a server that fails to start is known at once.
    """
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        conn = _connect(path)
        if conn is not None:
            return conn
        with open(path.with_suffix(".log"), "ab") as log:  # the server's own errors, if any
            launcher = subprocess.Popen(
                [sys.executable, *(f"-X{x}" for x in xoptions), "-m", __name__, str(path),
                 "--idle", str(idle)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True, close_fds=True,
            )
        try:
            started = launcher.wait(timeout=START_TIMEOUT_SECONDS) == 0
        except subprocess.TimeoutExpired:
            launcher.kill()
            launcher.wait()
            started = False
        return _connect(path) if started else None


def _wait(reader: _Reader, pid: int) -> int:
    """Relay interrupts and terminations to the stage's process; its exit code when it ends."""

    def relay(signum, _frame):
        _kill(pid, signum)

    relayed = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
    previous = {s: signal.signal(s, relay) for s in relayed}
    try:
        reply = reader.read()  # a relayed signal does not interrupt it (PEP 475 retries)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if reply and "exit" in reply:  # said by the stage's process as it ends
        return reply["exit"]
    if reply and "status" in reply:  # seen by the server: the process died before saying it
        return os.waitstatus_to_exitcode(reply["status"])
    print(f"pressurebench: the stage server stopped while stage process {pid} ran; "
          f"its exit status is unknown (set {IDLE_ENV}=0 to run stages without it)", file=sys.stderr)
    return 1


# --- the server's side --------------------------------------------------------------------


def _import(name: str) -> None:
    try:
        importlib.import_module(name)
    except ImportError:  # an optional dependency that is not installed
        pass


def _preload() -> None:
    """Import what stages use and do once what each stage would do first: compile the report's
    templates and load what rendering loads on first use (by rendering a small report), load
    matplotlib's fonts (through its object API: no pyplot figure, so no figure number is used)."""
    # As a stage's cells set it (`notebook_engine.cell_shell`), before matplotlib reads it.
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    sys.modules.setdefault("rfc3987_syntax", None)  # as `notebook_run.skip_iri_format_checks`
    for name in PRELOAD:
        _import(name)
    import nbformat
    import pandas as pd
    from matplotlib.figure import Figure

    from .reports.render import render_node

    figure = Figure(figsize=(1, 1))
    figure.add_subplot().set_title("warm")
    png = io.BytesIO()
    figure.savefig(png, format="png", bbox_inches="tight")
    table = pd.DataFrame({"rate": [0.5]})
    outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="warm\n"),
        nbformat.v4.new_output("display_data", data={"text/html": table._repr_html_(),
                                                     "text/plain": repr(table)}),
        nbformat.v4.new_output("display_data", data={
            "image/png": base64.b64encode(png.getvalue()).decode("ascii"), "text/plain": "figure"}),
    ]
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Warm\n\nA *report* with `code`."),
        nbformat.v4.new_code_cell("table", outputs=outputs),
    ])
    with tempfile.TemporaryDirectory() as scratch:
        render_node(nb, Path(scratch) / "warm.html", title="warm")


def serve(path: str, idle: float) -> dict | None:
    """Listen at `path`, then serve stage requests until `idle` seconds pass with no stage.

    The process that listens returns at once (its caller exits: the server is a fork of it).
    Returns None in the server when it stops; returns the request in a forked stage process
    (whose caller then runs it).
    """
    key = server_key(list(sys._xoptions))
    _preload()
    # What the server holds stays out of every collection: a stage's collections would
    # otherwise walk, and so copy, every page of it.
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        Path(path).unlink()
    except FileNotFoundError:
        pass
    listener.bind(path)
    listener.listen(64)
    bound = os.stat(path).st_ino
    if os.fork() != 0:
        os._exit(0)
    server = os.getpid()
    clients: dict[socket.socket, _Reader] = {}
    running: dict[int, socket.socket] = {}  # pid -> the command waiting for it
    abandoned: set[int] = set()  # stages whose command stopped waiting: asked to stop
    last_active = time.monotonic()
    try:
        while running or clients or time.monotonic() - last_active < idle or _waiting(listener):
            wait = 0.02 if running else max(0.0, idle - (time.monotonic() - last_active))
            watched = [conn for pid, conn in running.items() if pid not in abandoned]
            readable, _, _ = select.select([listener, *clients, *watched], [], [], wait)
            for conn in readable:
                if conn is listener:
                    accepted, _addr = listener.accept()
                    clients[accepted] = _Reader(accepted)
                elif conn in clients:
                    request = _handle(conn, clients.pop(conn), key, running, listener, clients)
                    if request is not None:
                        return request
                else:  # the command is gone (it sends nothing more): stop its stage too
                    for pid, owner in running.items():
                        if owner is conn:
                            _kill(pid, signal.SIGTERM)
                            abandoned.add(pid)
            for pid, conn in list(running.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    del running[pid]
                    abandoned.discard(pid)
                    try:
                        _send(conn, {"status": status})
                    except OSError:
                        pass
                    conn.close()
                    last_active = time.monotonic()
    finally:
        if os.getpid() == server:
            try:
                if os.stat(path).st_ino == bound:
                    os.unlink(path)
            except OSError:
                pass
    return None


def _waiting(listener: socket.socket) -> bool:
    """Whether a command is waiting to be accepted (so the server must not stop yet)."""
    return bool(select.select([listener], [], [], 0)[0])


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _handle(conn, reader, key, running, listener, clients) -> dict | None:
    """Read one request and fork its process; the request in that process, None in the server."""
    try:
        request = reader.read()
    except (OSError, ValueError):
        request = None
    fds = reader.fds
    if not request or request.get("key") != key or len(fds) != 3:
        why = "unreadable" if not request else f"{len(fds)} descriptors"
        if request and request.get("key") != key:
            why = "another key"
        print(f"refused a request: {why}", file=sys.stderr, flush=True)
        for fd in fds:
            os.close(fd)
        conn.close()
        return None
    pid = os.fork()
    if pid == 0:
        listener.close()
        for other in (*clients, *running.values()):
            other.close()
        request["fds"], request["conn"] = fds, conn
        return request
    for fd in fds:
        os.close(fd)
    try:
        _send(conn, {"pid": pid})
    except OSError:
        _kill(pid, signal.SIGTERM)
    running[pid] = conn
    return None


def _reopen_std_streams() -> None:
    """Standard streams on the command's descriptors, buffered as a fresh interpreter's would be
    (line-buffered on a terminal, stderr always)."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        binary = open(fd, "rb" if fd == 0 else "wb", closefd=False)  # noqa: SIM115 (kept open)
        stream = io.TextIOWrapper(binary, encoding=old.encoding, errors=old.errors,
                                  line_buffering=fd == 2 or (fd == 1 and os.isatty(fd)))
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def become(request: dict) -> None:
    """Turn this forked process into the command's `python -m <module> <args>`."""
    for target, fd in enumerate(request["fds"]):
        os.dup2(fd, target)
        os.close(fd)
    _reopen_std_streams()
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])


def run_module(module: str, args: list[str], conn: socket.socket) -> int:
    """`python -m <module> <args>` in this process, then end it with the exit code the interpreter
    would give, told to the waiting command on `conn` first.

    The process ends without tearing its modules down (`os._exit`): a fresh interpreter
    holding only what the stage imported would take a moment, one holding everything the
    server preloaded takes most of a second. What an interpreter's exit does for the program
    still happens (threads joined, exit handlers run, streams flushed) before the command hears
    the code; then it need not wait for the kernel to take the process's memory back.
    """
    sys.argv = [module, *args]
    # `python -m` runs the module as `__main__` only; a copy the server imported under its own
    # name would make runpy warn that the module is already loaded, so it goes first.
    preloaded = sys.modules.get(module)
    if preloaded is not None and not hasattr(preloaded, "__path__"):
        del sys.modules[module]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        code = -signal.SIGINT
    except BaseException:  # noqa: BLE001 (the interpreter reports any uncaught error this way)
        sys.excepthook(*sys.exc_info())
        code = 1
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if code < 0:  # died of a signal, as the interpreter does on an uncaught KeyboardInterrupt
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    try:
        _send(conn, {"exit": code})
    except OSError:
        pass
    os._exit(code)


def _exit_code(code) -> int:
    """What the interpreter makes of `SystemExit(code)`: None is 0, text is printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("socket")
    parser.add_argument("--idle", type=float, default=DEFAULT_IDLE_SECONDS)
    args = parser.parse_args(argv)
    request = serve(args.socket, args.idle)
    if request is None:
        return 0
    become(request)
    return run_module(request["module"], request["args"], request["conn"])


if __name__ == "__main__":
    raise SystemExit(main())
