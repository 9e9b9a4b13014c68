"""Tables the stage notebooks show a reader: artifacts flattened into small DataFrames.

Notebooks stay thin by calling these; the formatting choices (what to truncate,
which counts to show first) live here where they are tested.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from ..schemas import (
    USER_BREAKS,
    Benchmark,
    ConversationsFile,
    Cost,
    GenerationError,
    Manifest,
    ScenariosFile,
    ScoresFile,
)
from .notebook_display import MISSING


def _clip(text: str | None, width: int = 160) -> str:
    if text is None:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def metrics_frame(benchmark: Benchmark) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"id": m.id, "type": m.type, "name": m.name, "definition": m.definition,
             "examples": len(m.examples)}
            for m in benchmark.metrics
        ],
        columns=["id", "type", "name", "definition", "examples"],
    )


def scenarios_frame(scenarios: ScenariosFile, width: int = 120) -> pd.DataFrame:
    """One row per scenario; `curated` says which came from the curated file as written."""
    curated = set(scenarios.curated)
    return pd.DataFrame(
        [
            {"id": s.id, "curated": "yes" if s.id in curated else "", "metric": s.metric_id,
             "demographic": ", ".join(f"{k}={v}" for k, v in s.demographic.items()) or "—",
             "persona": _clip(s.persona, width), "latent goal": _clip(s.latent_adversarial_goal, width),
             "landmark turns": ",".join(str(lm.turn) for lm in s.landmarks)}
            for s in scenarios.rows
        ],
        columns=["id", "curated", "metric", "demographic", "persona", "latent goal",
                 "landmark turns"],
    )


def generation_errors_frame(errors: list[GenerationError]) -> pd.DataFrame:
    """Generation failures (a metric slot, a base scenario or a variant), each with its reason;
    what a failure has no value for (a base scenario's demographic) is "—", never "None"."""
    return pd.DataFrame(
        [{"stage": e.stage, "metric_id": e.metric_id or MISSING, "base_id": e.base_id or MISSING,
          "demographic": ", ".join(f"{k}={v}" for k, v in e.demographic.items())
          if e.demographic else MISSING, "reason": e.reason} for e in errors],
        columns=["stage", "metric_id", "base_id", "demographic", "reason"],
    )


def conversations_frame(conversations: ConversationsFile) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"conv_id": c.conv_id, "status": c.status, "turns": c.turns, "ended_by": c.ended_by or "—",
             "error": _clip(c.error, 200) if c.error else ""}
            for c in conversations.rows
        ],
        columns=["conv_id", "status", "turns", "ended_by", "error"],
    )


def status_counts(statuses: list[str], errors: list[str | None]) -> pd.DataFrame:
    """ok / error counts, with error reasons grouped by their leading words."""
    counts = Counter(statuses)
    reasons = Counter(_clip(e, 60) for e in errors if e)
    rows = [{"what": "ok", "count": counts.get("ok", 0)}, {"what": "error", "count": counts.get("error", 0)}]
    rows += [{"what": f"  error: {r}", "count": n} for r, n in reasons.most_common(10)]
    return pd.DataFrame(rows, columns=["what", "count"])


def usage_frame(cost: Cost) -> pd.DataFrame:
    rows = []
    for model_id, u in cost.by_model.items():
        rows.append({"model": model_id, "calls": u.calls, "cached": u.cached_calls, "failed": u.failed_calls,
                     "input tokens": u.input_tokens, "of them cache reads": u.cached_input_tokens,
                     "cache writes": u.cache_write_tokens, "output tokens": u.output_tokens,
                     "cost (USD)": "unknown" if u.cost_usd is None else round(u.cost_usd, 4)})
    return pd.DataFrame(rows, columns=["model", "calls", "cached", "failed", "input tokens",
                                       "of them cache reads", "cache writes", "output tokens",
                                       "cost (USD)"])


