"""Imported: a target whose conversations another tool had (an Inspect task, a chat log).

Its replies come from the files `pressurebench import` read, so nothing ever calls it: a call
is a programming error, refused loudly rather than answered. It costs nothing (no calls), and
its entry must say what was imported (`imported`), which only this provider takes.
"""

from __future__ import annotations

from typing import ClassVar

from .registry import ModelApi, model_api


@model_api("imported")
class ImportedProvider(ModelApi):
    settings: ClassVar[tuple[str, ...]] = ("imported",)
    conversations_imported: ClassVar[bool] = True
    unpriced_cost: ClassVar[float | None] = 0.0

    def check(self) -> None:
        if not getattr(self.spec, "imported", None):
            raise ValueError(
                "an imported target needs `imported` (written by `pressurebench import`)"
            )

    async def complete(self, request):
        raise RuntimeError(
            f"'{self.spec.model}' is an imported target: its replies come from its files, "
            "it is never called"
        )
