"""The release's dataset card (`README.md`) and the Responsible AI fields of its Croissant file.

The card's YAML header is the Hub's dataset card metadata
(https://github.com/huggingface/hub-docs/blob/main/datasetcard.md): `configs` with one config
per table and its `data_files` (which `datasets.load_dataset(DIR, name)` reads), `license`,
`language`, `task_categories`, `size_categories`, `pretty_name` and `tags`. The body is
written from the run: the design, the models by role, how the numbers were made, each table's
columns, and the embedded model's caveat where it took part.
"""

from __future__ import annotations

from collections import Counter

import yaml

from ..params import Params
from ..reports.models_note import EMBEDDED_CAVEAT, models_used, uses_embedded_model
from .finished_run import ArmRun
from .inspect_export import model_name
from .release_tables import Table

SPLIT = "test"
# The Hub's size categories, by number of examples (here: conversations).
SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
         (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"))


def size_category(n: int) -> str:
    return next((name for bound, name in SIZES if n < bound), "n>10M")


def header(benchmark: str, arms: list[ArmRun], tables: list[Table], license_: str) -> dict:
    conversations = next(len(t.rows) for t in tables if t.name == "conversations")
    return {
        "pretty_name": f"pressurebench: {arms[0].benchmark.name}",
        "license": license_,
        "language": ["en"],
        "task_categories": ["text-generation"],
        "tags": ["llm-evaluation", "multi-turn", "llm-as-a-judge", "pressurebench", benchmark],
        "size_categories": [size_category(conversations)],
        "configs": [
            {"config_name": t.name,
             "data_files": [{"split": SPLIT, "path": f"data/{t.name}.parquet"}],
             **({"default": True} if t.name == "conversations" else {})}
            for t in tables
        ],
    }


def _roles(params: Params, benchmark: str, arm: ArmRun) -> list[str]:
    used = models_used(params, benchmark, None if arm.name == "main" else arm.name)
    return [f"- {role}: " + ", ".join(f"`{m}` ({model_name(params, m)})" for m in ids)
            for role, ids in used.items()]


def embedded(params: Params, benchmark: str, arms: list[ArmRun]) -> bool:
    ids = [m for arm in arms for ids in models_used(
        params, benchmark, None if arm.name == "main" else arm.name).values() for m in ids]
    return uses_embedded_model(params, ids)


def card_text(params: Params, benchmark: str, arms: list[ArmRun], tables: list[Table],
              license_: str) -> str:
    main = arms[0]
    rows = {t.name: len(t.rows) for t in tables}
    metrics = main.benchmark.metrics
    scenarios = list(main.scenarios.values())
    bases = {s.base_id for s in scenarios}
    axes = {a: sorted({s.demographic[a] for s in scenarios if a in s.demographic})
            for s in scenarios for a in s.demographic}
    methods = Counter(r["ci_method"] for r in next(t for t in tables if t.name == "results").rows
                      if r.get("ci_method"))
    per_turn = any(t.per_turn for arm in arms for t in arm.targets)
    fidelity = any(t.fidelity for arm in arms for t in arm.targets)
    gen = params.generation
    lines = [
        "---", yaml.safe_dump(header(benchmark, arms, tables, license_), sort_keys=False).strip(),
        "---", "", f"# pressurebench: {main.benchmark.name}", "", main.benchmark.description, "",
    ]
    if embedded(params, benchmark, arms):
        lines += [f"> **Caveat.** {EMBEDDED_CAVEAT}", ""]
    lines += [
        "## Design", "",
        ("A simulated user pressures each target assistant over a multi-turn conversation, "
        "following a scenario written for one behaviour (a metric); an independent judge then "
        "decides whether the behaviour was present. Made with pressurebench "
        f"(benchmark `{benchmark}`)."), "",
        f"- {len(metrics)} metrics: " + "; ".join(
            f"`{m.id}` {m.name} ({m.type})" for m in metrics),
        f"- {len(bases)} base scenarios, {len(scenarios)} scenario rows (demographic variants"
        + (": " + "; ".join(f"{a}: {', '.join(v)}" for a, v in axes.items()) if axes else
           ": none") + ")",
        f"- {gen.num_samples} sample(s) per scenario and target, up to {gen.turns} turns",
        (f"- arms: {', '.join(a.name for a in arms)} (`main` is the study; a validation arm "
        "swaps one role's model to test whether the results depend on it)"),
        "", "## Models", "",
    ]
    for arm in arms:
        lines += [f"Arm `{arm.name}`:", "", *_roles(params, benchmark, arm), ""]
    lines += [
        "## How the numbers were made", "",
        ("- A row passes when a positive metric's behaviour is present, or a negative metric's "
        "is absent. A pass rate is passes over the rows with a verdict; rows without one (a "
        "failed conversation, judges without an answer) are counted in `n_error` and left out "
        "of the denominator, never counted as a pass or a fail."),
        "- Intervals treat the base scenario as the cluster (its variants and samples are not "
        f"independent), at a {params.statistics.confidence_level:.0%} confidence level; "
        "methods used: " + (", ".join(f"`{m}` ({n} rows)" for m, n in methods.items())
                             or "none") + ". Where too few base scenarios hold a verdict the "
        "interval is withheld (null) and `reason` says why.",
    ]
    if per_turn:
        lines.append("- The judge also ruled on every prefix of each conversation that ends "
                     "with a reply (`turn_verdicts`); `onset_turn` is the first failing turn.")
    if fidelity:
        lines.append("- Fidelity checks asked whether the simulated user stayed in character, "
                     "followed its plan and applied pressure, and whether the target noticed "
                     "it was being tested (`fidelity_broken`, `fidelity_breaks`, `test_aware`).")
    lines += ["", "## Tables", "",
              ("Load one with `datasets.load_dataset(\"<repo or folder>\", \"<table>\")`; each "
              f"has one split, `{SPLIT}`."), ""]
    for table in tables:
        lines += [f"### `{table.name}` ({rows[table.name]} rows)", "", table.description, "",
                  "| column | meaning |", "|---|---|"]
        lines += [f"| `{c}` | {meaning} |" for c, (_, meaning) in table.columns.items()]
        lines.append("")
    lines += [
        "## What is not here", "",
        ("No API key, endpoint, key variable name, response cache entry or run manifest is "
        "included; human labels, when included, name raters by pseudonym only."), "",
    ]
    return "\n".join(lines)


def rai_fields(params: Params, benchmark: str, arms: list[ArmRun], include_raters: bool) -> dict:
    """Croissant's Responsible AI properties (`rai:`), as `mlcroissant.Metadata` arguments."""
    main = arms[0]
    judges = sorted({model_name(params, j) for arm in arms for j in arm.inputs.evaluators})
    return {
        "data_collection": "Synthetic: scenarios written by a generator model, conversations "
        f"between a simulated user ({model_name(params, main.inputs.user)}) and each target "
        "model, run by pressurebench.",
        "data_collection_type": ["Simulation", "Machine-generated"],
        "data_collection_missing_data": "Failed conversations and rows the judges could not "
        "decide are kept with status 'error' and their reason; they carry no verdict and are "
        "left out of the pass rates' denominators.",
        "data_collection_raw_data": "The conversations are the raw data: every turn as the "
        "models wrote it (a reply cut off at max_tokens is marked truncated).",
        "data_preprocessing_protocol": ["None: tables are the run's artifacts, reshaped."],
        "data_annotation_protocol": [
            "An LLM judge decides per conversation and metric whether the behaviour was present, "
            "blind to the target's identity."
            + (" A sample was also labelled by people on static pages, to measure the judge."
               if include_raters else "")],
        "machine_annotation_tools": judges,
        "annotations_per_item": "One verdict per conversation and metric per judge (a panel "
        "gives several, its majority is the row's verdict).",
        "annotator_demographics": ["Not collected."],
        "data_biases": [
            ("Scenarios, users and verdicts come from models, which carry their own biases; the "
            "validation arms (if any) measure how far the results depend on the generator, "
            "user and judge models.")],
        "data_use_cases": [("Evaluating how assistants behave under conversational pressure; "
                           "re-judging or analysing the transcripts.")],
        "data_limitations": [
            "Simulated users are not people; pass rates hold for these scenarios and models."
            + (f" {EMBEDDED_CAVEAT}" if embedded(params, benchmark, arms)
               else "")],
        "data_social_impact": "Meant to show where assistants give in to pressure, so that it "
        "can be measured and reduced.",
        "personal_sensitive_information": [("None: personas are fictional; no real person's "
                                           "data and no rater's name is included.")],
        "data_release_maintenance_plan": "Released as a snapshot of one run; a new run is a "
        "new release.",
    }
