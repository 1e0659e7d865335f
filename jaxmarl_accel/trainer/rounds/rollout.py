"""The rollout round, for on-policy learners (A2C, PPO, MAPPO; paper 003's trainer).

A round steps all ``E`` envs ``T`` times (``rollout_length``) under the learner's
exploration policy, recording each step's observations, actions with their
log-probabilities, values, rewards, the value of the true next observation (before any
auto-reset, for time-limit bootstrapping) and the episode ends, then runs the learner's
``update`` on that :class:`~jaxmarl_accel.types.Rollout` (A2C: one
gradient step; PPO: epochs of minibatch steps). There is no replay: the rollout lives for
one round. Envs carry on from round to round (episodes span rounds when ``T`` is shorter
than an episode), as in WarpDrive, where a training batch is ``train_batch_size /
num_envs`` steps of every env.

The learner's contract (its :class:`~jaxmarl_accel.algos.on_policy.learner.OnPolicyFns`,
``algo.on_policy``), which any learner of rollouts may meet:

* ``sample(algo_state, carry, obs [E, N, D], world [E, S] | None, avail [E, N, A] | None,
  key) -> (step, carry)``: ``step`` has ``env_action``, ``action``, ``log_prob`` and
  ``value`` (leaves ``[E, N, ...]``; a learner without values may give zeros), and the
  carry after the step.
* ``value(algo_state, carry, final_obs [E, N, D], final_world [E, S] | None, final_avail
  [E, N, A] | None) -> [E, N]``: the values of the observations the step reached (before
  any auto-reset), from the carry ``sample`` returned; ``final_avail`` the actions available
  there (the env's ``info["final_avail_actions"]``; ``None`` for an env without
  ``avail_actions``), over which a learner of action values takes its max; a learner without
  values may give zeros.
* ``initial_carry(E)``: the carry of ``E`` envs at an episode's start (leaves ``[E, ...]``,
  ``()`` without memory). The round keeps it in :attr:`~.state.TrainState.carry` from round
  to round and sets each env's back to it where that env's episode ended; the rollout keeps
  the carry it started with (:attr:`~jaxmarl_accel.types.Rollout.carry`, ``None`` when
  ``()``), from which a recurrent learner unrolls each env's sequence again.
* ``reads_world``: the round forms the global state of every step and of every step's
  reached observation: the env's ``state_of`` (``info["final_state"]`` after a step), or the
  concatenated observations where the env has none (:attr:`~jaxmarl_accel.types.Rollout.world`;
  ``None`` and nothing computed when False).
* ``rollout_length``: ``T``.

Schedule (the same for every seed): a round is ``E x T`` env steps on the run's clock; a
run has ``ceil(total_env_steps / (E x T))`` rounds, a chunk ``ceil(eval_every / (E x T))``;
every round learns.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmarl_accel.algos import Algo, algo_spec
from jaxmarl_accel.algos.registry import family_defaults
from jaxmarl_accel.buffers import Buffer
from jaxmarl_accel.envs import Env, EnvSpec
from jaxmarl_accel.envs.policies import available_actions
from jaxmarl_accel.trainer.rounds.record import RoundSpec, Schedule, register_round
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
from jaxmarl_accel.types import PyTree, Rollout


def no_replay() -> Buffer:
    """The buffer of a round without replay: its state is ``()`` and nothing is stored."""
    return Buffer(init=lambda item: (), add=lambda state, batch: state,
                  sample=_no_sample, can_sample=lambda state: jnp.zeros((), bool),
                  update_priorities=lambda state, indices, td_errors: state)


def _no_sample(state: PyTree, key: jax.Array) -> Any:
    raise ValueError("the rollout round keeps no replay to sample from")


def rollout_schedule(config: Any, spec: EnvSpec | None, algo: Algo) -> Schedule:
    """The :class:`~.record.Schedule` of a rollout-round run of ``config`` (a ``TrainConfig``)
    with ``algo``'s rollouts of ``T`` steps (``algo.on_policy.rollout_length``) in each of
    ``num_envs`` envs: every round learns, every env acts every ``num_envs`` steps."""
    del spec
    steps = config.num_envs * algo.on_policy.rollout_length
    return Schedule(steps_per_round=steps, rounds_per_chunk=math.ceil(config.eval_every / steps),
                    total_rounds=math.ceil(config.total_env_steps / steps),
                    updates_per_round=_updates_per_round(config), first_update_step=steps,
                    clock_stride=config.num_envs)


def make_collect(config: Any, env: Env, env_params: PyTree, algo: Algo) -> Any:
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
    world_of = world_views(env, env_params) if fns.reads_world else None
    first_carry = fns.initial_carry(num_envs)

    def env_iteration(state: TrainState, _: None) -> tuple[TrainState, tuple[Rollout,
                                                                                EpisodeEnds]]:
        key, act_key, step_key = jax.random.split(state.key, 3)
        avail = avail_of(env, state.env_state, env_params) if state_avail else None
        world = None if world_of is None else world_of.now(state.env_state, state.obs)
        chosen, carry = fns.sample(state.algo, state.carry, state.obs, world, avail, act_key)
        obs, env_state, reward, terminated, truncated, info = step_envs(
            jax.random.split(step_key, num_envs), state.env_state, chosen.env_action,
            env_params)
        ended = terminated | truncated
        final_world = None if world_of is None else world_of.reached(info)
        final_avail = info["final_avail_actions"] if state_avail else None
        row = Rollout(obs=state.obs, action=chosen.action, log_prob=chosen.log_prob,
                      value=chosen.value, reward=reward,
                      next_value=fns.value(state.algo, carry, info["final_obs"], final_world,
                                           final_avail),
                      terminated=terminated.astype(jnp.float32),
                      ended=ended.astype(jnp.float32), avail=avail, world=world)
        episode_return = state.episode_return + reward
        running, stats = add_episode_stats(
            state.episode_stats, {name: info[name] for name in state.episode_stats}, ended)
        finished = EpisodeEnds(jnp.sum(jnp.where(ended[:, None], episode_return, 0.0), axis=0),
                               jnp.sum(ended).astype(jnp.float32), stats)
        state = state.replace(env_state=env_state, obs=obs, key=key,
                              episode_return=jnp.where(ended[:, None], 0.0, episode_return),
                              episode_stats=running, carry=reset_where(ended, first_carry, carry))
        return state, (row, finished)

    def collect(state: TrainState) -> tuple[TrainState, Rollout, EpisodeEnds]:
        start = state.carry
        state, (rollout, ends) = jax.lax.scan(env_iteration, state, None,
                                              length=fns.rollout_length)
        if jax.tree.leaves(start):
            rollout = rollout._replace(carry=start)
        return state, rollout, sum_ends(ends)

    return collect


class WorldViews(NamedTuple):
    """The global state of ``E`` envs, for a learner that reads it.

    Attributes:
      now: ``(env_state [E, ...], obs [E, N, D]) -> [E, S]`` of the states acted on.
      reached: ``(info) -> [E, S]`` of the states a step reached, before any auto-reset.
    """

    now: Any
    reached: Any


def world_views(env: Env, env_params: PyTree) -> WorldViews:
    """:class:`WorldViews` of ``env``: its ``state_of`` (and ``info["final_state"]``), or
    the concatenated observations ``[E, N x D]`` where it has none."""
    if env.state_of is None:
        flat = lambda obs: obs.reshape(obs.shape[0], -1)
        return WorldViews(lambda env_state, obs: flat(obs),
                          lambda info: flat(info["final_obs"]))
    state_of = jax.vmap(env.state_of, in_axes=(0, None))
    return WorldViews(lambda env_state, obs: state_of(env_state, env_params),
                      lambda info: info["final_state"])


def reset_where(ended: jax.Array, initial: PyTree, carry: PyTree) -> PyTree:
    """``carry`` (leaves ``[E, ...]``) with the envs where ``ended [E]`` back at
    ``initial``'s."""
    return jax.tree.map(
        lambda first, now: jnp.where(ended.reshape((-1,) + (1,) * (now.ndim - 1)), first, now),
        initial, carry)


