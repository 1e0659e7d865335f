"""Population-based training on a sweep's lanes, between chunks, without a recompile.

Every lane of a sweep (:mod:`~jaxmarl_accel.trainer.sweep`) is a member of the population;
its hyperparameters are values of the program, held in its state
(:attr:`TrainState.hyper`). At a chunk boundary the worst ``fraction`` of the members, by
the chunk's evaluation return, copy the learners (parameters, targets, optimizer moments) of
a member drawn from the best ``fraction`` and take its values, each multiplied by a factor
drawn from ``factors`` (Jaderberg et al. 2017, "Population Based Training of Neural
Networks", exploit: truncation selection, explore: perturb). Replays, envs and keys stay
each member's own. So do its episodes in progress, which is why a member that copies
another's learners starts its envs' policy carries (a recurrent learner's memory, e.g. the
GRU states the rollout round keeps, :attr:`TrainState.carry`) again from the carry at an
episode's start: each was computed by its old learner from its own envs' past, and the
parent's carries belong to the parent's envs, which it does not take (copying them too would
mean copying the parent's env states, replays and episode returns: a clone of the member,
not of its learners). The new learner goes on with the episodes as if its memory began where
the copy is made; the next rollout records that carry as the one it started from, from which
learning unrolls it again, so acting and learning agree. A perturbed value that its config
refuses (``tau`` above 1) keeps the parent's. The draw is numpy's, seeded by the run's seed
and the chunk, so a resumed run repeats it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel import config as cfg
from jaxmarl_accel.trainer.rounds.state import TrainState
from jaxmarl_accel.trainer.sweep import HYPER_DTYPE
from jaxmarl_accel.types import PyTree

FRACTION = 0.25
"""The share of the population replaced (and copied from) at each step."""
FACTORS = (0.8, 1.25)
"""The factors a copied value is perturbed by."""


class Exploit(NamedTuple):
    """One step of population-based training.

    Attributes:
      parents: ``[L]`` int, the member each lane copies (itself for the lanes kept).
      hyper: name -> ``[L]`` the lanes' values after the step.
      replaced: the lanes that copied another member, worst first.
    """

    parents: np.ndarray
    hyper: dict[str, np.ndarray]
    replaced: tuple[int, ...]


def _valid(config: cfg.TrainConfig, name: str, value: float) -> bool:
    try:
        dataclasses.replace(config.learner, **{name: value})
    except ValueError:
        return False
    return True


def exploit_explore(config: cfg.TrainConfig, scores: Sequence[float],
                    hyper: Mapping[str, Sequence[float]], rng: np.random.Generator,
                    fraction: float = FRACTION, factors: Sequence[float] = FACTORS) -> Exploit:
    """The :class:`Exploit` of a population with ``scores`` ``[L]`` (higher is better,
    non-finite worst; equal scores rank the lower lane index lower) and values ``hyper``
    (name -> ``[L]``) for run ``config``."""
    scores = np.where(np.isfinite(scores), np.asarray(scores, np.float64), -np.inf)
    lanes = len(scores)
    count = max(1, int(lanes * fraction))
    order = np.argsort(scores, kind="stable")
    worst, best = order[:count], order[lanes - count:]
    parents = np.arange(lanes)
    values = {name: np.asarray(v, np.float64).copy() for name, v in hyper.items()}
    for lane in worst:
        if lane in best:
            continue
        parent = int(rng.choice(best))
        parents[lane] = parent
        for name in values:
            old = float(values[name][parent])
            new = old * float(rng.choice(factors))
            values[name][lane] = new if _valid(config, name, new) else old
    return Exploit(parents=parents, hyper=values,
                   replaced=tuple(int(lane) for lane in worst if parents[lane] != lane))


def make_apply(shardings: Any = None, initial_carry: PyTree = ()
               ) -> Callable[[TrainState, Any, Any], TrainState]:
    """``apply(state [L], parents [L], hyper name -> [L]) -> state``: every lane's learners
    copied from its parent's, its values set, and the carries (leaves ``[L, E, ...]``) of a
    lane that copied another's set to ``initial_carry`` (one lane's at its envs' episode
    starts, leaves ``[E, ...]``; module docstring); jitted with the state donated (and kept
    in ``shardings``, the sharded trainer's, where given)."""

    def apply(state: TrainState, parents: jax.Array, hyper: dict[str, jax.Array]
              ) -> TrainState:
        algo = jax.tree.map(lambda x: jnp.take(x, parents, axis=0), state.algo)
        moved = parents != jnp.arange(parents.shape[0])  # [L]
        carry = jax.tree.map(
            lambda first, now: jnp.where(moved.reshape((-1,) + (1,) * (now.ndim - 1)),
                                         first, now), initial_carry, state.carry)
        return state.replace(algo=algo, carry=carry,
                             hyper={name: jnp.asarray(v, HYPER_DTYPE)
                                    for name, v in hyper.items()})

    if shardings is None:
        return jax.jit(apply, donate_argnums=0)
    return jax.jit(apply, donate_argnums=0, out_shardings=shardings)


__all__ = ["FACTORS", "FRACTION", "Exploit", "exploit_explore", "make_apply"]
