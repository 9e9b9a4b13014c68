"""The comparison artifacts: `generator_bias.json`, `user_model_bias.json` and
`evaluator_bias.json`, each in its study's `data/<b>/validation/<study>/bias/` (`paths`).

Every difference is arm − main. Every rate carries n (rows with a verdict)
and n_error (rows without one, left out of the denominator); a statistic
without data is null with a reason, never 0.
"""

from __future__ import annotations

from pydantic import Field

from ..schemas import GenerationError, Row
from ..stats.arm_comparison import ArmComparison
from ..stats.estimates import Difference, RateEstimate
from ..stats.fidelity import TargetFidelity
from ..stats.pairwise_changes import PairwiseChange
from ..stats.rank_ceiling import NoiseCeiling
from ..stats.rate_contrasts import TestedContrast
from ..stats.results import StatisticsFile
from .agreement import VerdictAgreement
from .multiplicity import MetricDifference, Multiplicity, TargetDifference

MAIN = "main"


class SelfPreference(Row):
    """Does a target of the generator's own family gain more from the generator's benchmark?

    `value` is the mean pass-rate change (arm − main) of the targets in the
    generator's family minus the mean change of the other targets. Positive
    values favour the generator's family. Null, with a reason, when either side
    has no target.
    """

    generator_family: str
    main_generator_family: str | None = Field(
        description="family of the model that wrote the main arm's scenarios: when it is the same, "
        "the check compares the family with itself"
    )
    in_family: list[str] = Field(
        description="targets of the generator's family, with valid rows in both arms"
    )
    out_of_family: list[str] = Field(description="the other targets with valid rows in both arms")
    value: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    reason: str | None = None


class LostBaseScenarios(Row):
    """Base scenarios an arm's generator was asked for but that have no scored row in it.

    They never reach a score row, so no n_error counts them: a base scenario that failed
    to generate, was rejected, or whose rows are all errors leaves the design smaller, and
    an interval may be withheld for it.
    """

    planned: int = Field(ge=0, description="generation.scenarios_per_metric × the arm's metrics")
    scored_main: int = Field(ge=0, description="base scenarios with a valid row in the main arm")
    scored_arm: int = Field(ge=0, description="base scenarios with a valid row in the arm")
    lost: int = Field(ge=0, description="planned − scored_arm")
    generation_errors: list[GenerationError] = Field(
        description="the arm's failed generation steps, each with its base scenario and reason"
    )


class GeneratorArmResult(Row):
    arm: str
    generator: str
    metrics_handwritten: bool = Field(
        description="the metrics are hand-written: the generator wrote only the scenarios"
    )
    targets: list[str]
    rates_main: dict[str, RateEstimate] = Field(description="per target, every main-arm row")
    rates_arm: dict[str, RateEstimate] = Field(description="per target, every arm row")
    comparison: ArmComparison = Field(
        description="arm − main per target, resampled independently (the scenarios differ)"
    )
    shared_metrics: list[str] = Field(
        description="metrics with the same id, type and definition in both arms"
    )
    target_differences: list[TargetDifference] = Field(
        description="the comparison's differences per target, with their Holm-corrected tests"
    )
    metric_differences: list[MetricDifference] = Field(
        description="arm − main per target × shared metric, with their Holm-corrected tests"
    )
    metric_note: str | None = Field(default=None, description="why there are no metric differences")
    multiplicity: Multiplicity
    pairwise_changes: list[PairwiseChange] = Field(
        description="per pair of targets, (t1 − t2 in the arm) − (t1 − t2 in the main arm), "
        "arms resampled independently, with its Holm-corrected test over the arm's pairs")
    pairwise_multiplicity: Multiplicity
    tau_noise_ceiling: NoiseCeiling = Field(
        description="Kendall's tau-b between two halves of the main arm: what an arm that "
        "changes nothing would show (at half the main arm's size)")
    self_preference: SelfPreference
    losses: LostBaseScenarios | None = Field(
        default=None, description="base scenarios the arm lost between generation and scoring"
    )


class GeneratorBiasStudy(StatisticsFile):
    main_generator: str | None = Field(description="the model that wrote the main arm's scenarios")
    targets: list[str]
    arms: list[GeneratorArmResult]


