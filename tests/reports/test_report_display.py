"""What every report shows a reader: tables without row numbers, methods by name, the models."""

from __future__ import annotations

import importlib.util

import pandas as pd
import yaml

from pressurebench.reports.models_note import EMBEDDED_CAVEAT, models_note
from pressurebench.reports.notebook_display import table_html
from pressurebench.reports.tables import method_label
from pressurebench.stats import methods


def test_tables_drop_row_numbers_but_keep_a_meaningful_index():
    plain = table_html(pd.DataFrame({"target": ["a", "b"], "rate": [0.5, None]}))
    assert "<th>0</th>" not in plain and "—" in plain
    indexed = table_html(pd.DataFrame({"rate": [0.5]}, index=pd.Index(["a"], name="target")))
    assert "<th>a</th>" in indexed


def test_every_interval_method_has_a_readers_name():
    ids = [v for k, v in vars(methods).items() if k.isupper() and isinstance(v, str)]
    assert ids and all(method_label(m) != m for m in ids)


def test_the_models_note_names_every_role_and_warns_only_for_the_embedded_model(project):
    note = models_note(project.params_path, "tiny")
    assert "evaluator: judge (openai: judge-model)" in note and EMBEDDED_CAVEAT not in note
    data = yaml.safe_load(project.params_path.read_text())
    data["models"]["judge"] = {"provider": "local", "model": "smollm2-135m-instruct"}
    project.params_path.write_text(yaml.safe_dump(data))
    assert EMBEDDED_CAVEAT in models_note(project.params_path, "tiny")


def test_jupyterlab_is_in_the_environment():
    """`make lab` needs it; the `lab` extra installs it with the rest."""
    assert importlib.util.find_spec("jupyterlab") is not None
    assert importlib.util.find_spec("vl_convert") is not None


def test_a_study_report_names_the_models_of_every_arm(project):
    data = yaml.safe_load(project.params_path.read_text())
    data["validation"] = {"user_model_bias": ["gen"], "targets": ["target-a"]}
    project.params_path.write_text(yaml.safe_dump(data))
    note = models_note(project.params_path, "tiny", stage="user_model_bias")
    assert "(main run of tiny)" in note and "(arm user/gen of tiny)" in note
    assert "simulated user: gen (openai: gen-model)" in note


def test_the_fidelity_judge_is_named_where_it_checks(project):
    data = yaml.safe_load(project.params_path.read_text())
    data["fidelity"] = {"check": True}
    data["roles"]["fidelity"] = ["gen", "judge"]
    data["validation"] = {"evaluator_bias": ["user"], "targets": ["target-a"]}
    project.params_path.write_text(yaml.safe_dump(data))
    note = models_note(project.params_path, "tiny")
    assert "fidelity judge: gen (openai: gen-model), judge (openai: judge-model)" in note
    # an evaluator arm re-judges the main arm's conversations and checks none
    assert "fidelity judge" not in models_note(project.params_path, "tiny", arm="evaluator/user")
    data["fidelity"] = {"check": False}
    project.params_path.write_text(yaml.safe_dump(data))
    assert "fidelity judge" not in models_note(project.params_path, "tiny")
