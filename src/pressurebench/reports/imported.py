"""The results report's note on imported targets: where their conversations came from, how
their intervals were clustered, and what could not be measured on them."""

from __future__ import annotations

from ..stats.results import Results


def imported_note(results: Results) -> str:
    """Markdown, one item per imported target, and one per target this benchmark skips; ""
    when there is neither."""
    skipped = ("**Targets not run on this benchmark.** "
               + " ".join(f"{reason}." for _, reason in sorted(results.skipped_targets.items()))
               if results.skipped_targets else "")
    if not results.imported:
        return skipped
    lines = []
    for target, note in sorted(results.imported.items()):
        lines.append(
            f"- **{target}**: {note.conversations} conversations imported from "
            f"{', '.join(f'`{s}`' for s in note.sources)}. Intervals: {note.clustering}. "
            f"Demographic gaps: {note.demographic_gaps}. Checks of the simulated user skipped "
            f"(they need a scenario): {', '.join(note.checks_skipped)}; its test awareness is "
            "checked."
        )
    return ("**Imported targets.** Their conversations were not simulated here "
            "(`pressurebench import`), so they did not face the benchmark's scenarios: compare "
            "their rates with the other targets' only as rates on other conversations.\n\n"
            + "\n".join(lines) + (f"\n\n{skipped}" if skipped else ""))
