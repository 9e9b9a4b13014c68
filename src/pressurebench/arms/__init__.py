"""Arms: the main run and every validation arm, named, planned and resolved in one place.

An arm is the main run with at most one role (generator, user or evaluator) played by
another model. Stages run every arm through the same code and ask the arm what it does
(`ArmInputs`: where it reads and writes, which models play, which rows it plays or judges);
no stage names a study.

- `naming`: arm names (`generator/<model>`, `user/<model>`, `evaluator/<model>`), the
  studies, and where an arm's data lives;
- `study_plan`: each study's plan, with the seeded, cluster-whole subset of scenario rows;
- `inputs`: what a stage runs on in an arm, resolved once by one inheritance rule, and the
  params each stage reads there (`declared_params`).

`pressurebench arm plan` (`commands.arm`) writes the plans; the studies that compare arms with
the main run are in `pressurebench.validation`.
"""

from .. import lazy_face

FACE = {
    "resolve": "inputs",
    "load_plan": "study_plan",
}
__getattr__, __dir__ = lazy_face(__name__, FACE)
