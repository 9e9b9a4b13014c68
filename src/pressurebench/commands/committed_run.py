"""After `make repro`: why a run of the committed study wrote other numbers than git holds.

A clone of the repository carries the committed run's `dvc.lock` and `metrics.json` files, not
its call records (they travel with `dvc pull`, from a remote the default study has none of). So
its first `make repro` makes every model call again, and the embedded model computes in floating
point with the kernels llama.cpp picks for the CPU it runs on: its replies, and every number
made from them, differ from one machine to another. `git status` then shows `dvc.lock` and the
metrics files as modified. When the study's params, benchmarks and code are as committed, the
difference is that one, and this says so, with the rates on both sides. Run as

    python -m pressurebench.commands.committed_run

it prints nothing when the run wrote what git holds, or when the study itself changed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

LOCK = "dvc.lock"
# What a study is made of: when any differs from the commit, so may the outputs.
STUDY_INPUTS = ("params", "benchmarks", "src", "notebooks", "dvc.yaml", "imports", "labels")
DOCS = "docs/sharing-and-comparing.md"


def _git(*args: str, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)


def _committed(path: str, root: Path) -> str | None:
    done = _git("show", f"HEAD:{path}", root=root)
    return done.stdout if done.returncode == 0 else None


def changed_outputs(committed: dict, written: dict) -> list[str]:
    """The stages of the written lock whose outputs differ from the committed lock's."""
    def outs(lock: dict, stage: str) -> list:
        return [(o.get("path"), o.get("md5")) for o in (lock["stages"][stage].get("outs") or [])]

    old, new = committed.get("stages") or {}, written.get("stages") or {}
    return [s for s in new if s in old and outs(committed, s) != outs(written, s)]


def _overall_rates(text: str | None) -> dict[str, float | None]:
    if text is None:
        return {}
    targets = json.loads(text).get("targets") or {}
    return {t: v.get("pass_rate") for t, v in targets.items()}


def _percent(rate: float | None) -> str:
    return "none" if rate is None else f"{rate:.1%}"


def _embedded(root: Path) -> bool:
    """Whether the params run a model in-process (a provider the registry marks embedded)."""
    from ..pipeline import embedded_models

    return bool(embedded_models(root / "params" / "pipeline.yaml"))


def note(root: Path = Path(".")) -> str | None:
    """The note for a run of the committed study that wrote other outputs; None otherwise."""
    if _git("rev-parse", "--verify", "HEAD", root=root).returncode != 0:
        return None  # no git, or nothing committed: nothing to compare with
    committed_lock = _committed(LOCK, root)
    if committed_lock is None or not (root / LOCK).is_file():
        return None
    if _git("diff", "--quiet", "HEAD", "--", *STUDY_INPUTS, root=root).returncode != 0:
        return None  # the study changed: other outputs are its doing
    stages = changed_outputs(yaml.safe_load(committed_lock) or {},
                             yaml.safe_load((root / LOCK).read_text(encoding="utf-8")) or {})
    if not stages:
        return None
    # Only the metrics files that differ from the commit: a run can write other call records
    # and the very same rates.
    metrics = _git("diff", "--name-only", "HEAD", "--", "data/*/metrics.json",
                   root=root).stdout.split()
    rates = []
    for path in metrics:
        before = _overall_rates(_committed(path, root))
        after = _overall_rates((root / path).read_text(encoding="utf-8")
                               if (root / path).is_file() else None)
        rates += [f"{target} {_percent(after.get(target))} (committed {_percent(rate)})"
                  for target, rate in before.items() if after.get(target) != rate]
    cause = (
        "The default study's model runs in-process (llama.cpp), in floating point with the "
        "kernels this CPU has, so its replies, and every number made from them, differ from "
        "the machine that made the committed run."
        if _embedded(root) else
        "The models answered this run's calls anew (sampling at a temperature above 0 answers "
        "differently each time): the committed run's call records come only with `dvc pull`.")
    shown = ", ".join(stages[:3]) + (", ..." if len(stages) > 3 else "")
    modified = LOCK + (" and " + ", ".join(metrics) if metrics else "")
    first = (f"note  this run wrote other outputs than the committed one for {len(stages)} of "
             f"its stages ({shown}), so `git status` shows {modified} as modified.")
    lines = [first, f"      {cause} Nothing went wrong."]
    if rates:
        lines.append(f"      Overall pass rates: {'; '.join(rates)}.")
    lines.append(f"      Keep your run by committing it, or return to the committed files with "
                 f"`git checkout {LOCK}{' ' + ' '.join(metrics) if metrics else ''}`. A study "
                 f"reproduces bit for bit from its call records: {DOCS}.")
    return "\n".join(lines)


def main() -> int:
    """Print the note, if any; a note never fails `make repro`."""
    try:
        text = note()
    except (OSError, ValueError, yaml.YAMLError) as exc:  # a damaged file: say so, go on
        print(f"pressurebench: could not compare the run with the committed one: {exc}",
              file=sys.stderr)
        return 0
    if text:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
