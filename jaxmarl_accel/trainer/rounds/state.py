"""What every round of the trainer shares: the training state, a round's output and the
:class:`Round` a replay kind plugs into the shell (:mod:`jaxmarl_accel.trainer.train`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxmarl_accel.buffers import Buffer
from jaxmarl_accel.trainer.rounds.record import Schedule
from jaxmarl_accel.types import PyTree


@struct.dataclass
class TrainState:
    """Carry of the training scan for one seed.

    Attributes:
      algo: learner state (the family's: per-agent parameters stacked on a leading agent
        axis, or shared ones).
      buffer: replay buffer state.
      env_state: environment states, leading axis ``[E]`` (the transition round carries
        them from round to round; the episode round starts every round from a reset).
      obs: current observations ``[E, N, obs_dim]``.
      episode_return: running undiscounted return of the current episodes ``[E, N]``.
      key: PRNG key of this seed.
      env_steps: ``[]`` int32 env steps on the run's clock (summed over envs): the steps
        taken (transition round), or ``E x T`` per round (episode round: the clock every
        seed shares; the steps its episodes really took are reported as the
        ``episode_length`` training statistic).
      episode_stats: name -> ``[E]`` running sum of each of the env's ``spec.episode_stats``
        over the current episodes, in rounds whose episodes span rounds (the transition
        and rollout rounds, :attr:`Round.carries_stats`); empty in the episode round, whose
        episodes end within it.
      hyper: the learner's swept hyperparameters of this lane, field name -> ``[]`` float32
        (a sweep's setting, :mod:`jaxmarl_accel.trainer.sweep`, which builds the learner
        with these values in its config); empty outside a sweep.
      carry: the acting learner's carry of each env, leaves ``[E, ...]``, in rounds whose
        envs carry on from round to round (the rollout round with a recurrent learner:
        its GRU states, reset where an episode ends); ``()`` otherwise.
    """

    algo: PyTree
    buffer: PyTree
    env_state: PyTree
    obs: jax.Array
    episode_return: jax.Array
    key: jax.Array
    env_steps: jax.Array
    episode_stats: dict[str, jax.Array] = struct.field(default_factory=dict)
    hyper: dict[str, jax.Array] = struct.field(default_factory=dict)
    carry: PyTree = ()


class EpisodeEnds(NamedTuple):
    """Training episodes that ended during some env steps.

    Attributes:
      returns: ``[N]`` summed per-agent return of those episodes.
      count: ``[]`` float32 number of those episodes.
      stats: name -> ``[]`` sum over those episodes of a per-episode statistic (the env's
        ``spec.episode_stats``, and the episode round's ``episode_length``); may be empty.
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


RoundFn = Callable[[TrainState, jax.Array], tuple[TrainState, RoundOutput]]
"""``(state, round_index) -> (state, RoundOutput)``; ``round_index`` is a scan input (never
vmapped over seeds), so schedules derived from it are real branches, not selects."""


class Round(NamedTuple):
    """What a replay kind plugs into the trainer shell (its record's ``make``,
    :class:`~.record.RoundSpec`).

    Attributes:
      buffer: the replay the round fills and samples.
      item: one zero replay item (leaves without the capacity axis), what ``buffer.init``
        is built from.
      run: the round (:data:`RoundFn`).
      schedule: the run's rounds on its clock (:class:`~.record.Schedule`).
      carries_stats: the round's episodes span rounds, so the state carries their running
        statistics (:attr:`TrainState.episode_stats`, summed by :func:`add_episode_stats`).
      carry: the initial :attr:`TrainState.carry` of one seed (leaves ``[E, ...]``), ``()``
        for a round that keeps none.
    """

    buffer: Buffer
    item: PyTree
    run: RoundFn
    schedule: Schedule
    carries_stats: bool = False
    carry: PyTree = ()


def sum_ends(ends: EpisodeEnds) -> EpisodeEnds:
    """The :class:`EpisodeEnds` of several env steps (leaves with a leading step axis)
    summed into one."""
    return EpisodeEnds(jnp.sum(ends.returns, axis=0), jnp.sum(ends.count),
                       {name: jnp.sum(value) for name, value in ends.stats.items()})


def add_episode_stats(running: dict[str, jax.Array], step_stats: dict[str, jax.Array],
                      ended: jax.Array) -> tuple[dict[str, jax.Array], dict[str, jax.Array]]:
    """One env step of the running episode statistics of ``E`` envs.

    Args:
      running: name -> ``[E]`` sums over the current episodes before the step.
      step_stats: name -> ``[E]`` the step's counters (the env's ``info[name]``).
      ended: ``[E]`` bool, the step ended the env's episode.

    Returns:
      ``(running, finished)``: the sums after the step (0 where an episode ended) and
      name -> ``[]`` the totals of the episodes that ended, summed over envs.
    """
    totals = {name: running[name] + step_stats[name] for name in running}
    return ({name: jnp.where(ended, 0.0, total) for name, total in totals.items()},
            {name: jnp.sum(jnp.where(ended, total, 0.0)) for name, total in totals.items()})


def zeros_like_shapes(shapes: PyTree) -> PyTree:
    """Zeros of a tree of ``jax.ShapeDtypeStruct`` (e.g. from ``jax.eval_shape``)."""
    return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)


