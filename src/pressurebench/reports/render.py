"""Executed notebook → static HTML report, with code hidden and outputs sanitised.

Notebook outputs carry model text (tables of transcripts, judge
justifications), so the page treats them as hostile: nbconvert's
`sanitize_html` drops JavaScript outputs and runs every HTML and Markdown
output through a cleaner. nbconvert's own cleaner escapes headings,
paragraphs and table sections into visible tags, which mangles every
DataFrame; ours allows the markup a report needs and escapes everything else,
so a hostile `<script>` shows up as text rather than running or vanishing.
The page loads nothing from the network and its Content Security Policy
forbids script altogether.

    python -m pressurebench.reports.render IN.ipynb OUT.html [--title TITLE]
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from pathlib import Path

import bleach
import jinja2
import nbformat
from nbconvert import HTMLExporter

from .. import __version__
from ..errors import ConfigError, PressurebenchError, reported
from ..stage_run import now_iso
from .safety import TEMPLATES, content_security_policy, write_page

ALLOWED_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd", "del",
    "details", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5",
    "h6", "hr", "i", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp",
    "small", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th",
    "thead", "tr", "u", "ul", "var",
})
ALLOWED_ATTRIBUTES = {
    "*": ["class", "id", "title", "lang", "dir"],
    "a": ["href", "title"],
    "td": ["colspan", "rowspan", "align"],
    "th": ["colspan", "rowspan", "align"],
    "table": ["border"],
    "ol": ["start"],
}
ALLOWED_PROTOCOLS = frozenset({"http", "https", "mailto"})

# pandas puts a <style scoped> block before every DataFrame. Styles are not
# allowed, and escaping the block would print its CSS above each table, so it
# is removed whole. This only tidies: the cleaner below is what makes output safe.
_STYLE_ELEMENT = re.compile(r"<style\b[^>]*>.*?</style\s*>", re.IGNORECASE | re.DOTALL)

_cleaner = bleach.Cleaner(
    tags=ALLOWED_TAGS,
    attributes=ALLOWED_ATTRIBUTES,
    protocols=ALLOWED_PROTOCOLS,
    strip=False,
    strip_comments=True,
)


def clean_html(html: str | bytes) -> str:
    """Allow the markup of tables, headings and prose; escape every other tag as visible text."""
    text = html.decode("utf-8") if isinstance(html, bytes) else str(html)
    return _cleaner.clean(_STYLE_ELEMENT.sub("", text))


# A tqdm progress line: `desc: 100%|█████| 16/16 [00:04<00:00, 3.48row/s, error=0, ok=16]`.
_PROGRESS_LINE = re.compile(r"^.*\d+%\|.*\| *\d+/\d+ \[.*\]\s*$")


def quiet_progress(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Progress bars arrive on stderr, one output per refresh, and would show as a red block
    that looks like an error: a cell keeps only the last progress line, as plain output, and
    stderr outputs with nothing but whitespace are dropped."""
    for cell in nb.cells:
        kept, last = [], None
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                text = str(output.get("text", "")).replace("\r", "\n")
                lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
                if not lines:
                    continue
                if all(_PROGRESS_LINE.match(ln) for ln in lines):
                    last = lines[-1]
                    continue
            kept.append(output)
        if last is not None:
            kept.insert(0, nbformat.v4.new_output("stream", name="stdout",
                                                  text=f"progress: {last}\n"))
        if "outputs" in cell:
            cell["outputs"] = kept
    return nb


@functools.cache
def notebook_exporter() -> HTMLExporter:
    """The one exporter of a process: it compiles its templates once, on its first report."""
    exporter = HTMLExporter(
        template_name="lab",
        template_file="notebook.html.j2",
        extra_template_paths=[str(TEMPLATES)],
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        sanitize_html=True,
        skip_svg_encoding=False,
    )
    exporter.register_filter("clean_html", clean_html)
    # Every stage renders its report in a fresh process, which would compile the templates
    # each time: Jinja keeps the compiled templates in a directory private to the user (the
    # default of `FileSystemBytecodeCache`, written atomically), keyed by each template's
    # source, so a changed template is compiled anew. Without such a directory, no cache.
    try:
        exporter.environment.bytecode_cache = jinja2.FileSystemBytecodeCache()
    except (OSError, RuntimeError):
        pass
    return exporter


def render_notebook(
    executed_ipynb: str | Path, out_html: str | Path, title: str | None = None
) -> Path:
    """Write `out_html` from an executed notebook.

    The title is `title`, else the notebook's own `metadata.title`, else its file name.
    """
    executed_ipynb, out_html = Path(executed_ipynb), Path(out_html)
    try:
        nb = nbformat.read(executed_ipynb, as_version=4)
    except FileNotFoundError:
        raise ConfigError(executed_ipynb, "file not found") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, nbformat.ValidationError) as exc:
        # nbformat reports a malformed file through any of these, depending on where it breaks
        raise ConfigError(executed_ipynb, f"not a readable notebook ({exc})") from None
    quiet_progress(nb)
    return render_node(nb, out_html, title or nb.metadata.get("title") or executed_ipynb.stem)


def render_node(nb: nbformat.NotebookNode, out_html: str | Path, title: str) -> Path:
    """Write `out_html` from a notebook already in memory (outputs cleaned, code hidden)."""
    nb.metadata["title"] = title
    resources = {
        "metadata": {"name": nb.metadata["title"]},
        "content_security_policy": content_security_policy(),
        "pressurebench_version": __version__,
        "generated_at": now_iso(),
    }
    body, _ = notebook_exporter().from_notebook_node(nb, resources=resources)
    return write_page(out_html, body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pressurebench.reports.render",
        description="Render an executed notebook as a static HTML report (code hidden, outputs sanitised).",
    )
    parser.add_argument("notebook", help="executed .ipynb (e.g. the output of papermill)")
    parser.add_argument("out", help="HTML file to write")
    parser.add_argument("--title", default=None, help="page title (default: the notebook's name)")
    args = parser.parse_args(argv)
    try:
        render_notebook(args.notebook, args.out, title=args.title)
    except (PressurebenchError, KeyboardInterrupt) as exc:
        return reported(exc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
