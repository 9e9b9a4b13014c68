"""Validation studies: do results hold when another model writes the benchmark, plays the user
or judges?

Each study reads what the arms' stages wrote (the arms themselves, their names, plans and
inputs, are `pressurebench.arms`):

- `generator_bias`, `user_model_bias`, `evaluator_bias`: the comparisons with the main
  arm, each written to `data/<benchmark>/<study>.json` (`studies`) by its `run`; the last
  two pair rows with the main arm (`paired`);
- `inputs`: reading an arm's scores and what the comparisons compare; `contrast`: the
  resampled differences between arms; `arm_differences`: what every comparison reports of
  an arm against the main arm; `record`: writing a study with its manifest;
- the comparison artifacts as tables for the study notebooks are in `reports.validation_tables`.
"""

from .. import lazy_face

FACE = {
    "GeneratorBiasStudy": "studies",
    "UserModelBiasStudy": "studies",
    "EvaluatorBiasStudy": "studies",
    "last_study": "record",
}
__getattr__, __dir__ = lazy_face(__name__, FACE)