def shapes_once(fn: Callable[..., Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``fn`` that remembers its outputs' shapes, and an ``eval_shape`` of ``fn`` that reads them.

    A ``lax.cond`` whose other branch returns zeros shaped like ``fn``'s outputs traces ``fn``
    twice when that branch calls ``jax.eval_shape(fn, ...)``: once for the shapes and once as
    the branch. Tracing the learner's update is seconds of a training program's compile, so
    the rounds pass ``run`` as the cond's true branch, which ``lax.cond`` traces first (jax
    0.10), and call ``shapes`` in the other, which then reuses the shapes of that trace. Were
    the order to change, ``shapes`` would trace ``fn`` itself: slower, never wrong.

    Returns:
      ``(run, shapes)``: ``run(*args)`` is ``fn(*args)``; ``shapes(*args)`` is
      ``jax.eval_shape(fn, *args)``, read from ``run``'s last trace for arguments of the same
      types (per-seed types under ``vmap``, as both branches see them) and traced otherwise.
    """
    memo: dict[Any, Any] = {}

    def signature(args: tuple[Any, ...]) -> Any:
        leaves, tree = jax.tree.flatten(args)
        return tree, tuple(jax.typeof(leaf) for leaf in leaves)

    def run(*args: Any) -> Any:
        out = fn(*args)
        memo[signature(args)] = jax.tree.map(
            lambda x: jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x)), out)
        return out

    def shapes(*args: Any) -> Any:
        known = memo.get(signature(args))
        return known if known is not None else jax.eval_shape(fn, *args)

    return run, shapes


def within_run(run_round: RoundFn, total_rounds: int) -> RoundFn:
    """``run_round`` for rounds before ``total_rounds``; later rounds (the rest of a shorter
    last chunk, which runs in the same compiled scan) leave the state as it is and report
    nothing. The round index is a scan input, not vmapped, so this is a real branch."""
    run, shapes = shapes_once(run_round)

    def skip_round(state: TrainState, round_index: jax.Array) -> tuple[TrainState, RoundOutput]:
        return state, zeros_like_shapes(shapes(state, round_index)[1])

    def maybe_round(state: TrainState, round_index: jax.Array) -> tuple[TrainState, RoundOutput]:
        return jax.lax.cond(round_index < total_rounds, run, skip_round, state, round_index)

    return maybe_round


__all__ = ["EpisodeEnds", "Round", "RoundFn", "RoundOutput", "TrainState", "add_episode_stats",
           "shapes_once", "sum_ends", "within_run", "zeros_like_shapes"]
