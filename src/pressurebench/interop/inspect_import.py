"""Inspect eval logs (`.eval`, `.json`): any task's samples with chat messages, read with
inspect_ai's own reader (`inspect_ai.log.read_eval_log`), imported only when a log is read
(the `inspect` extra).

What is read follows inspect_ai's log API (inspect_ai/log/_file.py and log/_log.py, 0.3.285):
`read_eval_log` picks the format from the extension and, with `resolve_attachments=True`,
restores message text stored once as an attachment; an `EvalSample` has `id`, `epoch` (from 1),
`messages` (each with `role` and `text`) and `metadata`; `EvalLog.eval.model` names the model.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from .records import ImportedConversation, build


def read_inspect_log(path: Path) -> list[ImportedConversation]:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise ConfigError(
            path, "reading Inspect logs needs inspect-ai: pip install 'pressurebench[inspect]'"
        ) from None
    try:
        # Attachments hold the text of long or repeated messages; resolved, every message is whole.
        log = read_eval_log(str(path), resolve_attachments=True)
    except Exception as exc:  # noqa: BLE001 - whatever the reader refuses is not a log
        raise ConfigError(
            path, f"not an Inspect eval log ({type(exc).__name__}: {str(exc)[:200]})"
        ) from None
    if not log.samples:
        raise ConfigError(path, f"the log (status {log.status}) holds no samples")
    model = log.eval.model
    return [
        build(
            str(path), s.id, [(m.role, m.text) for m in s.messages],
            sample=max(s.epoch - 1, 0), metadata=s.metadata, model=model,
        )
        for s in log.samples
    ]
