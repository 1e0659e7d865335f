"""The ``run`` command's flags: the argument parser of :mod:`jaxmarl_accel.cli.run`, its
groups in the order ``--help`` lists them (the options set first, then the run, sweep,
device, training and learner groups, the multi-host and CPU-device flags last)."""

from __future__ import annotations

import argparse
from typing import Any

from jaxmarl_accel.cli import flags
from jaxmarl_accel.cli.scenario_flags import agents_help
from jaxmarl_accel.cli.sweep_flags import add_sweep_flags
from jaxmarl_accel.runs import loggers

PROG = "jaxmarl-accel run"
"""The command's name in usage lines (``python -m experiments.run`` in a checkout)."""


FIRST_FIELDS = ("env", "algo", "total_env_steps", "eval_every")
"""The ``TrainConfig`` fields that open ``--help``, in this order (``--seeds`` follows
``--total-env-steps``, the run folder's flags ``--eval-every``)."""


USAGE = ("{prog} [--env ENV] [--algo ALGO] [--total-env-steps N] [--seeds N]\n"
         "{indent}[--eval-every N] [--out DIR] [--resume DIR] [options]")
"""The usage lines: the options set first (``--help`` lists every flag below them)."""


def distributed_parser() -> argparse.ArgumentParser:
    """The multi-host flags, parsed on their own first: ``jax.distributed.initialize()``
    must run before anything (even importing the scenarios) touches a JAX backend."""
    parser = flags.Parser(add_help=False)
    add_distributed_flags(parser)
    return parser


def add_distributed_flags(parser: argparse.ArgumentParser) -> None:
    """The multi-host and CPU-device flags, in two groups of ``parser`` (the last ones of
    ``--help``)."""
    group = parser.add_argument_group("multi-host (jax.distributed)")
    group.add_argument("--distributed", action="store_true",
                       help="multi-host run: call jax.distributed.initialize() first; start the "
                            "same command on every host")
    group.add_argument("--coordinator-address", default=None,
                       help="with --distributed: host:port of process 0 (default: "
                            "$JAX_COORDINATOR_ADDRESS or auto-detected on TPU pods, SLURM, MPI)")
    group.add_argument("--num-processes", type=flags.parse_int, default=None,
                       help="with --distributed: number of processes (hosts)")
    group.add_argument("--process-id", type=flags.parse_int, default=None,
                       help="with --distributed: index of this process, 0 .. num-processes - 1")
    cpu = parser.add_argument_group("CPU devices (set before JAX starts)")
    cpu.add_argument("--cpu-devices", type=flags.parse_int, default=1, metavar="N",
                     help="split the CPU into N XLA devices (e.g. one per core), so that "
                          "--devices auto shards the seeds over them and they run side by "
                          "side: on a 2-core CPU, 4 PPO seeds at JaxMARL's MPE settings ran in "
                          "2.5x the time of one seed on 2 devices, 4.2x on one (numbers agree "
                          "with the one-device run to about 1e-6, not bit for bit); the same as "
                          "XLA_FLAGS=--xla_force_host_platform_device_count=N (default: 1)")


