"""Workload characterization: where the time of MADDPG-style training goes, phase by phase.

``python -m experiments.characterize --env simple_tag --agents 3 6 12 24 48 --out DIR``

For every agent count it builds the run (our env, buffer and learner), fills the replay
buffer with random transitions, and times each phase of papers 000/002 on its own, compiled,
on that same state, after a warm-up call (median and spread of ``--reps`` calls):
action selection, env step, buffer add, mini-batch sampling, target-Q calculation, Q loss
(critic forward + backward + optimizer), P loss (actor forward + backward + optimizer),
target update, and the priority update of PER-style samplers. The phases are checked
against the whole rollout step (act + step + add) and the whole update step (sample +
``algo.update`` + priority update) compiled as one function each, and optionally against the
real trainer's ``run_chunk``. From the medians it extrapolates the 60K-episode training time
(paper 000 Table I) and reproduces the papers' comparisons as ratios: neighbor vs uniform
sampling (Fig. 8) and end to end (Fig. 9), agent-major vs transition-major storage (Fig. 14),
PER vs prioritized-locality sampling (VI-C), parallel vs sequential learners (paper 001 IPS),
and, with ``--actor-step linear full``, the two forms of the actor step (time of the actor
step against the target-Q phase, of the whole ``algo.update``, and XLA's memory plan of it).

For the value-based learners (``--algo qmix``, ``vdn``, ``iql``; e.g. ``--env stag_hunt
--agents 8 16 32``) it times the phases of an episode round instead (recurrent action
selection, env step, episode add, sampling, targets, agent forward, loss and gradient,
optimizer step, target update), per round and per env step, against the whole collection
of E episodes, the whole update step and the whole round: see
:mod:`experiments.characterize.value` (outputs characterize.json, phases.csv,
whole_steps.csv, ratios.csv, table_round.md, phases.png).

Outputs in ``--out``: characterize.json, phases.csv, whole_steps.csv, ratios.csv,
table_60k.md, phases.png (stacked shares, cf. Fig. 2/3), ratios.png.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from typing import Any

import jax

from experiments.characterize import measure as cm
from experiments.characterize import report as cr
from experiments.characterize import value as cv
from jaxmarl_accel.algos import ActorCriticConfig
from jaxmarl_accel.algos.actor_critic.config import ACTOR_STEP_CHOICES
from jaxmarl_accel.algos.registry import family_defaults, family_of, variant_of
from jaxmarl_accel.algos.value.config import ValueConfig
from jaxmarl_accel.cli import flags
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.envs import make

FULL = {"agents": [3, 6, 12, 24, 48], "batch_size": 1024, "buffer_capacity": 100_000, "reps": 5,
        "neighbors": [16, 64], "trainer_chunks": 2, "num_envs": 10}
QUICK = {"agents": [3, 6], "batch_size": 256, "buffer_capacity": 4096, "reps": 3,
         "neighbors": [16, 64], "trainer_chunks": 1, "num_envs": 10}


class _Parser(argparse.ArgumentParser):
    """Argument errors as one line: ``characterize: error: ...``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"characterize: error: {message}\n")
        sys.exit(2)


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {kind.__name__}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be > 0")
        return value

    parse.__name__ = kind.__name__
    return parse


def _add_scenario_flags(p: argparse.ArgumentParser, pos_int: Any, pos_float: Any) -> None:
    """The output folder, the scenario and its sizes, and the memory limits."""
    p.add_argument("--out", required=True, help="output folder (created if missing)")
    p.add_argument("--env", default="simple_tag",
                   choices=["simple_tag", "simple_spread", "stag_hunt"],
                   help="scenario (default simple_tag, predator-prey; stag_hunt for the value "
                        "learners only)")
    p.add_argument("--env-kwargs", type=flags.parse_key_values, default=(),
                   help="value learners: more scenario keyword arguments, e.g. "
                        "'num_stags=4,episode_length=50'")
    p.add_argument("--agents", nargs="+", type=pos_int, default=None,
                   help="agent counts: predators for simple_tag, agents for simple_spread "
                        "and stag_hunt (default 3 6 12 24 48; --quick: 3 6; value learners: "
                        "8 16 32, --quick 4 8)")
    p.add_argument("--tag-widths", default="paper", choices=["paper", "fixed"],
                   help="simple_tag team sizes: 'paper' = P predators, P/3 prey, max(2, P/3) "
                        "obstacles (paper 000's observation widths, 16 at P=3, 98 at P=24); "
                        "'fixed' = 1 prey, 2 obstacles (default paper)")
    p.add_argument("--max-buffer-gb", type=pos_float, default=1.0,
                   help="lower the capacity so that one buffer stays under this many GiB "
                        "(default 1.0; 48-predator tag transitions are ~100 KB)")
    p.add_argument("--max-memory-fraction", type=pos_float, default=0.8,
                   help="skip an agent count whose estimated peak memory (update + buffers) "
                        "exceeds this fraction of the memory available now (default 0.8)")
    p.add_argument("--fill", type=pos_float, default=1.0,
                   help="fraction of the capacity filled with random transitions before "
                        "timing (default 1.0)")


