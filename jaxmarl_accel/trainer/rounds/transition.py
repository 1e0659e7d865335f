"""The transition round, for learners that replay single joint transitions (MADDPG, MATD3,
MASAC, and the feed-forward value learners).

A round steps all ``E`` environments ``iters_per_round`` times under the learner's
exploration policy, adds every transition to the replay, then performs
``updates_per_round`` updates of all agents (one per ``update_every`` env steps, the seed
papers' schedule) once ``max(learning_starts, batch_size)`` env steps have been taken.
Its record, :data:`TRANSITION`, checks that ``num_envs`` and ``update_every`` divide one
another and the step budgets into whole rounds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_accel.algos import Algo
from jaxmarl_accel.algos.registry import buffer_kwargs, observes_physical
from jaxmarl_accel.buffers import Buffer, make_buffer
from jaxmarl_accel.compact_rows import observe_chunk
from jaxmarl_accel.envs import Env, EnvSpec
from jaxmarl_accel.trainer.policy import learner_policy
from jaxmarl_accel.trainer.rounds.record import RoundSpec, Schedule, register_round
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


def next_obs_kwargs(config: Any, spec: Any) -> dict[str, Any]:
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


def replay_obs_kwargs(config: Any, env: Env, env_params: PyTree
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


def learner_observes(config: Any) -> bool:
    """Whether a physical-state replay hands the learner packed physical states, which it
    observes itself (the neighbourhood critics: only the rows their samples read), instead
    of recomputing every agent's observations when it samples (the joint critics): its
    family's hook (:func:`~jaxmarl_accel.algos.registry.observes_physical`)."""
    return observes_physical(config)


def learner_observation(config: Any, env: Env, env_params: PyTree
                        ) -> Callable[..., jax.Array] | None:
    """The ``observe_at`` a learner is built with when it observes the replay's physical
    states itself (:func:`learner_observes`): ``(physical, agents) -> rows`` of the env's
    observations; ``None`` otherwise."""
    if not learner_observes(config):
        return None
    replay_obs_kwargs(config, env, env_params)  # the same one-line error for envs without
    return lambda physical, agents: env.observe_physical_at(physical, env_params, agents)


def make_transition_round(config: Any, env: Env, env_params: PyTree, algo: Algo) -> Round:
    """The :class:`~.state.Round` of learners that replay transitions (module docstring).
    Its buffer has ``config``'s sampler, layout, index sharing and replay options; rounds
    past the end of the run (in a shorter last chunk) do nothing (:func:`~.state.within_run`)."""
    spec = env.spec
    replay_obs = {} if learner_observes(config) else replay_obs_kwargs(config, env, env_params)
    buffer = make_buffer(config.sampler, capacity=config.buffer_capacity,
                         batch_size=config.batch_size, layout=config.layout,
                         index_sharing=config.index_sharing, **buffer_kwargs(config),
                         **next_obs_kwargs(config, spec), **replay_obs)
    physical = config.replay_obs == "physical_state"
    run_round = _transition_round(config, env, env_params, algo, buffer,
                                  learner_policy(env, algo, config.prey == "scripted",
                                                 explore=True))
    if total_rounds(config) % rounds_per_chunk(config):  # a shorter last chunk
        run_round = within_run(run_round, total_rounds(config))
    return Round(buffer=buffer, item=example_transition(spec, algo.action_dim, physical),
                 run=run_round, schedule=transition_schedule(config, spec, algo),
                 carries_stats=True)


def _transition_round(config: Any, env: Env, env_params: PyTree, algo: Algo,
                      buffer: Buffer, behaviour: Policy) -> RoundFn:
    """``(state, round_index) -> (state, RoundOutput)``: ``iters_per_round`` steps of all
    E envs under the ``behaviour`` policy (every transition added to the replay), then
    ``updates_per_round`` learner updates once ``max(learning_starts, batch_size)`` env
    steps have been taken and the replay holds as many transitions (up to its capacity)."""
    num_envs, iters = config.num_envs, iters_per_round(config)
    updates, round_steps = updates_per_round(config), steps_per_round(config)
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
        ready = (((round_index + 1) * round_steps >= start_updates_after)
                 & (state.buffer.size >= min(start_updates_after, config.buffer_capacity)))
        state, learner = jax.lax.cond(ready, run, skip_updates, state)
        return state, RoundOutput(sum_ends(ends), learner, ready)

    return run_round


