"""Labels files: read, checked against the current data, and kept under `<labels.dir>/<b>/`.

A label is only worth joining to a verdict if it was given on the conversation
the verdict is about. Every row is therefore checked against the main arm's
data as it is now: its conversation and judged metric must exist, its
transcript hash must match the transcript the judge read, and one rater may
label an item once across all files. On import each failure is an error naming
the file and the row (rows count labels from 1; a CSV file's header is not a
row). Stored labels that no longer match the data (a re-run changed their
transcripts, say after raising `generation.turns`) are set aside when the
labels are read for the analysis, counted per file and reason, and the rest
are used.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from ..errors import ConfigError, PressurebenchError, config_error_from_validation
from ..io import atomic_write_bytes, check_size, read_text, unescape_formula
from ..params import Params
from .current import JudgedData, load_judged
from .fidelity import asked_kinds
from .judged import conversation_sha256
from .records import FIDELITY_COLUMN, FIDELITY_FIELDS, LABEL_FIELDS, HumanLabel

SUFFIXES = (".jsonl", ".csv")
# A rater's file holds one page of at most `labels.batch_size` (1000) labels, about 200 bytes
# each; a larger file is a mistake, and reading a very large one would take minutes.
MAX_LABELS_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class LabelRow:
    """A validated row and where it came from, for errors that point at it."""

    path: Path
    row: int
    label: HumanLabel


def labels_folder(params: Params, benchmark: str) -> Path:
    return Path(params.labels.dir) / benchmark


def stored_files(params: Params, benchmark: str) -> list[Path]:
    folder = labels_folder(params, benchmark)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in SUFFIXES)


def _validated(path: Path, row: int, data: object) -> LabelRow:
    try:
        return LabelRow(path, row, HumanLabel.model_validate(data))
    except ValidationError as exc:
        raise config_error_from_validation(path, exc, prefix=f"row {row}") from None


def _jsonl_rows(path: Path, text: str) -> Iterable[LabelRow]:
    lines = [line for line in text.splitlines() if line.strip()]
    for row, line in enumerate(lines, start=1):
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(path, f"not JSON ({exc.msg})", f"row {row}") from None
        except ValueError as exc:  # an integer of more digits than Python converts
            raise ConfigError(path, f"not a usable JSON value ({exc})", f"row {row}") from None
        if not isinstance(data, dict):
            raise ConfigError(path, f"expected a JSON object, found {type(data).__name__}", f"row {row}")
        yield _validated(path, row, data)


def _csv_rows(path: Path, text: str) -> Iterable[LabelRow]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    missing = [name for name in LABEL_FIELDS if name not in header]
    if missing:
        raise ConfigError(path, f"the header lacks the column(s) {', '.join(missing)}", "header")
    for row, record in enumerate(reader, start=1):
        if None in record:
            raise ConfigError(path, "more cells than the header has columns", f"row {row}")
        # The rater page escapes a cell a spreadsheet would run as a formula (`io.escape_formula`).
        cells = {k: v if v is None else unescape_formula(v) for k, v in record.items()}
        yield _validated(path, row, _fidelity_answers(cells))


def _fidelity_answers(cells: dict) -> dict:
    """A CSV row with its `fidelity_<kind>` columns gathered into `fidelity` (an empty cell is a
    question not answered; files written before the questions have no such columns)."""
    answers = {name[len(FIDELITY_COLUMN):]: cells.pop(name) for name in FIDELITY_FIELDS
               if name in cells}
    return {**cells, "fidelity": {kind: v for kind, v in answers.items() if v}}


def read_labels_file(path: str | Path) -> list[LabelRow]:
    """Every row of a `.jsonl` or `.csv` labels file, each validated as a `HumanLabel`."""
    path = Path(path)
    if path.suffix not in SUFFIXES:
        raise ConfigError(path, f"a labels file ends in {' or '.join(SUFFIXES)}")
    check_size(path, MAX_LABELS_BYTES, "labels files")
    text = read_text(path)
    rows = list(_jsonl_rows(path, text) if path.suffix == ".jsonl" else _csv_rows(path, text))
    if not rows:
        raise ConfigError(path, "holds no labels")
    return rows


def row_problem(
    r: LabelRow, data: JudgedData, seen: dict[tuple[str, str], LabelRow]
) -> tuple[str, str] | None:
    """Why a row cannot be joined to the current data, as (kind, message), or None; a row
    without a problem goes into `seen`, against which later rows of the same rater and item are
    checked."""
    label = r.label
    conv_id = data.conv_ids.get(label.conv_key)
    if conv_id is None:
        return ("its conversation no longer exists",
                (f"unknown conversation {label.conv_key}: no conversation of benchmark "
                f"'{data.benchmark}' has this key"))
    if (conv_id, label.metric_id) not in data.scores:
        return ("its conversation was not judged on its metric",
                (f"unknown metric id '{label.metric_id}' for conversation {label.conv_key}: "
                "it was not judged on that metric"))
    if label.transcript_sha256 != conversation_sha256(data.conversations[conv_id]):
        return ("the transcript has changed since it was labelled",
                (f"the transcript of conversation {label.conv_key} has since changed: the "
                "label was given on a version the judge no longer reads; label the new export"))
    first = seen.get((label.rater, label.item_key))
    if first is not None:
        return ("its rater labelled the item before",
                (f"rater '{label.rater}' labelled item {label.item_key} twice (first in "
                f"{first.path}, row {first.row})"))
    seen[(label.rater, label.item_key)] = r
    return None


def check_rows(
    rows: Sequence[LabelRow], data: JudgedData, seen: dict[tuple[str, str], LabelRow] | None = None
) -> None:
    """Each row against the current data, and against the rows in `seen` (updated) for
    a rater labelling an item twice: the first problem is an error naming the file and row.
    Fidelity answers must be to questions the item asks (stored ones no longer asked, say after
    the checks were turned off, are left out of the analysis, not the label)."""
    seen = {} if seen is None else seen
    for r in rows:
        problem = row_problem(r, data, seen)
        if problem is not None:
            raise ConfigError(r.path, problem[1], f"row {r.row}")
        conv_id = data.conv_ids[r.label.conv_key]
        extra = sorted(set(r.label.fidelity) - set(asked_kinds(data, conv_id, r.label.metric_id)))
        if extra:
            raise ConfigError(
                r.path, f"fidelity answer(s) {', '.join(extra)} for item {r.label.item_key}, "
                "which does not ask them (not its conversation's fidelity item, or not checked)",
                f"row {r.row}",
            )


@dataclass(frozen=True)
class SetAside:
    """Stored labels of one file left out of the analysis for one reason."""

    path: Path
    n: int
    reason: str


def usable_rows(rows: Sequence[LabelRow], data: JudgedData) -> tuple[list[LabelRow], list[SetAside]]:
    """The rows that match the current data, and the others counted by file and reason."""
    seen: dict[tuple[str, str], LabelRow] = {}
    usable: list[LabelRow] = []
    aside: Counter[tuple[Path, str]] = Counter()
    for r in rows:
        problem = row_problem(r, data, seen)
        if problem is None:
            usable.append(r)
        else:
            aside[(r.path, problem[0])] += 1
    return usable, [SetAside(path, n, reason) for (path, reason), n in aside.items()]


def load_checked(
    params: Params, benchmark: str
) -> tuple[list[HumanLabel], JudgedData | None, list[SetAside]]:
    """The stored labels that match the current data, the data they were checked against (None
    without labels files: then no data is read), and the labels set aside."""
    files = stored_files(params, benchmark)
    if not files:
        return [], None, []
    rows = [r for path in files for r in read_labels_file(path)]
    data = load_judged(params, benchmark)
    usable, aside = usable_rows(rows, data)
    return [r.label for r in usable], data, aside


def load_labels(params: Params, benchmark: str) -> list[HumanLabel]:
    """Every stored label of a benchmark that matches the current data; [] without files."""
    return load_checked(params, benchmark)[0]


@dataclass
class ImportReport:
    imported: list[tuple[Path, Counter]] = field(default_factory=list)  # stored copy, labels per rater
    unchanged: list[Path] = field(default_factory=list)  # the same file was imported before
    refused: list[tuple[Path, str]] = field(default_factory=list)


def import_labels(params: Params, benchmark: str, sources: Sequence[str | Path]) -> ImportReport:
    """Check each file and copy it into the labels folder; a file that fails is refused with
    the reason and the others go ahead. A stored file of the same name is never overwritten."""
    folder = labels_folder(params, benchmark)
    data = load_judged(params, benchmark)
    seen: dict[tuple[str, str], LabelRow] = {}
    for r in (r for path in stored_files(params, benchmark) for r in read_labels_file(path)):
        seen[(r.label.rater, r.label.item_key)] = r
    report = ImportReport()
    for source in map(Path, sources):
        dest = folder / source.name
        try:
            check_size(source, MAX_LABELS_BYTES, "labels files")
            if dest.exists():
                if dest.read_bytes() == source.read_bytes():
                    report.unchanged.append(dest)
                    continue
                raise ConfigError(
                    source, f"a different file named {source.name} is already in {folder}; "
                    "rename this one to import it",
                )
            rows = read_labels_file(source)
            trial = dict(seen)
            check_rows(rows, data, trial)
        except PressurebenchError as exc:
            report.refused.append((source, str(exc)))
            continue
        except OSError as exc:
            report.refused.append((source, f"{source}: cannot read file ({exc.strerror})"))
            continue
        # Byte for byte: a re-import of the same file is recognised by its bytes.
        atomic_write_bytes(dest, source.read_bytes())
        seen = trial
        report.imported.append((dest, Counter(r.label.rater for r in rows)))
    return report
