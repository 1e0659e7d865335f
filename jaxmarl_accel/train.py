"""The whole training run as one pure function: ``make_train(config) -> train(key)``.

A run is a scan over *chunks* (evaluation periods); a chunk is a scan over *rounds*; a
round steps all ``E`` environments ``iters_per_round`` times with exploration, adds every
transition to the replay buffer, then performs ``updates_per_round`` updates of all
agents (one per ``update_every`` env steps, the seed papers' schedule). Each chunk ends
with a deterministic evaluation. Seeds are a ``jax.vmap`` over keys outside::

    train = make_train(config)
    state, metrics = jax.jit(jax.vmap(train))(jax.random.split(key, num_seeds))

The host loop in ``experiments/run.py`` calls :attr:`Trainer.run_chunk` instead, so it can
log, checkpoint and draw progress between chunks; both paths compute the same numbers.
Round and chunk indices enter as scan inputs (never vmapped), so the learning-starts
test stays a real branch, not a select, under the seed ``vmap``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxmarl_accel import config as cfg
from jaxmarl_accel.algos import Algo, make_algo
from jaxmarl_accel.buffers import Buffer, make_buffer
from jaxmarl_accel.envs import Env, make
from jaxmarl_accel.envs.evaluate import evaluate_policy, script_rows
from jaxmarl_accel.types import Transition

PyTree = Any


@struct.dataclass
class TrainState:
    """Carry of the training scan for one seed.

    Attributes:
      algo: learner state (per-agent parameters stacked on a leading agent axis).
      buffer: replay buffer state.
      env_state: environment states, leading axis ``[E]``.
      obs: current observations ``[E, N, obs_dim]``.
      episode_return: running undiscounted return of the current episodes ``[E, N]``.
      key: PRNG key of this seed.
      env_steps: environment steps taken so far (scalar int32, summed over envs).
    """

    algo: PyTree
    buffer: PyTree
    env_state: PyTree
    obs: jax.Array
    episode_return: jax.Array
    key: jax.Array
    env_steps: jax.Array


class RoundOutput(NamedTuple):
    """Per-round scan output: training-episode statistics and learner metrics."""

    finished_return: jax.Array  # [N] summed return of the episodes that ended this round
    finished_count: jax.Array  # [] number of episodes that ended this round
    learner: dict[str, jax.Array]  # learner metrics averaged over this round's updates
    updated: jax.Array  # [] bool, whether this round ran updates


class ChunkMetrics(NamedTuple):
    """Per-chunk metrics (one row of the learning curve).

    Attributes:
      env_steps: environment steps at the end of the chunk.
      eval_return: ``[N]`` mean undiscounted return per agent of deterministic episodes.
      train_return: ``[N]`` mean return per agent of the exploration episodes that ended.
      learner: learner metrics averaged over the chunk's updates.
      updates: number of updates run in the chunk.
    """

    env_steps: jax.Array
    eval_return: jax.Array
    train_return: jax.Array
    learner: dict[str, jax.Array]
    updates: jax.Array


class Trainer(NamedTuple):
    """The compiled pieces of a run; all functions are pure and act on one seed.

    Attributes:
      config: the run's configuration.
      env, env_params, algo, buffer: the components the run is assembled from.
      init: ``key -> TrainState``.
      run_chunk: ``(TrainState, chunk_index) -> (TrainState, ChunkMetrics)``.
      evaluate: ``(algo_state, key) -> [N]`` mean deterministic return per agent.
      train: ``key -> (TrainState, ChunkMetrics with a leading [num_chunks] axis)``.
      num_chunks: chunks in the whole run.
    """

    config: cfg.TrainConfig
    env: Env
    env_params: PyTree
    algo: Algo
    buffer: Buffer
    init: Callable[[jax.Array], TrainState]
    run_chunk: Callable[[TrainState, jax.Array], tuple[TrainState, ChunkMetrics]]
    evaluate: Callable[[PyTree, jax.Array], jax.Array]
    train: Callable[[jax.Array], tuple[TrainState, ChunkMetrics]]
    num_chunks: int


def action_vector(env: Env, env_action: jax.Array) -> jax.Array:
    """Critic-facing action vector of env actions: one-hot ``[..., N, num_actions]`` for
    discrete actions ``[..., N]``, the float vector itself for continuous ones."""
    if env.spec.continuous:
        return env_action.astype(jnp.float32)
    return jax.nn.one_hot(env_action, env.spec.num_actions, dtype=jnp.float32)


def make_policy(env: Env, algo: Algo, prey_heuristic: bool, explore: bool) -> Callable[..., tuple]:
    """Joint policy of one environment, ``(algo_state, key, obs [N, obs_dim], env_state,
    params) -> (env_action, action_vec [N, action_dim])``.

    With ``prey_heuristic`` the prey's rows come from the scenario's scripted policy
    instead of the learners; ``explore`` selects the learners' exploration noise.
    """
    is_prey = jnp.asarray([team == "prey" for team in env.spec.teams])

    def policy(algo_state, key, obs, env_state, params):
        act_key, prey_key = jax.random.split(key)
        env_action, action_vec = algo.act(algo_state, obs, act_key, explore)
        if not prey_heuristic:
            return env_action, action_vec
        env_action = script_rows(env, is_prey, env_action, prey_key, env_state, params)
        action_vec = jnp.where(is_prey[:, None], action_vector(env, env_action), action_vec)
        return env_action, action_vec

    return policy


def make_trainer(config: cfg.TrainConfig) -> Trainer:
    """Build every component of a run from ``config`` (all static set-up happens here)."""
    env, env_params = make(config.env, **dict(config.env_kwargs))
    spec = env.spec
    if config.prey == "heuristic" and "prey" not in spec.teams:
        raise ValueError(f"prey='heuristic' needs a scenario with prey; {config.env} has teams "
                         f"{sorted(set(spec.teams))}")
    algo = make_algo(config.algo, spec, config.algo_config)
    buffer = make_buffer(config.sampler, capacity=config.buffer_capacity,
                         batch_size=config.batch_size, layout=config.layout,
                         index_sharing=config.index_sharing, **dict(config.sampler_kwargs))
    prey_heuristic = config.prey == "heuristic"
    behaviour = jax.vmap(make_policy(env, algo, prey_heuristic, explore=True),
                         in_axes=(None, 0, 0, 0, None))
    greedy = make_policy(env, algo, prey_heuristic, explore=False)
    num_envs, iters = config.num_envs, cfg.iters_per_round(config)
    updates, rounds = cfg.updates_per_round(config), cfg.rounds_per_chunk(config)
    steps_per_round = cfg.steps_per_round(config)
    start_updates_after = max(config.learning_starts, config.batch_size)
    env_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    env_reset = jax.vmap(env.reset, in_axes=(0, None))

    def example_transition() -> Transition:
        obs = jnp.zeros((spec.num_agents, spec.obs_dim), jnp.float32)
        action_dim = spec.act_dim if spec.continuous else spec.num_actions
        return Transition(obs=obs, action=jnp.zeros((spec.num_agents, action_dim), jnp.float32),
                          reward=jnp.zeros(spec.num_agents, jnp.float32), next_obs=obs,
                          done=jnp.zeros(spec.num_agents, jnp.float32))

    def init(key: jax.Array) -> TrainState:
        algo_key, reset_key, run_key = jax.random.split(key, 3)
        obs, env_state = env_reset(jax.random.split(reset_key, num_envs), env_params)
        return TrainState(
            algo=algo.init(algo_key), buffer=buffer.init(example_transition()),
            env_state=env_state, obs=obs,
            episode_return=jnp.zeros((num_envs, spec.num_agents), jnp.float32),
            key=run_key, env_steps=jnp.zeros((), jnp.int32))

    def env_iteration(state: TrainState, _: None) -> tuple[TrainState, tuple[jax.Array, ...]]:
        key, act_key, step_key = jax.random.split(state.key, 3)
        env_action, action_vec = behaviour(state.algo, jax.random.split(act_key, num_envs),
                                           state.obs, state.env_state, env_params)
        obs, env_state, reward, terminated, truncated, info = env_step(
            jax.random.split(step_key, num_envs), state.env_state, env_action, env_params)
        done = jnp.broadcast_to(terminated[:, None], reward.shape).astype(jnp.float32)
        transition = Transition(obs=state.obs, action=action_vec, reward=reward,
                                next_obs=info["final_obs"], done=done)
        ended = (terminated | truncated)[:, None]
        episode_return = state.episode_return + reward
        finished = (jnp.sum(jnp.where(ended, episode_return, 0.0), axis=0),
                    jnp.sum(ended[:, 0]).astype(jnp.float32))
        state = state.replace(
            buffer=buffer.add(state.buffer, transition), env_state=env_state, obs=obs,
            episode_return=jnp.where(ended, 0.0, episode_return), key=key,
            env_steps=state.env_steps + num_envs)
        return state, finished

    def update_once(state: TrainState, _: None) -> tuple[TrainState, dict[str, jax.Array]]:
        key, sample_key, update_key = jax.random.split(state.key, 3)
        batch = buffer.sample(state.buffer, sample_key)
        algo_state, metrics, td_errors = algo.update(state.algo, batch.experience,
                                                     batch.weights, update_key)
        buffer_state = buffer.update_priorities(state.buffer, batch.indices, td_errors)
        return state.replace(algo=algo_state, buffer=buffer_state, key=key), metrics

    def run_updates(state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        state, metrics = jax.lax.scan(update_once, state, None, length=updates)
        return state, jax.tree.map(lambda m: jnp.mean(m, axis=0), metrics)

    def skip_updates(state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        shapes = jax.eval_shape(run_updates, state)[1]
        return state, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

    def run_round(state: TrainState, round_index: jax.Array) -> tuple[TrainState, RoundOutput]:
        state, (returns, counts) = jax.lax.scan(env_iteration, state, None, length=iters)
        steps_after = (round_index + 1) * steps_per_round
        ready = steps_after >= start_updates_after
        state, learner = jax.lax.cond(ready, run_updates, skip_updates, state)
        return state, RoundOutput(jnp.sum(returns, axis=0), jnp.sum(counts), learner, ready)

    def evaluate(algo_state: PyTree, key: jax.Array) -> jax.Array:
        def policy_fn(key, obs, env_state, params):
            return greedy(algo_state, key, obs, env_state, params)[0]

        return evaluate_policy(env, env_params, policy_fn, key, config.eval_episodes).agent_returns

    def run_chunk(state: TrainState, chunk_index: jax.Array) -> tuple[TrainState, ChunkMetrics]:
        round_indices = chunk_index * rounds + jnp.arange(rounds)
        state, out = jax.lax.scan(run_round, state, round_indices)
        key, eval_key = jax.random.split(state.key)
        state = state.replace(key=key)
        n_updated = jnp.sum(out.updated)
        learner = jax.tree.map(
            lambda m: jnp.sum(m, axis=0) / jnp.maximum(n_updated, 1), out.learner)
        finished = jnp.maximum(jnp.sum(out.finished_count), 1.0)
        metrics = ChunkMetrics(
            env_steps=state.env_steps, eval_return=evaluate(state.algo, eval_key),
            train_return=jnp.sum(out.finished_return, axis=0) / finished, learner=learner,
            updates=n_updated * updates)
        return state, metrics

    def train(key: jax.Array) -> tuple[TrainState, ChunkMetrics]:
        chunks = cfg.num_chunks(config)
        return jax.lax.scan(run_chunk, init(key), jnp.arange(chunks))

    return Trainer(config=config, env=env, env_params=env_params, algo=algo, buffer=buffer,
                   init=init, run_chunk=run_chunk, evaluate=evaluate, train=train,
                   num_chunks=cfg.num_chunks(config))


def make_train(config: cfg.TrainConfig) -> Callable[[jax.Array], tuple[TrainState, ChunkMetrics]]:
    """``train(key) -> (final TrainState, ChunkMetrics [num_chunks])`` for one seed.

    ``jax.jit(jax.vmap(make_train(config)))(jax.random.split(key, seeds))`` runs every
    seed of a run in one compiled program.
    """
    return make_trainer(config).train
