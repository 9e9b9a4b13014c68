"""`dvc repro` sees every change: each stage's command, and every package module it can import
(at any depth, also inside functions), is covered by the stage's declared deps."""

from __future__ import annotations

import yaml
from module_closure import closure, command_entries

from support import REPO

# Data the code reads at run time, beside the modules that read it.
DATA_DIRS = {"prompts.py": "src/pressurebench/prompts", "reports/render.py": "src/pressurebench/reports/templates",
             "reports/browser.py": "src/pressurebench/reports/templates",
             "reports/index.py": "src/pressurebench/reports/templates"}


def covered(path: str, deps: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in deps)


def test_every_stage_depends_on_every_module_its_command_can_import():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    missing = {}
    for name, stage in stages.items():
        body = stage.get("do", stage)
        deps = [d for d in body.get("deps", []) if isinstance(d, str)]
        files = closure(REPO / "src", command_entries(body["cmd"], REPO))
        assert files, f"{name}: its command runs none of the package"
        needed = {str(p.relative_to(REPO)) for p in files}
        for module, data in DATA_DIRS.items():
            if f"src/pressurebench/{module}" in needed:
                needed.add(data)
        gaps = sorted(p for p in needed if not covered(p, deps))
        notebooks = [w for w in body["cmd"].split() if w.endswith(".ipynb")]
        gaps += [nb for nb in notebooks if nb not in deps]
        if gaps:
            missing[name] = gaps
    assert not missing, f"deps do not cover what the stages run: {missing}"


def test_the_closure_follows_imports_inside_functions(tmp_path):
    pkg = tmp_path / "pressurebench"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from .sub import b\n")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nfrom ..c import x\nif TYPE_CHECKING:\n    from .. import d\n")
    (pkg / "c.py").write_text("x = 1\n")
    (pkg / "d.py").write_text("")  # imported for annotations only: never run
    found = {p.relative_to(tmp_path).as_posix() for p in closure(tmp_path, {"pressurebench.a"})}
    assert found == {"pressurebench/__init__.py", "pressurebench/a.py", "pressurebench/sub/__init__.py",
                     "pressurebench/sub/b.py", "pressurebench/c.py"}


def test_the_closure_includes_every_provider_module_the_registry_imports():
    """The registry finds its providers at run time, so the params' closure names them all."""
    found = {p.name for p in closure(REPO / "src", {"pressurebench.params"})}
    providers = {p.name for p in (REPO / "src" / "pressurebench" / "llm" / "providers").glob("*_provider.py")}
    assert len(providers) >= 3 and providers <= found
