"""Train MADDPG / MATD3 / MASAC for several seeds at once in one compiled program.

    python -m experiments.run --algo matd3 --seeds 8 --out runs/matd3

The run is compiled once; the host loop executes it one evaluation period ("chunk") at
a time, only to draw progress, write metrics and checkpoint. Outputs in ``--out``:
``config.json``, ``metrics.csv`` (per seed, per chunk), ``summary.json`` (final
evaluation return per seed, median, IQR, normalized score against the scenario's random
and scripted policies), ``learning_curve.png``, ``checkpoints/`` (orbax) and, with
``--render``, ``episode.gif`` and ``episode.png``.

Seeds are sharded over all local devices by default (``--devices auto``; with fewer seeds
than devices, each seed's envs are split too); ``--devices 1`` is the single-device
program. Several hosts: start the same command on every host with ``--distributed``
(and, outside TPU pods and SLURM/MPI jobs, ``--coordinator-address host0:1234
--num-processes P --process-id i``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from experiments import cli_config

CONFIG_NAME = "config.json"


def distributed_parser() -> argparse.ArgumentParser:
    """The multi-host flags, parsed on their own first: ``jax.distributed.initialize()``
    must run before anything (even importing the scenarios) touches a JAX backend."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("multi-host (jax.distributed)")
    group.add_argument("--distributed", action="store_true",
                       help="multi-host run: call jax.distributed.initialize() first; start the "
                            "same command on every host")
    group.add_argument("--coordinator-address", default=None,
                       help="with --distributed: host:port of process 0 (default: "
                            "$JAX_COORDINATOR_ADDRESS or auto-detected on TPU pods, SLURM, MPI)")
    group.add_argument("--num-processes", type=int, default=None,
                       help="with --distributed: number of processes (hosts)")
    group.add_argument("--process-id", type=int, default=None,
                       help="with --distributed: index of this process, 0 .. num-processes - 1")
    return parser


def build_parser() -> argparse.ArgumentParser:
    from jaxmarl_accel.algos import AlgoConfig
    from jaxmarl_accel.config import TrainConfig

    parser = argparse.ArgumentParser(
        prog="python -m experiments.run", description=__doc__, parents=[distributed_parser()],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    run = parser.add_argument_group("run")
    run.add_argument("--seeds", type=int, default=1,
                     help="number of seeds trained at once (vmapped) (default: 1)")
    run.add_argument("--seed", type=int, default=0,
                     help="base PRNG seed; seed i of the run uses split(PRNGKey(seed))[i] "
                          "(default: 0)")
    run.add_argument("--out", default=None,
                     help="output folder (default: runs/<env>-<algo>-<sampler>-<time>)")
    run.add_argument("--resume", metavar="DIR", default=None,
                     help="continue the interrupted run in DIR with its saved config; other "
                          "training flags are ignored")
    run.add_argument("--agents", type=int, default=None,
                     help="number of agents (predators for simple_tag); shorthand for the "
                          "scenario's count keyword in --env-kwargs")
    run.add_argument("--env-kwargs", type=cli_config.parse_key_values, default=(),
                     help="scenario keyword arguments, e.g. 'num_prey=2,num_obstacles=0'")
    run.add_argument("--sampler-kwargs", type=cli_config.parse_key_values, default=(),
                     help="replay sampler keyword arguments, e.g. 'alpha=0.6,beta=0.4'")
    run.add_argument("--render", action="store_true",
                     help="render one evaluation episode of seed 0 to episode.gif/.png")
    run.add_argument("--baseline-episodes", type=int, default=1000,
                     help="episodes used to measure the random and scripted returns that "
                          "define the normalized score (default: 1000)")
    run.add_argument("--checkpoint-every", type=int, default=1,
                     help="save a checkpoint every this many chunks (default: 1)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    devices = parser.add_argument_group("devices (jaxmarl_accel.sharding)")
    devices.add_argument("--devices", default="auto",
                         help="devices to shard the seeds over: a count, or 'auto' for the most "
                              "of all devices that the seeds (and envs) divide evenly over; 1 is "
                              "the single-device program (default: auto)")
    devices.add_argument("--env-shards", type=int, default=None,
                         help="devices each seed's envs are split over (default: 1 when the "
                              "seeds divide over the devices, else devices / gcd(seeds, devices))")
    train = parser.add_argument_group("training (jaxmarl_accel.config.TrainConfig)")
    cli_config.add_dataclass_flags(
        train, TrainConfig, skip=("env_kwargs", "sampler_kwargs", "algo_config"),
        choices=cli_config.train_choices())
    algo = parser.add_argument_group("learner (jaxmarl_accel.algos.AlgoConfig)")
    cli_config.add_dataclass_flags(algo, AlgoConfig, choices=cli_config.train_choices())
    return parser


def config_from_args(args: argparse.Namespace) -> Any:
    """The run's ``TrainConfig`` from the parsed flags (``--agents`` sets the scenario's
    agent-count keyword in ``--env-kwargs``)."""
    from jaxmarl_accel.envs import agent_count_kwarg

    env_kwargs = dict(args.env_kwargs)
    if args.agents is not None:
        env_kwargs[agent_count_kwarg(args.env)] = args.agents
    return cli_config.train_config_from_args(
        args, env_kwargs=tuple(sorted(env_kwargs.items())), sampler_kwargs=args.sampler_kwargs)


def parse_devices(parser: argparse.ArgumentParser, text: str) -> int | str:
    """``--devices``: ``"auto"`` or a positive count (else a one-line parser error)."""
    if text == "auto":
        return text
    if not text.isdigit() or int(text) < 1:
        parser.error(f"--devices must be a positive count or 'auto', got {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    early, _ = distributed_parser().parse_known_args(argv)
    if early.distributed:
        import jax

        jax.distributed.initialize(coordinator_address=early.coordinator_address,
                                   num_processes=early.num_processes,
                                   process_id=early.process_id)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error(f"--seeds must be >= 1, got {args.seeds}")
    if args.checkpoint_every < 1:
        parser.error(f"--checkpoint-every must be >= 1, got {args.checkpoint_every}")
    devices = parse_devices(parser, args.devices)
    if args.env_shards is not None and args.env_shards < 1:
        parser.error(f"--env-shards must be >= 1, got {args.env_shards}")
    try:
        if args.resume:
            path = os.path.join(args.resume, CONFIG_NAME)
            if not os.path.exists(path):
                parser.error(f"--resume {args.resume}: no {CONFIG_NAME} there")
            from jaxmarl_accel.config import config_from_dict

            with open(path) as handle:
                saved = json.load(handle)
            config, seeds, seed = config_from_dict(saved["train"]), saved["seeds"], saved["seed"]
            out_dir = args.resume
        else:
            config, seeds, seed = config_from_args(args), args.seeds, args.seed
            stamp = time.strftime("%Y%m%d-%H%M%S")
            out_dir = args.out or os.path.join(
                "runs", f"{config.env}-{config.algo}-{config.sampler}-{stamp}")
    except (ValueError, TypeError) as error:
        parser.error(str(error))
    from experiments.host_loop import RunOptions, run_training

    options = RunOptions(seeds=seeds, seed=seed, out_dir=out_dir, resume=bool(args.resume),
                         render=args.render, baseline_episodes=args.baseline_episodes,
                         checkpoint_every=args.checkpoint_every, quiet=args.quiet,
                         devices=devices, env_shards=args.env_shards)
    try:
        return run_training(config, options)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
