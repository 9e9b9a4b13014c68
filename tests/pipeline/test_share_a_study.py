"""Share and reproduce a study as docs/sharing-and-comparing.md shows it: push the reproduced
repository's data to a local-directory DVC remote, clone it, `dvc pull`, `dvc repro`, then raise
`generation.turns`.

The page's two blocks run as written, each as one bash script, with its placeholders filled
in: the remote's directory (`/mnt/shared/pressurebench-store`) and the repository's URL
(`<repository-url>`, a bare repository the owner's clone pushes to). One line is not run:
`make install`, whose result, the installed package, is the environment this test runs in.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from pipeline_support import run

import pressurebench
from docs_support import recipes

pytestmark = pytest.mark.slow


RESULTS = Path("data/pressure-core/aggregate/results.json")
PAGE = "docs/sharing-and-comparing.md"
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def documented(start: str, fill: dict[str, str]) -> str:
    """The page's shell block that starts with `start`, placeholders filled, `make install` out."""
    (block,) = [b for b in recipes(PAGE) if b.body.startswith(start)]
    script = block.body
    for placeholder, value in fill.items():
        assert placeholder in script, placeholder
        script = script.replace(placeholder, value)
    return "\n".join(line for line in script.splitlines() if line.strip() != "make install")


def bash(script: str, cwd: Path) -> subprocess.CompletedProcess:
    return run(["bash", "-ec", script], cwd, env={**os.environ, **IDENTITY})


def records_declared(root: Path) -> set[str]:
    """The folders dvc.yaml keeps across runs (`persist: true`), as DVC itself expands them."""
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        return {out.def_path for out in repo.index.outs if out.persist}


def assistant_replies(root: Path) -> dict[tuple[str, str], int]:
    """Target replies per conversation, over the main arm's and every arm's conversations."""
    replies = {}
    for path in (root / "data").rglob("conversations.json"):
        for row in json.loads(path.read_text())["rows"]:
            replies[(str(path.relative_to(root)), row["conv_id"])] = sum(
                m["role"] == "assistant" for m in row["transcript"])
    return replies


# The fixed openings of the judge probes' edit prompts: the editor's calls ask for plain text.
PROBE_EDITS = tuple(
    (Path(pressurebench.__file__).parent / "prompts" / f"{name}.txt").read_text().split("{{")[0]
    for name in ("probe_identity", "probe_paraphrase", "probe_verbosity")
)


def target_requests(server) -> list[dict]:
    """Chat requests without a structured answer that are not a judge probe's edit: the
    targets' (user, judge and generator calls all ask for JSON; the probes' editor edits the
    grown conversations anew, with one message of its own prompt)."""
    return [e.body for e in server.request_log
            if e.path.endswith("/chat/completions") and e.body is not None
            and "response_format" not in e.body and "tools" not in e.body
            and not (len(e.body["messages"]) == 1
                     and e.body["messages"][0]["content"].startswith(PROBE_EDITS))]


def set_turns(root: Path, turns: int) -> None:
    path = root / "params" / "pipeline.yaml"
    params = yaml.safe_load(path.read_text())
    params["generation"]["turns"] = turns
    path.write_text(yaml.safe_dump(params))


def test_a_pushed_study_reproduces_on_a_clone_and_extends_paying_only_for_new_turns(
    reproduced_repo: Path, pipeline_server, tmp_path: Path
):
    origin = reproduced_repo  # its environment holds the mock's API key, as a user's would

    # Every stage that calls a model recorded its calls in its folder, which DVC tracks (and
    # keeps in place while the stage re-runs); no record holds the API key the run had in its env.
    records = sorted((origin / "data").rglob("calls.jsonl"))
    assert {str(p.parent.relative_to(origin)) for p in records} == records_declared(origin)
    lines = [line for p in records for line in p.read_text().splitlines()]
    assert lines and all(os.environ["PB_MOCK_KEY"] not in line for line in lines)
    assert any("/simulate/calls.jsonl" in str(p) for p in records)

    # The owner's repository has a git remote to push to, as a shared study's has.
    remote = tmp_path / "study.git"
    branch = run(["git", "rev-parse", "--abbrev-ref", "HEAD"], origin).stdout.strip()
    subprocess.run(["git", "init", "-q", "--bare", "-b", branch, str(remote)], check=True)
    subprocess.run(["git", "remote", "add", "origin", str(remote)], cwd=origin, check=True)
    subprocess.run(["git", "push", "-qu", "origin", branch], cwd=origin, check=True)

    # The owner shares: a DVC remote (a local directory here; s3://… works the same) and a push.
    store = tmp_path / "pressurebench-store"
    bash(documented("dvc remote add", {"/mnt/shared/pressurebench-store": str(store)}), origin)
    assert store.is_dir()

    # A colleague clones, pulls and reproduces: up to date, no model call, the same bytes.
    pipeline_server.reset()
    reproduced = bash(documented("git clone", {"<repository-url>": str(remote)}), tmp_path)
    clone = tmp_path / "study"
    assert "Running stage" not in reproduced.stdout
    assert "up to date" in reproduced.stdout
    assert pipeline_server.total_requests == 0
    assert "up to date" in run(["dvc", "status"], clone).stdout
    assert (clone / RESULTS).read_bytes() == (origin / RESULTS).read_bytes()

    # One more turn: the pulled records replay every earlier turn, so the only target calls
    # sent are the new turn's, one per conversation that gets one.
    before = assistant_replies(clone)
    set_turns(clone, 3)
    run(["dvc", "repro"], clone)
    after = assistant_replies(clone)
    grown = sum(after[c] > before[c] for c in before)
    assert all(after[c] - before[c] in (0, 1) for c in before)
    sent = target_requests(pipeline_server)
    assert grown > 0 and len(sent) == grown
    assert all(sum(m["role"] == "user" for m in body["messages"]) == 3 for body in sent)
