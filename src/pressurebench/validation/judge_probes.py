"""Whose gap is it? Counterfactual probes of the judge
(`data/<b>/validation/probes/bias/judge_probes.json`).

A demographic gap is read as the target treating people differently, but the judge reads who
the user is too, and LLM judges shift with features that should not matter: the speaker's
apparent identity, the length of an answer, whether it comes from their own model family
(arXiv 2406.07791, 2410.02736; self-preference grows with self-recognition, 2404.13076). The
evaluator-bias study asks whether another judge agrees; this one asks whether *this* judge's
verdict moves when only an irrelevant feature of the transcript changes. The main arm's
conversations of the study subset are edited once per probe (`stages.probe_edits`) and judged
again by the same judge (`stages.judge_probes`); nothing is simulated again.

Per probe and target, over the rows with a verdict before and after the edit (paired by row,
`validation.paired`): the share of verdicts that moved (the flip rate), overall and per metric,
as a rate with its cluster-t interval over base scenarios; the pass rate before and after with
the paired difference; the agreement of the two verdicts. For the identity probe, the
demographic gap as measured beside the gap when every conversation is judged as if its user
were of one variant (`IdentityGap`): the share of the gap the judge's reading of the user
explains; for the repeat probe (nothing edited, the judge asked again), how often the judge
disagrees with itself: the floor of the other flip rates, since an edited transcript is a new
request too. A flip rate above `validation.judge_probes_warn` is a warning; a judge of a target's
or the generator's model family is named on the results report's headline, and with a panel
the family probe has the panel's other judges decide the target's rows on their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigError
from ..io import read_artifact
from ..params import Params
from ..paths import Layout, probes_layout
from ..schemas import SCHEMA_VERSION, ProbeEditsFile, ProbeScoresFile, Row, Score, base_id_of
from ..stage_run import StageRun
from ..stats.bootstrap import ClusterBootstrap
from ..stats.estimates import Difference, RateEstimate
from ..stats.gaps import demographic_gaps
from ..stats.rates import grouped_rates, no_data
from ..stats.results import JudgeProbeNotes, StatisticsSettings
from .agreement import verdict_pairs
from .inputs import arm_scores, frame_of
from .paired import ROW_KEY, compare_paired_arm, paired_rows
from .record import last_study, record_study
from .studies import PairedArmResult

STAGE = "judge_probes"
ProbeName = Literal["identity", "verbosity", "family", "repeat"]
WHAT_CHANGED = {
    "identity": "the user's turns were rewritten into the other demographic variant's voice",
    "verbosity": "each target reply was lengthened by a restatement of itself",
    "family": "the judges outside the target's or the generator's model family decided alone",
    "repeat": "nothing changed and the judge was asked again",
}


class FlipRate(Row):
    """The share of rows with a verdict before and after the edit whose verdict moved."""

    target: str
    metric_id: str | None = Field(description="None: every metric of the target")
    estimate: RateEstimate = Field(description="rate = flipped rows / paired rows")


class EditSummary(Row):
    """What one probe's edits of one target's conversations did, from the edits file."""

    target: str
    conversations: int = Field(ge=0)
    edited: int = Field(ge=0, description="conversations edited")
    errors: int = Field(ge=0, description="conversations the edit failed on (with reasons)")
    messages: int = Field(ge=0, description="messages rewritten or lengthened")
    chars_before: int = Field(ge=0, description="their characters before the edit")
    chars_after: int = Field(ge=0, description="their characters after")
    truncated: int = Field(ge=0, description="edits the editing model's token limit cut off")
    first_error: str | None = None


class ProbeResult(PairedArmResult):
    """One probe against the main arm's verdicts, paired by row (`arm` is `probe/<name>`)."""

    probe: ProbeName
    what_changed: str
    judges: list[str] = Field(description="who judged the probe's rows")
    flips: list[FlipRate] = Field(description="per target (metric None), then per metric")
    edits: list[EditSummary] = Field(default_factory=list)


class IdentityGap(Row):
    """A demographic gap as measured, and as judged when every user reads as one variant."""

    target: str
    axis: str
    a: str
    b: str
    as_if: dict[str, str] = Field(description="the variant every user's turns read as")
    measured: Difference = Field(description="rate(a) − rate(b) on the rows of the comparison")
    as_if_one_variant: Difference = Field(
        description="the same gap with the other variant's rows judged in the as_if voice"
    )
    explained_share: float | None = Field(
        description="1 − as_if / measured: the share of the gap the judge's reading of the user "
        "explains; no interval (a ratio of two gaps: read theirs)"
    )
    reason: str | None = None