def build_parser(prog: str = PROG, doc: str = "") -> argparse.ArgumentParser:
    """The ``run`` command's argument parser (``prog``: its name in usage lines; ``doc``: the
    command's description, whose first paragraph and example open ``--help`` and whose rest
    follows the flags)."""
    from jaxmarl_accel.config import TrainConfig

    summary, _, details = flags.plain_description(doc).partition("\n\n")
    example, _, details = details.partition("\n\n")
    parser = flags.Parser(prog=prog, usage=USAGE.format(prog=prog, indent=" " * (len(prog) + 8)),
                          description=f"{summary}\n\n{example}", epilog=details)
    family_defaults, family_shown = fitted_flag_defaults()
    first = parser.add_argument_group(
        "main options (set these first; every flag after them has a default)")
    for field in FIRST_FIELDS:
        parser.fields += flags.add_dataclass_flags(
            first, TrainConfig, only=(field,), choices=flags.train_choices(),
            defaults=family_defaults, shown_defaults=family_shown)
        if field == "total_env_steps":
            first.add_argument("--seeds", type=flags.parse_int, default=1,
                               help="number of seeds trained at once (vmapped) (default: 1)")
    add_folder_flags(first)
    add_run_flags(parser.add_argument_group("run"))
    add_sweep_flags(parser.add_argument_group("sweep (jaxmarl_accel.trainer.sweep)"))
    devices = parser.add_argument_group("devices (jaxmarl_accel.trainer.sharding)")
    devices.add_argument("--devices", default="auto", metavar="{auto,N}",
                         help="devices to shard the seeds over: a count, or 'auto' for the most "
                              "of all devices that the seeds (and envs) divide evenly over; 1 is "
                              "the single-device program (default: auto)")
    devices.add_argument("--env-shards", type=flags.parse_int, default=None,
                         help="devices each seed's envs are split over (default: 1 when the "
                              "seeds divide over the devices, else devices / gcd(seeds, devices))")
    train = parser.add_argument_group("training (jaxmarl_accel.config.TrainConfig)")
    parser.fields += flags.add_dataclass_flags(
        train, TrainConfig, skip=("env_kwargs", "sampler_kwargs", "learner", *FIRST_FIELDS),
        choices=flags.train_choices(), defaults=family_defaults,
        shown_defaults=family_shown)
    add_learner_flags(parser, family_defaults, family_shown)
    add_distributed_flags(parser)
    return parser


def fitted_flag_defaults() -> tuple[dict, dict]:
    """:func:`~jaxmarl_accel.cli.flags.family_flag_defaults` with ``--eval-every`` left unset
    and the help of it and ``--buffer-capacity`` saying how a run fits them to its budget and
    the machine (:mod:`jaxmarl_accel.runs.fit`)."""
    family_defaults, family_shown = flags.family_flag_defaults()
    family_defaults["eval_every"] = flags.UNSET  # follows the budget (runs.fit)
    family_shown["eval_every"] = (
        "min(50000, --total-env-steps / 10 rounded down to 1, 2 or 5 x 10^k), up to whole "
        "rounds: about 10 points or more on the curve")
    family_shown["buffer_capacity"] += (
        "; at most the items the run adds per seed and what half the memory available "
        "holds for all seeds, printed at the start")
    return family_defaults, family_shown


