"""Human labels of judged conversations: how often is the judge right?

Every pass rate rests on an LLM judge's booleans, so a study needs people to
label a sample of the judged conversations. The workflow needs no server:

1. `pressurebench labels export` draws a seeded, stratified sample of score rows
   (`sampling`), shows each as the judge saw it (`judged`) and writes static
   pages a rater opens in any browser (`page`), plus a manifest of the items
   with the fields the rater must not see (`export`).
2. The rater answers present / absent / unsure per item and downloads a labels
   file (JSONL or CSV).
3. `pressurebench labels import` validates the file against the current data and
   keeps it under `<labels.dir>/<benchmark>/` (`store`).
4. `joined` joins the labels with the judges' verdicts for the analysis.

Where the evaluate stage checked fidelity, one item per checked conversation also
shows the simulated user's brief and asks whether the user broke (and whether the
target showed test awareness), one question per kind the checks decided (`fidelity`),
so the checks are measured against people as the judge is.

Raters are blind as the judge is: a page carries the metric's definition and
the user/assistant turns, never the target, the metric's name or type, or any
verdict. Conversation ids name their target, so pages and labels files refer
to an item by a key derived from it (`judged.item_key`).
"""

from .. import lazy_face

FACE = {
    "write_export": "export",
    "labels_folder": "store",
    "import_labels": "store",
}
__getattr__, __dir__ = lazy_face(__name__, FACE)
