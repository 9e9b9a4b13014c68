"""`pressurebench arm ...`: the stages of validation arms, as DVC runs them.

pressurebench arm plan --benchmark B
pressurebench arm gen_metrics --benchmark B --arm generator/G
pressurebench arm gen_scenarios --benchmark B --arm generator/G
pressurebench arm simulate --benchmark B --arm generator/G|user/U --target T
pressurebench arm evaluate --benchmark B --arm generator/G|user/U --target T
"""

from __future__ import annotations

import argparse

DEFAULT_PARAMS = "params/pipeline.yaml"
ARM_HELP = "generator/<model id> or user/<model id>"


def add_arm_parser(sub) -> None:
    """Register `arm` and its stage subcommands on the top-level subparsers."""
    p = sub.add_parser(
        "arm", help="run one stage of a validation arm (generator or user-model bias)"
    )
    stages = p.add_subparsers(dest="arm_stage", required=True)
    specs = {
        "plan": (
            "write both validation studies' plans (arms, targets, seed, scenario subset)",
            False,
            False,
        ),
        "gen_metrics": ("the arm's metrics, by its generator", True, False),
        "gen_scenarios": ("the arm's scenarios, by its generator", True, False),
        "simulate": ("one target's conversations in the arm", True, True),
        "evaluate": ("one target's scores in the arm, by the main evaluator", True, True),
    }
    for name, (help_text, with_arm, with_target) in specs.items():
        q = stages.add_parser(name, help=help_text)
        q.add_argument("--params", default=DEFAULT_PARAMS)
        q.add_argument("--benchmark", required=True)
        if with_arm:
            q.add_argument("--arm", required=True, help=ARM_HELP)
        if with_target:
            q.add_argument("--target", required=True)
        q.set_defaults(func=run_arm_command)


def run_arm_command(args: argparse.Namespace) -> int:
    from . import arm_stages

    if args.arm_stage == "plan":
        plans = arm_stages.run_plan(args.params, args.benchmark)
        for study, plan in plans.items():
            rows = "" if plan.scenario_ids is None else f", {len(plan.scenario_ids)} scenario rows"
            arms = ", ".join(a.name for a in plan.arms) or "no arms"
            print(
                f"ok  {args.benchmark} {study} plan: {arms}; "
                f"targets {', '.join(plan.targets)}{rows}"
            )
        return 0
    run = {
        "gen_metrics": arm_stages.run_gen_metrics,
        "gen_scenarios": arm_stages.run_gen_scenarios,
        "simulate": arm_stages.run_simulate,
        "evaluate": arm_stages.run_evaluate,
    }[args.arm_stage]
    extra = (args.target,) if hasattr(args, "target") else ()
    manifest = run(args.params, args.benchmark, args.arm, *extra)
    counts = ", ".join(f"{k}={v}" for k, v in manifest.counts.items())
    where = "/".join(x for x in (args.benchmark, args.arm, manifest.target) if x)
    print(f"ok  {args.arm_stage} {where}: {counts}")
    return 0
