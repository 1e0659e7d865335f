"""Training at hundreds to thousands of agents: env and agent steps/s with learning, beside
the rollout alone.

For each scenario and agent count the env is made with ``k_nearest`` observations and the
learner with team-shared networks and a neighbourhood critic (``--sharing team --critic
knearest``, :mod:`~jaxmarl_accel.algos.actor_critic.local_critic`), once per
``--shared-batch`` mode. Each
configuration is compiled once (compile time reported on its own), warmed up by one chunk
and timed over ``--chunks`` chunks of the real trainer (:func:`~jaxmarl_accel.trainer.train.
make_trainer`: rollout, replay, one update per ``--update-every`` env steps, evaluation).
The rollout alone is the same policy stepping the same envs in a ``lax.scan`` with no replay
and no update, timed the same way.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from typing import Any

import jax
import jax.numpy as jnp

from experiments.timing import time_chunks
from jaxmarl_accel.algos import ActorCriticConfig
from jaxmarl_accel.cli import flags
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.envs import agent_count_kwarg
from jaxmarl_accel.runs.memory import check_state_fits
from jaxmarl_accel.trainer.policy import learner_policy
from jaxmarl_accel.trainer.steps import transition_step
from jaxmarl_accel.trainer.train import make_trainer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The bench's own flags, then the run's and learner's settings (generated)."""
    parser.add_argument("--json", default=None, help="write the records to this JSON file")
    parser.add_argument("--envs", nargs="+", default=["simple_spread", "simple_tag"],
                        help="scenarios (default: simple_spread simple_tag)")
    parser.add_argument("--agents", nargs="+", type=int, default=[100, 1000],
                        help="agent counts (predators for simple_tag) (default: 100 1000)")
    parser.add_argument("--k-nearest", type=int, default=8,
                        help="agents (and landmarks) each agent observes (default: 8)")
    parser.add_argument("--shared-batches", nargs="+", default=["pairs", "joint_steps"],
                        choices=["pairs", "joint_steps"],
                        help="what the team learners train on, each timed (default: both)")
    parser.add_argument("--chunk-steps", type=int, default=2_000,
                        help="env steps per timed chunk (default: 2000)")
    parser.add_argument("--chunks", type=int, default=2,
                        help="timed chunks after the warm-up chunk (default: 2)")
    flags.add_dataclass_flags(
        parser.add_argument_group("run settings (jaxmarl_accel.config.TrainConfig)"),
        TrainConfig, only=("algo", "replay_next_obs", "replay_obs", "buffer_capacity", "batch_size",
                           "num_envs", "update_every"),
        choices=flags.train_choices(),
        defaults={"buffer_capacity": 2_000, "batch_size": 32, "num_envs": 10,
                  "update_every": 100},
        aliases={"buffer_capacity": ("--capacity",)})
    flags.add_dataclass_flags(
        parser.add_argument_group("learner (jaxmarl_accel.algos.ActorCriticConfig)"),
        ActorCriticConfig,
        only=("hidden_sizes", "critic", "critic_k"), choices=flags.train_choices(),
        defaults={"critic": "knearest"})


def rollout_chunk(trainer: Any, steps: int) -> Any:
    """``(state, chunk) -> (state, mean reward)``: ``steps`` vectorized steps of the trainer's
    envs under its exploring policy, with no replay and no update."""
    policy = learner_policy(trainer.env, trainer.algo, False, explore=True)

    def one(state: Any, _: None) -> tuple[Any, jax.Array]:
        key, act_key, step_key = jax.random.split(state.key, 3)
        step = transition_step(trainer.env, trainer.env_params, policy, state.algo,
                               state.env_state, state.obs, act_key, step_key)
        return state.replace(env_state=step.env_state, obs=step.obs, key=key), jnp.mean(
            step.transition.reward)

    def chunk(state: Any, index: jax.Array) -> tuple[Any, jax.Array]:
        del index
        state, reward = jax.lax.scan(one, state, None, length=steps)
        return state, jnp.mean(reward)

    return chunk


def bench_one(args: argparse.Namespace, env: str, agents: int, shared_batch: str
              ) -> dict[str, Any]:
    """One configuration: training and rollout-only throughput."""
    steps_per_round = max(args.num_envs, args.update_every)
    chunk_steps = max(steps_per_round, args.chunk_steps // steps_per_round * steps_per_round)
    env_kwargs = ((agent_count_kwarg(env), agents), ("k_nearest", args.k_nearest))
    config = flags.train_config_from_args(
        args, env=env, env_kwargs=env_kwargs, total_env_steps=chunk_steps * (args.chunks + 1),
        learning_starts=args.batch_size, eval_every=chunk_steps, eval_episodes=1)
    config = dataclasses.replace(config, learner=dataclasses.replace(
        config.learner, sharing="team", shared_batch=shared_batch))
    trainer = make_trainer(config)
    n = trainer.env.spec.num_agents
    check_state_fits(jax.eval_shape(trainer.init, jax.random.PRNGKey(0)), 1)
    state = jax.jit(trainer.init)(jax.random.PRNGKey(0))
    train_fn = jax.jit(trainer.run_chunk, donate_argnums=0)
    state, _, compile_s, chunk_s = time_chunks(train_fn, state, args.chunks)
    roll_iters = chunk_steps // args.num_envs
    roll_fn = jax.jit(rollout_chunk(trainer, roll_iters), donate_argnums=0)
    state, _, roll_compile_s, roll_s = time_chunks(roll_fn, state, args.chunks)
    train_rate = chunk_steps / chunk_s
    roll_rate = roll_iters * args.num_envs / roll_s
    return {"env": env, "num_agents": n, "k_nearest": args.k_nearest, "algo": config.algo,
            "critic": config.learner.critic, "shared_batch": shared_batch,
            "num_envs": args.num_envs, "batch": args.batch_size,
            "update_every": args.update_every, "capacity": args.buffer_capacity,
            "replay_next_obs": config.replay_next_obs, "replay_obs": config.replay_obs,
            "env_steps_per_s": train_rate, "agent_steps_per_s": train_rate * n,
            "rollout_env_steps_per_s": roll_rate, "rollout_agent_steps_per_s": roll_rate * n,
            "compile_s": compile_s, "rollout_compile_s": roll_compile_s,
            "updates_per_chunk": chunk_steps // args.update_every,
            "device": str(jax.devices()[0])}


def main(args: argparse.Namespace) -> None:
    header = (f"{'env':<14}{'N':>6}{'batch':>13}{'env steps/s':>13}{'agent steps/s':>15}"
              f"{'rollout':>11}{'rollout agent':>15}{'compile s':>10}")
    print(header, flush=True)
    records = []
    for env in args.envs:
        for agents in args.agents:
            for shared_batch in args.shared_batches:
                try:
                    r = bench_one(args, env, agents, shared_batch)
                except ValueError as error:  # e.g. the state does not fit right now
                    print(f"{env:<14}{agents:>6}{shared_batch:>13}  skipped: {error}",
                          flush=True)
                    continue
                print(f"{env:<14}{r['num_agents']:>6}{shared_batch:>13}"
                      f"{r['env_steps_per_s']:>13,.0f}{r['agent_steps_per_s']:>15,.0f}"
                      f"{r['rollout_env_steps_per_s']:>11,.0f}"
                      f"{r['rollout_agent_steps_per_s']:>15,.0f}{r['compile_s']:>10.1f}",
                      flush=True)
                records.append(r)
                if args.json:
                    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
                    with open(args.json, "w") as handle:
                        json.dump(records, handle, indent=2)
