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
the paired difference; the agreement of the two verdicts. Two probes are floors: `repeat`
(nothing edited, the judge asked again: how often it disagrees with itself) and `paraphrase`
(the user's turns rewritten in the same voice: what an edit does without the feature). Each
other probe's flip rate is read as its excess over the floors, a paired difference on the same
rows with its interval, Holm-corrected over the study (`probe_floors`). For the identity probe,
each demographic gap as measured beside the gap when every conversation is judged as if its
user were of one variant (`IdentityGap`), the judge's part of the gap (measured − as if, a
paired contrast on the same rows with its cluster-t interval and the p-value that inverts it,
Holm-corrected over the study's judge parts) and the share of the gap that part is (Fieller's
interval, withheld where the gap's interval includes 0; `stats.gap_contrasts`). An excess over
every floor above `validation.judge_probes_warn` and significant after Holm's correction is a
warning, as is a `repeat` flip rate above it; a judge of a target's or the generator's model
family is named on the results report's headline, and with a panel the family probe has the
panel's other judges decide the target's rows on their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from ..errors import ConfigError
from ..io import read_artifact
from ..params import Params
from ..paths import Layout, probes_layout
from ..schemas import ProbeEditsFile, ProbeScoresFile, Row, Score, base_id_of
from ..stats.bootstrap import ClusterBootstrap
from ..stats.estimates import Difference, RateEstimate
from ..stats.gap_contrasts import ShareEstimate, gap_readings
from ..stats.interval_rules import EXPLAINED_SHARE, GAP_CONTRAST
from ..stats.rate_contrasts import TestedContrast, holm_tested
from ..stats.rates import grouped_rates, no_data
from ..stats.results import JudgeProbeNotes, StatisticsFile
from .agreement import verdict_pairs
from .inputs import arm_scores, frame_of
from .multiplicity import Multiplicity, family_of
from .paired import ROW_KEY, compare_paired_arm, paired_rows
from .probe_floors import FLOORS_OF, FlipExcess, flip_excesses, floors_of
from .record import last_study, run_study, statistics_settings
from .studies import PairedArmResult

STAGE = "judge_probes"
JUDGE_PART_FAMILY = ("every judge's part of a demographic gap in this study (every target, axis "
                     "and pair of values) that has a p-value")
ProbeName = Literal["identity", "paraphrase", "verbosity", "family", "repeat"]
WHAT_CHANGED = {
    "identity": "the user's turns were rewritten into the other demographic variant's voice",
    "paraphrase": "the user's turns were rewritten in other words in the same voice",
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
    """A demographic gap as measured, as judged when every user reads as one variant, and the
    judge's part of it: the difference, on the same rows."""

    target: str
    axis: str
    a: str
    b: str
    as_if: dict[str, str] = Field(description="the variant every user's turns read as")
    measured: Difference = Field(description="rate(a) − rate(b) on the rows of the comparison")
    as_if_one_variant: Difference = Field(
        description="the same gap with the other variant's rows judged in the as_if voice"
    )
    judge_part: TestedContrast = Field(
        description="measured − as_if_one_variant: the part of the gap the judge's reading of "
        "the user makes, a paired contrast on the same rows (cluster-t; its p-value inverts the "
        "interval; Holm over the study's judge parts)"
    )
    explained_share: ShareEstimate = Field(
        description="judge_part / measured (= 1 − as_if / measured): the share of the gap that "
        "part is, with Fieller's interval; withheld where the gap's interval includes 0"
    )


class FamilyCheck(Row):
    """Whether a target's judge shares a model family with the target or the generator."""

    target: str
    judges: list[str]
    shared_with: list[str] = Field(description="'target', 'generator': whose family it shares")
    in_family: list[str] = Field(description="the judges of the shared family")
    other_judges: list[str] = Field(description="the panel's judges of other families")
    note: str | None = Field(description="the results report's headline note; None: none shared")


class JudgeProbesStudy(StatisticsFile):
    probes: list[ProbeName]
    warn: float = Field(description="validation.judge_probes_warn")
    evaluators: list[str]
    editor: str | None = Field(description="the model that wrote the edits")
    targets: list[str]
    family: list[FamilyCheck] = Field(description="every target of the run")
    results: list[ProbeResult]
    flip_excess: list[FlipExcess] = Field(
        description="each probe's flip rate over each of its floors (repeat, paraphrase) on the "
        "same rows, per target (metric null) and per target × metric")
    flip_excess_multiplicity: Multiplicity
    identity_gaps: list[IdentityGap]
    judge_part_multiplicity: Multiplicity
    not_run: dict[str, str] = Field(default_factory=dict,
                                    description="probes asked for that judged no row, and why")
    warnings: list[str]

    def notes(self) -> JudgeProbeNotes:
        """What the results report says of this study on its headline."""
        m = self.flip_excess_multiplicity
        return JudgeProbeNotes(
            warn=self.warn, warnings=self.warnings,
            family=[f.note for f in self.family if f.note],
            multiplicity=(f"An excess is a warning when it is significant after Holm's "
                          f"correction over {m.n_comparisons} comparisons ({m.family}; "
                          f"family-wise error rate ≤ {m.alpha:g})") if m.n_comparisons else None,
        )


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
                 edits: list[EditSummary]) -> tuple[ProbeResult, pd.DataFrame]:
    """One probe's comparison with the main arm, with its flip rates, and its flip frame (the
    main arm's rows of `targets`, in order, `passed` = the verdict moved)."""
    stats = params.statistics
    frame = frame_of(rows)
    fields = compare_paired_arm(main, frame, arm_name=f"probe/{probe}", scenario_ids=scenario_ids,
                                targets=targets, statistics=stats)
    masked_main, masked_probe, _, _ = paired_rows(main[main["target"].isin(targets)],
                                                  frame[frame["target"].isin(targets)])
    moved = flip_frame(masked_main, masked_probe)
    flips = flip_rates(moved, targets, resamples=stats.resamples, seed=stats.seed,
                       confidence_level=stats.confidence_level)
    return ProbeResult(probe=probe, what_changed=WHAT_CHANGED[probe], judges=judges, flips=flips,
                       edits=edits, **fields), moved


def identity_gaps(main_rows: list[Score], probe_rows: list[Score], edits: ProbeEditsFile,
                  params: Params) -> list[IdentityGap]:
    """Each demographic gap of one target as measured and as if every user read as the first
    variant of their base scenario, on the rows with a verdict in both readings, with the
    judge's part of the gap (measured − as if) and its share of the gap. The judge parts are
    Holm-corrected over the target's gaps here, and over the whole study's by
    `judge_parts_tested`."""
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
    level = params.statistics.confidence_level
    readings = gap_readings(frame_of(measured), frame_of(as_if), rule=GAP_CONTRAST,
                            share_rule=EXPLAINED_SHARE, confidence_level=level)
    fields = set(Difference.model_fields)
    return [
        IdentityGap(
            target=r.target, axis=r.axis, a=r.a, b=r.b, as_if=reference,
            measured=Difference(**r.first.model_dump(include=fields)),
            as_if_one_variant=Difference(**r.second.model_dump(include=fields)),
            judge_part=tested, explained_share=r.share,
        )
        for r, tested in zip(readings, holm_tested([r.change for r in readings], level))
    ]


def judge_parts_tested(gaps: list[IdentityGap], confidence_level: float
                       ) -> tuple[list[IdentityGap], Multiplicity]:
    """The gaps with their judge parts Holm-corrected over all of them: one family per study."""
    tested = holm_tested([g.judge_part for g in gaps], confidence_level)
    out = [g.model_copy(update={"judge_part": t}) for g, t in zip(gaps, tested)]
    return out, family_of(tested, JUDGE_PART_FAMILY, confidence_level)


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


def _over_floors(excesses: list[FlipExcess], probe: str, target: str, metric: str | None,
                 floors: list[str], warn: float) -> list[FlipExcess] | None:
    """The excesses of `probe` over every floor for one target (and metric), when each is above
    `warn` and significant after Holm's correction; None otherwise."""
    found = [e for e in excesses if (e.probe, e.target, e.metric_id) == (probe, target, metric)
             and e.floor in floors]
    if len(found) < len(floors) or not all(
            e.excess.holm_significant and e.excess.value is not None and e.excess.value > warn
            for e in found):
        return None
    return found


def _raw_warnings(result: ProbeResult, warn: float, why: str) -> list[str]:
    """Warnings on a flip rate itself (`repeat`, or a probe without a floor to read it against)."""
    out = []
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
        out.append(f"Judge probe '{result.probe}': the verdict moved {'; '.join(parts)} when "
                   f"{result.what_changed}, above validation.judge_probes_warn = {warn:g}{why}.")
    return out


def warnings_of(results: list[ProbeResult], excesses: list[FlipExcess], warn: float
                ) -> list[str]:
    """The results report's warnings. An edit (or the family probe) warns on its excess over
    every floor it has (above `warn` and significant after Holm's correction), overall or per
    metric, never on its raw flip rate; `repeat`, the judge disagreeing with itself, warns on
    its flip rate; a probe whose floors were not run warns on its raw rate, saying so."""
    run = {r.probe for r in results}
    out = []
    for result in results:
        floors = floors_of(result.probe, run)
        if result.probe == "repeat":
            out += _raw_warnings(result, warn, ": the judge disagrees with itself, and every "
                                 "other flip rate stands on that floor")
            continue
        if result.probe in ("identity", "verbosity", "paraphrase", "family") and not floors:
            out += _raw_warnings(result, warn, "; no floor (repeat, paraphrase) was run to tell "
                                 "the feature from the judge's own noise")
            continue
        for target in result.targets:
            metrics = [None, *sorted({f.metric_id for f in result.flips
                                      if f.target == target and f.metric_id is not None})]
            above = [(m, found) for m in metrics
                     if (found := _over_floors(excesses, result.probe, target, m, floors, warn))]
            if not above:
                continue
            parts = []
            for metric, found in above:
                where = f"{target}'s rows" if metric is None else f"{target}'s {metric} rows"
                beyond = ", ".join(
                    f"{e.excess.value:+.0%} over {e.floor} ({e.floor_rate:.0%}; "
                    f"Holm p = {e.excess.p_holm:.3g})" for e in found)
                parts.append(f"on {found[0].probe_rate:.0%} of {where} (n={found[0].n}), "
                             f"{beyond}")
            missing = [f for f in FLOORS_OF[result.probe] if f not in floors]
            caveat = (f" The {' and '.join(missing)} floor was not run: part of this may be the "
                      "edit itself, not the feature." if missing else "")
            out.append(f"Judge probe '{result.probe}': the verdict moved {'; '.join(parts)} when "
                       f"{result.what_changed}: more than validation.judge_probes_warn = "
                       f"{warn:g} beyond every floor run, significant after Holm's correction."
                       + caveat)
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
    results: list[ProbeResult] = []
    gaps: list[IdentityGap] = []
    not_run: dict[str, str] = {}
    flips: dict[str, pd.DataFrame] = {}
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
        result, flips[probe] = probe_result(probe, main, rows, judges=judges,
                                            scenario_ids=scenario_ids, targets=targets,
                                            params=params, edits=summaries)
        results.append(result)
        if probe == "identity":
            for t in targets:
                gaps += identity_gaps([s for s in main_rows if s.target == t],
                                      found[t].rows, edits[t], params)
    excesses, excess_family = flip_excesses(flips, targets,
                                            confidence_level=stats.confidence_level)
    gaps, judge_part_family = judge_parts_tested(gaps, stats.confidence_level)
    return JudgeProbesStudy(
        benchmark=benchmark,
        statistics=statistics_settings(params),
        probes=list(v.judge_probes), warn=v.judge_probes_warn,
        evaluators=params.roles.evaluators,
        editor=next((e.editor for e in edits.values()), None),
        targets=targets, family=[family_check(params, t) for t in params.targets],
        results=results, flip_excess=excesses, flip_excess_multiplicity=excess_family,
        identity_gaps=gaps, judge_part_multiplicity=judge_part_family, not_run=not_run,
        warnings=warnings_of(results, excesses, v.judge_probes_warn),
    )


def run(params_path: str | Path, benchmark: str) -> JudgeProbesStudy:
    """Compute the judge-probe study; write `judge_probes.json` and its manifest into
    `data/<b>/validation/probes/bias/`."""
    return run_study(STAGE, params_path, benchmark, judge_probes_study)


def last_output(params_path: str | Path, benchmark: str) -> JudgeProbesStudy:
    """What the last run wrote (`notebook_session`)."""
    return last_study(STAGE, JudgeProbesStudy, params_path, benchmark)
