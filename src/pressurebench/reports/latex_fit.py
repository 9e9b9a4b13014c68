"""What fits a page of a paper: the size of typeset table text, estimated without LaTeX.

A table the export writes must fit a one-column article at 10pt, `\\textwidth` (345pt) by
`\\textheight` (550pt), whatever the study's shape: more targets widen it, more metrics and
turns lengthen it, long names do both. LaTeX itself is not at hand when the tables are
written, so their size is estimated here from Computer Modern's character widths and the
line heights of `\\small` and `\\scriptsize`, the sizes the tables use, with a margin; the
tests compile the tables with pdflatex over many shapes and fail on any overfull box or float
too large for its page (tests/reports/test_latex_fit.py).
"""

from __future__ import annotations

import math
import re

TEXT_WIDTH_PT = 345.0
# A float's whole height (caption, rules and rows) stays below `\textheight`, 550pt, by a
# margin for what the estimates miss.
FLOAT_HEIGHT_PT = 480.0
TABCOLSEP_PT = 4.0  # `\setlength{\tabcolsep}{4pt}` of every table float
SMALL_PT, SCRIPT_PT = 9.0, 7.0  # the font sizes of `\small` and `\scriptsize` at 10pt
SMALL_LINE_PT, SCRIPT_LINE_PT = 11.0, 8.0  # their baselines
RULES_PT = 12.0  # booktabs' top, mid and bottom rules with their spacing
CAPTION_SKIP_PT = 14.0  # `\abovecaptionskip` and the space after a caption
PT_PER_CM = 28.45

# Widths of Computer Modern Roman at 10pt, in points (cmr10's metrics): a character not
# listed counts as the widest lower-case letter but m and w.
_WIDTHS = {
    **dict.fromkeys("ijl.,:;'!|", 2.78), **dict.fromkeys("ft", 3.5), "r": 3.92, "s": 3.94,
    **dict.fromkeys("ce", 4.44), "z": 4.44, **dict.fromkeys("agov", 5.0), "x": 5.28,
    **dict.fromkeys("bdhknpquy", 5.56), "m": 8.33, "w": 7.22, " ": 3.33, "-": 3.33,
    **dict.fromkeys("0123456789", 5.0), **dict.fromkeys("()[]", 3.89), "%": 8.33, "/": 5.0,
    "=": 7.78, "+": 7.78, "×": 7.78, "—": 10.0, "–": 5.0, "_": 5.0, "&": 7.78, "$": 5.0,
    "#": 8.33, ">": 7.78, "<": 7.78, "*": 5.0, "~": 5.0, "^": 5.0,
}
_UPPER = 7.5  # a capital letter, on average
_OTHER = 5.56
# LaTeX markup that prints nothing or one character, removed before a text is measured.
# A nested tabular's start, `\begin{tabular}[t]{@{}r@{}}` (its spec holds braces).
_NESTED_BEGIN = re.compile(r"\\begin\{tabular\}(?:\[[^]]*\])?\{(?:[^{}]|\{[^{}]*\})*\}")
_COMMANDS = re.compile(r"\\(?:textbackslash|textasciitilde|textasciicircum)\{\}|\\[a-zA-Z]+\*?\s*")


def plain(text: str) -> str:
    """What `text` prints, near enough to measure: markup and braces dropped, `---` a dash."""
    text = re.sub(r"(?<!\\)\$", "", text)  # math shifts print nothing
    text = text.replace("---", "—").replace("--", "–").replace("\\\\", " ")
    text = _NESTED_BEGIN.sub("", text).replace("\\end{tabular}", "")
    text = re.sub(r"\\parbox\[[^]]*\]\{[^}]*\}", "", text)
    text = _COMMANDS.sub(lambda m: "x" if m.group(0).startswith("\\text") else "", text)
    return re.sub(r"\\(.)", r"\1", text).replace("{", "").replace("}", "")


def text_width(text: str, size_pt: float = SMALL_PT) -> float:
    """The width of `text` (LaTeX source) set in Computer Modern at `size_pt`, in points."""
    scale = size_pt / 10.0
    return scale * sum(_WIDTHS.get(ch, _UPPER if ch.isupper() else _OTHER) for ch in plain(text))


def lines_of(cell: str) -> list[tuple[str, float]]:
    """A cell's lines and the size each is set in: a nested tabular's rows (`\\scriptsize`
    ones small), else the cell itself."""
    begin = _NESTED_BEGIN.search(cell)
    if not begin:
        return [(cell, SMALL_PT)]
    inner = cell[begin.end():cell.rindex("\\end{tabular}")]
    return [(line, SCRIPT_PT if "\\scriptsize" in line else SMALL_PT)
            for line in inner.split("\\\\")]


def columns(spec: str) -> list[float | None]:
    """Each column of a tabular spec: its wrapping width in points (`p{…}`, or the width of a
    `\\parbox` its cells hold, found by `cell_width`), or None for `l`, `r`, `c`."""
    spec = re.sub(r"@\{[^}]*\}", "", spec)
    found: list[float | None] = []
    for kind, width in re.findall(r"([lrc])|p\{([^}]*)\}", spec):
        found.append(None if kind else _length(width))
    return found


def _length(text: str) -> float:
    """A TeX length of the tables (`3.0cm`, `120pt`) in points."""
    number = re.match(r"[\d.]+", text)
    if number is None:
        raise ValueError(f"not a length: {text!r}")
    return float(number.group(0)) * (PT_PER_CM if text.endswith("cm") else 1.0)


def cell_width(cell: str, wrap: float | None = None) -> float:
    """The width a cell takes: its widest line, or the width it wraps at."""
    box = re.search(r"\\parbox\[t\]\{([^}]*)\}", cell)
    if box:
        return _length(box.group(1))
    if wrap is not None:
        return wrap
    return max(text_width(line, size) for line, size in lines_of(cell))


def cell_height(cell: str, wrap: float | None = None) -> float:
    """The height a cell takes: its lines, each line of wrapped text counted."""
    box = re.search(r"\\parbox\[t\]\{([^}]*)\}", cell)
    width = _length(box.group(1)) if box else wrap
    height = 0.0
    for line, size in lines_of(cell):
        step = SCRIPT_LINE_PT if size == SCRIPT_PT else SMALL_LINE_PT
        wrapped = 1 if width is None else max(1, math.ceil(text_width(line, size) / width))
        height += step * wrapped
    return height


def row_height(row: list[str], spec: str) -> float:
    wraps = columns(spec)
    return max(cell_height(c, wraps[i] if i < len(wraps) else None) for i, c in enumerate(row))


def table_width(spec: str, rows: list[list[str]]) -> float:
    """The width of a tabular of `rows` (the header among them): its columns' widest cells
    and the space between columns (none outside an `@{}` edge)."""
    wraps = columns(spec)
    widths = [max(cell_width(r[i], wraps[i]) for r in rows) for i in range(len(wraps))]
    edges = (0 if spec.startswith("@{}") else 1) + (0 if spec.endswith("@{}") else 1)
    return sum(widths) + TABCOLSEP_PT * (2 * (len(wraps) - 1) + edges)


def caption_height(caption: str) -> float:
    """A caption set in `\\small` across the text width, with the space around it."""
    label = text_width("Table 10: ")
    return CAPTION_SKIP_PT + SMALL_LINE_PT * math.ceil(
        (label + text_width(caption)) / TEXT_WIDTH_PT)
