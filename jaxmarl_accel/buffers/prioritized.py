"""Proportional prioritized replay (PER, Schaul et al. 2016; paper 000, IV-B).

Slot i is drawn with probability ``P(i) = p_i^a / sum_k p_k^a``; importance weights
``w_i = (size * P(i))^-beta`` normalized by their batch maximum; beta moves linearly from
``beta`` to ``beta_final`` over ``beta_steps`` updates; new transitions get the largest
priority seen so far. The sum tree stores ``p^a``. The priority bookkeeping here (state,
``on_add``, ``update``) also serves :mod:`~jaxmarl_accel.buffers.locality`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxmarl_accel.buffers import storage, sum_tree
from jaxmarl_accel.buffers.assemble import (
    REDUCTIONS,
    Buffer,
    assemble,
    check_common,
    number,
    positive_int,
)
from jaxmarl_accel.buffers.base import SampleBatch, SamplerKit
from jaxmarl_accel.buffers.registry import SamplerSpec, register_sampler
from jaxmarl_accel.buffers.storage import BufferState, StorageLayout
from jaxmarl_accel.checks import check_choice


@struct.dataclass
class PriorityState:
    """PER bookkeeping.

    Attributes:
      tree: float32 ``[2P]`` sum tree over ``p_i^alpha`` (see :mod:`sum_tree`).
      max_priority: float32 ``[]``, largest priority ``p`` seen (new transitions get it).
      step: int32 ``[]``, number of ``update_priorities`` calls (drives the beta schedule).
    """

    tree: jax.Array
    max_priority: jax.Array
    step: jax.Array


class PerSettings(NamedTuple):
    """PER's static settings, shared by PER and prioritized locality.

    Attributes:
      alpha: priority exponent (0 is uniform).
      beta: initial importance-sampling exponent.
      beta_final: the exponent reached after ``beta_steps`` updates (linearly).
      beta_steps: updates over which beta moves.
    """

    alpha: float
    beta: float
    beta_final: float
    beta_steps: int


def beta_at(step: jax.Array, per: PerSettings) -> jax.Array:
    """Linear beta schedule at ``step`` updates, float32 ``[]``."""
    frac = jnp.minimum(step.astype(jnp.float32) / per.beta_steps, 1.0)
    return per.beta + (per.beta_final - per.beta) * frac


def normalized_is_weights(size: jax.Array, prob: jax.Array, beta: jax.Array) -> jax.Array:
    """``(size * P)^-beta`` divided by its maximum over the batch, same shape as ``prob``."""
    weights = (jnp.maximum(size, 1).astype(jnp.float32) * prob) ** (-beta)
    weights = jnp.where(jnp.isfinite(weights), weights, 0.0)
    return weights / jnp.maximum(jnp.max(weights), 1e-30)


def priority_kit(
    capacity: int, alpha: float, sample: Callable[[BufferState, jax.Array], SampleBatch]
) -> SamplerKit:
    """The :class:`SamplerKit` of a priority sampler over ``capacity`` slots around its
    ``sample``, shared by PER and prioritized locality.

    The sum tree holds ``p^alpha`` per slot (leaves ``[C]``); new slots enter at the largest
    priority seen (Schaul et al. 2016, Alg. 1 line 6); ``update`` (slots ``[K]``, priorities
    ``[K]``) is called once per learner update and advances beta's schedule.
    """

    def init() -> PriorityState:
        return PriorityState(
            tree=sum_tree.init(capacity),
            max_priority=jnp.ones((), jnp.float32),
            step=jnp.zeros((), jnp.int32),
        )

    def on_add(prio: PriorityState, slots: jax.Array) -> PriorityState:
        values = jnp.full(slots.shape, prio.max_priority**alpha, jnp.float32)
        return prio.replace(tree=sum_tree.set_leaves(prio.tree, slots, values))

    def update(state: BufferState, slots: jax.Array, priorities: jax.Array) -> PriorityState:
        prio = state.sampler
        return PriorityState(
            tree=sum_tree.set_leaves(prio.tree, slots, priorities**alpha),
            max_priority=jnp.maximum(
                prio.max_priority, jnp.max(jnp.where(slots >= 0, priorities, 0.0))
            ),
            step=prio.step + 1,
        )

    return SamplerKit(init, on_add, sample, update)


def make_per(*, capacity: int, batch_size: int, layout: StorageLayout,
             per: PerSettings) -> SamplerKit:
    """Proportional PER sampler: stratified draws from the sum tree (Schaul et al. 2016,
    appendix B.2.1), IS weights ``(size * P(i))^-beta`` over the max (section 3.4)."""

    def sample(state: BufferState, key: jax.Array) -> SampleBatch:
        tree = state.sampler.tree
        indices = jnp.minimum(sum_tree.stratified_sample(tree, key, batch_size), capacity - 1)
        prob = sum_tree.leaves(tree, indices) / sum_tree.total(tree)
        weights = normalized_is_weights(state.size, prob, beta_at(state.sampler.step, per))
        experience = storage.gather(state.experience, indices, layout)
        return SampleBatch(experience, indices, weights)

    return priority_kit(capacity, per.alpha, sample)


def per_settings(alpha: float, beta: float, beta_final: float, beta_steps: int,
                  reduction: str) -> PerSettings:
    """PER's keywords, checked once for PER and prioritized locality."""
    check_choice("reduction", reduction, REDUCTIONS)
    return PerSettings(
        alpha=number("alpha", alpha, 0.0, 1.0),
        beta=number("beta", beta, 0.0, 1.0),
        beta_final=number("beta_final", beta_final, 0.0, 1.0),
        beta_steps=positive_int("beta_steps", beta_steps),
    )


def make_per_buffer(
    *, capacity: int, batch_size: int, layout: str = "transition_major",
    index_sharing: str = "shared", alpha: float = 0.6, beta: float = 0.4,
    beta_final: float = 1.0, beta_steps: int = 100_000, reduction: str = "max",
) -> Buffer:
    """Proportional prioritized replay on a sum tree (Schaul et al. 2016)."""
    common = check_common(capacity, batch_size, layout, index_sharing)
    kit = make_per(per=per_settings(alpha, beta, beta_final, beta_steps, reduction), **common)
    return assemble(kit, index_sharing=index_sharing, min_size=batch_size,
                    reduction=reduction, **common)


SAMPLER = register_sampler(SamplerSpec(
    "per", make_per_buffer, prioritized=True,
    summary="proportional prioritized replay on a sum tree (Schaul et al. 2016)"))
