"""The documentation site builds with warnings as errors, and its references come from the code.

`mkdocs build --strict` (what `make docs` runs) fails on a broken link, a missing anchor, a
nav entry without its page or a page the nav leaves out (mkdocs.yml `validation`). The
configuration and command-line references are written from the params schema and the
argparse parser as the site builds (docs/_hooks/reference.py), and so are the package map
(from the packages' docstrings, in the layers' order) and the tables of make targets and
extras (from the Makefile and pyproject.toml), so they cannot drift; a field without a
description, an argument without help, a folder without a docstring, a make target or an
extra without its comment, or a .PHONY target without a rule fails the build.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, Field

from docs_support import DOCS, blocks, pages
from pressurebench.io import read_yaml_model
from pressurebench.params import Params, load_params
from pressurebench.schemas import Benchmark
from support import REPO, WAIT_S

HOOK = DOCS / "_hooks" / "reference.py"
README_MAX_LINES = 200
NEWCOMER_WORDS = 3000


def hook():
    spec = importlib.util.spec_from_file_location("docs_reference_hook", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(root: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=root, capture_output=True, text=True, timeout=WAIT_S, check=False,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent)},
    )


def site_copy(tmp_path: Path) -> Path:
    """mkdocs.yml and docs/ in a scratch folder, to break on purpose."""
    root = tmp_path / "site-src"
    root.mkdir()
    shutil.copy2(REPO / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(DOCS, root / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_the_site_builds_strictly_with_both_references_written_from_the_code(tmp_path):
    done = build(REPO, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-4000:]
    params_page = (tmp_path / "site" / "reference" / "params" / "index.html").read_text()
    for key, model, _ in hook().params_tables(Params):
        for name in model.model_fields:
            assert f"<code>{name}</code>" in params_page, (key, name)
    assert "reference: params" not in params_page
    cli_page = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    for command in ("check", "estimate", "compare", "export", "size", "scenarios export",
                    "import-impactbench", "run", "labels export", "labels import", "arm plan"):
        assert f"<code>pressurebench {command}</code>" in cli_page, command
    assert (tmp_path / "site" / "images" / "forest_plot.png").is_file()


@pytest.mark.parametrize("breakage", ["broken link", "missing anchor", "page left out of the nav",
                                      "nav entry without its page"])
def test_a_broken_site_fails_the_build(tmp_path, breakage):
    root = site_copy(tmp_path)
    tutorial = root / "docs" / "tutorial.md"
    if breakage == "broken link":
        tutorial.write_text(tutorial.read_text() + "\n[gone](no-such-page.md)\n")
    elif breakage == "missing anchor":
        tutorial.write_text(tutorial.read_text() + "\n[gone](how-it-works.md#no-such-part)\n")
    elif breakage == "page left out of the nav":
        (root / "docs" / "orphan.md").write_text("# Orphan\n")
    else:
        config = root / "mkdocs.yml"
        config.write_text(config.read_text().replace("tutorial.md", "tutorial-gone.md"))
    done = build(root, tmp_path / "site")
    assert done.returncode != 0
    assert "WARNING" in done.stderr
    assert "in strict mode" in done.stdout + done.stderr


def test_the_repository_tables_are_written_from_the_package_the_makefile_and_pyproject(tmp_path):
    done = build(REPO, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-4000:]
    architecture = (tmp_path / "site" / "architecture" / "index.html").read_text()
    package = REPO / "src" / "pressurebench"
    for layer in hook().layers(REPO):
        for name in layer:
            folder = package / name
            shown = f"<code>{name}/</code>" if folder.is_dir() and (folder / "__init__.py").is_file() \
                else f"<code>{name}</code>"
            assert shown in architecture, name
            for module in folder.glob("*.py") if folder.is_dir() else []:
                if module.stem != "__init__":
                    assert f"<code>{module.stem}</code>" in architecture, (name, module.stem)
    repository = (tmp_path / "site" / "repository" / "index.html").read_text()
    makefile = (REPO / "Makefile").read_text()
    phony = next(line for line in makefile.splitlines() if line.startswith(".PHONY:")).split()[1:]
    for target in phony:
        assert f"<code>make {target}</code>" in repository, target
    with open(REPO / "pyproject.toml", "rb") as fh:
        declared = tomllib.load(fh)["project"]["optional-dependencies"]
    for extra in declared:
        assert f"<code>{extra}</code>" in repository, extra
    assert "reference:" not in architecture + repository


def repository_copy(tmp_path: Path) -> Path:
    """The Makefile, pyproject.toml and the package's sources, to break on purpose."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(REPO / name, root / name)
    shutil.copytree(REPO / "src" / "pressurebench", root / "src" / "pressurebench",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.mark.parametrize("breakage", ["target without a rule", "target without a comment",
                                      "extra without a comment", "folder without a docstring"])
def test_a_table_that_cannot_describe_an_entry_fails(tmp_path, breakage):
    reference, root = hook(), repository_copy(tmp_path)
    makefile, pyproject = root / "Makefile", root / "pyproject.toml"
    table = {"target without a rule": reference.make_targets,
             "target without a comment": reference.make_targets,
             "extra without a comment": reference.extras,
             "folder without a docstring": reference.package_map}[breakage]
    table(root)  # untouched, every entry describes itself
    if breakage == "target without a rule":  # a .PHONY name with no rule does nothing when made
        makefile.write_text(makefile.read_text().replace(".PHONY: ", ".PHONY: clean-reports ", 1))
        says = "clean-reports"
    elif breakage == "target without a comment":
        makefile.write_text(makefile.read_text() + "\nlint:\n\truff check src tests\n")
        says = "lint"
    elif breakage == "extra without a comment":
        pyproject.write_text(pyproject.read_text().replace(
            "[project.optional-dependencies]\n", "[project.optional-dependencies]\nbare = []\n\n", 1))
        says = "bare"
    else:
        (root / "src" / "pressurebench" / "stages" / "__init__.py").write_text("FACE = {}\n")
        says = "stages"
    with pytest.raises(reference.MissingDescription, match=says):
        table(root)


def test_every_params_field_has_a_description():
    for key, model, rows in hook().params_tables(Params):
        assert len(rows) == len(model.model_fields), key


def test_a_field_without_a_description_or_an_argument_without_help_fails_the_reference():
    reference = hook()

    class Section(BaseModel):
        documented: int = Field(default=1, description="has one")
        bare: int = 2

    class Top(BaseModel):
        section: Section = Field(default_factory=Section, description="a section")

    with pytest.raises(reference.MissingDescription, match=r"section.bare"):
        reference.params_tables(Top)

    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("--quiet", action="store_true")
    with pytest.raises(reference.MissingDescription, match="--quiet"):
        reference._argument_row(parser._actions[-1], "tool")


def test_the_cli_reference_follows_the_parser_of_the_console_script():
    reference = hook()
    parser = reference.console_parser()
    assert parser.prog == "pressurebench"
    text = reference.cli_reference()
    assert "### `pressurebench run`" in text and "`gen_metrics`" in text
    assert "### `pressurebench labels import`" in text


def test_a_command_with_a_former_name_is_described_once_naming_it():
    """argparse lists an alias as a command of its own: the reference shows `size` once and
    says that `plan`, its former name, runs it too."""
    text = hook().cli_reference()
    assert text.count("### `pressurebench size`") == 1
    assert "### `pressurebench plan`" not in text
    assert "Also runs as `pressurebench plan`." in text


def test_the_readme_is_short_and_its_links_resolve():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    assert targets
    for target in targets:
        if "://" not in target:
            assert (REPO / target).exists(), target


def test_a_newcomer_reads_about_fifteen_minutes_to_a_first_own_report():
    """README.md and the tutorial take a newcomer to a first report of their own study in
    about 3,000 words (15 minutes at 200 words a minute); everything else is one link away."""
    words = sum(len(p.read_text(encoding="utf-8").split())
                for p in (REPO / "README.md", REPO / "docs" / "tutorial.md"))
    assert words <= NEWCOMER_WORDS, words
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "(docs/tutorial.md)" in readme


def test_every_params_or_benchmark_example_on_the_pages_validates(tmp_path):
    """A params example must load as `load_params` loads a file; a benchmark example too."""
    checked = 0
    for page in pages():
        for block in blocks(page):
            if block.lang != "yaml":
                continue
            data = yaml.safe_load(block.body)
            path = tmp_path / "example.yaml"
            path.write_text(block.body)
            if "models" in data and "roles" in data:
                data.setdefault("benchmarks", ["pressure-core"])
                path.write_text(yaml.safe_dump(data))
                load_params(path)
            elif "name" in data and "description" in data:
                read_yaml_model(path, Benchmark)
            else:
                continue
            checked += 1
    assert checked >= 4


def test_the_readme_figure_is_drawn_by_the_package(tmp_path):
    import readme_figure

    out = readme_figure.draw(tmp_path / "forest_plot.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
