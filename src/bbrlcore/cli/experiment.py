"""``bbrl experiment new|show``: draw and inspect test sets."""

from __future__ import annotations

import argparse

from bbrlcore import protocol as E
from bbrlcore.cli._io import IO
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("experiment", help="draw and inspect test sets")
    s = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    new = s.add_parser("new", help="draw a test set of N MDPs from a test distribution")
    new.add_argument("--test", required=True, help="test distribution: a built-in or problem "
                     "family's name (GC, DeepSea-20), a .dat or .parquet (bbrl distribution "
                     "new writes a family's)")
    new.add_argument("--n-mdps", type=int, default=500, help="number of test MDPs (500)")
    new.add_argument("--gamma", type=float, default=0.95, help="discount factor (0.95)")
    h = new.add_mutually_exclusive_group()
    h.add_argument("--horizon", type=int, help="horizon T (250): the steps of one "
                   "continuing interaction (up to 10^8; beyond 10,000 steps the run tables "
                   "record checkpoints instead of every step's reward)")
    h.add_argument(
        "--epsilon",
        type=float,
        help="derive T = ceil(log(eps (1-gamma)/Rmax) / log gamma) (paper §3.2)",
    )
    h.add_argument("--episodes", type=int, metavar="E",
                   help="an episodic interaction of E episodes (T = E x H), each from the "
                        "initial state, the agent keeping what it learned")
    new.add_argument("--episode-length", type=int, metavar="H",
                     help="steps of an episode (with --episodes; default: the family's "
                          "natural episode length, e.g. N for DeepSea-N)")
    new.add_argument("--checkpoint-every", type=int, metavar="N",
                     help="the run tables record the cumulative reward every N steps (T a "
                          "multiple of N; default: none up to 10,000 steps, else at most "
                          "10,000 checkpoints; episodic: every episode end)")
    new.add_argument("--seed", type=int, default=0, help="seed of the test set (0)")
    new.add_argument("--label", help="what its experiments' names end with after '@' "
                     "(default: the setting, e.g. E10000xH10 or T1000000; none for a "
                     "continuing interaction without checkpoints)")
    new.add_argument("-o", "--output", required=True, help="output .parquet")
    new.set_defaults(func=_new, io=IO(inputs=("test",), outputs=("output",)))

    val = s.add_parser(
        "validation", help="draw the validation set of a test set (same distribution, γ "
        "and T; its seed derived from the test set's: never one of its MDPs)")
    val.add_argument("test_set", metavar="TEST_SET", help="the test set (.parquet)")
    val.add_argument("--n-mdps", type=int, default=100,
                     help="number of validation MDPs (100)")
    val.add_argument("-o", "--output", required=True, help="output .parquet")
    val.set_defaults(func=_validation, io=IO(inputs=("test_set",), outputs=("output",)))

    show = s.add_parser("show", help="describe a test set")
    show.add_argument("file")
    show.set_defaults(func=_show, io=IO(inputs=("file",)))


def _new(args: argparse.Namespace) -> int:
    test = D.load_test(args.test)
    if args.epsilon is not None:
        horizon = D.horizon_for_epsilon(args.epsilon, args.gamma, test.r_max)
        if horizon > E.MAX_HORIZON:
            raise BBRLError(
                f"--epsilon {args.epsilon} with --gamma {args.gamma}: gives a horizon "
                f"T={horizon:,} above {E.MAX_HORIZON:,}: choose a larger epsilon")
    else:
        horizon = 250 if args.horizon is None else args.horizon
    if args.horizon is not None and not 1 <= args.horizon <= E.MAX_HORIZON:
        raise BBRLError(f"--horizon must be in [1, {E.MAX_HORIZON:,}], got {args.horizon}")
    it = E.interaction(test, horizon=None if args.episodes else horizon,
                       episodes=args.episodes, episode_length=args.episode_length,
                       checkpoint_every=args.checkpoint_every)
    ts = E.new_test_set(test, args.n_mdps, args.gamma, it.horizon, args.seed,
                        episode_length=it.episode_length,
                        checkpoint_every=it.checkpoint_every,
                        label=args.label)
    E.write_test_set(ts, args.output)
    print(
        f"wrote {args.output}: {ts.n_mdps} MDPs from {test.short_name}, "
        f"gamma={ts.gamma}, T={ts.horizon}{_setting(ts)}, seed={ts.seed}"
    )
    return 0


def _setting(ts: E.TestSet) -> str:
    """`` (E episodes of H steps, checkpoints every n steps, label L)`` or ""."""
    parts = []
    if ts.episode_length:
        parts.append(f"{ts.episodes} episodes of {ts.episode_length} steps")
    if ts.checkpoint_every:
        parts.append(f"checkpoints every {ts.checkpoint_every} steps")
    if ts.label:
        parts.append(f"experiments named ...@{ts.label}")
    return f" ({', '.join(parts)})" if parts else ""


def _validation(args: argparse.Namespace) -> int:
    ts = E.read_test_set(args.test_set)
    if args.n_mdps < 1:
        raise BBRLError(f"--n-mdps {args.n_mdps}: must be >= 1")
    v = E.validation_set(ts, args.n_mdps)
    E.write_test_set(v, args.output, E.validation_meta(ts))
    print(f"wrote {args.output}: validation set of {v.n_mdps} MDPs from "
          f"{ts.test.short_name}, gamma={v.gamma}, T={v.horizon}, seed={v.seed} (derived "
          f"from the test seed {ts.seed})")
    return 0


def _show(args: argparse.Namespace) -> int:
    from bbrlcore.formats import artefacts

    ts = E.read_test_set(args.file)
    of = artefacts.read_meta(args.file).get("validation_of")
    what = (f"validation set (of the test set seeded {of.get('seed')})"
            if isinstance(of, dict) else "test set")
    print(
        f"{args.file}: {what} of {ts.n_mdps} MDPs from {ts.test.short_name} "
        f"({ts.test.name}); gamma={ts.gamma}, T={ts.horizon}{_setting(ts)}, seed={ts.seed}"
    )
    return 0
