"""The paper's LaTeX tables compile and fit the page: pdflatex on six targets' results."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from pressurebench.reports import export_tables, latex
from pressurebench.stats.results import build_results
from stats_support.synthetic import synthetic_scores

pytestmark = pytest.mark.slow

PDFLATEX = shutil.which("pdflatex")
KPSEWHICH = shutil.which("kpsewhich")
HAS_BOOKTABS = bool(KPSEWHICH) and subprocess.run(
    [KPSEWHICH, "booktabs.sty"], capture_output=True, text=True, check=False).stdout.strip() != ""
needs_latex = pytest.mark.skipif(
    not (PDFLATEX and HAS_BOOKTABS),
    reason="pdflatex and booktabs not installed: apt-get install texlive-latex-base "
           "texlive-latex-recommended",
)
NAMES = {f"m{i:02d}": name for i, name in enumerate([
    "Avoid validating a bad decision because the user insists",
    "Keeps the safety caveat on the fifth ask",
    "Helps a teenager think instead of handing over the answer",
    "Avoid flattery of the user's plan & its 100% certainty",
    "States uncertainty where the evidence is thin",
    "Refuses to drop a disclaimer under social pressure",
], start=1)}
SHORT = ["gpt-4o", "claude-4", "llama-70b", "qwen-72b", "mistral-l", "gemini-2"]
LONG = ["gpt-4o-2024-08-06", "claude-sonnet-4-5", "Llama-3.1-70B-Instruct", "qwen2.5-72b-instruct",
        "mistral-large-2411", "gemini-2.0-flash-001"]


def results_for(targets: list[str]):
    rates = dict(zip(targets, (0.35, 0.45, 0.5, 0.55, 0.6, 0.7)))
    scores = synthetic_scores(target_rates=rates, metrics=6, base_per_metric=6, samples=1,
                              axes={"age": ["teen", "adult"]}, seed=4)
    return build_results(scores, resamples=50, confidence_level=0.95, seed=1, benchmark="core_v2")


def compile_tables(tmp_path, tables: dict[str, str]) -> str:
    for name, tex in tables.items():
        (tmp_path / f"{name}.tex").write_text(tex)
    inputs = "\n".join(f"\\input{{{name}}}\n\\clearpage" for name in tables)
    (tmp_path / "paper.tex").write_text(
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
        f"{inputs}\n\\end{{document}}\n")
    proc = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    log = (tmp_path / "paper.log").read_text(errors="replace")
    assert proc.returncode == 0, log[-3000:]
    return log


@needs_latex
@pytest.mark.parametrize("targets", [SHORT, LONG], ids=["short names", "long names"])
def test_six_targets_compile_and_fit_the_text_width(tmp_path, targets):
    results = results_for(targets)
    pairwise, gaps = export_tables.pairwise_frame(results), export_tables.gaps_frame(results)
    tables = {
        "rates": latex.rates_table(results, NAMES, "tab:rates"),
        "pairwise": latex.differences_table(pairwise, "Pairs.", "tab:pairs", lead=[],
                                            targets=targets, target_columns=["a", "b"]),
        "gaps": latex.differences_table(gaps, "Gaps.", "tab:gaps", lead=["target", "axis"],
                                        targets=targets, target_columns=["target"]),
    }
    log = compile_tables(tmp_path, tables)
    assert "Overfull \\hbox" not in log, [line for line in log.splitlines() if "Overfull" in line]
    assert (tmp_path / "paper.pdf").read_bytes().startswith(b"%PDF")
    rates = tables["rates"]
    assert "\\caption{Pass rates (\\%) of core\\_v2" in rates
    assert "Design: 36 base scenarios over 6 metrics" in rates
    assert "@{}lrrrrrr@{}" in rates and "`" not in rates
    if targets is LONG:
        assert "T1 = Llama-3.1-70B-Instruct" in rates and "T1 = Llama" in tables["pairwise"]
        assert "T1 $-$ T2" in tables["pairwise"]
    else:
        assert "T1" not in rates and "gpt-4o" in rates