def steps_per_round(config: Any) -> int:
    """Env steps per round: ``iters_per_round * num_envs`` vectorized steps, then updates."""
    return max(config.num_envs, config.update_every)


def iters_per_round(config: Any) -> int:
    """Vectorized env steps (each stepping all ``num_envs`` envs) in one round."""
    return steps_per_round(config) // config.num_envs


def updates_per_round(config: Any) -> int:
    """Updates of all agents after each round (one per ``update_every`` env steps)."""
    return steps_per_round(config) // config.update_every


def rounds_per_chunk(config: Any) -> int:
    """Rounds between two evaluations; one chunk is what the host loop runs at a time."""
    return config.eval_every // steps_per_round(config)


def total_rounds(config: Any) -> int:
    """Rounds in the whole run."""
    return config.total_env_steps // steps_per_round(config)


def first_update_step(config: Any) -> int:
    """Env steps per seed after which the learners are first updated: the first round
    that ends with at least ``max(learning_starts, batch_size)`` transitions collected."""
    start = max(config.learning_starts, config.batch_size)
    return -(-start // steps_per_round(config)) * steps_per_round(config)


def transition_schedule(config: Any, spec: EnvSpec | None = None, algo: Algo | None = None
                        ) -> Schedule:
    """The :class:`~.record.Schedule` of a transition-round run of ``config`` (a
    ``TrainConfig``; the env and the learner change nothing in it): every env acts at
    every ``num_envs`` steps of the clock."""
    del spec, algo
    return Schedule(steps_per_round=steps_per_round(config),
                    rounds_per_chunk=rounds_per_chunk(config),
                    total_rounds=total_rounds(config),
                    updates_per_round=updates_per_round(config),
                    first_update_step=first_update_step(config), clock_stride=config.num_envs)


def check_transition_run(config: Any) -> None:
    """What a transition-replay run accepts: one update per ``update_every`` env steps on
    whole vectorized steps, budgets of whole rounds, a batch within the replay."""
    if config.episode_updates != 1:
        raise ValueError(f"episode_updates ({config.episode_updates}) applies to episode "
                         f"replay (recurrent value learners); algo {config.algo!r} updates "
                         "once per update_every env steps")
    big, small = (max(config.num_envs, config.update_every),
                  min(config.num_envs, config.update_every))
    if big % small:
        raise ValueError(
            f"num_envs ({config.num_envs}) and update_every ({config.update_every}) must "
            "divide one another so that updates fall on whole vectorized steps")
    for name in ("total_env_steps", "eval_every"):
        if getattr(config, name) % steps_per_round(config):
            raise ValueError(
                f"{name} ({getattr(config, name)}) must be a multiple of the env steps per "
                f"round ({steps_per_round(config)} = max(num_envs, update_every))")
    if config.batch_size > config.buffer_capacity:
        raise ValueError(f"batch_size ({config.batch_size}) exceeds buffer_capacity "
                         f"({config.buffer_capacity})")


TRANSITION = register_round(RoundSpec(
    name="transition", make=make_transition_round, schedule=transition_schedule,
    check=check_transition_run,
    describe=lambda config, schedule: "whole rounds of max(--num-envs, --update-every) steps",
    items_written=lambda config, schedule: schedule.total_rounds * schedule.steps_per_round,
    summary="step E envs, add every transition, one update per update_every env steps"))
"""The transition replay's record."""


__all__ = ["TRANSITION", "check_transition_run", "first_update_step", "iters_per_round",
           "learner_observation", "learner_observes", "make_transition_round",
           "next_obs_kwargs", "replay_obs_kwargs", "rounds_per_chunk", "steps_per_round",
           "total_rounds", "transition_schedule", "updates_per_round"]
