"""What DVC's pipeline starts: the command every stage calls, and what a stage process needs.

`python -m pressurebench.pipeline.notebook_run NOTEBOOK OUT [-p name value ...]` runs one
stage notebook (papermill, in this process) and renders it to HTML; `notebook_session` is the
first cell of every stage notebook; `stage_failure` and `native_crash` say what a failed stage
leaves behind; `code_deps` writes the code each stage command runs, for DVC.
"""

from .. import lazy_face

FACE = {
    "start": "notebook_session",
    "stage": "notebook_session",
    "run_notebook": "notebook_run",
    "run_stage_process": "notebook_run",
    "stop_with_command": "notebook_run",
    "EXIT_NATIVE_CRASH": "native_crash",
    "crash_message": "native_crash",
    "signal_name": "native_crash",
    "embedded_models": "native_crash",
}
__getattr__, __dir__ = lazy_face(__name__, FACE)
