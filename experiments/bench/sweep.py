"""A sweep as one program against its settings run one after the other.

Two figures, each side measured in this one process on the same machine, through the host
loop's own path (the chunk program ``vmap(run_chunk)`` over lanes, compiled, then run chunk
by chunk from a fresh state; no files):

* ``compile``: the chunk program of a K-setting sweep (K x S lanes, values read from the
  state) against one setting's plain run (S seeds, values constants), and against a
  1-setting sweep (the cost of reading values instead of constants);
* ``wall``: end to end (trainer set-up, compile, init, every chunk) a grid of K settings x S
  seeds in one program against the K runs of S seeds one after the other.

    python -m experiments.bench sweep --json docs/results/sweeps/matd3_100k.json

The record holds the command, the machine's load average before and after (a timing at a
load over 1.5 is not a result on the 2-core machine) and every side's seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxmarl_accel.algos import ActorCriticConfig
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.trainer.sharding import DeviceLayout, make_sharded_trainer
from jaxmarl_accel.trainer.sweep import (
    grid,
    lane_groups,
    lane_keys,
    lane_values,
    make_sweep_train,
    make_sweep_trainer,
    setting_config,
)
from jaxmarl_accel.trainer.train import make_trainer

ACTOR_LRS = (0.01, 0.003, 0.001)
TAUS = (0.01, 0.005, 0.02)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The bench's flags."""
    parser.add_argument("--what", choices=("compile", "wall", "both", "agree", "lanes"),
                        default="both",
                        help="agree: setting k's lanes against its own run, largest differences; "
                             "lanes: seconds per lane of a chunk that learns, 1 setting against 9 "
                             "in one vmap and 9 in groups, interleaved")
    parser.add_argument("--groups", choices=("auto", "1"), default="auto",
                        help="a sweep's lanes in one group per setting on a CPU (auto, as the "
                             "command line runs them) or all in one vmap (1)")
    parser.add_argument("--repeats", type=int, default=2,
                        help="compiles of each side, interleaved (default: 2)")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--total-env-steps", type=int, default=100_000)
    parser.add_argument("--eval-every", type=int, default=25_000)
    parser.add_argument("--buffer-capacity", type=int, default=100_000,
                        help="replay per lane (default: the budget, so nothing is dropped)")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--json", type=str, default=None, help="write the record here")


def base_config(args: argparse.Namespace) -> TrainConfig:
    """MATD3 on 3-agent spread at the paper's settings but the budget and replay size."""
    return TrainConfig(
        env="simple_spread", env_kwargs=(("num_agents", 3),), algo="matd3",
        learner=ActorCriticConfig(hidden_sizes=(args.hidden, args.hidden)),
        total_env_steps=args.total_env_steps, eval_every=args.eval_every,
        buffer_capacity=args.buffer_capacity, batch_size=args.batch_size)


def load() -> list[float]:
    """The 1-, 5- and 15-minute load averages."""
    return [round(v, 2) for v in os.getloadavg()]


def compile_chunk(trainer: Any, lanes: int, init_lanes: Any = None,
                  groups: int = 1) -> tuple[Any, Any, float]:
    """The host loop's chunk program for ``lanes`` lanes on one device (in ``groups`` groups
    of lanes), compiled: ``(sharded trainer, executable, seconds)`` (trace, lower and XLA
    together)."""
    sharded = make_sharded_trainer(trainer, DeviceLayout(1, 1), lanes, init_lanes=init_lanes,
                                   lane_groups=groups)
    start = time.perf_counter()
    compiled = sharded.run_chunk.lower(sharded.abstract_state, np.int32(0)).compile()
    return sharded, compiled, time.perf_counter() - start


def groups_of(sweep: Any, grouped: bool) -> int:
    """The lane groups of a :class:`SweepTrainer`: as the command line runs them
    (``--groups auto``, ``grouped``) or all in one vmap (``--groups 1``)."""
    if not grouped:
        return 1
    return lane_groups(sweep.sweep, jax.devices()[0].platform, 1)


