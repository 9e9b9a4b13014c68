"""The judge probes' share of a run's model work, from the run's call records.

The judge probes (`validation.judge_probes`) run in the default `dvc repro` only while they
lengthen the cold default run by at most 10%. The default run is bound by the embedded
model's calls (perf/README.md), so a probe's share of the run's calls, prompt tokens and reply
tokens is its share of the cold run's time. This reads every call record of a completed run
(`data/<b>/**/calls.jsonl`), splits the probes' own calls by probe (an edit by its prompt; a
judge call by the edited transcript it reads, from `probe_edits.json`), and prints, per probe,
its calls and tokens as ratios of the rest of the run's.

Run after a run with the probes to be measured switched on (the default params leave
`verbosity` and `paraphrase` out; a scratch copy of a completed run with
`validation.judge_probes` listing them and its probe stages run cold is enough):
    .venv/bin/python perf/judge_probes_cost.py [--data data] [--benchmark pressure-core]
        [--default identity,family,repeat]
Goal: the probes of `--default` together at most 0.10 of the rest of the run by every measure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pressurebench.paths import CALLS, PROBES, study_dir

GOAL = 0.10


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def totals(calls: list[dict]) -> tuple[int, int, int]:
    return (len(calls), sum(c["response"].get("input_tokens") or 0 for c in calls),
            sum(c["response"].get("output_tokens") or 0 for c in calls))


def probe_of(call: dict, edited: dict[str, set[str]]) -> str:
    """Which probe a probe stage's call served: an edit by its prompt, a judge call by the
    edited turns it reads; the repeat probe's asks again (a sample index other than the judge's
    own 0); any other judge call on an original transcript is the family probe's."""
    if call["request"].get("sample"):
        return "repeat"
    text = "\n".join(m["content"] for m in call["request"]["messages"])
    if "as if another person had typed it" in text:
        return "identity"
    if "as the same person would type it" in text:
        return "paraphrase"
    if "Restate this reply of an AI assistant" in text:
        return "verbosity"
    return next((probe for probe, turns in edited.items() if any(t in text for t in turns)),
                "family")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("data"))
    parser.add_argument("--benchmark", default="pressure-core")
    parser.add_argument("--default", default="identity,family,repeat",
                        help="the probes the default params run, comma-separated")
    args = parser.parse_args()
    root = args.data / args.benchmark
    probes_root = study_dir(args.data, args.benchmark, PROBES)
    rest, probe_calls = [], []
    for path in sorted(root.rglob(CALLS)):
        (probe_calls if probes_root in path.parents else rest).extend(records(path))
    if not probe_calls:
        print(f"no call records under {probes_root}: run the probe stages first")
        return 2
    # Verbosity first: its edited replies are its own, while a rewrite may equal its original.
    edited: dict[str, set[str]] = {"verbosity": set(), "identity": set(), "paraphrase": set()}
    for edits in probes_root.rglob("probe_edits.json"):
        for row in json.loads(edits.read_text())["rows"]:
            for edit in row["edits"] if row["status"] == "ok" else []:
                edited[row["probe"]].add(row["transcript"][edit["index"]]["content"])
    by_probe: dict[str, list[dict]] = {}
    for call in probe_calls:
        by_probe.setdefault(probe_of(call, edited), []).append(call)
    base = totals(rest)
    print(f"rest of the run: {base[0]} calls, {base[1]} prompt tokens, {base[2]} reply tokens")
    default = set(args.default.split(","))
    share = [0.0, 0.0, 0.0]
    for probe, calls in sorted(by_probe.items()):
        t = totals(calls)
        ratios = [x / y if y else 0.0 for x, y in zip(t, base)]
        print(f"{probe:<10} {t[0]:>5} calls ({ratios[0]:.3f}), {t[1]:>7} prompt tokens "
              f"({ratios[1]:.3f}), {t[2]:>6} reply tokens ({ratios[2]:.3f})")
        if probe in default:
            share = [s + r for s, r in zip(share, ratios)]
    print(f"default probes ({args.default}): calls {share[0]:.3f}, prompt tokens {share[1]:.3f}, "
          f"reply tokens {share[2]:.3f} of the rest of the run; goal <= {GOAL:.2f}")
    return 0 if max(share) <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