def make_rollout_round(config: Any, env: Env, env_params: PyTree, algo: Algo) -> Round:
    """The :class:`~.state.Round` of an on-policy learner (module docstring).

    Args:
      config: the run (``num_envs`` = E; the step budgets count env steps).
      env, env_params: the environment.
      algo: a learner with ``on_policy`` set.
    """
    collect = make_collect(config, env, env_params, algo)
    schedule = rollout_schedule(config, env.spec, algo)
    steps, total_rounds = schedule.steps_per_round, schedule.total_rounds

    def run_round(state: TrainState, round_index: jax.Array) -> tuple[TrainState, RoundOutput]:
        del round_index
        state, rollout, episodes = collect(state)
        key, update_key = jax.random.split(state.key)
        algo_state, metrics, _ = algo.update(state.algo, rollout, None, update_key)
        state = state.replace(algo=algo_state, key=key, env_steps=state.env_steps + steps)
        return state, RoundOutput(episodes, metrics, jnp.ones((), bool))

    run: RoundFn = (run_round if total_rounds % schedule.rounds_per_chunk == 0
                    else within_run(run_round, total_rounds))
    return Round(buffer=no_replay(), item=(), run=run, schedule=schedule, carries_stats=True,
                 carry=algo.on_policy.initial_carry(config.num_envs))


