"""The transition round, for learners that replay single joint transitions (MADDPG, MATD3,
MASAC, and the feed-forward value learners).

A round steps all ``E`` environments ``iters_per_round`` times under the learner's
exploration policy, adds every transition to the replay, then performs
``updates_per_round`` updates of all agents (one per ``update_every`` env steps, the seed
papers' schedule) once ``max(learning_starts, batch_size)`` env steps have been taken.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_accel import config as cfg
from jaxmarl_accel.algos import Algo
from jaxmarl_accel.buffers import Buffer, make_buffer
from jaxmarl_accel.compact_rows import observe_chunk
from jaxmarl_accel.envs import Env
from jaxmarl_accel.trainer.policy import learner_policy
from jaxmarl_accel.trainer.rounds.state import (
    EpisodeEnds,
    Round,
    RoundFn,
    RoundOutput,
    TrainState,
    add_episode_stats,
    shapes_once,
    sum_ends,
    within_run,
    zeros_like_shapes,
)
from jaxmarl_accel.trainer.steps import example_transition, learn_step, transition_step
from jaxmarl_accel.types import Policy, PyTree


def next_obs_kwargs(config: cfg.TrainConfig, spec: Any) -> dict[str, Any]:
    """``make_buffer``'s ``next_obs`` options for ``config.replay_next_obs``: with
    ``"next_slot"``, E = ``num_envs`` transitions per add and episodes of exactly
    ``spec.episode_length`` steps (which size the side ring); a one-line ValueError for an
    env whose episodes can end earlier."""
    if config.replay_next_obs == "stored":
        return {}
    if spec.terminates:
        raise ValueError(f"replay_next_obs {config.replay_next_obs!r} needs episodes of a fixed "
                         f"length; {spec.name}'s can terminate early: use stored")
    return dict(next_obs=config.replay_next_obs, num_envs=config.num_envs,
                episode_length=spec.episode_length)


def replay_obs_kwargs(config: cfg.TrainConfig, env: Env, env_params: PyTree
                      ) -> dict[str, Any]:
    """``make_buffer``'s ``observe`` options for ``config.replay_obs``: with
    ``"physical_state"``, the env's own observation function of a packed physical state
    (``env.observe_physical`` at ``env_params``), :func:`~jaxmarl_accel.compact_rows.observe_chunk`
    joint steps at a time; a one-line ValueError for an env without one."""
    if config.replay_obs == "observation":
        return {}
    if env.observe_physical is None:
        raise ValueError(f"replay_obs {config.replay_obs!r}: {env.spec.name} has no physical "
                         "state to recompute its observations from; use observation")
    return dict(observe=lambda physical: env.observe_physical(physical, env_params),
                observe_chunk=observe_chunk(env.spec.num_agents))


def learner_observes(config: cfg.TrainConfig) -> bool:
    """Whether a physical-state replay hands the learner packed physical states, which it
    observes itself (the neighbourhood critics: only the rows their samples read), instead
    of recomputing every agent's observations when it samples (the joint critics)."""
    return (config.replay_obs == "physical_state"
            and getattr(config.learner, "critic", "joint") != "joint")


def learner_observation(config: cfg.TrainConfig, env: Env, env_params: PyTree
                        ) -> Callable[..., jax.Array] | None:
    """The ``observe_at`` a learner is built with when it observes the replay's physical
    states itself (:func:`learner_observes`): ``(physical, agents) -> rows`` of the env's
    observations; ``None`` otherwise."""
    if not learner_observes(config):
        return None
    replay_obs_kwargs(config, env, env_params)  # the same one-line error for envs without
    return lambda physical, agents: env.observe_physical_at(physical, env_params, agents)


