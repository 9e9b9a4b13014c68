"""Stage notebooks run the same under DVC and by hand in JupyterLab.

Paths. Every path in the params (and the params path itself) is relative to
the repository root, where DVC runs the notebooks; JupyterLab starts a kernel
in the notebook's own folder. `start` moves the kernel to the repository root:
the nearest folder at or above the working directory that holds the params
file.

Which benchmark and target. Under DVC, papermill sets them for each stage of the matrix.
Run by hand, the parameters cell leaves them None, and the notebook shows the params'
first benchmark and the first target its arm runs (`default_benchmark`,
`default_target`): the notebooks name no study of their own, so they open on whichever
the params file describes.

Outputs. Under DVC, `notebook_run` sets the parameter `write_outputs = True`
and the notebook runs its stage. Run by hand, the parameter keeps its default,
False, and the notebook shows what the last `dvc repro` wrote without running
the stage: a hand run never rewrites a DVC-tracked output, so `dvc status`
stays clean. Set `write_outputs = True` in the parameters cell to run the stage
from the notebook (then `dvc repro` will see changed outputs and say so).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..reports.notebook_display import use_report_tables

READ_ONLY_NOTE = (
    "Run by hand: showing the outputs of the last `dvc repro` ({what}) without running the "
    "stage. Set write_outputs = True in the parameters cell to run it from here."
)


def project_root(params_path: str | Path, start: str | Path = ".") -> Path:
    """The nearest folder at or above `start` in which `params_path` exists."""
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        if (folder / params_path).is_file():
            return folder
    raise ConfigError(params_path, f"not found in {here} or any folder above it")


def start(params_path: str | Path) -> Path:
    """Move to the repository root and show tables the way reports do; returns the root."""
    root = project_root(params_path)
    os.chdir(root)
    use_report_tables()
    return root


def default_benchmark(params_path: str | Path, benchmark: str | None) -> str:
    """`benchmark` as the parameters cell gives it, or the params' first benchmark (None: a
    notebook opened by hand)."""
    if benchmark:
        return benchmark
    from ..params import load_params

    return load_params(params_path).benchmarks[0]


def default_target(params_path: str | Path, benchmark: str, target: str | None,
                   arm: str | None = None) -> str:
    """`target` as the parameters cell gives it, or the first target the arm runs (the params'
    `targets` in the main arm; `validation.targets` in a validation arm, where set)."""
    if target:
        return target
    from ..arms.inputs import resolve
    from ..params import load_params

    return resolve(params_path, load_params(params_path), benchmark, arm or None).targets[0]


def run_or_show(
    run: Callable[[], Any], last: Callable[[], Any], *, write_outputs: bool, what: str
) -> Any:
    """`run()` under DVC (or when asked); by hand, `last()`: what the last run wrote."""
    if write_outputs:
        return run()
    print(READ_ONLY_NOTE.format(what=what))
    return last()


def stage(module, params_path: str, benchmark: str, *args, write_outputs: bool, **kwargs) -> Any:
    """Run a stage module's `run(params_path, benchmark, ...)`, or show its last output: the
    module's `last_output(...)` where it has one, else the manifest its last run wrote."""
    last = getattr(module, "last_output", None) or (
        lambda *a, **k: last_manifest(module.STAGE, *a, **k)
    )
    what = f"{module.STAGE} of {benchmark}" + "".join(f" · {a}" for a in args if a)
    return run_or_show(
        lambda: module.run(params_path, benchmark, *args, **kwargs),
        lambda: last(params_path, benchmark, *args, **kwargs),
        write_outputs=write_outputs,
        what=what,
    )


def last_manifest(stage_name: str, params_path: str, benchmark: str, target: str | None = None,
                  *, arm: str | None = None):
    """The manifest the stage's last run wrote for this benchmark, target and arm."""
    from ..io import read_artifact
    from ..params import load_params
    from ..paths import Layout
    from ..schemas import Manifest

    layout = Layout(load_params(params_path).data_dir, benchmark, arm or None)
    path = layout.manifest_file(stage_name, target)
    if not path.is_file():
        raise ConfigError(path, "not found: run `dvc repro` first, or set write_outputs = True")
    return read_artifact(path, Manifest)
