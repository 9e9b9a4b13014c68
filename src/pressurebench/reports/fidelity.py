"""The "Simulated user" section of the results report, and the warning at its top.

Every pass rate rests on the simulated user playing its part. This section shows,
per target, how often the user broke (out of character, leaked its instructions,
swapped roles or echoed the assistant, skipped a landmark, applied no pressure),
how often the target said it suspected a test, and each headline pass rate again
without the broken conversations, with the difference and its interval.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from ..schemas import USER_BREAKS
from ..stats.estimates import RateEstimate
from ..stats.fidelity import FidelityResults
from ..stats.results import Results
from .export_tables import FIDELITY_KIND_LABELS, fidelity_frame, rate_estimate
from .tables import (
    MISSING,
    format_difference,
    format_estimate,
    frame_records,
    interval_method,
    rows_or_empty,
)

NOT_CHECKED = (
    "**The simulated user was not checked.** Set `fidelity.check: true` in the params and "
    "re-run evaluate (simulate is not re-run) to see whether it played its part."
)
KIND_LABELS = FIDELITY_KIND_LABELS
BREAK_COLUMNS = ["target", "user model", "any break", *KIND_LABELS.values(), "test awareness",
                 "checks undecided", "found by a rule", "ended early"]
TURN_COLUMNS = ["target", "turn", "user message broke", "target test-aware"]
SENSITIVITY_COLUMNS = ["target", "rate on", "all conversations", "without breaks",
                       "difference [CI]", "CI method", "left out"]


def _cell(est: RateEstimate) -> str:
    if est.rate is None:
        return MISSING
    return f"{format_estimate(est)} (n={est.n}, errors={est.n_error})"


def warnings_markdown(results: Results) -> str:
    """A warning per target whose break share exceeds `fidelity.warn_share`; "" without any."""
    if results.fidelity is None or not results.fidelity.warnings:
        return ""
    lines = "\n".join(f"- {w}" for w in results.fidelity.warnings)
    return (
        "**⚠ The simulated user did not always play its part.** Pass rates below include "
        f"conversations where it broke; see the section Simulated user.\n\n{lines}"
    )


def fidelity_note(results: Results) -> str:
    """Markdown: how to turn the checks on, or what they rest on."""
    fidelity = results.fidelity
    if fidelity is None:
        return NOT_CHECKED
    n = sum(t.any_break.n + t.any_break.n_error for t in fidelity.targets.values())
    undecided = sum(t.any_break.n_error for t in fidelity.targets.values())
    return (
        f"{n} conversations checked ({undecided} undecided: a check the fidelity judges could "
        "not decide and no break found; they count in no share). Shares are conversations "
        "with the break among those checked for it; intervals as for pass rates. The warning "
        f"threshold is fidelity.warn_share = {fidelity.warn_share:g}."
    )


def _shares(results: Results) -> dict[str, dict[tuple[str, str], RateEstimate]]:
    """The rows of `export_tables.fidelity_frame` per target, by (scope, key)."""
    shares: dict[str, dict[tuple[str, str], RateEstimate]] = {}
    for r in frame_records(fidelity_frame(results)):
        shares.setdefault(r["target"], {})[r["scope"], r["key"]] = rate_estimate(r)
    return shares


def break_table(results: Results) -> pd.DataFrame:
    """Per target: the share of conversations with any break and with each kind (the shares of
    `export_tables.fidelity_frame`), and how many checks were undecided, found by a rule or
    ended early."""
    def rows(fidelity: FidelityResults) -> Iterable[list]:
        shares = _shares(results)
        for target, tf in fidelity.targets.items():
            share = shares[target]
            yield [
                target, tf.user_model, _cell(share["any break", "any"]),
                *(_cell(share["kind", k]) for k in USER_BREAKS),
                _cell(share["test awareness", "any"]),
                tf.n_checks_error, tf.n_checks_by_detector, tf.n_ended_early,
            ]

    return rows_or_empty(results.fidelity, BREAK_COLUMNS, rows)


def turn_table(results: Results) -> pd.DataFrame:
    """Per target and turn: the share of user messages that broke and of test-aware replies
    (the per-turn shares of `export_tables.fidelity_frame`)."""
    def rows(fidelity: FidelityResults) -> Iterable[list]:
        shares = _shares(results)
        for target in fidelity.targets:
            share = shares[target]
            turns = [key for scope, key in share if scope in ("turn", "test awareness turn")]
            for turn in dict.fromkeys(turns):
                user, aware = share.get(("turn", turn)), share.get(("test awareness turn", turn))
                yield [target, int(turn), _cell(user) if user else MISSING,
                       _cell(aware) if aware else MISSING]

    return rows_or_empty(results.fidelity, TURN_COLUMNS, rows)


def sensitivity_table(results: Results) -> pd.DataFrame:
    """Per target: each headline pass rate on all conversations and on those without a break."""
    def rows(fidelity: FidelityResults) -> Iterable[list]:
        for target, sens in fidelity.sensitivity.items():
            left_out = f"{sens.n_excluded_broken} broken, {sens.n_excluded_undecided} undecided"
            for name, entry in sens.compared():
                d = entry.difference
                all_rate = MISSING if d.rate_b is None else f"{d.rate_b:.1%} (n={d.n_b})"
                yield [
                    target, name, all_rate, _cell(entry.without_breaks),
                    format_difference(d.difference, d.ci_low, d.ci_high),
                    interval_method(d.ci_method, d.reason), left_out,
                ]

    return rows_or_empty(results.fidelity, SENSITIVITY_COLUMNS, rows)
