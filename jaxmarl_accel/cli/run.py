"""Train any learner (MADDPG / MATD3 / MASAC, QMIX / VDN / IQL / OW-QMIX / CW-QMIX / MAC-PO /
AccMER, A2C / PPO) for several seeds at once in one compiled program.

    jaxmarl-accel run --algo matd3 --seeds 8 --out runs/matd3

The run is compiled once; the host loop executes it one evaluation period ("chunk") at
a time, only to draw progress, write metrics and checkpoint. Outputs in ``--out``:
``config.json``, ``metrics.csv`` (per seed, per chunk), ``summary.json`` (final
evaluation return per seed, median, IQR, normalized score against the scenario's random
and scripted policies), ``marl_eval.json`` (the evaluations in marl-eval's format),
``learning_curve.png``, ``checkpoints/``, with ``--render``, ``episode.gif`` and
``episode.png``, and with ``--logger tensorboard,wandb``, ``tensorboard/`` and ``wandb/``.
A folder that holds a run is refused
unless ``--resume`` continues it or ``--overwrite`` replaces it. ``--resume`` starts
from the newest checkpoint whose files are whole (checked before compiling) and takes every
setting from ``config.json``: a flag beside it with another value than the run's is refused,
save a larger ``--total-env-steps``, which extends the run from where it stopped; a finished
run is left as it is.
``--out`` and ``--resume`` may be URLs (``gs://bucket/run``): the run is written to a
local ``--stage`` folder and uploaded from it (:mod:`jaxmarl_accel.runs.remote`).

Sizes: ``--total-env-steps`` and ``--eval-every`` are multiples of the env steps per round,
max(``--num-envs``, ``--update-every``); when ``--total-env-steps`` is not a multiple of
``--eval-every`` the last evaluation period is shorter. Value learners on episode replay
count ``--num-envs`` x episode length env steps per round (a clock every seed shares) and
round both up to whole rounds. Integers may be written ``1e6``. Left out,
``--buffer-capacity`` and ``--eval-every`` follow the run's budget and the machine's memory,
and a line at the start says what they are.

Exit status: 0 the run finished (or was finished already); 1 a non-finite value stopped it
(the last good checkpoint kept); 2 bad input (a flag, the folder, the devices, the memory,
the disk), said in one line before any compiling where it can be; 3 an internal failure,
not the input's: one line says what failed in which phase (building the env, compiling,
training, writing) and the traceback is saved in the run folder's ``error.txt``; 130
interrupted by Ctrl-C, at any moment, the last complete checkpoint kept.

Seeds are sharded over all local devices by default (``--devices auto``; with fewer seeds
than devices, each seed's envs are split too); ``--devices 1`` is the single-device
program. Several hosts: start the same command on every host with ``--distributed``
(and, outside TPU pods and SLURM/MPI jobs, ``--coordinator-address host0:1234
--num-processes P --process-id i``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from typing import Any

from jaxmarl_accel.cli import flags
from jaxmarl_accel.cli.resume_flags import resumed_config
from jaxmarl_accel.cli.scenario_flags import agents_help, scenario_kwargs
from jaxmarl_accel.cli.sweep_flags import add_sweep_flags, pbt_from_args, sweep_from_args
from jaxmarl_accel.runs import loggers
from jaxmarl_accel.runs.outputs import CONFIG_NAME

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


def warn_unsplit_cpu(count: int) -> None:
    """A warning on stderr when ``--cpu-devices count`` came too late: this process's CPU
    backend had started with another device count (a second run in one Python process)."""
    import jax

    if jax.default_backend() == "cpu" and jax.local_device_count() != count:
        print(f"warning: --cpu-devices {count} has no effect: this process's CPU backend "
              f"started before with {jax.local_device_count()} device(s); run the command in a "
              "new process", file=sys.stderr)


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The ``run`` command's argument parser (``prog``: its name in usage lines)."""
    from jaxmarl_accel.algos.value.presets import PRESETS
    from jaxmarl_accel.config import TrainConfig

    summary, _, details = flags.plain_description(__doc__ or "").partition("\n\n")
    example, _, details = details.partition("\n\n")
    parser = flags.Parser(prog=prog, usage=USAGE.format(prog=prog, indent=" " * (len(prog) + 8)),
                          description=f"{summary}\n\n{example}", epilog=details)
    family_defaults, family_shown = flags.family_flag_defaults()
    family_defaults["eval_every"] = flags.UNSET  # follows the budget (runs.fit)
    family_shown["eval_every"] = (
        "min(50000, --total-env-steps / 10 rounded down to 1, 2 or 5 x 10^k), up to whole "
        "rounds: about 10 points or more on the curve")
    family_shown["buffer_capacity"] += (
        "; at most the items the run adds per seed and what half the memory available "
        "holds for all seeds, printed at the start")
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
    run = parser.add_argument_group("run")
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


