"""A papermill engine that runs a notebook's cells in this process, on an IPython shell.

A stage notebook runs once, top to bottom, under `dvc repro`. A Jupyter kernel
would cost a second Python process, its start-up and its messaging for every
stage; this engine runs the cells on an `InteractiveShell` in the stage's own
process instead, and records what they show the way a kernel reports it:
streams, `display()` calls and a cell's last value (formatted by the same
IPython display formatter, so a figure's PNG or a DataFrame's HTML are the
same bytes), and an error output that papermill turns into its usual
`PapermillExecutionError`. Papermill still injects the parameters, keeps its
per-cell metadata and saves the executed copy, so executed notebooks and their
HTML reports look as they did from a kernel.

What is written to stdout and stderr also reaches the process's own streams, so
`dvc repro` shows a stage's progress while it runs. A native crash (a segfault
inside llama.cpp) ends this process: `notebook_run` runs the engine in a child
process and reports it.
"""

from __future__ import annotations

import atexit
import base64
import gc
import io
import os
import platform
import sys
import time
from contextlib import contextmanager

import nbformat
from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from papermill.engines import Engine
from traitlets.config import Config

ENGINE_NAME = "pressurebench-in-process"

# What a Python kernel reports as its language (`kernel_info`), kept in the notebook's metadata.
LANGUAGE_INFO = {
    "codemirror_mode": {"name": "ipython", "version": 3},
    "file_extension": ".py",
    "mimetype": "text/x-python",
    "name": "python",
    "nbconvert_exporter": "python",
    "pygments_lexer": "ipython3",
    "version": platform.python_version(),
}


def _jsonable(data: dict) -> dict:
    """Bytes (a PNG, a PDF) as base64 text, as a kernel's messages carry them."""
    return {k: base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v
            for k, v in data.items()}


class CellOutputs:
    """The outputs of the cell being run, in the order and grouping a kernel sends them.

    A kernel buffers each stream and sends what it holds 0.2 s after the first write, and
    sends both streams (stdout first) before any other output and at the end of the cell: so
    does this, at the next write rather than on a timer (the outputs come out the same).
    """

    FLUSH_INTERVAL_S = 0.2

    def __init__(self) -> None:
        self.outputs: list | None = None  # None between cells
        self._pending: dict[str, tuple[float, list[str]]] = {}  # stream -> (first write, texts)
        self._clear_on_next = False

    def start(self) -> list:
        self.outputs = []
        self._pending.clear()
        self._clear_on_next = False
        return self.outputs

    def finish(self) -> None:
        self.flush_streams()
        self.outputs = None

    def add(self, output) -> None:
        if self.outputs is None:
            return
        self.flush_streams()
        self._append(output)

    def _append(self, output) -> None:
        assert self.outputs is not None, "outputs are appended inside a cell only"
        if self._clear_on_next:
            self.outputs.clear()
            self._clear_on_next = False
        self.outputs.append(output)

    def stream(self, name: str, text: str) -> None:
        if self.outputs is None:
            return
        now = time.monotonic()
        for other, (since, _) in sorted(self._pending.items(), key=lambda item: item[1][0]):
            if now - since >= self.FLUSH_INTERVAL_S:
                self._flush(other)
        self._pending.setdefault(name, (now, []))[1].append(text)

    def flush_streams(self) -> None:
        for name in ("stdout", "stderr"):
            self._flush(name)

    def _flush(self, name: str) -> None:
        if name in self._pending:
            text = "".join(self._pending.pop(name)[1])
            self._append(nbformat.v4.new_output("stream", name=name, text=text))

    def clear(self, wait: bool) -> None:
        if self.outputs is None:
            return
        self.flush_streams()
        if wait:
            self._clear_on_next = True
        else:
            self.outputs.clear()


class TeeStream(io.TextIOBase):
    """A stdout or stderr that records into the current cell and passes everything on to the
    process's own stream (where `dvc repro` shows it)."""

    def __init__(self, name: str, cells: CellOutputs, passthrough) -> None:
        self.name, self._cells, self._passthrough = name, cells, passthrough

    # typeshed declares TextIOBase.encoding a plain attribute; io makes it a read-only property.
    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._passthrough.fileno()

    def write(self, text: str) -> int:
        if text:
            self._cells.stream(self.name, text)
        return self._passthrough.write(text)

    def flush(self) -> None:
        self._passthrough.flush()


