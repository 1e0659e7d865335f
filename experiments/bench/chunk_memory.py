"""The compiled chunk's memory analysis against the replay's capacity, without training.

``python -m experiments.bench chunk_memory --algo qmix --env stag_hunt --agents 8
--capacity 2500 5000 --seeds 1 8 --json PATH`` builds the run's trainer with the learner's
defaults for each capacity and seed count, compiles the seed-vmapped, donated chunk (as
``experiments.run`` does) from the abstract state alone, and records the training state's
bytes, XLA's temporaries (``memory_analysis``) and the run's estimated peak
(:func:`jaxmarl_accel.runs.memory.estimate_peak`). Temporaries that grow with the capacity mean
a copy of the replay per chunk.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_accel import config as cfg
from jaxmarl_accel.runs.memory import estimate_peak
from jaxmarl_accel.trainer.train import make_trainer
from jaxmarl_accel.tree_util import tree_leaf_bytes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The subcommand's flags."""
    parser.add_argument("--algo", default="qmix", help="learner (default: qmix)")
    parser.add_argument("--env", default="stag_hunt", help="scenario (default: stag_hunt)")
    parser.add_argument("--agents", type=int, default=8, help="num_agents (default: 8)")
    parser.add_argument("--capacity", type=int, nargs="+", default=[2500, 5000],
                        help="replay capacities (default: 2500 5000)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 8],
                        help="seed counts (default: 1 8)")
    parser.add_argument("--json", default=None, help="write the record to this JSON file")


def measure(config: cfg.TrainConfig, seeds: int) -> dict[str, Any]:
    """State, temporaries and estimated peak of ``config`` over ``seeds`` seeds."""
    trainer = make_trainer(config)
    abstract = jax.eval_shape(jax.vmap(trainer.init),
                              jax.random.split(jax.random.PRNGKey(0), seeds))
    chunk = jax.jit(jax.vmap(trainer.run_chunk, in_axes=(0, None)), donate_argnums=0)
    start = time.perf_counter()
    analysis = chunk.lower(abstract, jnp.int32(0)).compile().memory_analysis()
    state = tree_leaf_bytes(abstract)
    temp = int(analysis.temp_size_in_bytes)
    return {"seeds": seeds, "capacity": config.buffer_capacity, "state_mib": state / 2**20,
            "replay_mib": tree_leaf_bytes(abstract.buffer) / 2**20, "temp_mib": temp / 2**20,
            "temp_over_state": temp / state,
            "estimated_peak_gib": estimate_peak(state, True, temp) / 2**30,
            "compile_s": time.perf_counter() - start}


def main(args: argparse.Namespace) -> None:
    """Measure every capacity and seed count; print and write the record."""
    rows = []
    for capacity in args.capacity:
        for seeds in args.seeds:
            config = cfg.TrainConfig(**{"env": args.env,
                                        "env_kwargs": (("num_agents", args.agents),),
                                        "algo": args.algo, "buffer_capacity": capacity})
            row = measure(config, seeds)
            rows.append(row)
            print(f"capacity {capacity} seeds {seeds}: state {row['state_mib']:,.0f} MiB, "
                  f"temporaries {row['temp_mib']:,.0f} MiB, estimated peak "
                  f"{row['estimated_peak_gib']:.2f} GiB", flush=True)
    record = {"command": "python -m experiments.bench chunk_memory "
                         f"--algo {args.algo} --env {args.env} --agents {args.agents} "
                         f"--capacity {' '.join(map(str, args.capacity))} "
                         f"--seeds {' '.join(map(str, args.seeds))}",
              "jax": jax.__version__, "backend": jax.default_backend(),
              "cpu_count": os.cpu_count(), "rows": rows}
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(record, handle, indent=1)
