"""Compiling exported LaTeX tables the way a paper does, to check they fit the page."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support import WAIT_S

PDFLATEX = shutil.which("pdflatex")
KPSEWHICH = shutil.which("kpsewhich")
HAS_BOOKTABS = bool(KPSEWHICH) and subprocess.run(
    [KPSEWHICH, "booktabs.sty"], capture_output=True, text=True, check=False).stdout.strip() != ""
needs_latex = pytest.mark.skipif(
    not (PDFLATEX and HAS_BOOKTABS),
    reason="pdflatex and booktabs not installed: apt-get install texlive-latex-base "
           "texlive-latex-recommended",
)


def compile_tables(build: Path, tables: dict[str, str]) -> str:
    """Each table `\\input` on a page of its own in a one-column article with booktabs; the
    compile must succeed, and its log (where overfull boxes are reported) is returned."""
    for name, tex in tables.items():
        (build / f"{name}.tex").write_text(tex)
    inputs = "\n".join(f"\\input{{{name}}}\n\\clearpage" for name in tables)
    (build / "paper.tex").write_text(
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
        f"{inputs}\n\\end{{document}}\n")
    proc = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
                          cwd=build, capture_output=True, text=True, timeout=WAIT_S, check=False)
    log = (build / "paper.log").read_text(errors="replace")
    assert proc.returncode == 0, log[-3000:]
    return log


def overfull_boxes(log: str) -> list[str]:
    return [line for line in log.splitlines() if "Overfull \\hbox" in line]


def too_large_floats(log: str) -> list[str]:
    """LaTeX's "Float too large for page by …": a float taller than the text height."""
    return [line for line in log.splitlines() if "Float too large" in line]