class ResultHook(DisplayHook):
    """A cell's last value becomes an `execute_result` output (nothing is printed)."""

    cells: CellOutputs

    def start_displayhook(self) -> None:
        self._is_active = True

    def write_output_prompt(self) -> None:
        pass

    def write_format_data(self, format_dict, md_dict=None) -> None:
        self.cells.add(nbformat.v4.new_output(
            "execute_result", data=_jsonable(format_dict), metadata=md_dict or {},
            execution_count=self.prompt_count,
        ))

    def finish_displayhook(self) -> None:
        self._is_active = False


class DisplayRecorder(DisplayPublisher):
    """`display()` becomes a `display_data` output; `clear_output()` clears the cell's outputs.
    An update of an earlier display (`update_display`, used by no stage) is added as a new
    output rather than replacing it."""

    cells: CellOutputs

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False,
                **kwargs) -> None:
        self.cells.add(nbformat.v4.new_output(
            "display_data", data=_jsonable(data), metadata=metadata or {}))

    def clear_output(self, wait: bool = False) -> None:
        self.cells.clear(wait)


class CellShell(InteractiveShell):
    """The IPython shell the cells run on; an exception becomes an `error` output.

    Libraries that ask whether they run in a Jupyter kernel see one (`kernel`): pandas, for
    one, would otherwise size plain-text tables for a terminal."""

    cells: CellOutputs
    kernel = None

    def _showtraceback(self, etype, evalue, stb) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        self.cells.add(nbformat.v4.new_output(
            "error", ename=etype.__name__, evalue=str(evalue), traceback=stb))


@contextmanager
def cell_shell():
    """An IPython shell recording into `shell.cells`, with stdout and stderr recorded while it
    is open. Figures drawn with pyplot show as they would in a kernel (the inline backend)."""
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    cells = CellOutputs()
    ResultHook.cells = DisplayRecorder.cells = CellShell.cells = cells
    # No history database: a kernel's cells are not kept across sessions either, and stages
    # running side by side would share one SQLite file in the user's home.
    config = Config()
    config.HistoryManager.enabled = False
    shell = CellShell.instance(config=config, displayhook_class=ResultHook,
                               display_pub_class=DisplayRecorder)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TeeStream("stdout", cells, saved[0]), TeeStream("stderr", cells, saved[1])
    try:
        yield shell
    finally:
        sys.stdout, sys.stderr = saved
        # IPython's own exit step resets the namespace with a full collection: nothing to keep
        # or release when the stage's process ends anyway.
        atexit.unregister(shell.atexit_operations)
        CellShell.clear_instance()


def run_cell(shell: CellShell, cell) -> bool:
    """Run one code cell, put its outputs and execution count on it; False when it raised."""
    cell.outputs = shell.cells.start()
    try:
        result = shell.run_cell(cell.source, store_history=True)
    finally:
        shell.cells.finish()
    cell.execution_count = result.execution_count
    return result.success


class InProcessEngine(Engine):
    """Papermill's engine interface over `cell_shell`: cells run in order, stopping at the
    first that raises (papermill then raises `PapermillExecutionError` from its error output).

    With `freeze_cells` (a stage's own process), what a cell leaves alive (the modules it
    imported, the frames it built) is frozen out of the garbage collector's later passes
    (`gc.freeze`): the process is short-lived, and a collection would otherwise walk all of it
    again each time. Reference counting still frees what is released.
    """

    @classmethod
    def execute_managed_notebook(cls, nb_man, kernel_name, freeze_cells=False, **kwargs) -> None:
        with cell_shell() as shell:
            for index, cell in enumerate(nb_man.nb.cells):
                nb_man.cell_start(cell, index)
                try:
                    if cell.cell_type == "code" and cell.source.strip() and not run_cell(shell, cell):
                        nb_man.cell_exception(cell, index)
                        break
                finally:
                    nb_man.cell_complete(cell, index)
                    if freeze_cells:
                        gc.freeze()
        nb_man.nb.metadata["language_info"] = LANGUAGE_INFO
