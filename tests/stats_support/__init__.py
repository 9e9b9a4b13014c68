"""Synthetic score data with known truth, and the coverage study built on it (tests and perf)."""
