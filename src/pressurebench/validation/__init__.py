"""Validation studies: do results hold when another model writes the benchmark, plays the user
or judges?

- `arms`: arm names (`generator/<model>`, `user/<model>`, `evaluator/<model>`) and where
  their data lives;
  what an arm runs on is resolved in `pressurebench.arm_inputs`, and its stages are
  the main ones run with `arm=` (`pressurebench run STAGE --arm ...`).
- `plan`: each study's plan, with the seeded, cluster-whole subset of scenarios
  (`pressurebench arm plan`, see `commands`).
- `generator_bias`, `user_model_bias`, `evaluator_bias`: the comparisons with the main
  arm, each written to `data/<benchmark>/<study>.json` (`models`) by its `run`; the last
  two pair rows with the main arm (`paired`).
- the comparison artifacts as tables for the study notebooks are in `reports.validation_tables`.

Importing this package imports nothing heavy: the command line loads it at startup.
"""
