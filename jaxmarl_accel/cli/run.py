"""Train any learner (MADDPG / MATD3 / MASAC, QMIX / VDN / IQL / OW-QMIX / CW-QMIX / MAC-PO /
AccMER, A2C / PPO / MAPPO, PQN / PQN-VDN) for several seeds at once in one compiled program.

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

from jaxmarl_accel.cli import flags, run_parser
from jaxmarl_accel.cli.resume_flags import resumed_config
from jaxmarl_accel.cli.run_parser import PROG, distributed_parser
from jaxmarl_accel.cli.scenario_flags import scenario_kwargs
from jaxmarl_accel.cli.sweep_flags import pbt_from_args, sweep_from_args
from jaxmarl_accel.runs import loggers
from jaxmarl_accel.runs.outputs import CONFIG_NAME


def warn_unsplit_cpu(count: int) -> None:
    """A warning on stderr when ``--cpu-devices count`` came too late: this process's CPU
    backend had started with another device count (a second run in one Python process)."""
    import jax

    if jax.default_backend() == "cpu" and jax.local_device_count() != count:
        print(f"warning: --cpu-devices {count} has no effect: this process's CPU backend "
              f"started before with {jax.local_device_count()} device(s); run the command in a "
              "new process", file=sys.stderr)


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


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The ``run`` command's argument parser (``prog``: its name in usage lines), described by
    this module's docstring (:func:`jaxmarl_accel.cli.run_parser.build_parser`)."""
    return run_parser.build_parser(prog, __doc__ or "")


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

