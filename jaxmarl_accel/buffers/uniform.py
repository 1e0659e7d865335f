"""Uniform sampler: B slots uniformly from the written ones.

Every written slot is current data: the ring overwrites oldest first, so "stale" slots do
not exist in storage. Importance weights are ones.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmarl_accel.buffers import storage
from jaxmarl_accel.buffers.assemble import Buffer, assemble, check_common
from jaxmarl_accel.buffers.base import SampleBatch, SamplerKit, no_add, no_update
from jaxmarl_accel.buffers.registry import SamplerSpec, register_sampler
from jaxmarl_accel.buffers.storage import BufferState, StorageLayout


def uniform_indices(state: BufferState, key: jax.Array, batch_size: int) -> jax.Array:
    """B slots uniform over the written ones, int32 ``[B]``.

    Written slots are exactly ``[0, size)``: before wrapping they are the first ``size``
    slots, afterwards ``size == C``. The draws are returned in draw order, not sorted: on
    XLA:CPU sorting the indices costs more than ascending addresses save in the gather.
    """
    return jax.random.randint(key, (batch_size,), 0, jnp.maximum(state.size, 1), jnp.int32)


def make_uniform(*, capacity: int, batch_size: int, layout: StorageLayout) -> SamplerKit:
    """Uniform sampler; importance weights are ones."""
    del capacity

    def sample(state: BufferState, key: jax.Array) -> SampleBatch:
        indices = uniform_indices(state, key, batch_size)
        experience = storage.gather(state.experience, indices, layout)
        return SampleBatch(experience, indices, jnp.ones((batch_size,), jnp.float32))

    return SamplerKit(lambda: (), no_add, sample, no_update)


def make_uniform_buffer(
    *, capacity: int, batch_size: int, layout: str = "transition_major",
    index_sharing: str = "shared",
) -> Buffer:
    """Uniform replay (weights are ones)."""
    common = check_common(capacity, batch_size, layout, index_sharing)
    return assemble(make_uniform(**common), index_sharing=index_sharing,
                    min_size=batch_size, reduction="max", **common)


SAMPLER = register_sampler(SamplerSpec(
    "uniform", make_uniform_buffer, prioritized=False,
    summary="B slots uniformly from the written ones"))
