"""AccMER transition reuse (paper 004, section IV, Alg. 1).

A weight table ``W [C]`` ranks the stored transitions. At the start of each window of
``w`` updates (paper: ``w = floor(d / b)``), the top ``K = round(alpha * b)`` slots by weight
(``lax.top_k``) become the reused set S-; every update of the window samples S- again plus
``b - K`` slots drawn uniformly from the complement of S- among the written slots (S+).
After each update the whole table is decayed by ``gamma`` and the sampled slots get their
new weights (the batch priorities); at the end of a window S- is refreshed.

The buffer only sees TD errors, so the weight is the Bellman-error term of MAC-PO's optimal
weight (paper 004, Lemma 1, eq. 2); a trainer that computes the full weight can pass it as
``td_errors``. The returned loss weights are ``W[i]`` normalized by the batch maximum, as in
eq. (1) ``L = sum_i w_i (Q - y)^2``. Unwritten slots hold ``-inf`` so they are never picked;
new transitions get the largest (decayed) weight seen, like PER's new-transition rule.
Before the first window ends, S- is the first K slots (what ``top_k`` returns when all
weights are equal, paper: "the initial weights ... will be the same for all transitions").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxmarl_accel.buffers import storage
from jaxmarl_accel.buffers.base import SampleBatch, SamplerKit
from jaxmarl_accel.buffers.storage import BufferState, StorageLayout


@struct.dataclass
class ReuseState:
    """AccMER bookkeeping.

    Attributes:
      weights: float32 ``[C]`` weight table W (``-inf`` for unwritten slots).
      max_weight: float32 ``[]``, largest weight seen, decayed with the table.
      reused: int32 ``[K]`` slots of the reused set S- of the current window.
      window_step: int32 ``[]``, updates done in the current window (0 .. w - 1).
    """

    weights: jax.Array
    max_weight: jax.Array
    reused: jax.Array
    window_step: jax.Array


def complement_uniform(
    state: BufferState, key: jax.Array, excluded: jax.Array, num: int, capacity: int
) -> jax.Array:
    """``num`` slots drawn independently and uniformly over the written slots not in
    ``excluded`` (int32 ``[K]``, distinct): the fresh part S+ of paper 004, Alg. 1.

    Returns int32 ``[num]``. Draws a rank r among the ``size - K`` allowed chronological
    positions and maps it to the r-th allowed one: ``r + #{j : e_j - j <= r}`` for the
    sorted excluded positions e.
    """
    num_excluded = excluded.shape[0]
    positions = jnp.sort(storage.chronological(excluded, state, capacity))
    allowed = jnp.maximum(state.size - num_excluded, 1)
    rank = jax.random.randint(key, (num,), 0, allowed, jnp.int32)
    shift = jnp.searchsorted(positions - jnp.arange(num_excluded), rank, side="right")
    return storage.slot_of(rank + shift.astype(jnp.int32), state, capacity).astype(jnp.int32)


def make_reuse(
    *,
    capacity: int,
    batch_size: int,
    layout: StorageLayout,
    reuse_ratio: float,
    window: int,
    decay: float,
) -> SamplerKit:
    """AccMER sampler: top-K reuse for ``window`` updates plus uniform complement draws."""
    num_reused = int(round(reuse_ratio * batch_size))
    num_fresh = batch_size - num_reused

    def init() -> ReuseState:
        return ReuseState(
            weights=jnp.full((capacity,), -jnp.inf, jnp.float32),
            max_weight=jnp.ones((), jnp.float32),
            reused=jnp.arange(num_reused, dtype=jnp.int32),
            window_step=jnp.zeros((), jnp.int32),
        )

    def on_add(reuse: ReuseState, slots: jax.Array) -> ReuseState:
        return reuse.replace(weights=reuse.weights.at[slots].set(reuse.max_weight))

    def sample(state: BufferState, key: jax.Array) -> SampleBatch:
        reuse = state.sampler
        fresh = complement_uniform(state, key, reuse.reused, num_fresh, capacity)
        indices = jnp.concatenate([reuse.reused, fresh])
        table = reuse.weights[indices]
        weights = table / jnp.maximum(jnp.max(table), 1e-30)
        weights = jnp.where(jnp.isfinite(weights) & (weights > 0), weights, 0.0)
        experience = storage.gather(state.experience, indices, layout)
        return SampleBatch(experience, indices, weights.astype(jnp.float32))

    def update(state: BufferState, slots: jax.Array, priorities: jax.Array) -> ReuseState:
        reuse = state.sampler
        # decay everything, then write the new weights (last occurrence wins, as in PER)
        order = jnp.argsort(slots, stable=True)
        sorted_slots = slots[order]
        is_last = jnp.append(sorted_slots[1:] != sorted_slots[:-1], True)
        targets = jnp.where(is_last & (sorted_slots >= 0), sorted_slots, capacity)
        table = (reuse.weights * decay).at[targets].set(priorities[order], mode="drop")
        step = reuse.window_step + 1
        refresh = step >= window
        if num_reused > 0:
            top = jnp.sort(jax.lax.top_k(table, num_reused)[1].astype(jnp.int32))
            reused = jnp.where(refresh, top, reuse.reused)
        else:
            reused = reuse.reused
        return ReuseState(
            weights=table,
            max_weight=jnp.maximum(
                reuse.max_weight * decay, jnp.max(jnp.where(slots >= 0, priorities, 0.0))
            ),
            reused=reused,
            window_step=jnp.where(refresh, 0, step),
        )

    return SamplerKit(init, on_add, sample, update)

