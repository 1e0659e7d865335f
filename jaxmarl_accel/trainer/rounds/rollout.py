"""The rollout round, for on-policy learners (A2C, PPO; paper 003's trainer).

A round steps all ``E`` envs ``T`` times (``rollout_length``) under the learner's
exploration policy, recording each step's observations, actions with their
log-probabilities, values, rewards, the value of the true next observation (before any
auto-reset, for time-limit bootstrapping) and the episode ends, then runs the learner's
``update`` on that :class:`~jaxmarl_accel.algos.on_policy.learner.Rollout` (A2C: one
gradient step; PPO: epochs of minibatch steps). There is no replay: the rollout lives for
one round. Envs carry on from round to round (episodes span rounds when ``T`` is shorter
than an episode), as in WarpDrive, where a training batch is ``train_batch_size /
num_envs`` steps of every env.

Schedule (the same for every seed): a round is ``E x T`` env steps on the run's clock; a
run has ``ceil(total_env_steps / (E x T))`` rounds, a chunk ``ceil(eval_every / (E x T))``;
every round learns.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_accel import config as cfg
from jaxmarl_accel.algos import Algo, algo_spec
from jaxmarl_accel.algos.on_policy.learner import Rollout
from jaxmarl_accel.buffers import Buffer
from jaxmarl_accel.envs import Env
from jaxmarl_accel.envs.policies import available_actions
from jaxmarl_accel.trainer.rounds.state import (
    EpisodeEnds,
    Round,
    RoundFn,
    RoundOutput,
    TrainState,
    add_episode_stats,
    sum_ends,
    within_run,
)
from jaxmarl_accel.types import PyTree


def no_replay() -> Buffer:
    """The buffer of a round without replay: its state is ``()`` and nothing is stored."""
    return Buffer(init=lambda item: (), add=lambda state, batch: state,
                  sample=_no_sample, can_sample=lambda state: jnp.zeros((), bool),
                  update_priorities=lambda state, indices, td_errors: state)


def _no_sample(state: PyTree, key: jax.Array) -> Any:
    raise ValueError("the rollout round keeps no replay to sample from")


def rollout_schedule(config: cfg.TrainConfig, rollout_length: int) -> tuple[int, int, int]:
    """``(steps_per_round, rounds_per_chunk, total_rounds)`` of a rollout-round run with
    rollouts of ``rollout_length`` (T) steps in each of ``num_envs`` envs."""
    steps = config.num_envs * rollout_length
    return (steps, math.ceil(config.eval_every / steps),
            math.ceil(config.total_env_steps / steps))


def make_collect(config: cfg.TrainConfig, env: Env, env_params: PyTree, algo: Algo
                 ) -> Any:
    """The rollout of one round: ``collect(state) -> (state, rollout, episodes)`` steps the
    ``E = num_envs`` envs of ``state`` ``T = rollout_length`` times under the learner's
    exploration policy. ``rollout``: :class:`Rollout` with leaves ``[T, E, ...]``;
    ``episodes``: :class:`~.state.EpisodeEnds` of the episodes that ended (returns ``[N]``
    summed over them, their count). ``state.env_steps`` is left to the caller.

    Args:
      config: the run (``num_envs``).
      env, env_params: the environment.
      algo: a learner with ``on_policy`` set.
    """
    if algo.on_policy is None:
        raise ValueError(f"algo {config.algo!r} learns from rollouts but has no on_policy "
                         "functions")
    fns, num_envs = algo.on_policy, config.num_envs
    step_envs = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    state_avail = env.avail_actions is not None
    avail_of = jax.vmap(available_actions, in_axes=(None, 0, None))

    def env_iteration(state: TrainState, _: None) -> tuple[TrainState, tuple[Rollout,
                                                                                EpisodeEnds]]:
        key, act_key, step_key = jax.random.split(state.key, 3)
        avail = avail_of(env, state.env_state, env_params) if state_avail else None
        chosen = fns.sample(state.algo, state.obs, avail, act_key)
        obs, env_state, reward, terminated, truncated, info = step_envs(
            jax.random.split(step_key, num_envs), state.env_state, chosen.env_action,
            env_params)
        ended = terminated | truncated
        row = Rollout(obs=state.obs, action=chosen.action, log_prob=chosen.log_prob,
                      value=chosen.value, reward=reward,
                      next_value=fns.value(state.algo, info["final_obs"]),
                      terminated=terminated.astype(jnp.float32),
                      ended=ended.astype(jnp.float32), avail=avail)
        episode_return = state.episode_return + reward
        running, stats = add_episode_stats(
            state.episode_stats, {name: info[name] for name in state.episode_stats}, ended)
        finished = EpisodeEnds(jnp.sum(jnp.where(ended[:, None], episode_return, 0.0), axis=0),
                               jnp.sum(ended).astype(jnp.float32), stats)
        state = state.replace(env_state=env_state, obs=obs, key=key,
                              episode_return=jnp.where(ended[:, None], 0.0, episode_return),
                              episode_stats=running)
        return state, (row, finished)

    def collect(state: TrainState) -> tuple[TrainState, Rollout, EpisodeEnds]:
        state, (rollout, ends) = jax.lax.scan(env_iteration, state, None,
                                              length=fns.rollout_length)
        return state, rollout, sum_ends(ends)

    return collect


def make_rollout_round(config: cfg.TrainConfig, env: Env, env_params: PyTree,
                       algo: Algo) -> Round:
    """The :class:`~.state.Round` of an on-policy learner (module docstring).

    Args:
      config: the run (``num_envs`` = E; the step budgets count env steps).
      env, env_params: the environment.
      algo: a learner with ``needs.replay == "rollout"`` and ``on_policy`` set.
    """
    collect = make_collect(config, env, env_params, algo)
    steps, rounds_per_chunk, total_rounds = rollout_schedule(config,
                                                             algo.on_policy.rollout_length)

    def run_round(state: TrainState, round_index: jax.Array) -> tuple[TrainState, RoundOutput]:
        del round_index
        state, rollout, episodes = collect(state)
        key, update_key = jax.random.split(state.key)
        algo_state, metrics, _ = algo.update(state.algo, rollout, None, update_key)
        state = state.replace(algo=algo_state, key=key, env_steps=state.env_steps + steps)
        return state, RoundOutput(episodes, metrics, jnp.ones((), bool))

    run: RoundFn = (run_round if total_rounds % rounds_per_chunk == 0
                    else within_run(run_round, total_rounds))
    return Round(buffer=no_replay(), item=(), run=run, steps_per_round=steps,
                 rounds_per_chunk=rounds_per_chunk, total_rounds=total_rounds,
                 updates_per_round=_updates_per_round(config), first_update_step=steps,
                 carries_stats=True)


def _updates_per_round(config: cfg.TrainConfig) -> int:
    """Gradient steps per round, as the learner's record counts them (PPO's ``epochs x
    minibatches``; one by default)."""
    count = algo_spec(config.algo).updates_per_round
    return 1 if count is None else count(config.learner)


__all__ = ["make_collect", "make_rollout_round", "no_replay", "rollout_schedule"]
