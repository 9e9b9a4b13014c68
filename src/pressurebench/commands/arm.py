"""`pressurebench arm plan`: each validation study's plan, as DVC runs it.

    pressurebench arm plan --benchmark B [--study generator|user|evaluator|probes]

An arm's stages are the main stages run on the arm: `pressurebench run STAGE --arm
generator/<G>|user/<U>|evaluator/<E>`, or their notebooks with the `arm` parameter (`arms.inputs`).
"""

from __future__ import annotations

import argparse

DEFAULT_PARAMS = "params/pipeline.yaml"


def add_arm_parser(sub) -> None:
    """Register `arm plan` on the top-level subparsers."""
    p = sub.add_parser("arm", help="plan the validation studies (generator, user-model and evaluator bias)")
    stages = p.add_subparsers(dest="arm_stage", required=True)
    q = stages.add_parser(
        "plan", help="write every validation study's plan (arms, targets, seed, scenario subset)"
    )
    q.add_argument("--params", default=DEFAULT_PARAMS,
                   help="the params file: models, roles, targets, benchmarks and every setting")
    q.add_argument("--benchmark", required=True,
                   help="one of the params' `benchmarks`; it names the folders the command writes")
    q.add_argument("--study", choices=("generator", "user", "evaluator", "probes"),
                   help="write this study's plan only (default: every study's)")
    q.set_defaults(func=run_plan_command)


def run_plan_command(args: argparse.Namespace) -> int:
    from ..arms.study_plan import PLANNED_STUDIES, write_plans
    from ..errors import ConfigError
    from ..params import load_params

    params = load_params(args.params)
    if args.benchmark not in params.benchmarks:
        raise ConfigError(args.params, f"'{args.benchmark}' is not one of the benchmarks", "benchmarks")
    studies = [args.study] if args.study else PLANNED_STUDIES
    for study, plan in write_plans(params, args.benchmark, studies).items():
        rows = "" if plan.scenario_ids is None else f", {len(plan.scenario_ids)} scenario rows"
        arms = ", ".join(a.name for a in plan.arms) or "no arms"
        print(f"ok  {args.benchmark} {study} plan: {arms}; targets {', '.join(plan.targets) or 'none'}{rows}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m pressurebench.commands.arm plan ...`, as DVC runs it: the same command
    without the rest of the command line's imports (a stage depends on what it imports)."""
    import sys

    from ..errors import PressurebenchError, reported

    parser = argparse.ArgumentParser(prog="python -m pressurebench.commands.arm")
    add_arm_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["arm", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except (PressurebenchError, KeyboardInterrupt) as exc:
        return reported(exc)


if __name__ == "__main__":
    raise SystemExit(main())
