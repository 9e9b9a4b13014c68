"""The names written into `ci_method`, one per way an interval can be made.

A reader of results.json sees which intervals came from the bootstrap and
which from a fallback, and why: the name says it.
"""

# Linearized variance over base scenarios within metrics, Student t on base
# scenarios minus metrics (`stats.cluster_t`): rates as Wilson intervals on the
# design-effective n, paired differences on the rate scale, independent ones
# with Welch's df.
CLUSTER_T_WILSON = "cluster-t-wilson"
CLUSTER_T = "cluster-t"
CLUSTER_T_WELCH = "cluster-t-welch"
# Differences of rates as MOVER intervals (Zou & Donner 2008) from the two rates' cluster-t
# Wilson intervals and their correlation (`stats.differences`): paired, and independent on
# Welch's df.
CLUSTER_T_MOVER = "cluster-t-mover-wilson"
CLUSTER_T_WELCH_MOVER = "cluster-t-welch-mover-wilson"
CLUSTER_BOOTSTRAP = "stratified-cluster-bootstrap-percentile"
INDEPENDENT_CLUSTER_BOOTSTRAP = "independent-cluster-bootstraps-percentile"
# The same bootstrap, its percentiles taken at the level whose normal quantile
# is the t quantile on base scenarios minus metrics (Hesterberg's expanded
# percentile interval): the small-design widening cluster-t gives rates.
CLUSTER_BOOTSTRAP_EXPANDED = "stratified-cluster-bootstrap-expanded-percentile"
# A rate with fewer than one base scenario's worth of rows going the other way (every row
# passing included): Wilson interval with each base scenario counted once, and Brown, Cai &
# DasGupta's Poisson bound where one or two scenarios go the other way.
WILSON_CLUSTERS = "wilson-effective-n-clusters"
# One base scenario: nothing to resample, so rows are treated as independent.
# This describes verdict variation within that scenario only and is narrower
# than the truth when its variants and samples are correlated.
WILSON_ROWS_SINGLE_CLUSTER = "wilson-rows-single-cluster"
# Prediction-powered inference, power-tuned as in PPI++ (`stats.ppi`): the judge's rate on
# every row corrected by human labels on a sample, linearized variance over base scenarios
# within metrics, Student t on the Welch–Satterthwaite combination of the judged and the
# labelled base scenarios' degrees of freedom: rates as Wilson intervals on the
# design-effective n, paired differences on the rate scale.
PPI_CLUSTER_T_WILSON = "ppi++-cluster-t-wilson"
PPI_CLUSTER_T = "ppi++-cluster-t"
NEWCOMBE_CLUSTERS = "newcombe-wilson-effective-n-clusters"
# A ratio of two contrasts on the same rows (the share of a gap the judge's reading explains):
# Fieller's interval from their cluster-t variances and covariance (`stats.gap_contrasts`).
FIELLER_CLUSTER_T = "fieller-cluster-t"
NONE = "none"
