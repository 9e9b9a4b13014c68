"""Run one stage notebook with papermill (kernel `python3`) and render it to HTML.

This is what every DVC stage command calls:

    python -m pressurebench.notebook_run notebooks/03_simulate.ipynb reports/<b>/03_simulate__<t> \
        -p params_path params/pipeline.yaml -p benchmark <b> -p target <t>

writes `reports/<b>/notebooks/03_simulate__<t>.ipynb` (executed) and
`reports/<b>/03_simulate__<t>.html` (code hidden). The notebook runs with
`write_outputs = True`: it runs its stage (run by hand it would only show the
last outputs, `notebook_session`). When the notebook fails, the
report is still written, opening with what failed, what to do and the stage's
error rows grouped by reason (`stage_failure`); the command prints the error as
one line instead of a kernel traceback and exits with the command line's codes:
2 bad input or settings, 3 above the error budget, 1 unexpected. A kernel that
dies natively (a crash inside llama.cpp) is reported the same way, naming the
stage, the embedded models and what to try (`native_crash`), and exits 4.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import PressurebenchError
from .native_crash import EXIT_NATIVE_CRASH

KERNEL = "python3"


class NotebookFailed(PressurebenchError):
    """The stage notebook failed (its report written where it could be); carries the exit code."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def run_notebook(notebook: str | Path, out_stem: str | Path, parameters: dict[str, str]) -> Path:
    import papermill
    from nbclient.exceptions import DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    from .native_crash import crash_message
    from .reports.render import render_notebook
    from .stage_failure import exit_code, title_for, write_failure_notebook

    out_stem = Path(out_stem)
    html = out_stem.with_suffix(".html")
    executed = out_stem.parent / "notebooks" / f"{out_stem.name}.ipynb"
    executed.parent.mkdir(parents=True, exist_ok=True)
    try:
        papermill.execute_notebook(
            str(notebook), str(executed), parameters={**parameters, "write_outputs": True},
            kernel_name=KERNEL, cwd=".",
            log_output=True, progress_bar=False,
            # The kernel is local and short-lived; its warning about unencrypted TCP on
            # loopback would be printed by every stage.
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
        )
    except PapermillExecutionError as exc:
        write_failure_notebook(executed, notebook, parameters, exc.ename, exc.evalue)
        add_models_note(executed, parameters, position=1, executed_stage=notebook)
        render_notebook(executed, html, title=title_for(notebook, parameters, failed=True))
        raise NotebookFailed(
            f"{notebook} failed: {exc.ename}: {exc.evalue} (report: {html})", exit_code(exc.ename)
        ) from None
    except DeadKernelError:
        stage = " ".join([Path(notebook).stem, *(v for k, v in parameters.items() if k != "params_path")])
        how = "its notebook's kernel died"
        raise NotebookFailed(
            crash_message(stage, parameters.get("params_path", ""), how), EXIT_NATIVE_CRASH
        ) from None
    add_models_note(executed, parameters, position=1, executed_stage=notebook)  # under the title
    return render_notebook(executed, html, title=title_for(notebook, parameters))


def add_models_note(
    executed: Path, parameters: dict[str, str], position: int, executed_stage: str | Path
) -> None:
    """Put the models note (`reports.models_note`) of the notebook `executed_stage` into its
    executed copy at `position`."""
    import nbformat

    from .reports.models_note import models_note
    from .stage_failure import stage_of

    try:
        note = models_note(parameters["params_path"], parameters["benchmark"],
                           parameters.get("arm") or None, stage=stage_of(executed_stage))
    except (KeyError, PressurebenchError):  # a notebook outside the pipeline's parameters
        return
    nb = nbformat.read(executed, as_version=4)
    nb.cells.insert(position, nbformat.v4.new_markdown_cell(note))
    nbformat.write(nb, executed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    parser.add_argument("out_stem", help="reports/<benchmark>/<name>: where the .html goes")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                        metavar=("NAME", "VALUE"), help="a papermill parameter (string)")
    args = parser.parse_args(argv)
    try:
        run_notebook(args.notebook, args.out_stem, dict(args.parameter))
    except NotebookFailed as exc:
        print(f"pressurebench: {exc}", file=sys.stderr)
        return exc.code
    except PressurebenchError as exc:  # the report could not be written
        print(f"pressurebench: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