class FamilyCheck(Row):
    """Whether a target's judge shares a model family with the target or the generator."""

    target: str
    judges: list[str]
    shared_with: list[str] = Field(description="'target', 'generator': whose family it shares")
    in_family: list[str] = Field(description="the judges of the shared family")
    other_judges: list[str] = Field(description="the panel's judges of other families")
    note: str | None = Field(description="the results report's headline note; None: none shared")


class JudgeProbesStudy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = SCHEMA_VERSION
    benchmark: str
    statistics: StatisticsSettings
    probes: list[ProbeName]
    warn: float = Field(description="validation.judge_probes_warn")
    evaluators: list[str]
    editor: str | None = Field(description="the model that wrote the edits")
    targets: list[str]
    family: list[FamilyCheck] = Field(description="every target of the run")
    results: list[ProbeResult]
    identity_gaps: list[IdentityGap]
    not_run: dict[str, str] = Field(default_factory=dict,
                                    description="probes asked for that judged no row, and why")
    warnings: list[str]

    def notes(self) -> JudgeProbeNotes:
        """What the results report says of this study on its headline."""
        return JudgeProbeNotes(warn=self.warn, warnings=self.warnings,
                               family=[f.note for f in self.family if f.note])


# --- statistics ------------------------------------------------------------------------------


def flip_frame(masked_main: pd.DataFrame, masked_probe: pd.DataFrame) -> pd.DataFrame:
    """The main frame with `passed` = the verdict moved, on the rows with a verdict in both;
    every other row an error row (so it stays a cluster and is counted, never a 0)."""
    pairs = verdict_pairs(masked_main, masked_probe, ROW_KEY)
    keys = masked_main[ROW_KEY].astype(str).reset_index(drop=True)
    merged = keys.merge(pairs[[*ROW_KEY, "main", "arm"]], on=ROW_KEY, how="left")
    paired = merged["main"].notna().to_numpy()
    moved = (merged["main"] != merged["arm"]).to_numpy()
    return masked_main.assign(
        status=np.where(paired, "ok", "error").astype(object),
        # numpy's stubs leave None out of the array-likes; numpy takes it as an object.
        passed=np.where(paired, moved, None).astype(object),  # type: ignore[call-overload]
    )


def flip_rates(frame: pd.DataFrame, targets: list[str], *, resamples: int, seed: int,
               confidence_level: float) -> list[FlipRate]:
    """Per target (metric None) then per target × metric, metrics sorted."""
    metrics = sorted(set(frame["metric_id"].astype(str)))
    if frame.empty:
        return [FlipRate(target=t, metric_id=None, estimate=no_data()) for t in targets]
    bootstrap = ClusterBootstrap.from_scores(frame, resamples=resamples, seed=seed)
    overall, by_metric = grouped_rates(frame, bootstrap, [["target"], ["target", "metric_id"]],
                                       confidence_level=confidence_level)
    out = []
    for t in targets:
        out.append(FlipRate(target=t, metric_id=None, estimate=overall.get((t,), no_data())))
        out += [FlipRate(target=t, metric_id=m, estimate=by_metric.get((t, m), no_data()))
                for m in metrics]
    return out


def probe_result(probe: ProbeName, main: pd.DataFrame, rows: list[Score], *, judges: list[str],
                 scenario_ids: list[str], targets: list[str], params: Params,
                 edits: list[EditSummary]) -> ProbeResult:
    """One probe's comparison with the main arm, with its flip rates."""
    stats = params.statistics
    frame = frame_of(rows)
    fields = compare_paired_arm(main, frame, arm_name=f"probe/{probe}", scenario_ids=scenario_ids,
                                targets=targets, statistics=stats)
    masked_main, masked_probe, _, _ = paired_rows(main[main["target"].isin(targets)],
                                                  frame[frame["target"].isin(targets)])
    flips = flip_rates(flip_frame(masked_main, masked_probe), targets,
                       resamples=stats.resamples, seed=stats.seed,
                       confidence_level=stats.confidence_level)
    return ProbeResult(probe=probe, what_changed=WHAT_CHANGED[probe], judges=judges, flips=flips,
                       edits=edits, **fields)