def measure_lanes(config: TrainConfig, seeds: int, repeats: int = 3) -> dict[str, Any]:
    """Seconds per lane of one chunk that learns (the fourth; the first three fill the
    replay, untimed): one setting's lanes, nine settings' in one vmap and in one group per
    setting, the three timed in turn ``repeats`` times."""
    nine = {"actor_lr": ACTOR_LRS, "tau": TAUS}
    sides = {}
    for name, axes, grouped in (("1_setting", {"actor_lr": ACTOR_LRS[:1]}, False),
                                ("9_settings_one_vmap", nine, False),
                                ("9_settings_in_groups", nine, True)):
        sweep = make_sweep_trainer(config, grid(axes), seeds)
        sharded, compiled, _ = compile_chunk(sweep.trainer, sweep.lanes, sweep.init_lanes,
                                             sweep.sweep.num_settings if grouped else 1)
        state = sharded.init(np.asarray(jax.random.PRNGKey(0)))
        for chunk in range(3):
            state, _ = compiled(state, np.int32(chunk))
        sides[name] = {"compiled": compiled, "state": jax.block_until_ready(state),
                       "lanes": sweep.lanes, "seconds": []}
    for _ in range(repeats):
        for side in sides.values():
            start = time.perf_counter()
            side["state"], _ = side["compiled"](side["state"], np.int32(3))
            jax.block_until_ready(side["state"])
            side["seconds"].append(time.perf_counter() - start)
    return {name: {"lanes": side["lanes"], "chunk_s": side["seconds"],
                   "per_lane_s": min(side["seconds"]) / side["lanes"]}
            for name, side in sides.items()}


def run_all(sharded: Any, compiled: Any, num_chunks: int) -> float:
    """Seconds of a fresh state and every chunk (metrics fetched to the host each chunk)."""
    start = time.perf_counter()
    state = sharded.init(np.asarray(jax.random.PRNGKey(0)))
    for chunk in range(num_chunks):
        state, metrics = compiled(state, np.int32(chunk))
        jax.device_get(metrics.eval_return)
    jax.block_until_ready(state)
    return time.perf_counter() - start


def measure_compile(config: TrainConfig, seeds: int, repeats: int,
                    grouped: bool = True) -> dict[str, Any]:
    """Compile seconds (each side ``repeats`` times, interleaved, caches cleared before each):
    one setting's run, a 1-setting sweep, a 9-setting sweep; the ratio of the medians."""
    out: dict[str, list[float]] = {"one_setting_run_s": [], "sweep_1_s": [], "sweep_9_s": []}
    for _ in range(repeats):
        jax.clear_caches()
        out["one_setting_run_s"].append(compile_chunk(make_trainer(config), seeds)[2])
        for name, axes in (("sweep_1_s", {"actor_lr": ACTOR_LRS[:1]}),
                           ("sweep_9_s", {"actor_lr": ACTOR_LRS, "tau": TAUS})):
            jax.clear_caches()
            sweep = make_sweep_trainer(config, grid(axes), seeds)
            out[name].append(compile_chunk(sweep.trainer, sweep.lanes, sweep.init_lanes,
                                           groups_of(sweep, grouped))[2])
    medians = {name: float(np.median(values)) for name, values in out.items()}
    return {**out, "medians": medians,
            "ratio_9_to_one": medians["sweep_9_s"] / medians["one_setting_run_s"],
            "ratio_1_to_one": medians["sweep_1_s"] / medians["one_setting_run_s"]}


