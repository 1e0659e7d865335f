"""End-to-end training throughput: env steps per second including learning.

Each configuration is compiled once (compile time reported on its own), warmed up by one
chunk, then timed over ``--chunks`` chunks. Updates run from the first round
(``learning_starts`` = batch size) at the papers' ratio of one update of all agents per
``--update-every`` env steps, so the figure includes learning throughout. The update's
FLOP count (XLA cost analysis) and time give its share of this machine's dense-matmul
rate, measured in the same process on the same shapes class (``[batch, 64] @ [64, 64]``).

With ``--peers`` other MADDPG implementations run in the same process at the same N and
settings, once per scenario and agent count; each record then has ``peers``: per peer its
``peer_env_steps_per_s`` and ``ratio`` (our env steps/s per seed over the peer's), its setup
and warm-up times apart (see :mod:`experiments.bench.peers`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from typing import Any

import jax
import numpy as np

from experiments.bench import peers
from experiments.timing import time_chunks
from jaxmarl_accel.algos import ActorCriticConfig
from jaxmarl_accel.cli import flags
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.envs import agent_count_kwarg
from jaxmarl_accel.runs.memory import check_state_fits
from jaxmarl_accel.trainer.train import make_trainer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The bench's own flags (the matrix of scenarios, agent counts, seeds and learners, and
    the timing), then the run's settings as generated from ``TrainConfig`` and ``ActorCriticConfig``
    (with a 1e5-transition replay by default), then the peers' flags."""
    parser.add_argument("--json", default=None, help="write the records to this JSON file")
    parser.add_argument("--envs", nargs="+", default=["simple_spread", "simple_tag"],
                        help="scenarios (default: simple_spread simple_tag)")
    parser.add_argument("--agents", nargs="+", type=int, default=[3, 6, 12, 24],
                        help="agent counts (predators for simple_tag) (default: 3 6 12 24)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 8],
                        help="seed counts trained at once (default: 1 8)")
    parser.add_argument("--learners", dest="learner_modes", nargs="+",
                        default=["parallel", "sequential"],
                        choices=["parallel", "sequential"],
                        help="how agents are updated (default: parallel sequential)")
    parser.add_argument("--chunk-steps", type=int, default=10_000,
                        help="env steps per seed in one timed chunk (default: 10000)")
    parser.add_argument("--chunks", type=int, default=2,
                        help="timed chunks after the warm-up chunk (default: 2)")
    flags.add_dataclass_flags(
        parser.add_argument_group("run settings (jaxmarl_accel.config.TrainConfig)"),
        TrainConfig, only=("algo", "sampler", "layout", "index_sharing", "buffer_capacity",
                           "batch_size", "num_envs", "update_every"),
        choices=flags.train_choices(), defaults={"buffer_capacity": 100_000},
        aliases={"buffer_capacity": ("--capacity",)})
    flags.add_dataclass_flags(
        parser.add_argument_group("learner (jaxmarl_accel.algos.ActorCriticConfig)"),
        ActorCriticConfig,
        skip=("learners",), choices=flags.train_choices())
    peers.add_arguments(parser)


def matmul_rate(batch: int, repeats: int = 20) -> float:
    """FLOP/s of a chain of ``[batch, 64] @ [64, 64]`` ReLU layers (the update's shapes)."""
    depth = 64
    weights = jax.random.normal(jax.random.PRNGKey(0), (depth, 64, 64)) * 0.1
    x = jax.random.normal(jax.random.PRNGKey(1), (batch, 64))

    @jax.jit
    def chain(x):
        return jax.lax.fori_loop(0, depth, lambda i, h: jax.nn.relu(h @ weights[i]), x)

    chain(x).block_until_ready()
    t0 = time.perf_counter()
    for _ in range(repeats):
        chain(x).block_until_ready()
    elapsed = (time.perf_counter() - t0) / repeats
    return 2.0 * batch * 64 * 64 * depth / elapsed


