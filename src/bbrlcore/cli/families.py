"""``bbrl families``: the problem families, their parameters and limits."""

from __future__ import annotations

import argparse

from bbrlcore.mdp import families as F
from bbrlcore.mdp.families._base import fmt


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "families", help="list the problem families and their parameters",
        description="The problem families (bbrlcore.mdp.families): for each, its paper, "
        "whether a test MDP draws its structure, and every parameter with its default, "
        "range and meaning. Write one with `bbrl distribution new FAMILY --param k=v`, or "
        "name it in config.yaml: test: {family: FAMILY, k: v}.")
    p.add_argument("names", nargs="*", metavar="FAMILY", help="only these families")
    p.add_argument("--colosseum", action="store_true",
                   help="list Colosseum's tabular benchmark instances instead: their names "
                   "(Colosseum-<setting>-<family>-<index>), the bbrl distribution each is, "
                   "or what bbrl lacks to express it")
    p.set_defaults(func=_families)


def _instances() -> int:
    from bbrlcore.mdp.families import colosseum_instances as CI

    print("Colosseum's tabular benchmark instances (Conserva & Rauber 2022; gin files under "
          "colosseum/benchmark/benchmark_*/mdp_configs/). A name works wherever a "
          "distribution's does; U + the name is its uniform prior.")
    for setting in CI.SETTINGS.values():
        print(f"\n{setting}:")
        for i in CI.INSTANCES.values():
            if i.setting != setting:
                continue
            if i.problem_params is None:
                what = f"needs {i.needs}"
            else:
                what = "= " + F.get_family(i.family).names(
                    F.get_family(i.family).validate(i.problem_params))[0]
                if i.stochastic:
                    what += " with Colosseum's Beta rewards"
            print(f"  {i.name:30s} {what}")
    return 0


def _families(args: argparse.Namespace) -> int:
    if args.colosseum:
        return _instances()
    specs = [F.get_family(n) for n in args.names] or list(F.FAMILIES.values())
    for k, spec in enumerate(specs):
        default = F.make(spec.name)
        drawn = not isinstance(default.test, F.FDMDistribution)
        t = default.test
        print(("\n" if k else "") + f"{spec.name}: {spec.display} ({spec.reference})")
        print(f"  default {default.short_name}: {t.n_states} states, {t.n_actions} actions; "
              + ("structure drawn per test MDP" if drawn else "fixed structure (an FDM)")
              + f"; priors {default.short_name} (accurate), U{default.short_name} "
              "(uniform)")
        for p in spec.params:
            tag = "" if p.name == "size" else f", named {p.tag}<value>"
            print(f"  {p.name:14s} default {fmt(p.default):6s} {p.range_text()}{tag}")
            print(f"  {'':14s} {p.doc}")
    if not args.names:
        print("\nColosseum's benchmark instances: bbrl families --colosseum")
    return 0