def add_run_flags(run: Any) -> None:
    """The ``run`` group's flags: the seed, a preset, the scenario's and sampler's keywords,
    rendering, baselines, checkpoints, loggers, quiet and the compilation cache."""
    from jaxmarl_accel.algos.value.presets import PRESETS

    run.add_argument("--seed", type=flags.parse_int, default=0,
                     help="base PRNG seed; seed i of the run uses split(PRNGKey(seed))[i] "
                          "(default: 0)")
    run.add_argument("--preset", default=None, choices=PRESETS,
                     help="paper 004's settings for a value learner on the 8-agent stag hunt "
                          "(paper004-p0: Table II, no miscapture punishment; paper004-p1.5: "
                          "Table III, punishment -1.5): env, env kwargs, batch, replay (capped "
                          "at 20,000 episodes), epsilon start and AccMER's decay and window; "
                          "flags given beside it win (default: none)")
    run.add_argument("--agents", type=flags.parse_int, default=None,
                     help=agents_help())
    run.add_argument("--env-kwargs", type=flags.parse_key_values, default=(),
                     help="scenario keyword arguments, e.g. 'num_prey=2,num_obstacles=0' "
                          "(the keywords of the scenario's make())")
    run.add_argument("--sampler-kwargs", type=flags.parse_key_values, default=(),
                     help="replay sampler keyword arguments, e.g. 'alpha=0.6,beta=0.4'")
    run.add_argument("--render", action="store_true",
                     help="render one evaluation episode of seed 0 to episode.gif/.png")
    run.add_argument("--baseline-episodes", type=flags.parse_int, default=None,
                     help="episodes used to measure the random and scripted returns that "
                          "define the normalized score (default: 1000, fewer for large "
                          "scenarios: 8,000,000 agent steps / (agents x episode length), at "
                          "least 8; 80 for 1,000 agents x 100 steps); measured once per "
                          "env and its settings, then read back by later runs from "
                          "$XDG_CACHE_HOME/jaxmarl_accel/baselines "
                          "(JAXMARL_ACCEL_BASELINE_CACHE=DIR elsewhere, =off: no cache)")
    run.add_argument("--checkpoint-every", type=flags.parse_int, default=1,
                     help="save a checkpoint every this many chunks (default: 1)")
    run.add_argument("--checkpoint-replay", choices=("true", "false"), default="true",
                     help="include the replay in checkpoints; false makes them as small as the "
                          "learners, and a run resumed from one starts with an empty replay "
                          "that it refills before it learns again, so it does not repeat the "
                          "uninterrupted run (default: true)")
    run.add_argument("--logger", type=loggers.parse_loggers, default=("csv",),
                     metavar="{csv,tensorboard,wandb}[,...]",
                     help="metric streams, comma-separated: csv (metrics.csv, which every run "
                          "writes), tensorboard (event files per seed in tensorboard/seed_<k>/, "
                          "tag: the metrics.csv column, step: env steps; needs tensorboardX), "
                          "wandb (one W&B run per seed, grouped by the output folder's name; "
                          "offline in wandb/ unless WANDB_MODE or WANDB_API_KEY is set; needs "
                          "wandb); pip install -e '.[loggers]' installs both (default: csv)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    flags.add_compile_cache_flag(run)


def add_folder_flags(run: Any) -> None:
    """The run folder's flags: --out, --stage, --resume, --overwrite."""
    from jaxmarl_accel.runs.remote import STAGE_DEFAULT

    run.add_argument("--out", default=None,
                     help="output folder, or a URL (gs://bucket/path with gcsfs installed, "
                          "s3:// with s3fs, file://, any fsspec scheme): the run is written to "
                          "--stage and uploaded after every checkpoint and at the end "
                          "(default: runs/<env>-<algo>-<sampler>-<time>)")
    run.add_argument("--stage", metavar="DIR", default=None,
                     help="with a URL for --out or --resume: the local folder the run is "
                          "written to and uploaded from; --resume downloads the remote run "
                          f"into it first (default: {STAGE_DEFAULT})")
    run.add_argument("--resume", metavar="DIR", default=None,
                     help="continue the interrupted run in DIR (a folder or a URL, as --out) "
                          "from its newest checkpoint that "
                          "restores (skipping damaged ones, found before compiling), with the "
                          "settings stored in its config.json: a flag given beside it with "
                          "another value than the run's is refused (--quiet, --compile-cache, "
                          "--devices and --env-shards may be anything); a larger "
                          "--total-env-steps extends the run; a finished run is left as it is")
    run.add_argument("--overwrite", action="store_true",
                     help="replace the run that --out holds (its config, metrics, summary, "
                          "plots and checkpoints are removed first); without it, or --resume, "
                          "a folder that holds a run is refused")


def add_learner_flags(parser: argparse.ArgumentParser, family_defaults: dict,
                      family_shown: dict) -> None:
    """One flag group per registered learner family (actor-critic, value-based, on-policy,
    and any a user registered), generated from its config dataclass; a field the groups
    before it have already (e.g. --gamma) is shared, not repeated. ``parser.fields``
    collects every generated field name."""
    from jaxmarl_accel.algos.registry import families

    for family in families().values():
        title = (f"{family.title} learners: {flags.family_members(family.name)}"
                 + (f" ({family.help})" if family.help else ""))
        config_type = family.config_type
        parser.fields += flags.add_dataclass_flags(
            parser.add_argument_group(title), config_type, skip=tuple(parser.fields),
            choices=flags.train_choices(), defaults=family_defaults,
            shown_defaults=family_shown)

