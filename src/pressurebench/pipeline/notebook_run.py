"""Run one stage notebook with papermill and render it to HTML.

This is what every DVC stage command calls:

    python -m pressurebench.pipeline.notebook_run notebooks/03_simulate.ipynb reports/<b>/runs/<t>/simulate \
        -p benchmark <b> -p target <t>

writes `reports/<b>/runs/<t>/simulate/03_simulate.ipynb` (executed) and
`reports/<b>/runs/<t>/simulate/03_simulate.html` (code hidden): the stage's report folder, its
data folder's path under `reports/` (`paths`). `params_path` is
`params/pipeline.yaml` unless given. The notebook runs with
`write_outputs = True`: it runs its stage (run by hand it would only show the
last outputs, `notebook_session`).

The cells run in a Python process of their own, on an IPython shell rather than
a Jupyter kernel (`notebook_engine`): the stage pays for one interpreter, not for a
kernel's start-up and messaging. That process starts cold and imports only what its
stage uses (pandas and the report's renderer always; matplotlib, seaborn and SciPy only
in the stages that draw figures or compute intervals; `docs/stage-processes.md`). This
process only starts that one, relays interrupts and terminations to it, and waits, so
a native crash there (a segfault inside llama.cpp) is still reported, naming the stage,
the embedded models and what to try (`native_crash`), with exit code 4. When the
notebook fails, the report is still written, opening with what failed, what to do and
the stage's error rows grouped by reason (`stage_failure`); the command prints the error
as one line instead of a traceback and exits with the command line's codes: 2 bad input
or settings, 3 above the error budget, 130 stopped by Ctrl-C (`llm.interrupts`: the calls
already sent are let finish and cached first), 1 unexpected.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import EXIT_INTERRUPTED, INTERRUPTED, PressurebenchError, reported
from .native_crash import EXIT_NATIVE_CRASH, signal_name

KERNEL = "python3"
MODULE = "pressurebench.pipeline.notebook_run"
DEFAULT_PARAMS = "params/pipeline.yaml"
# The stage process's end of a pipe whose other end only its command holds: at end of file the
# command is gone (killed outright, so it could not relay anything) and the stage stops too.
COMMAND_PIPE_ENV = "PRESSUREBENCH_STAGE_COMMAND_FD"
RELAYED_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")
    if hasattr(signal, name)
)


class NotebookFailed(PressurebenchError):
    """The stage notebook failed (its report written where it could be); carries the exit code
    and whether the stage's own process has said it already (then its command says nothing)."""

    def __init__(self, message: str, code: int, *, said: bool = False):
        super().__init__(message)
        self.code = code
        self.said = said


def paths(notebook: str | Path, out_dir: str | Path) -> tuple[Path, Path]:
    """The executed notebook and the HTML report of `notebook` in the report folder `out_dir`."""
    stem = Path(notebook).stem
    return Path(out_dir) / f"{stem}.ipynb", Path(out_dir) / f"{stem}.html"


def run_notebook(notebook: str | Path, out_dir: str | Path, parameters: dict[str, str]) -> Path:
    """Execute the notebook in a child process (`execute_notebook`); returns the report.

    Raises NotebookFailed with the exit code when it fails: the child has printed its error,
    and a native crash's report (which the child could not write) is the message.
    """
    parameters = {"params_path": DEFAULT_PARAMS, **parameters}
    args = ["--in-process", str(notebook), str(out_dir)]
    for name, value in parameters.items():
        args += ["-p", name, value]
    code, relayed = run_stage_process([sys.executable, "-X", "faulthandler", "-m", MODULE, *args])
    html = paths(notebook, out_dir)[1]
    if code == 0:
        return html
    if code < 0 and -code in relayed:  # stopped on request (Ctrl-C, a termination): no crash
        raise NotebookFailed(f"{notebook} stopped by {signal_name(code)}", 128 - code)
    if code < 0:
        from .native_crash import crash_message

        stage = " ".join([Path(notebook).stem, *(v for k, v in parameters.items() if k != "params_path")])
        how = f"its process was killed by {signal_name(code)}"
        raise NotebookFailed(crash_message(stage, parameters["params_path"], how), EXIT_NATIVE_CRASH)
    raise NotebookFailed(f"{notebook} failed with exit code {code} (report: {html})", code,
                         said=True)