def _updates_per_round(config: Any) -> int:
    """Gradient steps per round, as the learner's record counts them (PPO's ``epochs x
    minibatches``; one by default)."""
    count = algo_spec(config.algo).updates_per_round
    return 1 if count is None else count(config.learner)


REPLAY_FIELDS = ("sampler", "sampler_kwargs", "layout", "index_sharing", "replay_next_obs",
                 "replay_obs", "buffer_capacity", "batch_size", "update_every",
                 "episode_updates", "learning_starts")
"""``TrainConfig`` fields of the replay, which a run without one leaves at their defaults."""


def check_rollout_run(config: Any) -> None:
    """What a run without replay (its learner's own rollouts) accepts: the replay's
    fields at their defaults (the learner family's where it gives one), every team trained."""
    defaults = {field.name: field.default for field in dataclasses.fields(config)}
    defaults.update(family_defaults(config.algo))
    for name in REPLAY_FIELDS:
        if getattr(config, name) != defaults[name]:
            raise ValueError(f"{name} ({getattr(config, name)!r}) must keep its default: "
                             f"algo {config.algo!r} keeps no replay and learns from its "
                             "rollouts of rollout_length steps in num_envs envs")
    if config.prey != "trained":
        raise ValueError(f"prey {config.prey!r}: algo {config.algo!r} trains every team "
                         "(scripted prey are not supported by the on-policy learners)")


def _one_rollout_each(config: Any, schedule: Schedule) -> str:
    length = schedule.steps_per_round // config.num_envs
    return (f"a rollout of --rollout-length {length} steps in each of the --num-envs "
            f"{config.num_envs} envs")


ROLLOUT = register_round(RoundSpec(
    name="rollout", make=make_rollout_round, schedule=rollout_schedule,
    check=check_rollout_run, describe=_one_rollout_each,
    summary="collect T steps of E envs, then the learner's update on them (no replay)",
    memory_hint="lower --seeds, --num-envs or --rollout-length",
    temporaries_hint="the temporaries grow with the rollout: num-envs x rollout-length steps"))
"""The rollout's record (no replay)."""


__all__ = ["REPLAY_FIELDS", "ROLLOUT", "WorldViews", "check_rollout_run", "make_collect",
           "make_rollout_round", "no_replay", "reset_where", "rollout_schedule", "world_views"]
