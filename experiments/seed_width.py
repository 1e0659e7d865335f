"""Does a seed's arithmetic depend on how many seeds are vmapped beside it?

``python -m experiments.seed_width --algo qmix --agents 8 --widths 1 2 3 4 8 --json PATH``
builds one stag-hunt run (``N`` agents, ``N`` stags, punishment 0, the learner's replay
defaults with a small replay) and measures, for each width ``W`` of the seed ``vmap``:

* **one update**: seed 0's learner state after one ``algo.update`` on one batch of its
  replay, with the state, batch, weights and key copied ``W`` times along a leading seed
  axis (every copy computes the same thing; copy 0 is compared);
* **a whole run** (``--chunks`` chunks): seed 0's learner state at the end of
  ``jax.vmap(trainer.train)`` over the first ``W`` keys of ``split(PRNGKey(0), max W)``, so
  seed 0 has the same key at every width.

Each is reported as the number of state leaves that differ from width 1 (and from the next
smaller width asked for) and the largest absolute difference; width 1 compiled and run
twice is reported as well (it must be 0: the program is deterministic). Every program is
compiled with the library's XLA options
(:func:`jaxmarl_accel.trainer.compiling.compiler_options`). A difference means that XLA
compiled the per-seed arithmetic differently for that size of the seed axis, so a seed's
result is reproducible for a fixed ``--seeds`` and may part, from float rounding on, when
the seed count changes.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel import config as cfg
from jaxmarl_accel.trainer.compiling import compiler_options
from jaxmarl_accel.trainer.train import make_trainer

EPISODE_ALGOS = ("qmix", "vdn", "iql", "owqmix", "cwqmix", "macpo")


def build_config(algo: str, agents: int, chunks: int, chunk_steps: int,
                 batch_size: int) -> cfg.TrainConfig:
    """The probe's run: the stag hunt with ``agents`` agents and stags, ``chunks`` chunks of
    ``chunk_steps`` env steps per seed, a replay of 20 batches, 8 greedy episodes a chunk."""
    return cfg.TrainConfig(
        env="stag_hunt", algo=algo,
        env_kwargs=(("miscapture_punishment", 0.0), ("num_agents", agents),
                    ("num_stags", agents)),
        total_env_steps=chunks * chunk_steps, eval_every=chunk_steps, eval_episodes=8,
        buffer_capacity=20 * batch_size, batch_size=batch_size)


def leaf_differences(a: Any, b: Any) -> dict[str, Any]:
    """Leaves of pytrees ``a`` and ``b`` (same structure) that differ, and the largest
    absolute difference of the floating-point ones (0.0 when none differ)."""
    differing, largest = 0, 0.0
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        x, y = np.asarray(x), np.asarray(y)
        if np.array_equal(x, y):
            continue
        differing += 1
        if x.dtype.kind == "f":
            largest = max(largest, float(np.max(np.abs(x.astype(np.float64) - y))))
    return {"leaves_differing": differing, "max_abs_difference": largest}


def copies(tree: Any, width: int) -> Any:
    """``tree`` with a leading seed axis of ``width`` identical copies."""
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (width,) + jnp.shape(x)), tree)


def first(tree: Any) -> Any:
    """Seed 0's slice of a seed-batched pytree, on the host."""
    return jax.tree.map(lambda x: np.asarray(x)[0], tree)


def one_update(trainer: Any, algo_state: Any, batch: Any, width: int) -> Any:
    """Seed 0's learner state after one update of ``width`` vmapped identical copies."""
    weights = jnp.ones((jax.tree.leaves(batch)[0].shape[0],), jnp.float32)
    update = jax.jit(jax.vmap(trainer.algo.update), compiler_options=compiler_options())
    state, _, _ = update(copies(algo_state, width), copies(batch, width),
                         copies(weights, width), copies(jax.random.PRNGKey(7), width))
    return first(state)


