"""`pressurebench use FILE`: choose the params file `dvc repro` runs.

DVC reads the params of the whole pipeline from the one file dvc.yaml names (`vars:
- params/pipeline.yaml`), by itself, before any of the package's code runs. A study keeps its
params in a file of its own; `use` makes `params/pipeline.yaml` a symbolic link to that file, so
`dvc repro`, `make repro` and every command's default `--params` run it, and an edit of the file
is what DVC sees. (A copy would go stale without a word: after an edit of the study's file,
`dvc repro` would find nothing changed.) Before linking, the file is validated and completed
with the defaults of the keys dvc.yaml reads that it leaves out (`params_fill`), which DVC
cannot supply itself. `git checkout params/pipeline.yaml` returns to the shipped params.

The shipped `params/pipeline.yaml` is replaced only as git has it, so `git checkout` can bring it
back; a version with changes of its own is refused, with how to keep them.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..io import atomic_symlink
from ..params import load_params
from ..params_fill import fill_defaults

PIPELINE_PARAMS = Path("params/pipeline.yaml")
DVC_YAML = Path("dvc.yaml")


@dataclass(frozen=True)
class Used:
    params: Path
    filled: dict[str, Any]
    replaced: str | None  # what params/pipeline.yaml was before, when `use` changed it


def _committed_unchanged(path: Path) -> bool:
    """Whether git has `path` committed exactly as it is in the working tree."""
    def git(*args: str) -> int:
        try:
            return subprocess.run(["git", *args, "--", str(path)], capture_output=True,
                                  check=False).returncode
        except OSError:  # no git
            return 1

    return git("ls-files", "--error-unmatch") == 0 and git("diff", "--quiet", "HEAD") == 0


def _replaced(pipeline: Path) -> str | None:
    """What `params/pipeline.yaml` is now, which `use` is about to replace; refused when git
    could not give it back."""
    if pipeline.is_symlink():
        return f"the link to {os.readlink(pipeline)}"
    if not pipeline.exists():
        return None
    if not _committed_unchanged(pipeline):
        raise ConfigError(
            pipeline, "holds changes git has not committed, which `use` would replace: keep them "
            f"in a file of their own first (`mv {pipeline} params/mine.yaml`, then `pressurebench "
            "use params/mine.yaml`), or commit them",
        )
    return "the shipped params (`git checkout params/pipeline.yaml` brings them back)"


def use_params(path: str | Path) -> Used:
    """Validate `path`, write into it the defaults dvc.yaml reads that it lacks, and make
    `params/pipeline.yaml` a link to it; run from the repository's root."""
    source = Path(path)
    if not DVC_YAML.is_file():
        raise ConfigError(DVC_YAML, "not found here: run `pressurebench use` from the "
                          "repository's root, where dvc.yaml is")
    if not source.is_file():
        raise ConfigError(source, "file not found")
    root, target = Path.cwd().resolve(), source.resolve()
    if root not in target.parents:
        raise ConfigError(source, "lies outside the repository, so a clone of the study would "
                          "lack it: keep the study's params under params/")
    params = load_params(source)
    pipeline = PIPELINE_PARAMS
    linked = pipeline.resolve() == target
    replaced = None if linked else _replaced(pipeline)
    filled = fill_defaults(source, params, DVC_YAML)
    if not linked:
        atomic_symlink(pipeline, os.path.relpath(target, pipeline.parent.resolve()))
    return Used(params=source, filled=filled, replaced=replaced)
