"""The coverage sweeps: how often each interval the package reports covers its truth.

Each sweep simulates benchmarks with known truths over a grid of designs, computes every
interval with the package's own functions, and writes a page under docs/ and, where the
package shows the result beside an interval, its summary under `stats/coverage/`:

- `grid`: every rate, difference and gap over metrics × base scenarios × samples × ICC × rate
  (`make coverage`, docs/interval_coverage.md, `coverage/interval_coverage.json`);
- `stress`: the same intervals in the worlds a real study lives in (`make coverage`, beside
  the grid);
- `capitulation` and `sensitivity`: capitulation bands, curve differences and the fidelity
  sensitivity difference (`make capitulation-coverage`);
- `judge`: judge-corrected rates (`make judge-coverage`, docs/judge_coverage.md).

`python -m pressurebench.stats.sweeps <sweep> [options]` runs one. Nothing else in the package
imports this folder: the stages read only the summaries it writes.
"""
