"""Statistics a reviewer accepts: pass rates, gaps, comparisons and agreement with honest intervals.

The independent unit is the base scenario, nested in a metric: every interval
resamples base scenarios within metrics (`ClusterBootstrap`), seeded, and
every number is reported with the n behind it and None where there is no data.
"""
