"""The whole training run as one pure function: ``make_train(config) -> train(key)``.

One trainer shell for every learner family. A run is a scan over *chunks* (evaluation
periods); a chunk is a scan over *rounds*; a round is what the learner's replay kind asks
for: the round of the replay kind its family names (``Family.replay``), built by that kind's
record (:class:`~jaxmarl_accel.trainer.rounds.RoundSpec`):

* the transition round (:mod:`~jaxmarl_accel.trainer.rounds.transition`; MADDPG, MATD3, MASAC):
  step all ``E`` envs ``iters_per_round`` times, add every transition, then one update
  per ``update_every`` env steps;
* the episode round (:mod:`~jaxmarl_accel.trainer.rounds.episode`; QMIX, VDN, IQL, MAC-PO,
  AccMER, paper 004): one whole episode in each of the ``E`` envs, add them, one update
  (pymarl2's schedule), on a clock every seed shares;
* the rollout round (:mod:`~jaxmarl_accel.trainer.rounds.rollout`; A2C, PPO, paper 003): ``T``
  steps of the ``E`` envs under the learner's policy, then the update on that rollout
  (no replay).

The shell writes once what every kind shares: the initial state, the chunk (a scan over
its rounds, then a greedy evaluation through
:func:`~jaxmarl_accel.envs.evaluate.evaluate_policy` with the learner's policy,
:func:`~jaxmarl_accel.trainer.policy.learner_policy`), the metrics' normalization and the
scan over chunks. Seeds are a ``jax.vmap`` over keys outside::

    train = make_train(config)
    state, metrics = jax.jit(jax.vmap(train))(jax.random.split(key, num_seeds))

(``compiler_options=compiler_options()`` from :mod:`~jaxmarl_accel.trainer.compiling` in
that ``jax.jit`` compiles it about a third faster on the CPU, as the command line does.)

The command line's host loop (:mod:`jaxmarl_accel.runs.host_loop`) calls
:attr:`Trainer.run_chunk` instead (sharded over devices by :mod:`~.sharding`), so it can log,
checkpoint and draw progress between chunks; both paths compute the same numbers.
Round and chunk indices enter as scan inputs (never vmapped), so every schedule derived
from them stays a real branch, not a select of the whole state, under the seed ``vmap``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from jaxmarl_accel import config as cfg
from jaxmarl_accel.algos import Algo, AlgoSpec, algo_spec, make_algo
from jaxmarl_accel.buffers import Buffer
from jaxmarl_accel.envs import Env, make
from jaxmarl_accel.envs.evaluate import evaluate_policy
from jaxmarl_accel.trainer.policy import learner_policy
from jaxmarl_accel.trainer.rounds import (
    EpisodeEnds,
    RoundOutput,
    RoundSpec,
    Schedule,
    TrainState,
    round_of,
)
from jaxmarl_accel.trainer.rounds.transition import learner_observation, learner_observes
from jaxmarl_accel.types import PyTree


class ChunkMetrics(NamedTuple):
    """Per-chunk metrics (one row of the learning curve).

    Attributes:
      env_steps: environment steps on the run's clock at the end of the chunk.
      eval_return: ``[N]`` mean undiscounted return per agent of deterministic episodes.
      train_return: ``[N]`` mean return per agent of the exploration episodes that ended.
      learner: learner metrics averaged over the chunk's updates.
      updates: number of updates run in the chunk.
      eval_stats: ``spec.episode_stats`` name -> ``[]`` mean per deterministic episode.
      train_stats: name -> ``[]`` mean per exploration episode that ended (the episode
        round adds ``episode_length``, the steps its episodes really took).
    """

    env_steps: jax.Array
    eval_return: jax.Array
    train_return: jax.Array
    learner: dict[str, jax.Array]
    updates: jax.Array
    eval_stats: dict[str, jax.Array] = {}
    train_stats: dict[str, jax.Array] = {}


class Plan(NamedTuple):
    """What a run resolved its config to: the records it was built from and its schedule.
    The host reads these instead of asking the registries again.

    Attributes:
      learner: the learner's record (:class:`~jaxmarl_accel.algos.registry.AlgoSpec`).
      round: the record of the replay kind its family names for the run's learner config.
      schedule: the run's rounds on its clock (the round's :class:`Schedule`).
    """

    learner: AlgoSpec
    round: RoundSpec
    schedule: Schedule


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
      steps_per_chunk: env steps on the run's clock per chunk (the last may be shorter).
      total_steps: env steps on the run's clock of the whole run.
      first_update_step: the clock at the end of the first round that learns.
      plan: the records the run was built from and its schedule (:class:`Plan`).
      initial_carry: :attr:`TrainState.carry` of one seed at its envs' episode starts
        (leaves ``[E, ...]``; ``()`` in rounds that keep none).
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
    steps_per_chunk: int
    total_steps: int
    first_update_step: int
    plan: Plan
    initial_carry: PyTree = ()


def make_trainer(config: cfg.TrainConfig, made: tuple[Env, PyTree] | None = None) -> Trainer:
    """Build every component of a run from ``config`` (all static set-up happens here).

    ``made``: the env and its params already made from ``config`` (a sweep, which builds each
    setting's trainer inside its trace, makes them once outside it); ``None`` makes them.
    """
    env, env_params = make(config.env, **dict(config.env_kwargs)) if made is None else made
    spec = env.spec
    if config.prey == "scripted" and "prey" not in spec.teams:
        raise ValueError(f"prey='scripted' needs a scenario with prey; {config.env} has teams "
                         f"{sorted(set(spec.teams))}")
    algo = make_algo(config.algo, spec, config.learner,
                     learner_observation(config, env, env_params), sampler=config.sampler)
    kind = round_of(config)
    built = kind.make(config, env, env_params, algo)
    schedule = built.schedule
    buffer, num_envs, rounds = built.buffer, config.num_envs, schedule.rounds_per_chunk
    greedy = learner_policy(env, algo, config.prey == "scripted", explore=False)
    num_chunks = math.ceil(schedule.total_rounds / rounds)

    def init(key: jax.Array) -> TrainState:
        algo_key, reset_key, run_key = jax.random.split(key, 3)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(reset_key, num_envs), env_params)
        return TrainState(
            algo=algo.init(algo_key), buffer=buffer.init(built.item),
            env_state=env_state, obs=obs,
            episode_return=jnp.zeros((num_envs, spec.num_agents), jnp.float32),
            key=run_key, env_steps=jnp.zeros((), jnp.int32),
            episode_stats={name: jnp.zeros((num_envs,), jnp.float32)
                           for name in spec.episode_stats} if built.carries_stats else {},
            carry=built.carry)

    def evaluate(algo_state: PyTree, key: jax.Array) -> tuple[jax.Array, dict[str, jax.Array]]:
        result = evaluate_policy(env, env_params, greedy, key, config.eval_episodes,
                                 algo_state=algo_state, carry=algo.initial_carry())
        return result.agent_returns, {name: jnp.mean(v) for name, v in result.stats.items()}

    def run_chunk(state: TrainState, chunk_index: jax.Array) -> tuple[TrainState, ChunkMetrics]:
        state, out = jax.lax.scan(built.run, state, chunk_index * rounds + jnp.arange(rounds))
        key, eval_key = jax.random.split(state.key)
        state = state.replace(key=key)
        eval_return, eval_stats = evaluate(state.algo, eval_key)
        return state, chunk_metrics(state, out, eval_return, eval_stats,
                                    schedule.updates_per_round)

    def train(key: jax.Array) -> tuple[TrainState, ChunkMetrics]:
        state = jax.tree.map(lambda x: batched_like(x, key), init(key))
        return jax.lax.scan(run_chunk, state, jnp.arange(num_chunks))

    return Trainer(config=config, env=env, env_params=env_params, algo=algo, buffer=buffer,
                   init=init, run_chunk=run_chunk, evaluate=evaluate, train=train,
                   num_chunks=num_chunks, steps_per_chunk=rounds * schedule.steps_per_round,
                   total_steps=schedule.total_rounds * schedule.steps_per_round,
                   first_update_step=schedule.first_update_step,
                   plan=Plan(algo_spec(config.algo), kind, schedule),
                   initial_carry=built.carry)


@custom_vmap
def batched_like(x: jax.Array, ref: jax.Array) -> jax.Array:
    """``x`` itself; under a ``jax.vmap`` that maps ``ref``, ``x`` batched along that axis too,
    even where it does not depend on the mapped input (broadcast to the axis's size).

    For the compile, not the numbers: ``train`` passes the initial state through it (``ref``
    its key) before the scan over chunks. ``vmap``'s rule for a scan whose carry starts partly
    unbatched (the empty replay, zero optimizer moments: nothing of the seed's key) batches
    the scan's body once, finds carries that its body batches, and batches the whole body
    again; nested in the scan over chunks, that doubles the work of batching everything in a
    chunk (rounds, update, evaluation). Starting the carry batched makes it one pass. The
    chunk program the command line compiles (``vmap(run_chunk)`` over a state already per
    seed) had one pass already. The state is then per seed everywhere, as in that program:
    the few replay fields no seed changes (e.g. MPE's available actions, all True) are stored
    per seed too.
    """
    del ref
    return x


@batched_like.def_vmap
def _broadcast_rule(axis_size: int, in_batched: list[bool], x: jax.Array,
                    ref: jax.Array) -> tuple[jax.Array, bool]:
    del ref
    return (x if in_batched[0] else jnp.broadcast_to(x, (axis_size, *x.shape))), True


def chunk_metrics(state: TrainState, out: RoundOutput, eval_return: jax.Array,
                  eval_stats: dict[str, jax.Array], updates_per_round: int) -> ChunkMetrics:
    """One chunk's :class:`ChunkMetrics` from its rounds' outputs (leaves ``[rounds, ...]``):
    learner metrics averaged over the rounds that learned, returns and training statistics
    over the exploration episodes that ended."""
    n_updated = jnp.sum(out.updated)
    learner = jax.tree.map(lambda m: jnp.sum(m, axis=0) / jnp.maximum(n_updated, 1),
                           out.learner)
    finished = jnp.maximum(jnp.sum(out.episodes.count), 1.0)
    return ChunkMetrics(
        env_steps=state.env_steps, eval_return=eval_return,
        train_return=jnp.sum(out.episodes.returns, axis=0) / finished, learner=learner,
        updates=n_updated * updates_per_round, eval_stats=eval_stats,
        train_stats={name: jnp.sum(v) / finished for name, v in out.episodes.stats.items()})


def make_train(config: cfg.TrainConfig) -> Callable[[jax.Array], tuple[TrainState, ChunkMetrics]]:
    """``train(key) -> (final TrainState, ChunkMetrics [num_chunks])`` for one seed.

    ``jax.jit(jax.vmap(make_train(config)))(jax.random.split(key, num_seeds))`` runs every
    seed of a run in one compiled program.
    """
    return make_trainer(config).train


__all__ = ["ChunkMetrics", "EpisodeEnds", "Plan", "RoundOutput", "TrainState", "Trainer",
           "batched_like", "chunk_metrics", "learner_observes", "make_train", "make_trainer"]