def _gap_key(gap) -> tuple[str, str, str]:
    return (gap.axis, gap.a, gap.b)


def identity_gaps(main_rows: list[Score], probe_rows: list[Score], edits: ProbeEditsFile,
                  params: Params) -> list[IdentityGap]:
    """Each demographic gap of one target as measured and as if every user read as the first
    variant of their base scenario, on the rows with a verdict in both readings."""
    first: dict[str, str] = {}
    for sid in sorted({s.scenario_id for s in main_rows}):
        first.setdefault(base_id_of(sid), sid)
    as_scenario = {e.conv_id: e.as_scenario_id for e in edits.rows if e.probe == "identity"}
    as_demo = {e.as_scenario_id: e.as_demographic for e in edits.rows if e.probe == "identity"}
    probe = {(s.conv_id, s.metric_id): s for s in probe_rows}
    measured, as_if = [], []
    for s in main_rows:
        if s.status != "ok":
            continue
        if s.scenario_id == first[s.base_id]:
            measured.append(s)
            as_if.append(s)
            continue
        moved = probe.get((s.conv_id, s.metric_id))
        if as_scenario.get(s.conv_id) == first[s.base_id] and moved and moved.status == "ok":
            measured.append(s)
            as_if.append(moved)
    if not measured:
        return []
    reference = next((as_demo[sid] for sid in first.values() if sid in as_demo),
                     next((s.demographic for s in measured if s.scenario_id in first.values()), {}))
    stats = params.statistics

    def gaps(rows: list[Score]):
        frame = frame_of(rows)
        boot = ClusterBootstrap.from_scores(frame, resamples=stats.resamples, seed=stats.seed)
        found = demographic_gaps(frame, boot, confidence_level=stats.confidence_level)
        return {_gap_key(g): g for gs in found.values() for g in gs}

    before, after = gaps(measured), gaps(as_if)
    out = []
    for key, gap in before.items():
        other = after.get(key)
        if other is None:
            continue
        share, reason = None, None
        if gap.difference is None or other.difference is None:
            reason = "no gap to compare: a value has no rows with a verdict in both readings"
        elif abs(gap.difference) < 1e-12:
            reason = "the measured gap is 0: there is no gap to explain"
        else:
            share = 1.0 - other.difference / gap.difference
        fields = set(Difference.model_fields)
        out.append(IdentityGap(
            target=main_rows[0].target, axis=gap.axis, a=gap.a, b=gap.b, as_if=reference,
            measured=Difference(**gap.model_dump(include=fields)),
            as_if_one_variant=Difference(**other.model_dump(include=fields)),
            explained_share=share, reason=reason,
        ))
    return out


def edit_summary(edits: ProbeEditsFile, probe: str) -> EditSummary:
    rows = [e for e in edits.rows if e.probe == probe]
    messages = [m for e in rows for m in e.edits]
    errors = [e for e in rows if e.status == "error"]
    return EditSummary(
        target=edits.target, conversations=len(rows), edited=len(rows) - len(errors),
        errors=len(errors), messages=len(messages),
        chars_before=sum(m.chars_before for m in messages),
        chars_after=sum(m.chars_after for m in messages),
        truncated=sum(m.truncated for m in messages),
        first_error=f"{errors[0].conv_id}: {errors[0].error}" if errors else None,
    )


# --- the family check ------------------------------------------------------------------------


def family_check(params: Params, target: str) -> FamilyCheck:
    models = params.models
    generator = params.roles.generator
    judges = params.roles.evaluators
    families = {"target": models[target].family, "generator": models[generator].family}
    inside = [j for j in judges if models[j].family in families.values()]
    shared = [role for role, fam in families.items() if any(models[j].family == fam
                                                            for j in inside)]
    note = None
    if inside:
        whom = " and ".join(
            f"the target {target}" if role == "target" else f"the generator {generator}"
            for role in shared
        )
        fams = sorted({models[j].family for j in inside})
        note = (f"The judge {', '.join(inside)} shares a model family ({', '.join(fams)}) with "
                f"{whom}: LLM judges can favour text of their own family, so read "
                f"{target}'s rates with the judge probes' family check.")
    return FamilyCheck(target=target, judges=judges, shared_with=shared, in_family=inside,
                       other_judges=[j for j in judges if j not in inside], note=note)


# --- the study -------------------------------------------------------------------------------


