"""Which of the package's files a pipeline stage's command can run: the transitive closure of
its imports, found in the source (every `import`, also inside functions), not by running it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat

PACKAGE = "pressurebench"
# Modules that import others found at run time rather than named in their source: the provider
# registry imports every `*_provider.py` module of its folder.
DISCOVERED = {f"{PACKAGE}.llm.providers.registry": "*_provider.py"}


def module_file(src: Path, module: str) -> Path | None:
    """The file of a dotted module name under `src`, or None when it is not the package's."""
    if module != PACKAGE and not module.startswith(PACKAGE + "."):
        return None
    base = src.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imports_in(source: str, module: str, is_package: bool) -> set[str]:
    """Dotted names `source` imports (absolute, relative resolved), names of submodules included.
    Imports under `if TYPE_CHECKING:` never run, so they are not counted."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def closure(src: Path, entry: set[str]) -> set[Path]:
    """Every package file reachable from the `entry` modules (their parent packages included)."""
    seen: set[Path] = set()
    todo = list(entry)
    while todo:
        module = todo.pop()
        parts = module.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__ and a/b/__init__ too
            name = ".".join(parts[:i])
            path = module_file(src, name)
            if path is None or path in seen:
                continue
            seen.add(path)
            todo.extend(imports_in(path.read_text(), name, path.name == "__init__.py"))
            if name in DISCOVERED:
                package = name.rpartition(".")[0]
                todo.extend(f"{package}.{p.stem}" for p in path.parent.glob(DISCOVERED[name]))
    return seen


def notebook_imports(notebook: Path) -> set[str]:
    nb = nbformat.read(notebook, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return imports_in(code, "__notebook__", False)


def command_entries(cmd: str, repo: Path) -> set[str]:
    """The modules a stage command starts from: `-m module`, the `pressurebench` CLI, notebooks."""
    entry = set(re.findall(r"-m\s+(pressurebench[\w.]*)", cmd))
    if re.search(r"(^|\s)pressurebench\s", cmd):
        entry.add("pressurebench.cli")
    for notebook in re.findall(r"(notebooks/\S+\.ipynb)", cmd):
        entry |= notebook_imports(repo / notebook)
    return entry