def _add_timing_flags(p: argparse.ArgumentParser, pos_int: Any, pos_float: Any) -> None:
    """The extrapolation, the repetitions and budget of each timed phase, and the neighbor
    sampler windows compared."""
    p.add_argument("--episodes", type=pos_int, default=60_000,
                   help="episodes of the extrapolated training time (default 60000, Table I)")
    p.add_argument("--episode-length", type=pos_int, default=25,
                   help="steps per episode in that extrapolation (default 25)")
    p.add_argument("--reps", type=pos_int, default=None,
                   help="timed calls per phase after the warm-up call (default 5; --quick 3)")
    p.add_argument("--statistic", default="median", choices=["median", "min"],
                   help="per-phase figure used for the totals, checks and ratios (the CSVs "
                        "hold both); 'min' is steadier on a machine shared with other work "
                        "(default median)")
    p.add_argument("--budget-s", type=pos_float, default=30.0,
                   help="stop repeating a phase once it has used this many seconds, keeping "
                        "at least 2 calls (default 30)")
    p.add_argument("--neighbors", nargs="+", type=pos_int, default=None,
                   help="neighbor-sampler window sizes compared with uniform (default 16 64: "
                        "paper 000's 16x64 and 64x16 neighbors x references at batch 1024)")


def _add_learner_flags(p: argparse.ArgumentParser) -> None:
    """The run settings and the learners' settings (from the config dataclasses), and the
    actor step forms measured side by side."""
    flags.add_dataclass_flags(
        p.add_argument_group("run settings (jaxmarl_accel.config.TrainConfig)"), TrainConfig,
        only=("algo", "sampler", "layout", "batch_size", "buffer_capacity", "num_envs",
              "update_every"),
        choices=flags.train_choices(),
        defaults={"batch_size": None, "buffer_capacity": None, "num_envs": None,
                  "sampler": flags.UNSET},
        shown_defaults={"batch_size": "1024; --quick: 256; value learners: 128 episodes, "
                                      "--quick 16",
                        "buffer_capacity": "100000, lowered to --max-buffer-gb; --quick: 4096; "
                                           "value learners: 5000 episodes, --quick 64",
                        "num_envs": "10; value learners: 8",
                        "sampler": "uniform; reuse for accmer"},
        aliases={"buffer_capacity": ("--capacity",)})
    flags.add_dataclass_flags(
        p.add_argument_group("learner (jaxmarl_accel.algos.ActorCriticConfig)"), ActorCriticConfig,
        only=("learners",), choices=flags.train_choices())
    flags.add_dataclass_flags(
        p.add_argument_group("value learners (jaxmarl_accel.algos.value.ValueConfig)"),
        ValueConfig, only=("hidden", "mixer_embed", "hypernet_hidden", "td_lambda", "double_q"),
        choices=flags.train_choices())
    p.add_argument("--actor-step", dest="actor_steps", nargs="+", choices=ACTOR_STEP_CHOICES,
                   default=[ActorCriticConfig.actor_step],
                   help="actor step forms (ActorCriticConfig.actor_step) measured side by side: "
                        "the "
                        "actor step (p_loss), algo.update and its memory plan for each; the "
                        "first is the one of every other measurement (default "
                        f"{ActorCriticConfig.actor_step}; e.g. --actor-step linear full)")