def config_from_args(args: argparse.Namespace) -> Any:
    """The run's ``TrainConfig`` from the parsed flags (``--agents`` sets the scenario's
    agent-count keyword in ``--env-kwargs``); the learner's record checks the rest. Without
    ``--eval-every`` the period is the whole budget here; :func:`fit_run` then sets it."""
    fixed = {}
    if args.eval_every is flags.UNSET:
        from jaxmarl_accel.algos.registry import family_defaults

        total = args.total_env_steps
        fixed["eval_every"] = (family_defaults(args.algo)["total_env_steps"]
                               if total is flags.UNSET else total)
    return flags.train_config_from_args(
        args, env_kwargs=scenario_kwargs(args.env, args.env_kwargs, args.agents),
        sampler_kwargs=args.sampler_kwargs, **fixed)


def fit_run(trainer: Any, args: argparse.Namespace, lanes: int) -> Any:
    """``trainer`` with the replay capacity and evaluation period the user left out fitted
    to the run's budget and the machine (:func:`jaxmarl_accel.runs.fit.fit_defaults`), and
    the line saying so printed (unless ``--quiet``)."""
    from jaxmarl_accel.runs.fit import fit_defaults
    from jaxmarl_accel.trainer.train import make_trainer

    fitted = fit_defaults(trainer, make_trainer, lanes,
                          capacity_given=args.buffer_capacity is not flags.UNSET,
                          eval_every_given=args.eval_every is not flags.UNSET)
    if fitted.note is not None and not args.quiet:
        print(fitted.note, flush=True)
    return fitted.trainer


def parse_devices(parser: argparse.ArgumentParser, text: str) -> int | str:
    """``--devices``: ``"auto"`` or a positive count (else a one-line parser error)."""
    if text == "auto":
        return text
    if not text.isdigit() or int(text) < 1:
        parser.error(f"--devices must be a positive count or 'auto', got {text!r}")
    return int(text)


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """Run the command line; returns the exit status (the module docstring's). A Ctrl-C
    stops it in any phase (:func:`~jaxmarl_accel.runs.interrupts.sigint_stops`)."""
    from jaxmarl_accel.runs.interrupts import sigint_stops

    with sigint_stops():
        return _main(argv, prog)


def _main(argv: list[str] | None, prog: str) -> int:
    from jaxmarl_accel.runs.failures import INTERNAL_STATUS, RunFailure, save_traceback

    out_dir, mirror = None, None
    try:
        early, _ = distributed_parser().parse_known_args(argv)
        flags.split_cpu(early.cpu_devices)  # before anything starts a JAX backend
        if early.distributed:
            import jax

            jax.distributed.initialize(coordinator_address=early.coordinator_address,
                                       num_processes=early.num_processes,
                                       process_id=early.process_id)
        preload_learner(argv)
        parser = build_parser(prog)
        args = apply_preset(parser, parser.parse_args(argv), argv)
        out_dir = args.resume or args.out
        if args.compile_cache:  # before anything is compiled
            flags.use_compile_cache(args.compile_cache)
        from jaxmarl_accel.runs.remote import mirror_for_run

        mirror = mirror_for_run(args.out, args.resume, args.overwrite, args.stage,
                                early.distributed)
        if mirror is not None:  # the run is written to the stage and uploaded from there
            args.resume, args.out = (mirror.stage, None) if args.resume else (None, mirror.stage)
        trainer, options = options_from_args(parser, args, argv)
        out_dir = options.out_dir
        if early.cpu_devices > 1:
            warn_unsplit_cpu(early.cpu_devices)
        from jaxmarl_accel.runs.host_loop import run_training

        return run_training(trainer, options, mirror)
    except ValueError as error:  # set-up problems: the folder, the devices, the memory, ...
        print(f"error: {error}", file=sys.stderr)
        return 2
    except RunFailure as failure:
        print(f"error: {failure}", file=sys.stderr)
        return INTERNAL_STATUS
    except KeyboardInterrupt:
        if mirror is not None and CONFIG_NAME in mirror.known:
            print(f"interrupted; continue with: {prog} --resume {mirror.url}", file=sys.stderr)
        elif mirror is None and out_dir is not None and os.path.exists(
                os.path.join(out_dir, CONFIG_NAME)):
            print(f"interrupted; continue with: {prog} --resume {out_dir}",
                  file=sys.stderr)
        else:
            print("interrupted before the run was stored; nothing to resume", file=sys.stderr)
        return 130
    except Exception as error:  # a fault outside the run's phases: still not the input's
        what = "setting up the run"
        print(f"error: {RunFailure(what, error, save_traceback(out_dir, what, error))}",
              file=sys.stderr)
        return INTERNAL_STATUS


def preload_learner(argv: list[str] | None) -> None:
    """Load a learner named by reference (``--algo package.module:SPEC``) before the parser
    is built, so that its family's flags exist and show in ``--help``; a reference that does
    not load raises a one-line ``ValueError`` (status 2)."""
    from jaxmarl_accel.algos.registry import algo_spec
    from jaxmarl_accel.user_code import is_reference

    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--algo")
    known, _ = early.parse_known_args(argv)
    if known.algo is not None and is_reference(known.algo):
        algo_spec(known.algo)


