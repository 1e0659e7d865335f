"""The trainer's episode round, for recurrent learners that replay whole episodes.

A round (paper 004's reference code, pymarl2, with its parallel runner) runs one whole
episode in each of the ``E`` environments under the learner's exploration policy
(:func:`~jaxmarl_accel.steps.collect_episodes`: steps after an episode's end are masked),
adds the ``E`` episodes to the episode replay (layout ``"episode"``, leaves
``[C, T + 1, ...]``) and then performs one update on a batch of ``batch_size`` episodes,
once the replay holds a batch and ``learning_starts`` env steps have been taken.

Env steps count the steps the episodes really took (pymarl2's ``t_env``), so a round's
steps vary; a chunk therefore runs rounds (``lax.while_loop``) until the seed's env steps
reach the chunk's end, ``min((chunk + 1) * eval_every, total_env_steps)``, and the run has
``ceil(total_env_steps / eval_every)`` chunks. Each chunk ends with a greedy evaluation of
``eval_episodes`` episodes. The learner is told the env steps and finished episodes before
acting and updating (``algo.observe``: epsilon schedule, target updates every K episodes).

Built by :func:`jaxmarl_accel.train.make_trainer` for learners with
``algo.needs.replay == "episode"``; the returned :class:`~jaxmarl_accel.train.Trainer`
has the same functions and metrics as the transition round's, so the host loop,
sharding, checkpoints and outputs serve both.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxmarl_accel import config as cfg
from jaxmarl_accel.algos import Algo
from jaxmarl_accel.buffers import make_buffer
from jaxmarl_accel.envs import Env
from jaxmarl_accel.steps import EpisodeBatch, collect_episodes, example_episode, learn_step
from jaxmarl_accel.train import ChunkMetrics, Trainer, TrainState

PyTree = Any


@struct.dataclass
class EpisodeTrainState(TrainState):
    """:class:`~jaxmarl_accel.train.TrainState` of the episode round, plus its episode count.

    ``env_state``, ``obs`` and ``episode_return`` hold the envs' state after the last reset
    (episodes start from a reset every round and are not carried over).

    Attributes:
      episodes: int32 ``[]`` training episodes finished so far (E per round).
    """

    episodes: jax.Array = struct.field(default_factory=lambda: jnp.zeros((), jnp.int32))


class _ChunkSums(NamedTuple):
    """What a chunk accumulates over its rounds (one seed)."""

    returns: jax.Array      # [N] summed returns of the exploration episodes
    count: jax.Array        # [] episodes
    stats: dict[str, jax.Array]
    learner: dict[str, jax.Array]
    updates: jax.Array      # [] int32


def chunk_end_steps(config: cfg.TrainConfig, chunk_index: jax.Array) -> jax.Array:
    """The env steps at which chunk ``chunk_index`` ends: ``min((c + 1) * eval_every,
    total_env_steps)`` (int32 ``[]``)."""
    return jnp.minimum((chunk_index + 1) * config.eval_every, config.total_env_steps)


def num_episode_chunks(config: cfg.TrainConfig) -> int:
    """Chunks of an episode-round run: ``ceil(total_env_steps / eval_every)``."""
    return math.ceil(config.total_env_steps / config.eval_every)


def make_episode_trainer(config: cfg.TrainConfig, env: Env, env_params: PyTree,
                         algo: Algo) -> Trainer:
    """The :class:`~jaxmarl_accel.train.Trainer` of a recurrent, episode-replay learner.

    Args:
      config: the run; ``buffer_capacity`` and ``batch_size`` count episodes,
        ``learning_starts`` and the step budgets count env steps.
      env, env_params: the environment (``spec.episode_length`` = T rows per episode).
      algo: a learner with ``needs.replay == "episode"`` and ``initial_carry``.

    Returns:
      the trainer; its state is an :class:`EpisodeTrainState`.
    """
    if algo.initial_carry is None:
        raise ValueError(f"algo {config.algo!r} replays episodes but has no initial_carry")
    spec, num_envs = env.spec, config.num_envs
    buffer = make_buffer(config.sampler, capacity=config.buffer_capacity,
                         batch_size=config.batch_size, layout="episode",
                         index_sharing="shared", **cfg.buffer_kwargs(config))
    observe = algo.observe or (lambda algo_state, env_steps, episodes: algo_state)

    def init(key: jax.Array) -> EpisodeTrainState:
        algo_key, reset_key, run_key = jax.random.split(key, 3)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(reset_key, num_envs), env_params)
        return EpisodeTrainState(
            algo=algo.init(algo_key), buffer=buffer.init(example_episode(spec)),
            env_state=env_state, obs=obs,
            episode_return=jnp.zeros((num_envs, spec.num_agents), jnp.float32),
            key=run_key, env_steps=jnp.zeros((), jnp.int32),
            episodes=jnp.zeros((), jnp.int32))

    def evaluate(algo_state: PyTree, key: jax.Array) -> tuple[jax.Array, dict[str, jax.Array]]:
        batch = collect_episodes(env, env_params, algo, algo_state, key,
                                 config.eval_episodes, explore=False)
        return (jnp.mean(batch.returns, axis=0),
                {name: jnp.mean(value) for name, value in batch.stats.items()})

    def collect(state: EpisodeTrainState) -> tuple[EpisodeTrainState, EpisodeBatch]:
        key, run_key = jax.random.split(state.key)
        algo_state = observe(state.algo, state.env_steps, state.episodes)
        batch = collect_episodes(env, env_params, algo, algo_state, run_key, num_envs,
                                 explore=True)
        state = state.replace(
            algo=algo_state, buffer=buffer.add(state.buffer, batch.episodes), key=key,
            env_steps=state.env_steps + jnp.sum(batch.lengths),
            episodes=state.episodes + num_envs)
        return state, batch

    def update(state: EpisodeTrainState) -> tuple[EpisodeTrainState, dict[str, jax.Array]]:
        key, sample_key, update_key = jax.random.split(state.key, 3)
        algo_state = observe(state.algo, state.env_steps, state.episodes)
        learned = learn_step(algo, buffer, algo_state, state.buffer, sample_key, update_key)
        return (state.replace(algo=learned.algo, buffer=learned.buffer, key=key),
                learned.metrics)

    # the learner metrics' names, shapes and dtypes, traced once here rather than in
    # every function that needs zeros of them
    learner_shapes = jax.eval_shape(lambda key: update(init(key))[1], jax.random.PRNGKey(0))
    zero_metrics = lambda: jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), learner_shapes)

    def skip(state: EpisodeTrainState) -> tuple[EpisodeTrainState, dict[str, jax.Array]]:
        return state, zero_metrics()

    def run_round(carry: tuple[EpisodeTrainState, _ChunkSums]
                  ) -> tuple[EpisodeTrainState, _ChunkSums]:
        state, sums = carry
        state, batch = collect(state)
        ready = ((state.buffer.size >= config.batch_size)
                 & (state.env_steps >= config.learning_starts))
        state, learner = jax.lax.cond(ready, update, skip, state)
        sums = _ChunkSums(
            returns=sums.returns + jnp.sum(batch.returns, axis=0),
            count=sums.count + num_envs,
            stats={name: sums.stats[name] + jnp.sum(v) for name, v in batch.stats.items()},
            learner=jax.tree.map(lambda total, m: total + jnp.where(ready, m, 0),
                                 sums.learner, learner),
            updates=sums.updates + ready.astype(jnp.int32))
        return state, sums

    def run_chunk(state: EpisodeTrainState, chunk_index: jax.Array
                  ) -> tuple[EpisodeTrainState, ChunkMetrics]:
        end = chunk_end_steps(config, chunk_index)
        sums = _ChunkSums(
            returns=jnp.zeros((spec.num_agents,), jnp.float32), count=jnp.zeros(()),
            stats={name: jnp.zeros(()) for name in spec.episode_stats},
            learner=zero_metrics(),
            updates=jnp.zeros((), jnp.int32))
        state, sums = jax.lax.while_loop(lambda c: c[0].env_steps < end, run_round,
                                         (state, sums))
        key, eval_key = jax.random.split(state.key)
        state = state.replace(key=key)
        eval_return, eval_stats = evaluate(state.algo, eval_key)
        episodes = jnp.maximum(sums.count, 1.0)
        metrics = ChunkMetrics(
            env_steps=state.env_steps, eval_return=eval_return,
            train_return=sums.returns / episodes,
            learner=jax.tree.map(lambda m: m / jnp.maximum(sums.updates, 1), sums.learner),
            updates=sums.updates, eval_stats=eval_stats,
            train_stats={name: v / episodes for name, v in sums.stats.items()})
        return state, metrics

    num_chunks = num_episode_chunks(config)

    def train(key: jax.Array) -> tuple[EpisodeTrainState, ChunkMetrics]:
        return jax.lax.scan(run_chunk, init(key), jnp.arange(num_chunks))

    return Trainer(config=config, env=env, env_params=env_params, algo=algo, buffer=buffer,
                   init=init, run_chunk=run_chunk, evaluate=evaluate, train=train,
                   num_chunks=num_chunks)


__all__ = ["EpisodeTrainState", "chunk_end_steps", "make_episode_trainer",
           "num_episode_chunks"]
