"""The `pressurebench` command line and what its commands compute before anything runs.

`cli` is the entry point (`pressurebench = pressurebench.commands.cli:main`); `arm` is
`pressurebench arm plan`, which DVC also runs on its own (`python -m pressurebench.commands.arm`);
`preflight` checks keys and endpoints, `cost_forecast` and `time_forecast` forecast the calls,
tokens, cost and time of a run, and `sample_size` sizes a study: how many scenarios and labels
it needs.
"""

from .. import lazy_face

FACE = {
    "main": "cli",
}
__getattr__, __dir__ = lazy_face(__name__, FACE)