def apply_preset(parser: argparse.ArgumentParser, args: argparse.Namespace,
                 argv: list[str] | None) -> argparse.Namespace:
    """``args`` parsed again with ``--preset``'s settings
    (:func:`jaxmarl_accel.algos.value.presets.preset`) as the defaults, so that flags given
    beside it win; a preset that does not fit the learner is a one-line usage error."""
    if not args.preset or args.resume:
        return args
    from jaxmarl_accel.algos.value.presets import preset

    try:
        fields = preset(args.preset, args.algo)
    except ValueError as error:
        parser.error(flags.flag_message(str(error), ("preset", "algo")))
    learner = fields.pop("learner")
    defaults = {field.name: getattr(learner, field.name) for field in dataclasses.fields(learner)
                if getattr(learner, field.name) != getattr(type(learner)(), field.name)}
    parser.set_defaults(**fields, **defaults)
    return parser.parse_args(argv)


def options_from_args(parser: argparse.ArgumentParser, args: argparse.Namespace,
                      argv: list[str] | None = None) -> tuple[Any, Any]:
    """The run's trainer and ``RunOptions`` of the parsed flags, or of the stored run with
    ``--resume``. The trainer is built once, here: building it checks that the learner suits
    the env (e.g. a mixer without a global state), and the host loop runs it. Usage errors
    exit through ``parser.error`` (one line, status 2), a run that cannot be resumed raises
    ``ValueError``; a failure to build the env or learners that is not a refusal raises
    :class:`~jaxmarl_accel.runs.failures.RunFailure`. ``argv``: the command line, whose
    flags given beside ``--resume`` are checked against the run's (:mod:`.resume_flags`)."""
    for flag, value, least in (("--seeds", args.seeds, 1), ("--agents", args.agents, 1),
                               ("--checkpoint-every", args.checkpoint_every, 1),
                               ("--baseline-episodes", args.baseline_episodes, 1),
                               ("--env-shards", args.env_shards, 1)):
        if value is not None and value < least:
            parser.error(f"{flag} must be >= {least}, got {value}")
    if args.resume and args.overwrite:
        parser.error("--resume and --overwrite exclude each other")
    devices = parse_devices(parser, args.devices)
    from jaxmarl_accel.runs.failures import phase
    from jaxmarl_accel.runs.run_store import RunOptions, stored_run
    from jaxmarl_accel.trainer.train import make_trainer

    building = "building the env and learners"
    if args.resume:
        config, stored = stored_run(args.resume)
        check_loggers(parser, stored["loggers"])
        wanted = resumed_config(parser, argv, args.resume, config, stored)
        with phase(building, args.resume, (ValueError,)):
            trainer, extends = make_trainer(wanted), 0
            if wanted is not config:  # a larger budget: an extension unless it rounds the same
                before = make_trainer(config).total_steps
                extends = before if trainer.total_steps > before else 0
                trainer = trainer if extends else make_trainer(config)
        options = RunOptions(**stored, out_dir=args.resume, resume=True, quiet=args.quiet,
                             devices=devices, env_shards=args.env_shards, extends=extends)
        return trainer, options
    check_loggers(parser, args.logger)
    try:
        with phase(building, args.out, (ValueError, TypeError)):
            trainer = make_trainer(config_from_args(args))  # checks the learner against the env
    except (ValueError, TypeError) as error:
        parser.error(flags.flag_message(str(error), parser.fields))
    config, spec = trainer.config, trainer.env.spec
    try:
        sweep = sweep_from_args(config, args.sweep, args.sweep_samples, args.seed)
        pbt_every = pbt_from_args(args.pbt, args.pbt_every, sweep)
    except ValueError as error:
        parser.error(str(error).replace("sweep:", "--sweep:", 1))
    lanes = args.seeds * (1 if sweep is None else sweep.num_settings)
    try:
        trainer = fit_run(trainer, args, lanes)
    except (ValueError, TypeError) as error:
        parser.error(flags.flag_message(str(error), parser.fields))
    config = trainer.config
    from jaxmarl_accel.runs.summary import default_baseline_episodes

    baselines = args.baseline_episodes or default_baseline_episodes(spec.num_agents,
                                                                    spec.episode_length)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_dir = args.out or os.path.join(
        "runs", f"{config.env}-{config.algo}-{config.sampler}-{stamp}")
    return trainer, RunOptions(seeds=args.seeds, seed=args.seed, out_dir=out_dir,
                               overwrite=args.overwrite, render=args.render,
                               baseline_episodes=baselines,
                               checkpoint_every=args.checkpoint_every,
                               checkpoint_replay=args.checkpoint_replay == "true",
                               quiet=args.quiet, devices=devices, env_shards=args.env_shards,
                               loggers=args.logger, sweep=sweep, pbt_every=pbt_every)


def check_loggers(parser: argparse.ArgumentParser, names: tuple[str, ...]) -> None:
    """A one-line usage error for a ``--logger`` stream whose package is not installed."""
    try:
        loggers.check_loggers(names)
    except ValueError as error:
        parser.error(str(error))

