"""A stage that keeps its folder across runs (`persist`, for its call records) clears what its
last run wrote before writing anew, and nothing another run of the same stage is writing: two
runs at once each rename their own temporary files into place."""

from __future__ import annotations

from pressurebench.io import atomic_write_text
from pressurebench.paths import CALLS
from pressurebench.stage_run import StageRun


def test_clearing_the_folder_keeps_the_call_records_and_writes_in_progress(project):
    stage = StageRun("simulate", project.params_path, "tiny", models_used=[], target="t")
    folder = stage.folder
    folder.mkdir(parents=True)
    (folder / CALLS).write_text("{}\n")
    (folder / "conversations.json").write_text("old")
    (folder / "stale").mkdir()
    pending = [folder / ".calls.jsonl.k2j3.tmp", folder / ".conversations.json.x9.tmp"]
    for path in pending:
        path.write_text("being written by another run")

    stage.replacing_outputs()

    assert sorted(p.name for p in folder.iterdir()) == sorted([CALLS, *(p.name for p in pending)])
    # the other run's writes can still be renamed into place, and this run's land beside them
    for path, name in zip(pending, (CALLS, "conversations.json"), strict=True):
        path.replace(folder / name)
    atomic_write_text(folder / "manifest.json", "{}")
    assert sorted(p.name for p in folder.iterdir()) == sorted([CALLS, "conversations.json",
                                                               "manifest.json"])
