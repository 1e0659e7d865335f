"""The whole training run as one pure function: ``make_train(config) -> train(key)``.

A run is a scan over *chunks* (evaluation periods); a chunk is a scan over *rounds*; a
round is what the learner's replay kind asks for (``algo.needs.replay``). The transition
round, for learners that replay single transitions (MADDPG, MATD3, MASAC), steps all
``E`` environments ``iters_per_round`` times with exploration, adds every transition to the
replay buffer, then performs ``updates_per_round`` updates of all agents (one per
``update_every`` env steps, the seed papers' schedule). The episode round, for recurrent
learners that replay whole episodes (QMIX, VDN, IQL; paper 004), runs one whole episode in
each of the ``E`` environments, adds the ``E`` episodes to the replay and then performs one
update (the schedule of pymarl2, the reference code); its chunk runs rounds until the
seed's env steps (steps the episodes really took) reach the chunk's end, as pymarl2 counts
``t_env``. Each chunk ends with a deterministic evaluation. Seeds are a ``jax.vmap`` over
keys outside::

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
from jaxmarl_accel.algos import Algo, AlgoState, make_algo
from jaxmarl_accel.buffers import Buffer, BufferState, make_buffer
from jaxmarl_accel.buffers.recompute import observe_chunk
from jaxmarl_accel.envs import Env, make
from jaxmarl_accel.envs.evaluate import evaluate_policy
from jaxmarl_accel.envs.policies import learner_policy
from jaxmarl_accel.steps import (
    example_transition,
    learn_step,
    transition_step,
)

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

    algo: AlgoState
    buffer: BufferState
    env_state: PyTree
    obs: jax.Array
    episode_return: jax.Array
    key: jax.Array
    env_steps: jax.Array


class EpisodeEnds(NamedTuple):
    """Training episodes that ended during some env steps.

    Attributes:
      returns: ``[N]`` summed per-agent return of those episodes.
      count: ``[]`` float32 number of those episodes.
      stats: ``spec.episode_stats`` name -> ``[]`` sum over those episodes (empty for envs
        without such counters).
    """

    returns: jax.Array
    count: jax.Array
    stats: dict[str, jax.Array] = {}


class RoundOutput(NamedTuple):
    """Per-round scan output.

    Attributes:
      episodes: the training episodes that ended this round.
      learner: learner metrics averaged over this round's updates (zeros if none ran).
      updated: ``[]`` bool, whether this round ran updates.
    """

    episodes: EpisodeEnds
    learner: dict[str, jax.Array]
    updated: jax.Array


class ChunkMetrics(NamedTuple):
    """Per-chunk metrics (one row of the learning curve).

    Attributes:
      env_steps: environment steps at the end of the chunk.
      eval_return: ``[N]`` mean undiscounted return per agent of deterministic episodes.
      train_return: ``[N]`` mean return per agent of the exploration episodes that ended.
      learner: learner metrics averaged over the chunk's updates.
      updates: number of updates run in the chunk.
      eval_stats: ``spec.episode_stats`` name -> ``[]`` mean per deterministic episode.
      train_stats: name -> ``[]`` mean per exploration episode that ended.
    """

    env_steps: jax.Array
    eval_return: jax.Array
    train_return: jax.Array
    learner: dict[str, jax.Array]
    updates: jax.Array
    eval_stats: dict[str, jax.Array] = {}
    train_stats: dict[str, jax.Array] = {}


RoundFn = Callable[[TrainState, jax.Array], tuple[TrainState, RoundOutput]]


class Trainer(NamedTuple):
    """The compiled pieces of a run; all functions are pure and act on one seed.

    Attributes:
      config: the run's configuration.
      env, env_params, algo, buffer: the components the run is assembled from.
      init: ``key -> TrainState``.
      run_chunk: ``(TrainState, chunk_index) -> (TrainState, ChunkMetrics)``.
      evaluate: ``(algo_state, key) -> ([N] mean deterministic return per agent,
        episode_stats name -> [] mean per episode)``.
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
    evaluate: Callable[[PyTree, jax.Array], tuple[jax.Array, dict[str, jax.Array]]]
    train: Callable[[jax.Array], tuple[TrainState, ChunkMetrics]]
    num_chunks: int


