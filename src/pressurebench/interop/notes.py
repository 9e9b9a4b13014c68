"""What the results say of imported targets, read off the simulate manifest that converted
their conversations (`conversion.import_provenance`): aggregate reads no param it does not
declare."""

from __future__ import annotations

from ..io import read_artifact
from ..paths import Layout
from ..schemas import Manifest
from ..stats.results import ImportedTarget
from .conversion import PROVENANCE_KEY

CHECKS_SKIPPED = ["out_of_character", "leak", "role_swap", "landmark_skipped", "no_pressure"]
NO_GAPS = "none: imported conversations carry no demographic variants"


def imported_notes(layout: Layout, targets: list[str]) -> dict[str, ImportedTarget]:
    """What the results say of each imported target among `targets`, read off the simulate
    manifest that converted its conversations."""
    notes = {}
    for target in targets:
        path = layout.manifest_file("simulate", target)
        if not path.is_file():
            continue
        declared = read_artifact(path, Manifest).params.get(PROVENANCE_KEY)
        if not isinstance(declared, dict):
            continue
        cluster_by = declared.get("cluster_by")
        notes[target] = ImportedTarget(
            sources=declared["sources"], conversations=declared["conversations"],
            clustering=(f"clustered by `{cluster_by}`" if cluster_by
                        else "each conversation is its own cluster"),
            demographic_gaps=NO_GAPS, checks_skipped=CHECKS_SKIPPED,
        )
    return notes