class Pairing(Row):
    """How one target's rows pair up between the main arm and the arm, on the planned subset."""

    target: str
    n_main: int = Field(ge=0, description="main-arm rows of the planned scenarios")
    n_error_main: int = Field(ge=0)
    n_arm: int = Field(ge=0)
    n_error_arm: int = Field(ge=0)
    n_paired: int = Field(ge=0, description="rows with a verdict in both arms: what is compared")
    n_unpaired_main: int = Field(
        ge=0, description="main rows with a verdict whose arm counterpart has none or is missing"
    )
    n_unpaired_arm: int = Field(
        ge=0, description="arm rows with a verdict whose main counterpart has none or is missing"
    )


class PairedArmResult(Row):
    """An arm compared with the main arm row by row, on the planned subset of its rows."""

    arm: str
    targets: list[str]
    n_scenarios: int = Field(ge=0, description="planned scenario rows (all variants of each base)")
    n_base_scenarios: int = Field(ge=0)
    rates_main: dict[str, RateEstimate] = Field(
        description="per target, every main-arm row of the planned scenarios"
    )
    rates_arm: dict[str, RateEstimate] = Field(description="per target, every arm row")
    pairing: list[Pairing]
    comparison: ArmComparison = Field(
        description="arm − main per target on the paired rows, paired cluster-t intervals"
    )
    target_differences: list[TargetDifference] = Field(
        description="the comparison's differences per target, with their Holm-corrected tests"
    )
    metric_differences: list[MetricDifference] = Field(
        description="arm − main per target × metric on the paired rows, with their "
        "Holm-corrected tests"
    )
    multiplicity: Multiplicity
    pairwise_changes: list[PairwiseChange] = Field(
        description="per pair of targets, (t1 − t2 in the arm) − (t1 − t2 in the main arm) on "
        "the paired rows, a paired contrast with its Holm-corrected test over the arm's pairs")
    pairwise_multiplicity: Multiplicity
    tau_noise_ceiling: NoiseCeiling = Field(
        description="Kendall's tau-b between two halves of the main arm's paired rows: what an "
        "arm that changes nothing would show (at half the main arm's size)")
    agreement: list[VerdictAgreement] = Field(
        description="the two arms' verdicts on the paired rows, per target (metric null) and "
        "per target × metric: a difference of rates near 0 can hide verdicts that part"
    )


class UserArmResult(PairedArmResult):
    user_model: str


class GapUnderJudges(Row):
    """One demographic gap of one target under the main judge and under the arm's judge, on
    the same conversations, and how much it moved."""

    target: str
    axis: str
    a: str
    b: str
    main: Difference = Field(description="rate(a) − rate(b) with the main judge's verdicts")
    arm: Difference = Field(description="the same gap with the arm judge's verdicts")
    change: TestedContrast = Field(
        description="arm − main: a paired contrast on the same rows, with its Holm-corrected "
        "test over the arm's gaps")


class EvaluatorArmResult(PairedArmResult):
    evaluator: str
    gaps: list[GapUnderJudges] = Field(
        description="each demographic gap re-estimated under the arm's judge beside the main "
        "judge's, on the paired rows: does the gap survive another judge?")
    gap_multiplicity: Multiplicity


class UserModelFidelity(Row):
    """How faithfully one user model played, per target, on the study's planned rows."""

    arm: str = Field(description="'main' or the arm's name")
    user_model: str | None
    targets: dict[str, TargetFidelity]


class UserModelBiasStudy(StatisticsFile):
    main_user_model: str | None = Field(
        description="the model that played the user in the main arm, from its simulate manifests"
    )
    targets: list[str]
    arms: list[UserArmResult]
    fidelity: list[UserModelFidelity] = Field(
        default_factory=list,
        description="each user model's fidelity side by side (main first), on the planned rows; "
        "empty when the arms' conversations were not checked. A user model that breaks more is "
        "the first suspect for a difference between arms",
    )


class EvaluatorBiasStudy(StatisticsFile):
    main_evaluators: list[str] | None = Field(
        description="the model(s) that judged the main arm, from its evaluate manifests"
    )
    targets: list[str]
    arms: list[EvaluatorArmResult]