def make_trainer(config: cfg.TrainConfig) -> Trainer:
    """Build every component of a run from ``config`` (all static set-up happens here)."""
    env, env_params = make(config.env, **dict(config.env_kwargs))
    spec = env.spec
    if config.prey == "heuristic" and "prey" not in spec.teams:
        raise ValueError(f"prey='heuristic' needs a scenario with prey; {config.env} has teams "
                         f"{sorted(set(spec.teams))}")
    replay_obs = replay_obs_kwargs(config, env, env_params)
    observe_at = None
    if replay_obs and learner_observes(config):  # the learner observes only what it reads
        observe_at = lambda physical, agents: env.observe_physical_at(physical, env_params, agents)
        replay_obs = {}
    algo = make_algo(config.algo, spec, cfg.algo_config_of(config), observe_at)
    if algo.needs.replay == "episode":
        from jaxmarl_accel.episode_trainer import make_episode_trainer  # imports this module

        return make_episode_trainer(config, env, env_params, algo)
    buffer = make_buffer(config.sampler, capacity=config.buffer_capacity,
                         batch_size=config.batch_size, layout=config.layout,
                         index_sharing=config.index_sharing, **cfg.buffer_kwargs(config),
                         **next_obs_kwargs(config, spec), **replay_obs)
    scripted_prey = config.prey == "heuristic"
    if algo.needs.replay not in ROUNDS:
        raise ValueError(f"algo {config.algo!r} needs {algo.needs.replay!r} replay; the trainer "
                         f"has rounds for {sorted([*ROUNDS, 'episode'])}")
    run_round = ROUNDS[algo.needs.replay](config, env, env_params, algo, buffer,
                                          learner_policy(env, algo, scripted_prey, explore=True))
    greedy = learner_policy(env, algo, scripted_prey, explore=False)
    num_envs, rounds = config.num_envs, cfg.rounds_per_chunk(config)
    physical = config.replay_obs == "physical_state"

    def init(key: jax.Array) -> TrainState:
        algo_key, reset_key, run_key = jax.random.split(key, 3)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(reset_key, num_envs), env_params)
        return TrainState(
            algo=algo.init(algo_key),
            buffer=buffer.init(example_transition(spec, algo.action_dim, physical)),
            env_state=env_state, obs=obs,
            episode_return=jnp.zeros((num_envs, spec.num_agents), jnp.float32),
            key=run_key, env_steps=jnp.zeros((), jnp.int32))

    def evaluate(algo_state: AlgoState, key: jax.Array
                 ) -> tuple[jax.Array, dict[str, jax.Array]]:
        def policy_fn(key, obs, env_state, params):
            return greedy(algo_state, key, obs, env_state, params)[0]

        result = evaluate_policy(env, env_params, policy_fn, key, config.eval_episodes)
        return result.agent_returns, {name: jnp.mean(v) for name, v in result.stats.items()}

    def run_chunk(state: TrainState, chunk_index: jax.Array) -> tuple[TrainState, ChunkMetrics]:
        round_indices = chunk_index * rounds + jnp.arange(rounds)
        state, out = jax.lax.scan(run_round, state, round_indices)
        key, eval_key = jax.random.split(state.key)
        state = state.replace(key=key)
        eval_return, eval_stats = evaluate(state.algo, eval_key)
        n_updated = jnp.sum(out.updated)
        learner = jax.tree.map(
            lambda m: jnp.sum(m, axis=0) / jnp.maximum(n_updated, 1), out.learner)
        finished = jnp.maximum(jnp.sum(out.episodes.count), 1.0)
        metrics = ChunkMetrics(
            env_steps=state.env_steps, eval_return=eval_return,
            train_return=jnp.sum(out.episodes.returns, axis=0) / finished, learner=learner,
            updates=n_updated * cfg.updates_per_round(config), eval_stats=eval_stats)
        return state, metrics

    def train(key: jax.Array) -> tuple[TrainState, ChunkMetrics]:
        return jax.lax.scan(run_chunk, init(key), jnp.arange(cfg.num_chunks(config)))

    return Trainer(config=config, env=env, env_params=env_params, algo=algo, buffer=buffer,
                   init=init, run_chunk=run_chunk, evaluate=evaluate, train=train,
                   num_chunks=cfg.num_chunks(config))


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
    (``env.observe_physical`` at ``env_params``), :func:`~.buffers.recompute.observe_chunk`
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
    algo_config = cfg.algo_config_of(config)
    return (config.replay_obs == "physical_state"
            and getattr(algo_config, "critic", "joint") != "joint")


