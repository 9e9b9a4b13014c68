"""The code each pipeline command runs, written as files DVC stages depend on.

A stage's command runs a notebook (through `notebook_run`) or a module of the
package, and can import any package module reachable from there, at any depth
and also inside functions, plus the data files some modules read (prompts,
report templates). A stage must re-run when any of that changes, and only then.
Rather than list those modules in every stage of dvc.yaml, its first stage,
`code_deps`, runs

    bin/python -m pressurebench.pipeline.code_deps code_deps

whenever the package or a notebook changes. It writes one file per command,
`code_deps/<command>.json`: the files the command can run (its notebook, the
modules, their data), each with its digest. Every other stage depends on its
own command's file, which changes only when one of those files changes, so DVC
re-runs exactly the stages that run the changed code (a stage whose file came
out the same is skipped, as after any upstream stage whose output did not
change). `dvc status` therefore shows a code change as a change of `code_deps`
alone; `dvc repro` then finds the stages it reaches.

Commands are every notebook under `notebooks/` (`03_simulate.json`,
`validation/generator_bias.json`) and every package module that runs as
`bin/python -m pressurebench.<module>` (`reports.export.json`; `commands.cli.json` is the
`pressurebench` command). The imports are read from the source, not by running
it.
"""

from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import json
import shutil
from pathlib import Path
from typing import NamedTuple

PACKAGE = "pressurebench"

# Modules that import others found at run time rather than named in their source: the provider
# registry imports every `*_provider.py` module of its folder.
DISCOVERED = {f"{PACKAGE}.llm.providers.registry": "*_provider.py"}
# Data a module reads at run time, in a folder beside it (both relative to the package): a
# command that can import the module also depends on every file of the folder.
DATA_DIRS = {
    "prompts.py": "prompts",
    "reports/safety.py": "reports/templates",
    "labels/page.py": "labels/templates",
    "stats/interval_rules.py": "stats/coverage",
    "interop/release_tables.py": "interop/release_columns",
}


def module_file(src: Path, module: str) -> Path | None:
    """The file of a dotted module name under `src`, or None when it is not the package's."""
    if module != PACKAGE and not module.startswith(PACKAGE + "."):
        return None
    base = src.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@functools.cache  # the commands share most of their modules: each source is parsed once
def imports_in(source: str, module: str, is_package: bool) -> frozenset[str]:
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
    return frozenset(found)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


@functools.cache
def face_of(init: Path) -> dict[str, str]:
    """A package's public face (`FACE` in its `__init__`: name -> module of the package), whose
    modules are imported when a name is first used, so no import statement names them."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == "FACE"):
            return ast.literal_eval(node.value)
    return {}


def face_module(src: Path, name: str) -> str | None:
    """The module behind `name` when it is a name of its package's face (`from pkg import f`)."""
    package, _, leaf = name.rpartition(".")
    init = module_file(src, package) if package else None
    if init is None or init.name != "__init__.py":
        return None
    module = face_of(init).get(leaf)
    return f"{package}.{module}" if module else None


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
            if path is None and (behind := face_module(src, name)):
                todo.append(behind)
            if path is None or path in seen:
                continue
            seen.add(path)
            todo.extend(imports_in(path.read_text(encoding="utf-8"), name, path.name == "__init__.py"))
            if name in DISCOVERED:
                package = name.rpartition(".")[0]
                todo.extend(f"{package}.{p.stem}" for p in path.parent.glob(DISCOVERED[name]))
    return seen


def with_data(src: Path, files: set[Path]) -> set[Path]:
    """`files` and the data files the modules among them read (`DATA_DIRS`)."""
    package = src / PACKAGE
    found = set(files)
    for module, folder in DATA_DIRS.items():
        if package / module in files:
            found.update(p for p in (package / folder).rglob("*")
                         if p.is_file() and "__pycache__" not in p.parts)
    return found


def notebook_imports(notebook: Path) -> frozenset[str]:
    """The modules a notebook's code cells import."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return imports_in(code, "__notebook__", False)


def runs_as_command(path: Path) -> bool:
    """Whether a module has an `if __name__ == "__main__":` block."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            names = {getattr(n, "id", None) for n in (node.test.left, *node.test.comparators)}
            values = {getattr(n, "value", None) for n in node.test.comparators}
            if "__name__" in names and "__main__" in values:
                return True
    return False


class Command(NamedTuple):
    """What a command runs: the modules it starts from, and its notebook when it runs one."""

    modules: frozenset[str]
    notebook: Path | None = None


def commands(repo: Path) -> dict[str, Command]:
    """Every command, by name (its file's stem under code_deps/)."""
    src, found = repo / "src", {}
    for notebook in sorted((repo / "notebooks").rglob("*.ipynb")):
        if ".ipynb_checkpoints" in notebook.parts:
            continue
        name = notebook.relative_to(repo / "notebooks").with_suffix("").as_posix()
        found[name] = Command(frozenset({f"{PACKAGE}.pipeline.notebook_run"} | notebook_imports(notebook)),
                              notebook)
    for path in sorted((src / PACKAGE).rglob("*.py")):
        if runs_as_command(path):
            module = ".".join(path.relative_to(src).with_suffix("").parts)
            found[module.removeprefix(PACKAGE + ".")] = Command(frozenset({module}))
    return found


def code_files(repo: Path, command: Command) -> dict[str, str]:
    """The files `command` runs (its notebook, the package modules it can import and their
    data), each with the SHA-256 of its content, by path relative to `repo`."""
    src = repo / "src"
    files = with_data(src, closure(src, set(command.modules)))
    if command.notebook is not None:
        files.add(command.notebook)
    return {p.relative_to(repo).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(files)}


def write_code_deps(repo: Path, out: Path) -> list[Path]:
    """Replace `out` with one `<command>.json` per command; returns the files written."""
    if out.exists():
        shutil.rmtree(out)
    written = []
    for name, command in commands(repo).items():
        path = out / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        starts = sorted(m for m in command.modules if module_file(repo / "src", m) is not None)
        record = {"command": name, "starts_from": starts, "files": code_files(repo, command)}
        path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder to write (replaced whole)")
    parser.add_argument("--repo", type=Path, default=Path("."), help="the repository root")
    args = parser.parse_args(argv)
    written = write_code_deps(args.repo, args.out)
    print(f"{len(written)} commands' code deps in {args.out}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
