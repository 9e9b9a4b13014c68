"""The package is layered: every import runs down a layer or stays within one, and no two units
import each other, directly or through others.

A unit is a folder of `src/pressurebench` (a subpackage) or a module at the package's top.
Every import counts, also one inside a function; one under `if TYPE_CHECKING:` (annotations
only) never runs and does not. The layers, lowest first:

1. vocabulary: what every layer speaks. `errors`, `schemas` (every artifact row, and the
   words stages, reports and labels share, such as `SPEAKER_LABELS` and the causes of score
   errors), `paths`, `io`, `prompts` and the package's `__init__`.
2. engines: the one model client (`llm/`, its providers' rules included) and the statistics
   (`stats/`). They know the vocabulary and nothing of params files, arms, stages or studies.
3. configuration: `params`, which checks each model entry by its provider's own rules
   (`llm/providers/`).
4. run support: what a stage runs on. `arms/` (naming, planning and input resolution of
   every arm), `runtime` (a stage's run: client, manifest, cost), `results` (the results
   artifact), `scores`, `run_totals` (what the stages took), `curated`, `views`, `planning`
   and `native_crash`.
5. studies: `validation/`, the comparisons of arms, read from what the arms' stages wrote.
6. reports: `reports/`, the tables, figures and pages of every artifact, studies included,
   and `compare/`, two runs side by side in a report of its own.
7. labels: `labels/`, the human labels of judged conversations and the pages raters use.
8. stages: `stages/`, the pipeline stages (the aggregate stage reads the human labels).
9. entry points: what a person or DVC starts. `cli`, `notebook_run`, `notebook_session`, `stage_failure`, `estimate`
   (with `estimate_time`), `preflight` and `impactbench`.

A new folder or top-level module fails here until it is given a layer in `LAYERS`.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from pressurebench.code_deps import imports_in
from support import REPO

PACKAGE = "pressurebench"
LAYERS: list[set[str]] = [
    {"__init__", "errors", "schemas", "paths", "io", "prompts"},
    {"llm/", "stats/"},
    {"params"},
    {"arms/", "runtime", "results", "scores", "run_totals", "curated", "views", "planning",
     "native_crash"},
    {"validation/"},
    {"reports/", "compare/"},
    {"labels/"},
    {"stages/"},
    {"cli", "notebook_run", "notebook_engine", "notebook_session", "stage_failure",
     "estimate", "estimate_time", "preflight", "impactbench", "code_deps"},
]


def package_modules(src: Path) -> dict[str, Path]:
    """Dotted name -> file of every module of the package under `src`."""
    modules = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def unit_of(module: str, modules: dict[str, Path]) -> str:
    """`folder/` for a module inside a subpackage (its `__init__` included), else the top-level
    module's name (`__init__` for the package itself)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    if len(parts) > 2 or modules[module].name == "__init__.py":
        return parts[1] + "/"
    return parts[1]


def unit_imports(src: Path) -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) -> the module imports behind that edge, between units."""
    modules = package_modules(src)
    edges: dict[tuple[str, str], set[str]] = {}
    for module, path in modules.items():
        for name in imports_in(path.read_text(), module, path.name == "__init__.py"):
            parts = name.split(".")
            # the longest prefix that is one of the package's modules (`from .x import f` names f)
            found = next((".".join(parts[:i]) for i in range(len(parts), 0, -1)
                          if ".".join(parts[:i]) in modules), None)
            if found is None or found == PACKAGE:
                continue
            a, b = unit_of(module, modules), unit_of(found, modules)
            if a != b:
                edges.setdefault((a, b), set()).add(f"{module} -> {found}")
    return {edge: sorted(imports) for edge, imports in edges.items()}


def layer_of(unit: str, layers: list[set[str]]) -> int | None:
    return next((i for i, layer in enumerate(layers) if unit in layer), None)


def upward_imports(edges: dict[tuple[str, str], list[str]], layers: list[set[str]]) -> list[str]:
    """Every import from a lower layer into a higher one."""
    return sorted(
        f"{imp} (layer {layer_of(a, layers) + 1} imports layer {layer_of(b, layers) + 1})"
        for (a, b), imports in edges.items()
        if layer_of(a, layers) < layer_of(b, layers)
        for imp in imports
    )


def unit_cycle(edges: dict[tuple[str, str], list[str]]) -> list[str] | None:
    """One loop between units (`[a, b, ..., a]`), or None when the unit graph has none."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(unit: str) -> list[str] | None:
        state[unit] = "open"
        path.append(unit)
        for nxt in sorted(graph.get(unit, ())):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (loop := visit(nxt)):
                return loop
        state[unit] = "done"
        path.pop()
        return None

    for unit in sorted(graph):
        if unit not in state and (loop := visit(unit)):
            return loop
    return None


def test_every_folder_and_top_level_module_has_a_layer():
    modules = package_modules(REPO / "src")
    units = {unit_of(m, modules) for m in modules}
    assigned = set().union(*LAYERS)
    assert sorted(units - assigned) == [], "give each a layer in LAYERS and the docstring"
    assert sorted(assigned - units) == [], "LAYERS names units the package no longer has"


def test_no_import_runs_up_the_layers():
    assert upward_imports(unit_imports(REPO / "src"), LAYERS) == []


def test_no_loop_between_folders():
    edges = unit_imports(REPO / "src")
    loop = unit_cycle(edges)
    assert loop is None, " -> ".join(loop) + ": " + "; ".join(
        imp for a, b in pairwise(loop) for imp in edges[(a, b)]
    )


def test_the_checks_find_an_upward_import_and_a_loop_inside_functions(tmp_path):
    pkg = tmp_path / PACKAGE
    for folder in ("low", "high"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "words.py").write_text("WORDS = 1\n")
    (pkg / "low" / "a.py").write_text("from ..words import WORDS\n\ndef f():\n    from ..high.b import g\n")
    (pkg / "high" / "b.py").write_text("from ..low import a\n\ndef g():\n    pass\n")
    edges = unit_imports(tmp_path)
    assert set(edges) == {("low/", "words"), ("low/", "high/"), ("high/", "low/")}
    layers = [{"__init__", "words"}, {"low/"}, {"high/"}]
    assert upward_imports(edges, layers) == [
        "pressurebench.low.a -> pressurebench.high.b (layer 2 imports layer 3)"
    ]
    assert unit_cycle(edges) == ["high/", "low/", "high/"]
    del edges[("high/", "low/")]
    assert upward_imports(edges, [{"__init__", "words"}, {"high/"}, {"low/"}]) == []
    assert unit_cycle(edges) is None