def within_run(run_round: RoundFn, total_rounds: int) -> RoundFn:
    """``run_round`` for rounds before ``total_rounds``; later rounds (the rest of a shorter
    last chunk, which runs in the same compiled scan) leave the state as it is and report
    nothing. The round index is a scan input, not vmapped, so this is a real branch."""

    def skip_round(state: TrainState, round_index: jax.Array) -> tuple[TrainState, RoundOutput]:
        shapes = jax.eval_shape(run_round, state, round_index)[1]
        return state, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

    def maybe_round(state: TrainState, round_index: jax.Array) -> tuple[TrainState, RoundOutput]:
        return jax.lax.cond(round_index < total_rounds, run_round, skip_round, state,
                            round_index)

    return maybe_round


def make_transition_round(config: cfg.TrainConfig, env: Env, env_params: PyTree, algo: Algo,
                          buffer: Buffer, behaviour: Callable[..., tuple]) -> RoundFn:
    """The round of learners that replay transitions: ``(state, round_index) -> (state,
    RoundOutput)``: ``iters_per_round`` steps of all E envs under the ``behaviour`` policy
    (every transition added to the replay), then ``updates_per_round`` learner updates once
    ``max(learning_starts, batch_size)`` env steps have been taken and the replay holds as
    many transitions (up to its capacity). Rounds past the end of
    the run (in a shorter last chunk) do nothing (:func:`within_run`)."""
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
        finished = EpisodeEnds(jnp.sum(jnp.where(ended, episode_return, 0.0), axis=0),
                               jnp.sum(ended[:, 0]).astype(jnp.float32))
        state = state.replace(
            buffer=buffer.add(state.buffer, step.transition), env_state=step.env_state,
            obs=step.obs, episode_return=jnp.where(ended, 0.0, episode_return), key=key,
            env_steps=state.env_steps + num_envs)
        return state, finished

    def update_once(state: TrainState, _: None) -> tuple[TrainState, dict[str, jax.Array]]:
        key, sample_key, update_key = jax.random.split(state.key, 3)
        learned = learn_step(algo, buffer, state.algo, state.buffer, sample_key, update_key)
        return state.replace(algo=learned.algo, buffer=learned.buffer, key=key), learned.metrics

    def run_updates(state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        state, metrics = jax.lax.scan(update_once, state, None, length=updates)
        return state, jax.tree.map(lambda m: jnp.mean(m, axis=0), metrics)

    def skip_updates(state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        shapes = jax.eval_shape(run_updates, state)[1]  # the metrics' names, shapes, dtypes
        return state, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

    def run_round(state: TrainState, round_index: jax.Array) -> tuple[TrainState, RoundOutput]:
        state, ends = jax.lax.scan(env_iteration, state, None, length=iters)
        # the replay's fill is implied by the round in a run from the start; it differs
        # after resuming from a checkpoint without the replay, which is refilled first
        ready = (((round_index + 1) * steps_per_round >= start_updates_after)
                 & (state.buffer.size >= min(start_updates_after, config.buffer_capacity)))
        state, learner = jax.lax.cond(ready, run_updates, skip_updates, state)
        episodes = EpisodeEnds(jnp.sum(ends.returns, axis=0), jnp.sum(ends.count))
        return state, RoundOutput(episodes, learner, ready)

    if cfg.total_rounds(config) % cfg.rounds_per_chunk(config):  # a shorter last chunk
        return within_run(run_round, cfg.total_rounds(config))
    return run_round


ROUNDS: dict[str, Callable[..., RoundFn]] = {"transition": make_transition_round}
"""The trainer's round for each replay kind a learner can declare (``algo.needs.replay``)."""


def make_train(config: cfg.TrainConfig) -> Callable[[jax.Array], tuple[TrainState, ChunkMetrics]]:
    """``train(key) -> (final TrainState, ChunkMetrics [num_chunks])`` for one seed.

    ``jax.jit(jax.vmap(make_train(config)))(jax.random.split(key, num_seeds))`` runs every
    seed of a run in one compiled program.
    """
    return make_trainer(config).train
