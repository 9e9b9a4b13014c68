"""Statistics a reviewer accepts: pass rates, gaps, comparisons and agreement with honest intervals.

The independent unit is the base scenario, nested in a metric: every interval
resamples base scenarios within metrics (`ClusterBootstrap`), seeded, and
every number is reported with the n behind it and None where there is no data.
"""

from .. import lazy_face

FACE = {
    "scores_frame": "score_frames",
    "onsets_frame": "score_frames",
    "turns_frame": "score_frames",
    "load_scores": "score_frames",
    "ImportedTarget": "results",
    "Results": "results",
    "StatisticsSettings": "results",
    "build_results": "results",
    "RateEstimate": "estimates",
    "Difference": "estimates",
    "ClusterBootstrap": "bootstrap",
    "GENERATION_MARGIN": "interval_rules",
    "RULES": "interval_rules",
    "scenarios_for_intervals": "interval_rules",
    "with_margin": "interval_rules",
    "compare_arms": "arm_comparison",
}
__getattr__, __dir__ = lazy_face(__name__, FACE)
