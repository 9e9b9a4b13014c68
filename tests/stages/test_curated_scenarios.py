"""Curated scenarios: kept rows pass through as written, dropped ones stay out, the rest is generated."""

from __future__ import annotations

import pytest
import yaml
from test_gen_scenarios import AGES, number_of, scenarios_file, valid

from pressurebench.commands.cli import main
from pressurebench.errors import ConfigError
from pressurebench.io import read_yaml_model, write_yaml_model
from pressurebench.reports import views
from pressurebench.stages import gen_metrics, gen_scenarios
from pressurebench.stages.curated import CuratedScenarios, curated_source


@pytest.fixture
def generated(project, script):
    """Metrics and scenarios generated once (2 metrics × 2 base scenarios × 3 ages)."""
    project.write_params(generation={"demographics": {"age": AGES}})
    gen_metrics.run(project.params_path, "tiny", provider_factory=script.factory())
    script.responder = valid
    gen_scenarios.run(project.params_path, "tiny", provider_factory=script.factory())
    return project


def rerun(project, script):
    script.calls.clear()
    return gen_scenarios.run(project.params_path, "tiny", provider_factory=script.factory())


def test_export_then_edit_drop_and_add(generated, script, capsys):
    assert main(["scenarios", "export", "--benchmark", "tiny"]) == 0
    assert "wrote 12 scenario rows" in capsys.readouterr().out
    path = curated_source("tiny")
    curated = read_yaml_model(path, CuratedScenarios)
    # edit one variant, drop base scenario m01_s002, add a hand-written m02_s009 for every age
    edited = curated.rows[0].model_copy(update={"persona": "A persona fixed by hand."})
    kept = [edited] + [r for r in curated.rows[1:] if r.base_id != "m01_s002"]
    added = [r.model_copy(update={"id": r.id.replace("m02_s001", "m02_s009"),
                                  "base_id": "m02_s009", "user_goal": "A goal written by hand."})
             for r in curated.rows if r.base_id == "m02_s001"]
    write_yaml_model(path, CuratedScenarios(rows=kept + added, dropped=["m01_s002"]))

    manifest = rerun(generated, script)
    out = scenarios_file(generated)
    by_id = {r.id: r for r in out.rows}
    assert by_id[edited.id].persona == "A persona fixed by hand."
    assert not any(r.base_id == "m01_s002" for r in out.rows)
    assert {r.id for r in out.rows if r.base_id == "m02_s009"} == {a.id for a in added}
    assert sorted(out.curated) == sorted(r.id for r in kept + added)
    shown = views.scenarios_frame(out).set_index("id")["curated"]
    assert (shown == "yes").all()  # the report marks every curated row
    assert script.calls == []  # every slot was curated or dropped: nothing generated
    assert manifest.counts["curated_rows"] == 12 and manifest.counts["curated_dropped"] == 1
    assert manifest.counts["rows_expected"] == 12 and not out.errors
    # a second export refuses to overwrite the curated file
    assert main(["scenarios", "export", "--benchmark", "tiny"]) == 2
    assert "pass --force to replace it" in capsys.readouterr().err


def test_only_missing_slots_are_generated(generated, script):
    path = curated_source("tiny")
    only = [r for r in scenarios_file(generated).rows if r.base_id == "m01_s001"]
    write_yaml_model(path, CuratedScenarios(rows=only))
    rerun(generated, script)
    # m02's slots replay from the cache; m01's second slot is asked anew, told of the curated one
    (asked,) = [r for r in script.calls_to("gen") if r.schema_name == "ScenarioDraft"]
    assert number_of(asked) == 2 and "keeps its honest assessment" in asked.messages[0]["content"]
    assert only[0].persona in asked.messages[0]["content"]
    out = scenarios_file(generated)
    assert [r for r in out.rows if r.base_id == "m01_s001"] == only
    assert len(out.rows) == 12 and out.curated == sorted(r.id for r in only)


def test_a_missing_variant_is_an_error_never_invented(generated, script):
    path = curated_source("tiny")
    rows = [r for r in scenarios_file(generated).rows if r.base_id == "m01_s001"][:2]
    write_yaml_model(path, CuratedScenarios(rows=rows, dropped=["m01_s002", "m02_s001",
                                                                 "m02_s002"]))
    generated.write_params(generation={"demographics": {"age": AGES}},
                           run={"max_error_rate": 1.0})
    rerun(generated, script)
    out = scenarios_file(generated)
    assert [r.id for r in out.rows] == [r.id for r in rows]
    (error,) = out.errors
    assert error.base_id == "m01_s001" and error.demographic == {"age": "retiree"}
    assert "curated base scenario has no row for this profile" in error.reason


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda r: r.model_copy(update={"id": "m07_s001_v01", "metric_id": "m07",
                                        "base_id": "m07_s001"}), "rows[0].metric_id"),
        (lambda r: r.model_copy(update={"demographic": {"age": "toddler"}}),
         "rows[0].demographic"),
    ],
)
def test_a_curated_row_that_does_not_fit_names_the_file_and_field(generated, script, edit, field):
    path = curated_source("tiny")
    write_yaml_model(path, CuratedScenarios(rows=[edit(scenarios_file(generated).rows[0])]))
    with pytest.raises(ConfigError) as err:
        rerun(generated, script)
    assert str(path) in str(err.value) and field in str(err.value)


def test_generator_arms_never_read_the_curated_file(generated, script):
    path = curated_source("tiny")
    path.write_text(yaml.safe_dump({"rows": [], "dropped": ["m01_s001"]}))
    generated.write_params(generation={"demographics": {"age": AGES}},
                           validation={"generator_bias": ["gen"], "targets": ["target-a"]})
    gen_metrics.run(generated.params_path, "tiny", arm="generator/gen",
                    provider_factory=script.factory())
    gen_scenarios.run(generated.params_path, "tiny", arm="generator/gen",
                      provider_factory=script.factory())
    arm = scenarios_file(generated, "generator/gen")
    assert any(r.base_id == "m01_s001" for r in arm.rows) and arm.curated == []
