"""Types shared by the samplers and the buffer factory."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax

from jaxmarl_accel.buffers.storage import BufferState
from jaxmarl_accel.types import PyTree


class SampleBatch(NamedTuple):
    """One sampled mini-batch.

    Attributes:
      experience: transitions, leaves ``[B, N, ...]`` (``[N, B, N, ...]`` with per-agent
        index sharing: trainer axis, batch axis, then the stored agent axis).
      indices: int32 ``[B]`` (``[N, B]``) slots the transitions come from.
      weights: float32 ``[B]`` (``[N, B]``) importance weights for the loss (ones when the
        sampler is uniform).
    """

    experience: PyTree
    indices: jax.Array
    weights: jax.Array


class SamplerKit(NamedTuple):
    """The sampler-specific half of a buffer (the storage half is shared).

    Attributes:
      init: ``() -> sampler state`` (a pytree; ``()`` when stateless).
      on_add: ``(sampler state, slots [E]) -> sampler state``, called after writing slots.
      sample: ``(state, key) -> SampleBatch`` with one shared index set ``[B]``.
      update: ``(state, slots [K], priorities [K]) -> sampler state``, called once per
        update with positive per-transition priorities; slots set to -1 (never written)
        must be ignored.
    """

    init: Callable[[], PyTree]
    on_add: Callable[[PyTree, jax.Array], PyTree]
    sample: Callable[[BufferState, jax.Array], SampleBatch]
    update: Callable[[BufferState, jax.Array, jax.Array], PyTree]


def no_add(sampler_state: PyTree, slots: jax.Array) -> PyTree:
    """``on_add`` of samplers that keep no per-slot bookkeeping."""
    del slots
    return sampler_state


def no_update(state: BufferState, slots: jax.Array, priorities: jax.Array) -> PyTree:
    """``update`` of samplers that ignore priorities."""
    del slots, priorities
    return state.sampler
