"""How DataFrames show in the stage notebooks and their reports: no row-number column.

A table of targets or metrics numbered 0, 1, 2 gains nothing from the numbers
and a reader may take them for data. Frames with their default index are shown
without it; a frame indexed by something meaningful keeps its index.
"""

from __future__ import annotations

import pandas as pd

# How every report shows a value that is not there: never 0, never an empty cell, never "None".
MISSING = "—"


def table_html(frame: pd.DataFrame) -> str:
    """The frame as an HTML table (escaped), without the index when it is just row numbers."""
    numbered = isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0
    return frame.to_html(index=not numbered, border=0, classes="dataframe", escape=True,
                         na_rep=MISSING)


def use_report_tables() -> None:
    """Show DataFrames with `table_html` in the running IPython kernel (no-op outside one)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)


class Note(str):
    """A sentence in Markdown that a notebook shows where it would otherwise show a table:
    `display(note)` renders it, as `display(Markdown(note))` would."""

    __slots__ = ()

    def _repr_markdown_(self) -> str:
        return str(self)