def measure_agreement(config: TrainConfig, seeds: int) -> dict[str, Any]:
    """Setting k's lanes of a 2-setting sweep (``make_sweep_train``) against setting k's own
    run (``make_train``) at the same seeds: the largest absolute and relative difference of
    any parameter and of the evaluation returns."""
    sweep = grid({"actor_lr": ACTOR_LRS[:2], "tau": TAUS[:1]})
    key = jax.random.PRNGKey(0)
    train = jax.jit(jax.vmap(make_sweep_train(config, sweep.names)))
    state, metrics = train(lane_keys(key, sweep, seeds), lane_values(sweep, seeds))
    out = []
    for k in range(sweep.num_settings):
        alone = jax.jit(jax.vmap(make_trainer(setting_config(config, sweep, k)).train))
        single, single_metrics = alone(jax.random.split(key, seeds))
        lanes = slice(k * seeds, (k + 1) * seeds)
        ours = np.concatenate([np.ravel(x[lanes]) for x in jax.tree.leaves(state.algo)])
        theirs = np.concatenate([np.ravel(x) for x in jax.tree.leaves(single.algo)])
        diff = np.abs(ours - theirs)
        returns = np.abs(np.asarray(metrics.eval_return[lanes])
                         - np.asarray(single_metrics.eval_return))
        out.append({"setting": sweep.setting(k), "max_abs_param": float(diff.max()),
                    "max_rel_param": float((diff / np.maximum(np.abs(theirs), 1e-6)).max()),
                    "max_abs_eval_return": float(returns.max()),
                    "identical_params": bool((diff == 0).all())})
    return {"settings": out}


def measure_wall(config: TrainConfig, seeds: int, grouped: bool = True) -> dict[str, Any]:
    """End-to-end seconds: the 3 x 3 grid in one program against its nine runs in turn."""
    sweep = grid({"actor_lr": ACTOR_LRS, "tau": TAUS})
    jax.clear_caches()
    start = time.perf_counter()
    lanes = make_sweep_trainer(config, sweep, seeds)
    sharded, compiled, compile_s = compile_chunk(lanes.trainer, lanes.lanes, lanes.init_lanes,
                                                 groups_of(lanes, grouped))
    run_s = run_all(sharded, compiled, lanes.trainer.num_chunks)
    swept = {"total_s": time.perf_counter() - start, "compile_s": compile_s, "run_s": run_s}
    print(f"sweep: {swept}", file=sys.stderr, flush=True)
    runs = []
    start = time.perf_counter()
    for k in range(sweep.num_settings):
        jax.clear_caches()
        begun = time.perf_counter()
        trainer = make_trainer(setting_config(config, sweep, k))
        sharded, compiled, compile_s = compile_chunk(trainer, seeds)
        run_s = run_all(sharded, compiled, trainer.num_chunks)
        runs.append({"total_s": time.perf_counter() - begun, "compile_s": compile_s,
                     "run_s": run_s})
        print(f"run {k}: {runs[-1]}", file=sys.stderr, flush=True)
    separate = time.perf_counter() - start
    return {"sweep": swept, "separate_runs": runs, "separate_total_s": separate,
            "ratio_sweep_to_separate": swept["total_s"] / separate}


def main(args: argparse.Namespace) -> None:
    """Measure, print and write the record."""
    config = base_config(args)
    grouped = args.groups == "auto"
    record: dict[str, Any] = {
        "command": "python -m experiments.bench sweep " + " ".join(sys.argv[2:]),
        "machine": f"{os.cpu_count()}-core CPU, jax {jax.__version__}, "
                   f"{jax.devices()[0].platform}",
        "algo": config.algo, "env": "simple_spread (3 agents)", "seeds": args.seeds,
        "settings": {"actor_lr": ACTOR_LRS, "tau": TAUS},
        "total_env_steps": config.total_env_steps, "eval_every": config.eval_every,
        "buffer_capacity": config.buffer_capacity, "batch_size": config.batch_size,
        "lane_groups": args.groups,
        "load_before": load()}
    if args.what in ("compile", "both"):
        record["compile"] = measure_compile(config, args.seeds, args.repeats, grouped)
        print(f"compile: {record['compile']}", file=sys.stderr, flush=True)
    if args.what in ("wall", "both"):
        record["wall"] = measure_wall(config, args.seeds, grouped)
    if args.what == "agree":
        record["agree"] = measure_agreement(config, args.seeds)
    if args.what == "lanes":
        record["lanes"] = measure_lanes(config, args.seeds)
    record["load_after"] = load()
    text = json.dumps(record, indent=2)
    print(text)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text + "\n")