def update_share(trainer: Any, state: Any, rate: float, repeats: int = 10) -> dict[str, float]:
    """Time one update of all agents and compare its FLOPs with the matmul rate."""
    one_seed = jax.tree.map(lambda x: x[0], state)
    batch = trainer.buffer.sample(one_seed.buffer, jax.random.PRNGKey(0))
    update = jax.jit(trainer.algo.update)
    lowered = update.lower(one_seed.algo, batch.experience, batch.weights, jax.random.PRNGKey(1))
    compiled = lowered.compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    flops = float(cost.get("flops", float("nan"))) if cost else float("nan")
    args = (one_seed.algo, batch.experience, batch.weights, jax.random.PRNGKey(1))
    jax.block_until_ready(compiled(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(compiled(*args))
    seconds = (time.perf_counter() - t0) / repeats
    return {"update_ms": 1e3 * seconds, "update_flops": flops,
            "update_flop_per_s": flops / seconds, "matmul_flop_per_s": rate,
            "share_of_matmul_rate": flops / seconds / rate}


def bench_one(args: argparse.Namespace, env: str, agents: int, seeds: int, learners: str,
              rate: float) -> dict[str, Any]:
    base = flags.train_config_from_args(args, env=env,
                                        env_kwargs=((agent_count_kwarg(env), agents),))
    steps_per_round = max(base.num_envs, base.update_every)  # flags left out: the defaults
    chunk_steps = max(steps_per_round, args.chunk_steps // steps_per_round * steps_per_round)
    config = dataclasses.replace(
        base, total_env_steps=chunk_steps * (args.chunks + 1),
        learning_starts=base.batch_size, eval_every=chunk_steps, eval_episodes=8,
        learner=dataclasses.replace(base.learner, learners=learners))
    trainer = make_trainer(config)
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    check_state_fits(jax.eval_shape(jax.vmap(trainer.init), keys), seeds)
    state = jax.jit(jax.vmap(trainer.init))(keys)
    chunk_fn = jax.jit(jax.vmap(trainer.run_chunk, in_axes=(0, None)), donate_argnums=0)
    state, metrics, compile_s, chunk_s = time_chunks(chunk_fn, state, args.chunks)
    elapsed = chunk_s * args.chunks
    record = {"env": env, "num_agents": agents, "seeds": seeds, "learners": learners,
              "env_steps_per_s": seeds * chunk_steps * args.chunks / elapsed,
              "env_steps_per_s_per_seed": chunk_steps * args.chunks / elapsed,
              "compile_s": compile_s, "num_envs": config.num_envs,
              "batch": config.batch_size, "update_every": config.update_every,
              "algo": config.algo,
              "updates_per_chunk": int(np.asarray(metrics.updates)[0])}
    if seeds == 1:
        record.update(update_share(trainer, state, rate))
    return record


def main(args: argparse.Namespace) -> None:
    try:
        peer_settings = peers.settings_from_args(args)
    except peers.PeerUnavailable as error:
        raise SystemExit(f"error: {error}") from None
    peer_results: dict[tuple[str, int], dict[str, peers.PeerResult]] = {}
    batch = flags.train_config_from_args(  # the family's default where the flag is left out
        args, env=args.envs[0],
        env_kwargs=((agent_count_kwarg(args.envs[0]), args.agents[0]),)).batch_size
    rate = matmul_rate(batch)
    print(f"dense matmul rate ([{batch},64]@[64,64] chain): {rate / 1e9:.1f} GFLOP/s")
    header = (f"{'env':<14}{'N':>4}{'seeds':>6}{'learners':>11}{'steps/s':>11}"
              f"{'per seed':>10}{'compile s':>10}{'upd ms':>8}{'mm share':>9}")
    print(header)
    records = []
    for env in args.envs:
        for agents in args.agents:
            for seeds in args.seeds:
                for learners in args.learner_modes:
                    try:
                        r = bench_one(args, env, agents, seeds, learners, rate)
                    except ValueError as error:  # e.g. the state does not fit right now
                        print(f"{env:<14}{agents:>4}{seeds:>6}{learners:>11}  skipped: {error}",
                              flush=True)
                        continue
                    print(f"{env:<14}{agents:>4}{seeds:>6}{learners:>11}"
                          f"{r['env_steps_per_s']:>11,.0f}{r['env_steps_per_s_per_seed']:>10,.0f}"
                          f"{r['compile_s']:>10.1f}{r.get('update_ms', float('nan')):>8.2f}"
                          f"{r.get('share_of_matmul_rate', float('nan')):>9.2f}", flush=True)
                    if args.peers:
                        if (env, agents) not in peer_results:
                            peer_results[env, agents] = peers.measure(
                                args.peers, env, agents, peer_settings)
                        r["peers"] = peers.compare(r, peer_results[env, agents])
                        for name, entry in r["peers"].items():
                            print(f"  ours per seed / {name}: {entry['ratio']:.1f}x", flush=True)
                    records.append(r)
                    if args.json:
                        with open(args.json, "w") as handle:
                            json.dump(records, handle, indent=2)
    if args.peers:
        print(f"ratios from this run:\n{'env':<14}{'N':>4}{'seeds':>6}{'learners':>11}  "
              f"{'peer':<13}{'ours/seed':>11}{'peer':>11}{'ratio':>9}")
        print("\n".join(peers.summary_lines(records)), flush=True)