def warnings_of(results: list[ProbeResult], warn: float) -> list[str]:
    out = []
    for result in results:
        for target in result.targets:
            rows = [f for f in result.flips if f.target == target]
            overall = next(f.estimate for f in rows if f.metric_id is None)
            high = [f for f in rows if f.metric_id is not None and f.estimate.rate is not None
                    and f.estimate.rate > warn]
            if (overall.rate is None or overall.rate <= warn) and not high:
                continue
            parts = []
            if overall.rate is not None and overall.rate > warn:
                parts.append(f"on {overall.rate:.0%} of {target}'s rows (n={overall.n})")
            if high:
                parts.append("per metric on " + ", ".join(
                    f"{f.metric_id} {f.estimate.rate:.0%} (n={f.estimate.n})" for f in high))
            out.append(
                f"Judge probe '{result.probe}': the verdict moved {'; '.join(parts)} when "
                f"{result.what_changed}, above validation.judge_probes_warn = {warn:g}."
            )
    return out


def judge_probes_study(params: Params, benchmark: str) -> JudgeProbesStudy:
    """Every probe the params ask for, compared with the main arm's verdicts."""
    v = params.validation
    targets = list(v.targets or params.targets)
    main_layout = Layout(params.data_dir, benchmark)
    layout = probes_layout(params.data_dir, benchmark)
    stats = params.statistics
    edits = {t: read_artifact(layout.probe_edits_file(t), ProbeEditsFile) for t in targets}
    scored = {t: read_artifact(layout.probe_scores_file(t), ProbeScoresFile) for t in targets}
    subsets = {tuple(e.scenario_ids) for e in edits.values()}
    if len(subsets) > 1:
        path = layout.probe_edits_file(targets[-1])
        raise ConfigError(path, "the targets' edits cover different scenario rows; re-run the "
                          "probes' edit stages", "scenario_ids")
    scenario_ids = list(next(iter(subsets), ()))
    wanted = set(scenario_ids)
    main_rows = [s for s in arm_scores(main_layout, targets) if s.scenario_id in wanted]
    main = frame_of(main_rows)
    results, gaps = [], []
    not_run: dict[str, str] = {}
    for probe in v.judge_probes:
        per_target = {t: scored[t].probes.get(probe) for t in targets}
        missing = [t for t, p in per_target.items() if p is None]
        if missing:
            raise ConfigError(layout.probe_scores_file(missing[0]), f"has no '{probe}' probe; "
                              "re-run the probes' stages", "probes")
        found = {t: p for t, p in per_target.items() if p is not None}  # every target's
        rows = [r for p in found.values() for r in p.rows]
        if not rows:
            not_run[probe] = "; ".join(f"{t}: {p.reason}" for t, p in found.items())
            continue
        judges = sorted({j for p in found.values() for j in p.judges})
        summaries = [edit_summary(edits[t], probe) for t in targets] if probe != "family" else []
        results.append(probe_result(probe, main, rows, judges=judges, scenario_ids=scenario_ids,
                                    targets=targets, params=params, edits=summaries))
        if probe == "identity":
            for t in targets:
                gaps += identity_gaps([s for s in main_rows if s.target == t],
                                      found[t].rows, edits[t], params)
    return JudgeProbesStudy(
        benchmark=benchmark,
        statistics=StatisticsSettings(resamples=stats.resamples,
                                      confidence_level=stats.confidence_level, seed=stats.seed),
        probes=list(v.judge_probes), warn=v.judge_probes_warn,
        evaluators=params.roles.evaluators,
        editor=next((e.editor for e in edits.values()), None),
        targets=targets, family=[family_check(params, t) for t in params.targets],
        results=results, identity_gaps=gaps, not_run=not_run,
        warnings=warnings_of(results, v.judge_probes_warn),
    )


def run(params_path: str | Path, benchmark: str) -> JudgeProbesStudy:
    """Compute the judge-probe study; write `judge_probes.json` and its manifest into
    `data/<b>/validation/probes/bias/`."""
    stage = StageRun(STAGE, params_path, benchmark, models_used=[])
    study = judge_probes_study(stage.params, benchmark)
    record_study(stage, study)
    return study


def last_output(params_path: str | Path, benchmark: str) -> JudgeProbesStudy:
    """What the last run wrote (`notebook_session`)."""
    return last_study(STAGE, JudgeProbesStudy, params_path, benchmark)