def whole_run(trainer: Any, keys: jax.Array, width: int) -> tuple[tuple[Any, Any], float]:
    """Seed 0's learner state (on the host) and its replay (on the device) after
    ``trainer.train`` vmapped over ``keys[:width]``, and the seconds the call took (compile
    included); only the learner state is copied to the host."""
    start = time.perf_counter()
    train = jax.jit(jax.vmap(trainer.train), compiler_options=compiler_options())
    state, _ = jax.block_until_ready(train(keys[:width]))
    experience = jax.tree.map(lambda x: x[0], state.buffer.experience)
    return (first(state.algo), experience), time.perf_counter() - start


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Every width's differences from width 1 (see the module docstring)."""
    trainer = make_trainer(build_config(args.algo, args.agents, args.chunks,
                                        args.chunk_steps, args.batch_size))
    keys = jax.random.split(jax.random.PRNGKey(0), max(args.widths))
    (algo_state, experience), seconds = whole_run(trainer, keys, 1)
    (again, _), _ = whole_run(trainer, keys, 1)
    batch = jax.tree.map(lambda x: x[:args.batch_size], experience)
    base_update = one_update(trainer, algo_state, batch, 1)
    result: dict[str, Any] = {
        "algo": args.algo, "agents": args.agents, "chunks": args.chunks,
        "env_steps_per_seed": trainer.total_steps, "batch_size": args.batch_size,
        "backend": jax.default_backend(), "jax": jax.__version__,
        "repeat_width_1": {"update": leaf_differences(
            base_update, one_update(trainer, algo_state, batch, 1)),
            "run": leaf_differences(algo_state, again)},
        "widths": {}}
    print(f"width 1: run {seconds:.1f} s", flush=True)
    previous = (base_update, algo_state)
    for width in sorted(set(args.widths) - {1}):
        updated = one_update(trainer, algo_state, batch, width)
        (run, _), seconds = whole_run(trainer, keys, width)
        update = leaf_differences(base_update, updated)
        result["widths"][str(width)] = {
            "update": update, "run": leaf_differences(algo_state, run),
            "update_vs_previous_width": leaf_differences(previous[0], updated),
            "run_vs_previous_width": leaf_differences(previous[1], run),
            "run_seconds": seconds}
        previous = (updated, run)
        print(f"width {width}: one update {update}, run "
              f"{result['widths'][str(width)]['run']} ({seconds:.1f} s)", flush=True)
    return result


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The probe's flags (``argv``, or the command line's); a bad value exits with one line
    naming the flag (status 2)."""
    parser = argparse.ArgumentParser(
        prog="python -m experiments.seed_width",
        description="Seed 0's learner state, after one update and after a short run, at "
                    "several widths of the seed vmap, against width 1.")
    parser.add_argument("--algo", default="qmix", choices=EPISODE_ALGOS,
                        help="episode-replay learner (default: qmix)")
    parser.add_argument("--agents", type=int, default=8,
                        help="stag-hunt agents, and as many stags (default: 8)")
    parser.add_argument("--widths", type=int, nargs="+", default=[1, 2, 3, 4, 8],
                        help="seed counts to compare with 1 (default: 1 2 3 4 8)")
    parser.add_argument("--chunks", type=int, default=3,
                        help="chunks of the whole run (default: 3)")
    parser.add_argument("--chunk-steps", type=int, default=20000,
                        help="env steps per seed per chunk (default: 20000)")
    parser.add_argument("--batch-size", type=int, default=32,
                        help="episodes per update (default: 32)")
    parser.add_argument("--json", default=None, help="write the result to this file")
    args = parser.parse_args(argv)
    for name in ("agents", "chunks", "chunk_steps", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if min(args.widths) < 1:
        parser.error("--widths must be at least 1")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure (:func:`measure`), write ``--json`` when given, and return the result."""
    args = parse(argv)
    result = measure(args)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result, handle, indent=2)
    return result


if __name__ == "__main__":
    main()
