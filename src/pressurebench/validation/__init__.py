"""Validation studies: do results hold when another model writes the benchmark or plays the user?

- `arms`: arm names (`generator/<model>`, `user/<model>`) and where their data lives.
- `plan`: each study's plan, with the seeded, cluster-whole subset of scenarios.
- `arm_stages`: the main pipeline stages run for an arm, with its overrides
  (`pressurebench arm ...` on the command line, see `commands`).
- `generator_bias`, `user_model_bias`: the comparisons with the main arm, each
  written to `data/<benchmark>/<study>.json` (`models`) by its `run`.
- `tables`: the comparison artifacts as tables for the study notebooks.

Importing this package imports nothing heavy: the command line loads it at startup.
"""