def run_stage_process(cmd: list[str], env: dict[str, str] | None = None
                      ) -> tuple[int, set[int]]:
    """Run the stage's process and wait for it; its exit code (negative: killed by that signal)
    and the signals this process relayed to it.

    The stage runs in a process group of its own, so an interrupt typed at the terminal reaches
    it once, relayed from here, and this process keeps waiting to report how it ended. It also
    holds the read end of a pipe from this process: should this one be killed outright, the
    stage sees the pipe close and stops as well (`stop_with_command`).
    """
    read_end, write_end = os.pipe()
    relayed: set[int] = set()
    try:
        proc = subprocess.Popen(cmd, pass_fds=(read_end,), process_group=0,
                                env={**(os.environ if env is None else env),
                                     COMMAND_PIPE_ENV: str(read_end)})
    finally:
        os.close(read_end)

    def relay(signum, _frame):
        relayed.add(signum)
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass

    # A signal this process ignores (nohup's SIGHUP) stays ignored, as the stage inherits it;
    # only the main thread may handle signals.
    main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.signal(s, relay) for s in RELAYED_SIGNALS
                if main and signal.getsignal(s) is not signal.SIG_IGN}
    try:
        return proc.wait(), relayed  # a relayed signal does not interrupt the wait (PEP 475)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        os.close(write_end)


def stop_with_command() -> None:
    """In a stage's process: end it with SIGTERM once the command that started it is gone."""
    fd = os.environ.pop(COMMAND_PIPE_ENV, None)
    if fd is None or not fd.isdigit():
        return

    def watch() -> None:
        try:
            while os.read(int(fd), 1):
                pass
        except OSError:
            return
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="stage-command-watch", daemon=True).start()


# jsonschema's optional format checkers (`jsonschema._format`), each imported when jsonschema is.
FORMAT_CHECKER_MODULES = (
    "fqdn", "rfc3986_validator", "rfc3987_syntax", "rfc3339_validator", "webcolors",
    "jsonpointer", "uri_template", "isoduration",
)


def skip_format_checker_imports() -> None:
    """Keep jsonschema from importing its optional format checkers (call before anything
    imports nbformat).

    nbformat validates notebooks with jsonschema, which imports a checker for each
    format whose package is installed (JupyterLab installs them): the `iri` ones build
    about 35 Earley parsers, about a second of every stage's start, and `duration`
    imports arrow. No notebook schema uses those formats and nbformat checks none, so
    a stage's process runs jsonschema without them.
    """
    for name in FORMAT_CHECKER_MODULES:
        # None in sys.modules makes an import fail (the import system's documented block).
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]


