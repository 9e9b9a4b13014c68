"""What a hand-written benchmark file must hold beyond its schema, and what earns a warning.

The judge sees a metric's definition and nothing else, so a definition left as a placeholder
(`TODO`, a few words) would be judged as written and give numbers that measure nothing.
Generated metrics are checked by their own stage; these rules are for the files people write.
"""

from __future__ import annotations

import re
from pathlib import Path

from .errors import ConfigError
from .schemas import Benchmark

PLACEHOLDER_WORDS = {"TODO", "TBD", "FIXME", "TBC"}
MIN_DEFINITION_WORDS = 5


def definition_problem(definition: str) -> str | None:
    """Why a definition is a placeholder, or None."""
    words = re.findall(r"[^\W_]+(?:['’-][^\W_]+)*", definition)
    marks = [w for w in words if w.upper() in PLACEHOLDER_WORDS]
    if marks:
        return (f"is a placeholder ('{marks[0]}'): write the behaviour the judge looks for, "
                "what counts and what does not")
    if len(words) < MIN_DEFINITION_WORDS:
        return (f"has {len(words)} word{'s' if len(words) != 1 else ''}, too few for a judge to "
                f"apply (at least {MIN_DEFINITION_WORDS}): say what counts and what does not")
    return None


def check_definitions(path: str | Path, bench: Benchmark) -> None:
    """Refuse a benchmark file whose metric definitions are placeholders, naming every one."""
    problems = [(f"metrics[{m.id}].definition", why) for m in bench.metrics
                if (why := definition_problem(m.definition))]
    if problems:
        field, why = problems[0]
        raise ConfigError(path, why + "".join(f"\n{path}: {f}: {w}" for f, w in problems[1:]),
                          field)


def name_warning(path: str | Path, bench: Benchmark, folder: str) -> str | None:
    """A warning when the file's `name` is not its folder's: the folder name is the one the
    params, the data paths and the reports use, so the file's own name is shown nowhere."""
    if bench.name == folder:
        return None
    return (f"{path}: name: '{bench.name}' differs from its folder '{folder}'; the pipeline "
            f"knows this benchmark as '{folder}' (set name: {folder} to match)")
