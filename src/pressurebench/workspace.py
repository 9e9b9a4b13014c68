"""The workspace a run belongs to, also when DVC runs it in a temporary copy.

`dvc exp run --temp`, and `dvc exp run --queue` followed by `dvc exp run --run-all`, run the
pipeline in a copy of the repository that DVC makes under the workspace's `.dvc/tmp/exps/`
(`.dvc/tmp/exps/tmpXXXX/` for a queued experiment, `.dvc/tmp/exps/standalone/tmpXXXX/` for
`--temp`), from git: the copy has the tracked files and the experiment's params, not the
git-ignored ones, and is removed when the experiment ends. Two things a run needs live in
git-ignored files of the workspace, so a run in the copy would miss both:

- the keys in `.env`: every queued experiment would stop, its key not set;
- the response cache (`run.cache_dir`, `.pbcache/`): the copy's own would start empty and be
  removed with it, so an experiment would pay again for every call the workspace or an earlier
  experiment made, and the workspace again for every call of the experiment.

So a run in such a copy reads the workspace's `.env` too (only read, never copied anywhere) and
uses the workspace's cache directory. The cache is made for several processes at once (entries
written atomically, a call in flight claimed across processes, the spending record changed under
a lock: `llm.cache`, `llm.in_flight`, `llm.spending`), so experiments running side by side
(`--jobs`) and the workspace share it safely, and a spending cap counts all of them.
"""

from __future__ import annotations

from pathlib import Path

# Where DVC makes its experiment copies, below a workspace's root (`dvc.repo.experiments`:
# `<repo tmp dir>/exps`, the tmp dir being `.dvc/tmp`).
EXPERIMENT_COPIES = (".dvc", "tmp", "exps")
DOTENV = ".env"


def in_workspace(cwd: Path | None = None) -> Path | None:
    """Where the run in `cwd` (default: the current directory) would be had DVC run it in the
    workspace, or None when `cwd` is not inside an experiment copy.

    The copy's own root is the folder holding its `.dvc/` (also when the DVC project is a
    subfolder of its git repository, which the copy then holds whole); the workspace's
    is the folder holding the `.dvc/` whose `tmp/exps/` the copy lies in.
    """
    here = (cwd or Path.cwd()).resolve()
    parts = here.parts
    width = len(EXPERIMENT_COPIES)
    starts = [i for i in range(len(parts) - width) if parts[i:i + width] == EXPERIMENT_COPIES]
    if not starts:
        return None
    workspace = Path(*parts[:starts[-1]])
    copies = Path(*parts[:starts[-1] + width])
    root = here
    while root != copies:
        if (root / ".dvc").is_dir():
            return workspace / here.relative_to(root)
        root = root.parent
    return None  # inside DVC's folder of copies but in no copy


def dotenv_files(cwd: Path | None = None) -> list[Path]:
    """The `.env` files a run reads, in order: its own directory's, then (in an experiment
    copy) the workspace's."""
    here = cwd or Path.cwd()
    files = [here / DOTENV]
    if (workspace := in_workspace(here)) is not None:
        files.append(workspace / DOTENV)
    return files


def shared_cache_dir(cache_dir: str | Path, cwd: Path | None = None) -> Path:
    """`run.cache_dir` as the run uses it: a relative folder is the workspace's in an
    experiment copy, the same as everywhere else outside one; an absolute one is itself."""
    path = Path(cache_dir)
    if path.is_absolute() or (workspace := in_workspace(cwd)) is None:
        return path
    return workspace / path
