"""The package is layered, declared with import-linter in pyproject.toml ([tool.importlinter]):
every import runs down a layer or stays within one, no two modules or folders of one package
import each other (directly or through others), imports inside functions and under
`if TYPE_CHECKING:` included, and every folder and top-level module has a layer (`exhaustive`).
docs/architecture.md describes the layers; `lint-imports` checks them, here under `make test`.

What import-linter does not say is checked here too: the docs name every layer, each package's
public face resolves, and a model entry of the params is checked without loading the client.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from support import REPO, WAIT_S

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def contracts() -> list[dict]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def layer_names() -> list[str]:
    layers = next(c for c in contracts() if c["type"] == "layers")["layers"]
    return [name.strip(" ()") for layer in layers for name in layer.replace(":", "|").split("|")]


def lint_imports(repo: Path, src: Path) -> subprocess.CompletedProcess:
    """`lint-imports` on the package under `src`, with the contracts of `repo`'s pyproject.toml."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(repo / "pyproject.toml"), "--no-cache"],
        cwd=repo, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(src)},
        capture_output=True, text=True, timeout=WAIT_S, check=False,
    )


def test_the_import_contracts_hold():
    done = lint_imports(REPO, REPO / "src")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "2 kept, 0 broken" in done.stdout


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory) -> Path:
    """A copy of the package and its pyproject.toml, to break on purpose."""
    root = tmp_path_factory.mktemp("layers")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(REPO / "src" / "pressurebench", root / "src" / "pressurebench",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.mark.parametrize(
    ("files", "says"),
    [
        # an upward import inside a function: statistics know nothing of the stages
        ({"stats/reach_up.py": "def f():\n    from ..stages import aggregate\n"},
         "pressurebench.stats is not allowed to import pressurebench.stages"),
        # one only for annotations counts too
        ({"llm/annotated.py": "from typing import TYPE_CHECKING\n"
                              "if TYPE_CHECKING:\n    from ..params import Params\n"},
         "pressurebench.llm is not allowed to import pressurebench.params"),
        # a top-level module nobody gave a layer
        ({"stray.py": "X = 1\n"}, "stray"),
        # two modules of one folder that import each other
        ({"stats/loop_a.py": "from . import loop_b\n", "stats/loop_b.py": "def f():\n"
                                                          "    from . import loop_a\n"},
         "No cycles are allowed in pressurebench.stats"),
    ],
)
def test_the_contracts_catch_what_they_forbid(package_copy, files, says):
    package = package_copy / "src" / "pressurebench"
    for module, source in files.items():
        (package / module).write_text(source)
    try:
        done = lint_imports(package_copy, package_copy / "src")
    finally:
        for module in files:
            (package / module).unlink()
    assert done.returncode != 0
    assert says in done.stdout


def test_the_architecture_page_names_every_layer():
    page = (REPO / "docs" / "architecture.md").read_text()
    missing = [name for name in layer_names() if f"`{name}`" not in page and f"`{name}/`" not in page]
    assert missing == [], "docs/architecture.md does not describe these layers"


def test_every_name_of_a_package_face_resolves():
    faces = {}
    for init in sorted((REPO / "src" / "pressurebench").glob("*/__init__.py")):
        package = importlib.import_module(f"pressurebench.{init.parent.name}")
        for name, module in getattr(package, "FACE", {}).items():
            faces[f"{package.__name__}.{name}"] = module
            assert getattr(package, name) is getattr(
                importlib.import_module(f"{package.__name__}.{module}"), name)
            assert name in dir(package)
    assert "pressurebench.stats.scores_frame" in faces and "pressurebench.llm.ModelClient" in faces


def test_a_model_entry_is_checked_without_loading_the_client():
    """Validating the params asks each model's provider its rules; it must not load the client,
    its cache, batcher, call records or spending ledger, an SDK or the HTTP transport."""
    code = (
        "import sys\n"
        "from pressurebench.params import ModelSpec\n"
        "ModelSpec(provider='openai', model='gpt-4o-2024-08-06', api_key_env='OPENAI_API_KEY')\n"
        "ModelSpec(provider='anthropic', model='claude-sonnet-4-5', api_key_env='ANTHROPIC_API_KEY')\n"
        "ModelSpec(provider='google', model='gemini-2.5-pro', thinking_budget=1024)\n"
        "ModelSpec(provider='anthropic-bedrock', model='anthropic.claude-sonnet-4-6')\n"
        "ModelSpec(provider='azure-openai', model='gpt-5.4-mini', api_version='2024-10-21')\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert "pressurebench.llm.providers.registry" in loaded  # the rules were asked
    forbidden = {
        "pressurebench.llm.client", "pressurebench.llm.cache", "pressurebench.llm.batches",
        "pressurebench.llm.spending", "pressurebench.llm.call_record", "pressurebench.llm.budget",
        "pressurebench.llm.providers.http_transport", "openai", "anthropic", "aiohttp",
        "llama_cpp", "pandas", "scipy", "google.genai", "genai_prices", "boto3", "google.auth",
    }
    assert sorted(loaded & forbidden) == []


def test_notebooks_and_the_command_line_import_from_package_faces():
    """`from pressurebench.stats import scores_frame`, not `from pressurebench.stats.score_frames
    import ...`: what a package offers is in its `__init__`, and its modules may move inside it."""
    import ast
    import json

    sources = {str(p.relative_to(REPO)): "\n".join(
        "".join(c["source"]) for c in json.loads(p.read_text())["cells"] if c["cell_type"] == "code")
        for p in sorted((REPO / "notebooks").rglob("*.ipynb"))}
    sources["src/pressurebench/commands/cli.py"] = (
        REPO / "src" / "pressurebench" / "commands" / "cli.py").read_text()
    deep = []
    for where, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            if node.level == 0 and node.module.startswith("pressurebench."):
                inner = node.module.split(".")[1:]
            elif node.level == 2:  # `..a.b` in commands/cli.py
                inner = node.module.split(".")
            else:
                continue
            if len(inner) > 1:
                deep.append(f"{where}: from {'.' * node.level}{node.module}")
    assert deep == []


def test_the_architecture_pages_python_example_runs():
    import re

    page = (REPO / "docs" / "architecture.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert blocks
    for block in blocks:
        exec(compile(block, "docs/architecture.md", "exec"), {})  # the page's own code
