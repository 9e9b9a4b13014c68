"""Reading and writing artifacts: validated on both sides, written atomically.

A reader must never mistake a half-written file for a complete one, so every
write goes to a temporary file in the same directory and is renamed into place.
The temporary file is created readable by its owner only; it is given the mode
any other new file gets under the user's umask before it takes the final name,
so a shared lab server or a web server reads artifacts as it reads the rest.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from .errors import ConfigError, config_error_from_validation

M = TypeVar("M", bound=BaseModel)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write `text` to `path` so that readers see either the old or the new file, never a part."""
    atomic_write_bytes(path, text.encode("utf-8"))  # bytes: no newline translation


def atomic_rewrite_text(path: str | Path, text: str) -> None:
    """`atomic_write_text` to the file `path` names: through a symbolic link, to its target,
    so the link stays a link (`params/pipeline.yaml` is one after `pressurebench use`)."""
    atomic_write_text(Path(path).resolve(), text)


def atomic_symlink(path: str | Path, target: str) -> None:
    """Make `path` a symbolic link to `target` (relative to the link's folder), replacing what
    was there in one rename: readers see the old file or the new link, never no file."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.link.tmp")
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(target)
    try:
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


_UMASK_LOCK = threading.Lock()


def new_file_mode() -> int:
    """The mode `open()` gives a new file under the process's umask (0o666 & ~umask).

    The umask can only be read by setting it; the lock keeps this process's other
    writers of temporary files from running in between.
    """
    with _UMASK_LOCK:
        umask = os.umask(0o077)
        os.umask(umask)
    return 0o666 & ~umask


def is_write_in_progress(path: Path) -> bool:
    """Whether `path` is the temporary file of a write not yet renamed into place (maybe
    another process's): whoever clears a folder leaves it to its writer."""
    return path.name.startswith(".") and path.name.endswith(".tmp")


def temp_file_beside(path: Path) -> tuple[int, str]:
    """A temporary file in `path`'s folder, to be renamed to `path`, with a new file's mode
    (`.<name>.<random>.tmp`: `is_write_in_progress` knows it)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, new_file_mode())
    except BaseException:
        os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        raise
    return fd, tmp


@contextmanager
def atomic_write(path: str | Path, binary: bool = False, *, durable: bool = True) -> Iterator[IO]:
    """The one way the package replaces a file: write into the yielded file object, and on
    leaving the block `path` holds the new content whole, or (on any error, Ctrl-C included)
    its old content and no leftover temporary file.

    The content goes to a temporary file beside `path` (same file system, so the rename is
    atomic; a new file's mode under the umask) that then replaces it. `durable` also syncs the
    content to disk before the rename (artifacts, records); the response cache, the spending
    ledger and batch records skip it, being rewritten often or recoverable. The folder is made
    when missing (tried only then: a `mkdir` on every cache entry costs time).
    """
    path = Path(path)
    try:
        fd, tmp = temp_file_beside(path)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = temp_file_beside(path)
    try:
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see either the old or the new file, never a part."""
    with atomic_write(path, binary=True) as fh:
        fh.write(data)


# A spreadsheet runs a cell that starts with one of these as a formula (some after a tab or
# a carriage return too), so a model-written metric name or a rater's name could compute, or
# fetch a URL, on the reader's machine.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def escape_formula(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula, with a leading apostrophe (shown as
    text, the OWASP advice on CSV injection); any other value as it is (numbers stay numbers)."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def unescape_formula(text: str) -> str:
    """The text `escape_formula` was given: the project's readers of CSV cells use it."""
    if text.startswith("'") and text[1:].startswith(FORMULA_START):
        return text[1:]
    return text


def frame_csv(frame) -> str:
    """A pandas DataFrame as CSV text, every text cell escaped with `escape_formula`. Every
    CSV file the project writes goes through here. Lines end in CRLF (RFC 4180), so a cell
    holding a lone carriage return is quoted too."""
    return frame.map(escape_formula).to_csv(index=False, lineterminator="\r\n")


def read_text(path: str | Path) -> str:
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(path, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, f"cannot read file ({exc.__class__.__name__}: {exc})") from None


# YAML files are written by hand (params, benchmarks): a larger one is a mistake, and parsing
# a very large one takes longer than any run's first call.
MAX_YAML_BYTES = 2 * 1024 * 1024


def check_size(path: str | Path, limit: int, what: str) -> None:
    """Refuse a hand-written input larger than `limit` bytes, saying the limit, before reading it."""
    try:
        size = Path(path).stat().st_size
    except OSError:
        return  # the reader reports what is wrong with the file
    if size > limit:
        raise ConfigError(path, f"file is {size / 1e6:.1f} MB; {what} are limited to "
                                f"{limit // (1024 * 1024)} MiB")


def read_yaml(path: str | Path) -> Any:
    check_size(path, MAX_YAML_BYTES, "YAML inputs")
    text = read_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(path, f"malformed YAML{where}: {problem}") from None


def read_json(path: str | Path) -> Any:
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            path, f"corrupted JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None


def validate_as(path: str | Path, model: type[M], data: Any) -> M:
    """Validate parsed data as `model`, turning its errors into a ConfigError."""
    if data is None:
        raise ConfigError(path, "file is empty")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise config_error_from_validation(path, exc, data=data, model=model) from None


def check_schema_version(path: str | Path, data: Any, expected: int) -> None:
    """Refuse artifacts written by another schema version with a message that says what to do."""
    if not isinstance(data, dict):
        raise ConfigError(path, f"expected a JSON object, found {type(data).__name__}")
    found = data.get("schema_version")
    if found != expected:
        raise ConfigError(
            path,
            f"written by schema version {found!r}, this pressurebench reads version {expected}; "
            "re-run the stage that writes it (dvc repro)",
            "schema_version",
        )


def read_artifact(path: str | Path, model: type[M]) -> M:
    """Read a JSON artifact, checking its schema version before its fields."""
    data = read_json(path)
    version = model.model_fields["schema_version"].default
    check_schema_version(path, data, version)
    return validate_as(path, model, data)


def write_artifact(path: str | Path, artifact: BaseModel) -> None:
    """Validate (by round-tripping through the model) and write a JSON artifact atomically."""
    payload = artifact.model_dump(mode="json")
    type(artifact).model_validate(payload)
    atomic_write_text(path, json.dumps(payload, indent=1, ensure_ascii=False) + "\n")


def read_yaml_model(path: str | Path, model: type[M]) -> M:
    return validate_as(path, model, read_yaml(path))


def write_yaml_model(path: str | Path, obj: BaseModel) -> None:
    payload = obj.model_dump(mode="json", exclude_none=True)
    type(obj).model_validate(payload)
    atomic_write_text(path, yaml.safe_dump(payload, sort_keys=False, allow_unicode=True, width=100))
