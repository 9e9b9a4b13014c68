"""Run one stage notebook with papermill (kernel `python3`) and render it to HTML.

This is what every DVC stage command calls:

    python -m pressurebench.notebook_run notebooks/03_simulate.ipynb reports/<b>/03_simulate__<t> \
        -p params_path params/pipeline.yaml -p benchmark <b> -p target <t>

writes `reports/<b>/notebooks/03_simulate__<t>.ipynb` (executed) and
`reports/<b>/03_simulate__<t>.html` (code hidden). When the notebook fails, the
executed copy is still written for debugging, and the command prints the error
as one line (for a stage above its error budget, the summary of what failed)
and exits 1, instead of a kernel traceback; a kernel that dies natively (a crash
inside llama.cpp) is reported the same way, naming the stage, the embedded
models and what to try (`native_crash`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

KERNEL = "python3"


def run_notebook(notebook: str | Path, out_stem: str | Path, parameters: dict[str, str]) -> Path:
    import papermill
    from nbclient.exceptions import DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    from .errors import PressurebenchError
    from .native_crash import crash_message
    from .reports.render import render_notebook

    out_stem = Path(out_stem)
    executed = out_stem.parent / "notebooks" / f"{out_stem.name}.ipynb"
    executed.parent.mkdir(parents=True, exist_ok=True)
    try:
        papermill.execute_notebook(
            str(notebook), str(executed), parameters=parameters, kernel_name=KERNEL, cwd=".",
            log_output=True, progress_bar=False,
        )
    except PapermillExecutionError as exc:
        raise PressurebenchError(f"{notebook} failed: {exc.ename}: {exc.evalue}") from None
    except DeadKernelError:
        stage = " ".join([Path(notebook).stem, *(v for k, v in parameters.items() if k != "params_path")])
        how = "its notebook's kernel died"
        raise PressurebenchError(crash_message(stage, parameters.get("params_path", ""), how)) from None
    return render_notebook(executed, out_stem.with_suffix(".html"))


def main(argv: list[str] | None = None) -> int:
    from .errors import PressurebenchError

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    parser.add_argument("out_stem", help="reports/<benchmark>/<name>: where the .html goes")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                        metavar=("NAME", "VALUE"), help="a papermill parameter (string)")
    args = parser.parse_args(argv)
    try:
        run_notebook(args.notebook, args.out_stem, dict(args.parameter))
    except PressurebenchError as exc:
        print(f"pressurebench: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