def make_transition_round(config: cfg.TrainConfig, env: Env, env_params: PyTree,
                          algo: Algo) -> Round:
    """The :class:`~.state.Round` of learners that replay transitions (module docstring).
    Its buffer has ``config``'s sampler, layout, index sharing and replay options; rounds
    past the end of the run (in a shorter last chunk) do nothing (:func:`~.state.within_run`)."""
    spec = env.spec
    replay_obs = {} if learner_observes(config) else replay_obs_kwargs(config, env, env_params)
    buffer = make_buffer(config.sampler, capacity=config.buffer_capacity,
                         batch_size=config.batch_size, layout=config.layout,
                         index_sharing=config.index_sharing, **cfg.buffer_kwargs(config),
                         **next_obs_kwargs(config, spec), **replay_obs)
    physical = config.replay_obs == "physical_state"
    run_round = _transition_round(config, env, env_params, algo, buffer,
                                  learner_policy(env, algo, config.prey == "scripted",
                                                 explore=True))
    if cfg.total_rounds(config) % cfg.rounds_per_chunk(config):  # a shorter last chunk
        run_round = within_run(run_round, cfg.total_rounds(config))
    return Round(buffer=buffer, item=example_transition(spec, algo.action_dim, physical),
                 run=run_round, steps_per_round=cfg.steps_per_round(config),
                 rounds_per_chunk=cfg.rounds_per_chunk(config),
                 total_rounds=cfg.total_rounds(config),
                 updates_per_round=cfg.updates_per_round(config),
                 first_update_step=cfg.first_update_step(config), carries_stats=True)


def _transition_round(config: cfg.TrainConfig, env: Env, env_params: PyTree, algo: Algo,
                      buffer: Buffer, behaviour: Policy) -> RoundFn:
    """``(state, round_index) -> (state, RoundOutput)``: ``iters_per_round`` steps of all
    E envs under the ``behaviour`` policy (every transition added to the replay), then
    ``updates_per_round`` learner updates once ``max(learning_starts, batch_size)`` env
    steps have been taken and the replay holds as many transitions (up to its capacity)."""
    num_envs, iters = config.num_envs, cfg.iters_per_round(config)
    updates, steps_per_round = cfg.updates_per_round(config), cfg.steps_per_round(config)
    start_updates_after = max(config.learning_starts, config.batch_size)
    physical = config.replay_obs == "physical_state"
    episode_length = env.spec.episode_length

    def env_iteration(state: TrainState, _: None) -> tuple[TrainState, EpisodeEnds]:
        key, act_key, step_key = jax.random.split(state.key, 3)
        if algo.observe is not None:  # counters for schedules (episodes: fixed-length MPE)
            state = state.replace(algo=algo.observe(state.algo, state.env_steps,
                                                    state.env_steps // episode_length))
        step = transition_step(env, env_params, behaviour, state.algo, state.env_state,
                               state.obs, act_key, step_key, physical_state=physical)
        ended = step.ended[:, None]
        episode_return = state.episode_return + step.transition.reward
        running, stats = add_episode_stats(state.episode_stats, step.stats, step.ended)
        finished = EpisodeEnds(jnp.sum(jnp.where(ended, episode_return, 0.0), axis=0),
                               jnp.sum(ended[:, 0]).astype(jnp.float32), stats)
        state = state.replace(
            buffer=buffer.add(state.buffer, step.transition), env_state=step.env_state,
            obs=step.obs, episode_return=jnp.where(ended, 0.0, episode_return), key=key,
            env_steps=state.env_steps + num_envs, episode_stats=running)
        return state, finished

    def update_once(state: TrainState, _: None) -> tuple[TrainState, dict[str, jax.Array]]:
        key, sample_key, update_key = jax.random.split(state.key, 3)
        learned = learn_step(algo, buffer, state.algo, state.buffer, sample_key, update_key)
        return state.replace(algo=learned.algo, buffer=learned.buffer, key=key), learned.metrics

    def run_updates(state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        state, metrics = jax.lax.scan(update_once, state, None, length=updates)
        return state, jax.tree.map(lambda m: jnp.mean(m, axis=0), metrics)

    run, shapes = shapes_once(run_updates)  # traced once: the cond's true branch

    def skip_updates(state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        return state, zeros_like_shapes(shapes(state)[1])

    def run_round(state: TrainState, round_index: jax.Array) -> tuple[TrainState, RoundOutput]:
        state, ends = jax.lax.scan(env_iteration, state, None, length=iters)
        # the replay's fill is implied by the round in a run from the start; it differs
        # after resuming from a checkpoint without the replay, which is refilled first
        ready = (((round_index + 1) * steps_per_round >= start_updates_after)
                 & (state.buffer.size >= min(start_updates_after, config.buffer_capacity)))
        state, learner = jax.lax.cond(ready, run, skip_updates, state)
        return state, RoundOutput(sum_ends(ends), learner, ready)

    return run_round


__all__ = ["learner_observation", "learner_observes", "make_transition_round",
           "next_obs_kwargs", "replay_obs_kwargs"]
