"""The recurrent agent's two unroll paths timed against each other, shape by shape.

``python -m experiments.bench gru_paths --json PATH`` times the forward and backward pass of
:func:`jaxmarl_accel.algos.value.networks.unroll` (the loss ``sum(sin(Q))`` and its
gradient with respect to the agent's parameters, jitted) over a batch of random episodes,
once through the GRU's saved-gates backward pass (:mod:`jaxmarl_accel.algos.value.gru`) and
once through the rematerialized scan, alternately, after one warm-up call each. The shapes
(episodes ``B``, rows ``T + 1``, agents ``N``, observation width, actions, hidden width) are
those of the library's defaults: MPE spread and the 8-agent stag hunt at pymarl2's GRU of
64, SMAX 3m and 2s3z at JaxMARL's GRU of 512. For each shape it records the median seconds of
``--reps`` calls per path, the bytes the saved-gates path keeps
(:func:`~jaxmarl_accel.algos.value.networks.saved_gates_bytes`) and which path
:func:`~jaxmarl_accel.algos.value.networks.uses_saved_gates` picks, so that a record shows
whether the limit picks the faster path.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.algos.value import networks

SHAPES = {
    "mpe_spread_b32": (32, 26, 3, 18, 5, 64),
    "stag_hunt_b32": (32, 201, 8, 76, 5, 64),
    "smax_3m_b32_rows41_h256": (32, 41, 3, 30, 9, 256),
    "smax_3m_b32_rows41": (32, 41, 3, 30, 9, 512),
    "smax_3m_b32_rows102": (32, 102, 3, 30, 9, 512),
    "smax_3m_b128_rows102": (128, 102, 3, 30, 9, 512),
    "smax_2s3z_b32_rows102": (32, 102, 5, 127, 10, 512),
    "smax_2s3z_b64_rows102": (64, 102, 5, 127, 10, 512),
}
"""Name -> (episodes B, rows T + 1, agents N, observation width, actions A, hidden)."""


GRU_PATHS = {"auto": None, "saved_gates": 2**62, "rematerialized": 0}
"""A path (``update_profile --gru-path``) -> the
:data:`~jaxmarl_accel.algos.value.networks.SAVED_GATES_BYTES` traced under (None: the
library's own limit, its pick)."""


@contextlib.contextmanager
def gru_path(name: str) -> Iterator[None]:
    """Trace within it to force the recurrent agent's unroll ``name`` (:data:`GRU_PATHS`;
    the path is chosen at trace time); the library's limit is restored on exit."""
    limit = networks.SAVED_GATES_BYTES
    if GRU_PATHS[name] is not None:
        networks.SAVED_GATES_BYTES = GRU_PATHS[name]
    try:
        yield
    finally:
        networks.SAVED_GATES_BYTES = limit


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The subcommand's flags."""
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES),
                        help="shapes to time (default: all)")
    parser.add_argument("--reps", type=int, default=5, help="timed calls per path (default: 5)")
    parser.add_argument("--json", default=None, help="write the record to this JSON file")


def _loss_and_grad(agent: networks.RNNAgent, obs: jax.Array, prev: jax.Array):
    return jax.jit(jax.value_and_grad(
        lambda p: jnp.sum(jnp.sin(networks.unroll(agent, p, obs, prev)))))


def time_shape(shape: tuple[int, ...], reps: int) -> dict:
    """Median seconds per call of each path for one shape (module docstring)."""
    batch, rows, n, obs_dim, num_actions, hidden = shape
    agent = networks.RNNAgent(hidden, num_actions)
    in_dim = obs_dim + n + num_actions
    params = networks.init_agent(agent, jax.random.key(0), in_dim)
    obs = jax.random.uniform(jax.random.key(1), (batch, rows, n, obs_dim))
    prev = jax.nn.one_hot(jax.random.randint(jax.random.key(2), (batch, rows, n), 0,
                                             num_actions), num_actions)
    fns = {}
    for path in ("saved_gates", "rematerialized"):
        with gru_path(path):  # traced (at the first call) under that path's limit
            fns[path] = _loss_and_grad(agent, obs, prev)
            jax.block_until_ready(fns[path](params))
    times: dict[str, list[float]] = {path: [] for path in fns}
    for _ in range(reps):
        for path, fn in fns.items():
            start = time.perf_counter()
            jax.block_until_ready(fn(params))
            times[path].append(time.perf_counter() - start)
    saved = networks.saved_gates_bytes(rows, batch * n, in_dim, hidden)
    medians = {path: float(np.median(t)) for path, t in times.items()}
    return {"shape": dict(zip(("episodes", "rows", "agents", "obs_dim", "actions", "hidden"),
                              shape, strict=True)),
            "saved_gates_bytes": saved,
            "picked": ("saved_gates" if networks.uses_saved_gates(rows, batch * n, in_dim, hidden)
                       else "rematerialized"),
            "seconds": times, "median_s": medians,
            "faster": min(medians, key=medians.get)}


def main(args: argparse.Namespace) -> None:
    """Time every shape and print and record the result."""
    if args.reps < 1:
        raise ValueError(f"--reps must be at least 1, got {args.reps}")
    record = {"backend": jax.default_backend(), "jax": jax.__version__,
              "cpu_count": os.cpu_count(), "load_average_start": os.getloadavg(), "shapes": {}}
    for name in args.shapes:
        row = time_shape(SHAPES[name], args.reps)
        record["shapes"][name] = row
        m = row["median_s"]
        print(f"{name}: saved gates {m['saved_gates']:.3f} s, rematerialized "
              f"{m['rematerialized']:.3f} s, keeps {row['saved_gates_bytes'] / 2**20:.0f} MiB; "
              f"picked {row['picked']}, faster {row['faster']}", flush=True)
    record["load_average_end"] = os.getloadavg()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
