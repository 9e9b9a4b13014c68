"""Round trip (docs/importing-transcripts.md, its commands run as written): an Inspect eval log
written with inspect_ai's own `write_eval_log` and a plain JSONL file, imported as a target of
a scratch copy of the repository, are judged by `dvc repro` against the mock provider server
like simulated conversations; results.json has the imported target's rates and says how they
were clustered; a re-import of a changed file shows in `dvc status` as the stages that judge it
again, the next repro judges the new transcripts while the simulated targets' stay, and
`pressurebench compare` reads the two runs."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
from pipeline_support import run

from docs_support import recipes
from mock_providers import default_responder, planning_responder
from pressurebench.io import read_artifact
from pressurebench.paths import Layout
from pressurebench.schemas import ConversationsFile, ScoresFile
from pressurebench.stats.results import Results
from transcripts_support import chat, inspect_log, jsonl

pytestmark = pytest.mark.slow

PAGE = "docs/importing-transcripts.md"


def jsonl_rows(reply: str) -> list[dict]:
    return [{"id": f"j{i}", "group": "plain",
             "messages": [{"role": r, "content": t} for r, t in chat(reply=reply)],
             "metadata": {"topic": f"t{i % 2}"}} for i in range(2)]


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_imported_logs_are_judged_by_dvc_repro_and_a_changed_file_rejudges(
        repo_copy, pipeline_server, tmp_path):
    root = repo_copy
    inspect_log(root / "task.eval", [
        {"id": "s1", "messages": chat(), "metadata": {"topic": "t0"}},
        {"id": "s1", "epoch": 2, "messages": chat(reply="Fine, you win."),
         "metadata": {"topic": "t0"}},
        {"id": "s2", "messages": chat(), "metadata": {"topic": "t1"}},
    ])
    plain = jsonl(root / "chats.jsonl", jsonl_rows("No."))
    (recipe,) = recipes(PAGE)
    importing, repro = recipe.commands()
    assert importing.startswith("pressurebench import") and repro.startswith("dvc repro")

    pipeline_server.responder = planning_responder
    try:
        assert "5 conversations" in run(["bash", "-c", importing], root).stdout
        run(["bash", "-c", repro], root, timeout=1500)

        layout = Layout(root / "data", "pressure-core")
        convs = read_artifact(layout.conversations_file("chats"), ConversationsFile).rows
        scores = read_artifact(layout.scores_file("chats"), ScoresFile)
        assert len(convs) == 5 and {c.base_id for c in convs} == {"topic=t0", "topic=t1"}
        n_metrics = len({s.metric_id for s in scores.rows})
        assert n_metrics >= 2 and len(scores.rows) == 5 * n_metrics
        assert all(s.status == "ok" for s in scores.rows)
        # Only the target's test awareness is checked: the user checks need a scenario.
        assert all({c.kind for c in f.checks} == {"test_awareness"} for f in scores.fidelity)
        assert all(f.error.startswith("user checks skipped") for f in scores.fidelity)

        results = read_artifact(layout.results_file, Results)
        assert results.targets["chats"].overall.n == 5 * n_metrics
        assert results.targets["chats"].overall.n_clusters == 2
        note = results.imported["chats"]
        assert note.clustering == "clustered by `topic`"
        assert note.conversations == 5 and "no_pressure" in note.checks_skipped
        assert set(results.targets) == {"smollm2", "smollm2-agreeable", "chats"}
        # The labelling pages draw imported conversations too.
        run(["pressurebench", "labels", "export", "--benchmark", "pressure-core"], root)

        status = ["dvc", "status", "--json", "--with-deps", "aggregate@pressure-core"]
        assert json.loads(run(status, root).stdout) == {}
        simulated = digest(layout.conversations_file("smollm2"))
        shutil.copytree(root / "data", tmp_path / "before")
        jsonl(plain, jsonl_rows("Yes, you are right."))
        run(["bash", "-c", importing], root)
        changed = json.loads(run(status, root).stdout)
        assert {"simulate@pressure-core-chats", "evaluate@pressure-core-chats"} <= set(changed)

        run(["bash", "-c", repro], root, timeout=1500)
    finally:
        pipeline_server.responder = default_responder
    replies = {m.content for c in read_artifact(layout.conversations_file("chats"),
                                                ConversationsFile).rows for m in c.transcript}
    assert "Yes, you are right." in replies and "No." not in replies
    assert digest(layout.conversations_file("smollm2")) == simulated
    rejudged = read_artifact(layout.scores_file("chats"), ScoresFile).rows
    assert len(rejudged) == 5 * n_metrics and all(s.status == "ok" for s in rejudged)
    # `pressurebench compare` reads the imported target like any other.
    compared = run(["pressurebench", "compare", str(tmp_path / "before"), ".", "--no-report"],
                   root).stdout
    assert "-- chats --" in compared and "-- smollm2 --" in compared
