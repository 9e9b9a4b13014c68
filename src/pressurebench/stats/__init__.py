"""Statistics a reviewer accepts: pass rates, gaps, comparisons and agreement with honest intervals.

The independent unit is the base scenario, nested in a metric: every interval
resamples base scenarios within metrics (`ClusterBootstrap`), seeded, and
every number is reported with the n behind it and None where there is no data.
"""

from .agreement import JudgeAgreement, SampleAgreement, judge_agreement, sample_agreement
from .bootstrap import ClusterBootstrap, percentile_interval
from .coefficients import cohens_kappa, fleiss_kappa, krippendorff_alpha_nominal
from .compare import ArmComparison, ArmDifference, OrderFlip, RankCorrelation, compare_arms
from .estimates import AgreementEstimate, Difference, RateEstimate
from .gaps import DemographicGap, demographic_gaps
from .ranking import Ranking, TargetComparison, TargetRank, compare_targets, rank_probabilities
from .rates import TargetRates, rate_estimate, rates_by, target_rates, within_scenario_rates

__all__ = [
    "AgreementEstimate",
    "ArmComparison",
    "ArmDifference",
    "ClusterBootstrap",
    "DemographicGap",
    "Difference",
    "JudgeAgreement",
    "OrderFlip",
    "RankCorrelation",
    "Ranking",
    "RateEstimate",
    "SampleAgreement",
    "TargetComparison",
    "TargetRank",
    "TargetRates",
    "cohens_kappa",
    "compare_arms",
    "compare_targets",
    "demographic_gaps",
    "fleiss_kappa",
    "judge_agreement",
    "krippendorff_alpha_nominal",
    "percentile_interval",
    "rank_probabilities",
    "rate_estimate",
    "rates_by",
    "sample_agreement",
    "target_rates",
    "within_scenario_rates",
]