def build_parser() -> argparse.ArgumentParser:
    """The characterization's flags (see the module docstring)."""
    p = _Parser(prog="python -m experiments.characterize", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    pos_int, pos_float = _positive(int), _positive(float)
    _add_scenario_flags(p, pos_int, pos_float)
    _add_timing_flags(p, pos_int, pos_float)
    _add_learner_flags(p)
    p.add_argument("--no-compare", dest="compare", action="store_false",
                   help="skip the sampler, layout and learner comparisons")
    p.add_argument("--trainer-chunks", type=int, default=None,
                   help="rounds of the real trainer (run_chunk) timed as a cross-check; "
                        "0 skips it (default 2; --quick 1)")
    p.add_argument("--quick", action="store_true",
                   help="small run: agents 3 6, batch 256, capacity 4096, 3 reps (without it: "
                        "agents 3 6 12 24 48, batch 1024, capacity 100000, 5 reps)")
    p.add_argument("--seed", type=int, default=0, help="PRNG seed (default 0)")
    return p


def resolve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Fill the defaults that depend on ``--quick`` and check values across flags."""
    if args.sampler is flags.UNSET:  # the learner's own sampler (accmer: reuse)
        args.sampler = family_defaults(args.algo)["sampler"]
    if family_of(args.algo) == "value":
        return cv.resolve(args, parser)
    if family_of(args.algo) == "on_policy":
        parser.error(f"--algo {args.algo}: the characterization times the phases of the "
                     "replay learners; the on-policy learners have no replay")
    if args.env == "stag_hunt" or args.env_kwargs:
        parser.error("--env stag_hunt and --env-kwargs are for the value learners "
                     "(qmix, vdn, iql)")
    for name, value in (QUICK if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if len(set(args.actor_steps)) != len(args.actor_steps):
        parser.error(f"--actor-step lists a form twice: {args.actor_steps}")
    args.actor_step = args.actor_steps[0]  # the run's ActorCriticConfig.actor_step
    if args.trainer_chunks < 0:
        parser.error(f"--trainer-chunks must be >= 0, got {args.trainer_chunks}")
    if args.fill > 1.0:
        parser.error(f"--fill must be in (0, 1], got {args.fill}")
    if args.batch_size > args.buffer_capacity:
        parser.error(f"--batch-size ({args.batch_size}) exceeds --buffer-capacity "
                     f"({args.buffer_capacity})")
    bad = [n for n in args.neighbors if args.batch_size % n]
    if bad and args.compare:
        parser.error(f"--neighbors {bad} must divide --batch-size {args.batch_size}")
    if args.sampler == "neighbor" and args.batch_size % 4:
        parser.error("--sampler neighbor (4 neighbors) needs --batch-size divisible by 4")
    big, small = max(args.num_envs, args.update_every), min(args.num_envs, args.update_every)
    if small > 0 and big % small:
        parser.error(f"--num-envs ({args.num_envs}) and --update-every ({args.update_every}) "
                     "must divide one another")
    try:  # every other setting is checked by the run configuration itself
        spr = max(args.num_envs, args.update_every)
        flags.train_config_from_args(args, learning_starts=0, eval_every=spr,
                                          total_env_steps=spr)
    except ValueError as error:
        parser.error(str(error))
    return args


def run_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The flags and the machine, as recorded in characterize.json."""
    settings = {k: v for k, v in vars(args).items()}
    settings.update(jax_version=jax.__version__, devices=[str(d) for d in jax.devices()],
                    machine=platform.platform(), started=time.strftime("%Y-%m-%d %H:%M:%S"),
                    note="absolute times depend on the machine and its load; compare ratios")
    return settings


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = build_parser()
    args = resolve(parser.parse_args(argv), parser)
    log = lambda msg: print(msg, flush=True)  # noqa: E731
    log(f"characterize: {args.env} {args.algo} sampler={args.sampler} layout={args.layout} "
        f"agents={args.agents} batch={args.batch_size} on {jax.devices()[0]}")
    if family_of(args.algo) == "value":
        return cv.main(args, run_settings(args), log)
    spec = make(args.env)[0].spec  # the variant knows its delay (MATD3: ActorCriticConfig's)
    policy_delay = variant_of(args.algo, spec, ActorCriticConfig()).policy_delay
    settings = run_settings(args)
    records, derived = [], []
    for agents in args.agents:
        start = time.perf_counter()
        log(f"[{agents} agents] measuring ...")
        try:
            record = cm.measure_config(args, agents, log)
        except cm.SkipConfig as why:
            log(f"[{agents} agents] SKIPPED: {why}")
            continue
        d = cr.derive(args, record, policy_delay)
        records.append(record)
        derived.append(d)
        chk = d["check"]
        log(f"[{agents} agents] done in {time.perf_counter() - start:.0f} s: 60K episodes "
            f"~{d['total_60k_s_phases'] / 3600:.2f} h (extrapolated); phase sum / whole: "
            f"rollout {chk['rollout_sum_over_whole']:.2f}, update "
            f"{chk['update_sum_over_whole']:.2f}; largest phase "
            f"{max(d['shares_end_to_end'], key=d['shares_end_to_end'].get)}")
        written = cr.write_outputs(args, settings, records, derived)  # partial results kept
        log("wrote " + ", ".join(written))
    if records:
        print(cr.table_60k(args, records, derived))
    return records


if __name__ == "__main__":
    main()