def execute_notebook(notebook: str | Path, out_dir: str | Path, parameters: dict[str, str],
                     *, stage_process: bool = False) -> Path:
    """Execute the notebook in this process and render its report; returns the report.

    `stage_process`: this process exists only for this stage, so what is imported and what
    each cell leaves alive is frozen out of later garbage collections (`gc.freeze`: a
    collection need not walk it again; in a longer-lived process it would never be collected).
    """
    skip_format_checker_imports()
    import papermill
    from papermill.engines import papermill_engines
    from papermill.exceptions import PapermillExecutionError

    from ..reports.render import render_notebook
    from .notebook_engine import ENGINE_NAME, InProcessEngine

    if stage_process:
        gc.freeze()

    papermill_engines.register(ENGINE_NAME, InProcessEngine)
    executed, html = paths(notebook, out_dir)
    executed.parent.mkdir(parents=True, exist_ok=True)
    try:
        papermill.execute_notebook(
            str(notebook), str(executed), parameters={**parameters, "write_outputs": True},
            engine_name=ENGINE_NAME, kernel_name=KERNEL, cwd=".", progress_bar=False,
            freeze_cells=stage_process,
            # The executed copy is written once, at the end (or where a cell failed).
            request_save_on_cell_execute=False,
        )
    except PapermillExecutionError as exc:
        from .stage_failure import exit_code, title_for, write_failure_notebook

        code = exit_code(exc.ename)
        # Stopped by Ctrl-C: a second one while the report is written (a second or two) is
        # not let break it off with a stray traceback.
        with ignored_interrupts(code == EXIT_INTERRUPTED):
            write_failure_notebook(executed, notebook, parameters, exc.ename, exc.evalue)
            add_models_note(executed, parameters, position=1, executed_stage=notebook)
            render_notebook(executed, html, title=title_for(notebook, parameters, failed=True))
        if code == EXIT_INTERRUPTED:  # on request: said as the stop it is, not as a failure
            raise NotebookFailed(f"{title_for(notebook, parameters)} "
                                 f"{exc.evalue or INTERRUPTED} (report: {html})", code) from None
        raise NotebookFailed(
            f"{notebook} failed: {exc.ename}: {exc.evalue} (report: {html})", code
        ) from None
    from .stage_failure import title_for

    add_models_note(executed, parameters, position=1, executed_stage=notebook)  # under the title
    return render_notebook(executed, html, title=title_for(notebook, parameters))


@contextmanager
def ignored_interrupts(ignore: bool) -> Iterator[None]:
    """SIGINT ignored while open (where `ignore`, in the main thread), as before after."""
    if not ignore or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def add_models_note(
    executed: Path, parameters: dict[str, str], position: int, executed_stage: str | Path
) -> None:
    """Put the models note (`reports.models_note`) of the notebook `executed_stage` into its
    executed copy at `position`."""
    import nbformat

    from ..reports.models_note import models_note
    from .stage_failure import stage_of

    try:
        note = models_note(parameters["params_path"], parameters["benchmark"],
                           parameters.get("arm") or None, stage=stage_of(executed_stage))
    except (KeyError, PressurebenchError):  # a notebook outside the pipeline's parameters
        return
    nb = nbformat.read(executed, as_version=4)
    nb.cells.insert(position, nbformat.v4.new_markdown_cell(note))
    nbformat.write(nb, executed)


def main(argv: list[str] | None = None, *, stage_process: bool = False) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    parser.add_argument("out_dir", help="the stage's report folder (reports/<benchmark>/.../<step>): "
                        "the executed notebook and its .html go there")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                        metavar=("NAME", "VALUE"), help="a papermill parameter (string)")
    parser.add_argument("--in-process", action="store_true",
                        help="execute here, without a parent process to report a native crash")
    args = parser.parse_args(argv)
    parameters = {"params_path": DEFAULT_PARAMS, **dict(args.parameter)}
    try:
        if args.in_process:
            stop_with_command()
            execute_notebook(args.notebook, args.out_dir, parameters,
                             stage_process=stage_process)
        else:
            run_notebook(args.notebook, args.out_dir, parameters)
    except NotebookFailed as exc:
        if not exc.said:
            print(f"pressurebench: {exc}", file=sys.stderr)
        return exc.code
    except (PressurebenchError, KeyboardInterrupt) as exc:  # the report could not be written,
        return reported(exc)  # or a Ctrl-C came outside the notebook's cells
    return 0


def end_stage_process(code: int) -> None:
    """End a stage's process with `code` the quick way: exit handlers run and streams flushed
    as at any exit, but without tearing down the interpreter's modules one by one (a
    fifth of a short stage's CPU time once pandas, nbconvert and IPython are loaded).

    Only when no other thread could still be writing: else the interpreter ends as usual.
    """
    if any(not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        raise SystemExit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    in_process = "--in-process" in sys.argv[1:]
    exit_code = main(stage_process=in_process)
    if in_process:
        end_stage_process(exit_code)
    raise SystemExit(exit_code)