def manifest_frame(manifest: Manifest) -> pd.DataFrame:
    rows = [
        ("stage", manifest.stage), ("benchmark", manifest.benchmark), ("target", manifest.target or "—"),
        ("arm", manifest.arm or "main"), ("duration (s)", manifest.duration_s),
        ("cache hits / misses", f"{manifest.cache.get('hits', 0)} / {manifest.cache.get('misses', 0)}"),
        *([("calls recorded / replayed from the record",
            f"{manifest.cache['recorded']} / {manifest.cache.get('replayed_from_record', 0)}")]
          if "recorded" in manifest.cache else []),
        ("cost (USD)", "unknown" if manifest.cost_usd is None else round(manifest.cost_usd, 4)),
        ("params sha256", manifest.params_sha256[:12]),
    ]
    rows += [(f"model version: {m}", ", ".join(v)) for m, v in manifest.model_versions.items()]
    rows += [(f"count: {k}", v) for k, v in manifest.counts.items()]
    return pd.DataFrame(rows, columns=["what", "value"])


def layout_for(params_path: str, benchmark: str, arm: str | None = None):
    """The artifact layout a notebook reads back after its stage ran."""
    from ..params import load_params
    from ..paths import Layout

    return Layout(load_params(params_path).data_dir, benchmark, arm)


def agreement_frame(results) -> pd.DataFrame:
    """`export_tables.agreement_frame` for reading: inter-sample agreement per target and
    pooled, and judge-panel agreement, one row per scope with each statistic and its interval.

    A measure that cannot be computed (one sample, one judge, no variation) shows its reason
    instead of a number; its items are then not counted.
    """
    # Here, not at the top: the stages that show only views import no statistics.
    from .export_tables import agreement_frame as agreement_table_frame
    from .tables import agreement_scopes

    def shown(row: dict | None) -> str:
        if row is None or row["value"] is None:
            return MISSING
        interval = "" if row["ci_low"] is None else f" [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
        return f"{row['value']:.2f}{interval}"

    ja = results.judge_agreement
    rows = []
    for of, target, by in agreement_scopes(agreement_table_frame(results)):
        judged = of == "judges"
        scope = ("judges: " + (", ".join(ja.judges) or MISSING) if judged
                 else f"samples: {target or 'all targets'}")
        counted = [r["items"] for r in by.values() if r["items"] is not None]  # one per scope
        reasons = list(dict.fromkeys(r["reason"] for r in by.values() if r["reason"]))
        method = f"{ja.kappa_method} kappa" if judged else (
            "Fleiss' kappa; Krippendorff's alpha (nominal)")
        rows.append({"scope": scope, "items": int(counted[0]) if counted else MISSING,
                     "all agree": "" if judged else shown(by.get("all agree")),
                     "kappa": shown(by.get("kappa")), "alpha": shown(by.get("alpha")),
                     "note": "; ".join(reasons) or method})
    return pd.DataFrame(rows, columns=["scope", "items", "all agree", "kappa", "alpha", "note"])


def fidelity_not_checked(params_path: str, benchmark: str, arm: str | None = None) -> str:
    """Why a target's scores carry no fidelity checks, said exactly: the arm judges another
    arm's conversations, the params turn the checks off, or the scores predate turning on."""
    from ..arms.inputs import resolve
    from ..params import load_params

    params = load_params(params_path)
    if not resolve(params_path, params, benchmark, arm or None).simulates:
        return ("Not checked in this arm: it re-judges the main arm's conversations, whose "
                "simulated user the main arm's evaluate checks (see its report).")
    if not params.fidelity.check:
        return "Not checked: fidelity.check is off in the params."
    return ("Not checked: these scores were written before fidelity.check was turned on; "
            "`dvc repro` runs evaluate again, with the checks.")


def fidelity_counts(scores: ScoresFile) -> pd.DataFrame:
    """Raw counts of the fidelity checks of one target's conversations: per kind, how many
    conversations were flagged, found clean or undecided (shares are in the aggregate report)."""
    rows = []
    for kind in (*USER_BREAKS, "test_awareness"):
        flagged = clean = undecided = 0
        for row in scores.fidelity or []:
            checks = [c for c in row.checks if c.kind == kind]
            if not checks:
                continue
            if any(c.flagged for c in checks):
                flagged += 1
            elif any(c.status == "error" for c in checks):
                undecided += 1
            else:
                clean += 1
        rows.append({"check": kind.replace("_", " "), "flagged": flagged, "clean": clean,
                     "undecided": undecided})
    return pd.DataFrame(rows, columns=["check", "flagged", "clean", "undecided"])
