"""The episode round, for recurrent learners that replay whole episodes (QMIX, VDN, IQL,
MAC-PO, AccMER; paper 004, whose reference code is pymarl2 with its parallel runner).

A round runs one whole episode in each of the ``E`` environments under the learner's
exploration policy (:func:`~jaxmarl_accel.trainer.steps.collect_episodes`: ``T`` =
``spec.episode_length`` rows, the rows after an episode's end masked; the loop stops in the
block of 8 steps in which the last episode ended), adds the ``E``
episodes to the episode replay (layout ``"episode"``, leaves ``[C, T + 1, ...]``) and then
performs one update on a batch of ``batch_size`` episodes, as pymarl2 does: an update per
round of E episodes, once the replay holds a batch. ``episode_updates`` = K > 1 makes K
updates a round instead, one after the other, each on a batch of its own drawn after the
previous one's priorities were written (JaxMARL's QMIX makes ``NUM_EPOCHS`` updates per
round of its own); the round's learner metrics are their means.

Seed-uniform schedule. Every seed of a run is one lane of ``jax.vmap``; a branch or loop
whose predicate differs per seed becomes a ``select`` of its whole carry, the replay
included (a copy of the replay per round). So the schedule comes from the round index
(a scan input every seed shares), never from a seed's own counts:

* a run has ``ceil(total_env_steps / (E x T))`` rounds and a chunk (evaluation period)
  ``ceil(eval_every / (E x T))`` of them;
* the run's clock counts ``E x T`` env steps per round. pymarl2 counts the steps the
  episodes really took (``t_env``), which differs per seed once episodes end early (the
  stag hunt ends when every agent is frozen); here epsilon's schedule and
  ``learning_starts`` read the shared clock, so a run of ``total_env_steps`` has as many
  episodes as pymarl2's would if no episode ended early, and fewer steps once they do.
  The steps really taken are reported (the ``episode_length`` training statistic, per
  exploration episode);
* updates start in the first round after which the replay holds a batch
  (``(r + 1) E >= batch_size``) and the clock has reached ``learning_starts``; the
  learner is told the clock and the episodes finished before the round's update
  (pymarl2's ``t_env`` and ``episode`` at ``learner.train``: target copies every K
  episodes);
* a seed resumed from a checkpoint without its replay holds fewer episodes than the
  round implies: its update is computed and discarded (``jnp.where`` on the learner
  state and the batch's priorities only, never on the replay) until the replay holds a
  batch again.

The replay is therefore only written by ``buffer.add`` (in place when the chunk's state
is donated), and the compiled chunk's temporaries do not grow with its capacity.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_accel.algos import Algo
from jaxmarl_accel.algos.registry import buffer_kwargs
from jaxmarl_accel.buffers import make_buffer
from jaxmarl_accel.envs import Env, EnvSpec
from jaxmarl_accel.trainer import steps as step_fns
from jaxmarl_accel.trainer.rounds.record import RoundSpec, Schedule, register_round
from jaxmarl_accel.trainer.rounds.state import (
    EpisodeEnds,
    Round,
    RoundOutput,
    TrainState,
    shapes_once,
    within_run,
    zeros_like_shapes,
)
from jaxmarl_accel.trainer.steps import collect_episodes, example_episode, learn_step
from jaxmarl_accel.types import PyTree


def episode_schedule(config: Any, spec: EnvSpec, algo: Algo | None = None) -> Schedule:
    """The :class:`~.record.Schedule` of an episode-round run of ``config`` (a
    ``TrainConfig``) in an env whose episodes have ``spec.episode_length`` (T) steps (module
    docstring): ``E x T`` steps a round, each env acting once per round on the clock."""
    del algo
    steps = config.num_envs * spec.episode_length
    first = max(math.ceil(config.batch_size / config.num_envs),
                math.ceil(config.learning_starts / steps), 1) - 1
    return Schedule(steps_per_round=steps, rounds_per_chunk=math.ceil(config.eval_every / steps),
                    total_rounds=math.ceil(config.total_env_steps / steps),
                    updates_per_round=config.episode_updates,
                    first_update_step=(first + 1) * steps, clock_stride=steps)


def make_episode_round(config: Any, env: Env, env_params: PyTree, algo: Algo) -> Round:
    """The :class:`~.state.Round` of a recurrent, episode-replay learner.

    Args:
      config: the run; ``buffer_capacity`` and ``batch_size`` count episodes,
        ``learning_starts`` and the step budgets count env steps on the run's clock.
      env, env_params: the environment (``spec.episode_length`` = T rows per episode).
      algo: a learner of whole episodes (its policy runs from ``algo.initial_carry()`` in
        every episode).
    """
    num_envs = config.num_envs
    buffer = make_buffer(config.sampler, capacity=config.buffer_capacity,
                         batch_size=config.batch_size, layout="episode",
                         index_sharing="shared", **buffer_kwargs(config))
    schedule = episode_schedule(config, env.spec)
    steps, total_rounds = schedule.steps_per_round, schedule.total_rounds
    first_round = schedule.first_update_step // steps - 1
    observe = algo.observe or (lambda algo_state, env_steps, episodes: algo_state)

    def learn(algo_state: PyTree, buffer_state: PyTree, sample_key: jax.Array,
              update_key: jax.Array) -> tuple[PyTree, PyTree, dict[str, jax.Array], jax.Array]:
        learned = learn_step(algo, buffer, algo_state, buffer_state, sample_key, update_key)
        filled = buffer_state.size >= config.batch_size  # False only after a replay-less resume
        # a per-seed choice on the learner state and the priorities only: leaves the update
        # passes through (the replay's storage) are the same traced values and stay as they are
        keep = lambda new, old: old if new is old else jnp.where(filled, new, old)
        return (jax.tree.map(keep, learned.algo, algo_state),
                jax.tree.map(keep, learned.buffer, buffer_state),
                jax.tree.map(lambda m: jnp.where(filled, m, 0), learned.metrics), filled)

    updates = config.episode_updates

    def learn_all(algo_state: PyTree, buffer_state: PyTree, sample_key: jax.Array,
                  update_key: jax.Array) -> tuple[PyTree, PyTree, dict[str, jax.Array], jax.Array]:
        if updates == 1:  # one update on the round's own keys, as before the option existed
            return learn(algo_state, buffer_state, sample_key, update_key)

        def one(carry: tuple[PyTree, PyTree], keys: tuple[jax.Array, jax.Array]
                ) -> tuple[tuple[PyTree, PyTree], tuple[dict[str, jax.Array], jax.Array]]:
            algo_state, buffer_state, metrics, filled = learn(*carry, *keys)
            return (algo_state, buffer_state), (metrics, filled)

        keys = (jax.random.split(sample_key, updates), jax.random.split(update_key, updates))
        (algo_state, buffer_state), (metrics, filled) = jax.lax.scan(
            one, (algo_state, buffer_state), keys)
        return (algo_state, buffer_state, jax.tree.map(lambda m: jnp.mean(m, axis=0), metrics),
                filled[0])

    run_learn, learn_shapes = shapes_once(learn_all)  # traced once: the cond's true branch

    def skip(algo_state: PyTree, buffer_state: PyTree, sample_key: jax.Array,
             update_key: jax.Array) -> tuple[PyTree, PyTree, dict[str, jax.Array], jax.Array]:
        shapes = learn_shapes(algo_state, buffer_state, sample_key, update_key)[2]
        return algo_state, buffer_state, zeros_like_shapes(shapes), jnp.zeros((), bool)

    def run_round(state: TrainState, round_index: jax.Array) -> tuple[TrainState, RoundOutput]:
        key, collect_key, sample_key, update_key = jax.random.split(state.key, 4)
        clock, episodes = round_index * steps, round_index * num_envs
        algo_state = observe(state.algo, clock, episodes)  # epsilon of this round's episodes
        batch = collect_episodes(env, env_params, algo, algo_state, collect_key, num_envs,
                                 explore=True, block_steps=step_fns.COLLECT_BLOCK_STEPS)
        buffer_state = buffer.add(state.buffer, batch.episodes)
        algo_state = observe(algo_state, clock + steps, episodes)
        algo_state, buffer_state, learner, updated = jax.lax.cond(
            round_index >= first_round, run_learn, skip, algo_state, buffer_state, sample_key,
            update_key)
        stats = {name: jnp.sum(value) for name, value in batch.stats.items()}
        stats["episode_length"] = jnp.sum(batch.lengths).astype(jnp.float32)
        ends = EpisodeEnds(returns=jnp.sum(batch.returns, axis=0),
                           count=jnp.asarray(num_envs, jnp.float32), stats=stats)
        state = state.replace(algo=algo_state, buffer=buffer_state, key=key,
                              env_steps=(clock + steps).astype(jnp.int32))
        return state, RoundOutput(ends, learner, updated)

    run = (run_round if total_rounds % schedule.rounds_per_chunk == 0
           else within_run(run_round, total_rounds))
    return Round(buffer=buffer, item=example_episode(env.spec), run=run, schedule=schedule)


def check_episode_run(config: Any) -> None:
    """What episode replay accepts (its rounds do not use ``update_every``): whole episodes
    stored slot-major with their observations, one batch of episodes for all agents."""
    if config.layout not in ("transition_major", "episode"):
        raise ValueError(f"layout {config.layout!r}: episode replay stores whole episodes "
                         "slot-major ([C, T + 1, ...]); use transition_major or episode")
    if config.replay_next_obs != "stored":
        raise ValueError(f"replay_next_obs {config.replay_next_obs!r}: episode replay stores "
                         "whole episodes; use stored")
    if config.replay_obs != "observation":
        raise ValueError(f"replay_obs {config.replay_obs!r}: episode replay stores whole "
                         "episodes; use observation")
    if config.index_sharing != "shared":
        raise ValueError(f"index_sharing {config.index_sharing!r}: episode replay draws one "
                         "batch of episodes for all agents; use shared")
    if config.batch_size > config.buffer_capacity:
        raise ValueError(f"batch_size ({config.batch_size} episodes) exceeds buffer_capacity "
                         f"({config.buffer_capacity} episodes)")


def _one_episode_each(config: Any, schedule: Schedule) -> str:
    length = schedule.steps_per_round // config.num_envs
    return (f"one whole episode of {length} steps in each of the --num-envs "
            f"{config.num_envs} envs")


EPISODE = register_round(RoundSpec(
    name="episode", make=make_episode_round, schedule=episode_schedule,
    check=check_episode_run, describe=_one_episode_each,
    items_written=lambda config, schedule: schedule.total_rounds * config.num_envs,
    item_name="episodes",
    summary="run E whole episodes, add them, episode_updates updates (pymarl2's schedule)"))
"""The episode replay's record."""


__all__ = ["EPISODE", "check_episode_run", "episode_schedule", "make_episode_round"]
