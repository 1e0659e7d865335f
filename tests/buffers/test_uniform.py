"""Uniform sampler: draws over the written slots only, in every layout, under jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from jaxmarl_accel.buffers import LAYOUTS, storage
from jaxmarl_accel.buffers.uniform import make_uniform, uniform_indices
from tests.buffers.helpers import LAYOUT_NAMES, NO_SHRINK, fill, jitted, stored_counter

CAPACITY, BATCH = 20, 8


def ring_state(size: int, capacity: int = CAPACITY) -> storage.BufferState:
    return storage.BufferState(experience=(), write_pos=jnp.int32(size % capacity),
                               size=jnp.int32(size), sampler=())


@settings(max_examples=10, deadline=None, phases=NO_SHRINK)
@given(size=st.integers(0, CAPACITY), seed=st.integers(0, 2**16))
def test_uniform_indices_lie_in_the_written_slots(size, seed):
    draw = jax.jit(uniform_indices, static_argnums=2)
    indices = draw(ring_state(size), jax.random.key(seed), BATCH)
    assert indices.shape == (BATCH,) and indices.dtype == jnp.int32
    assert np.all((np.asarray(indices) >= 0) & (np.asarray(indices) < max(size, 1)))


def test_uniform_indices_are_uniform_chi_square():
    draw = jax.jit(jax.vmap(uniform_indices, in_axes=(None, 0, None)), static_argnums=2)
    indices = draw(ring_state(13), jax.random.split(jax.random.key(0), 400), BATCH)
    counts = np.bincount(np.asarray(indices).reshape(-1), minlength=13)
    assert counts.size == 13
    assert stats.chisquare(counts).pvalue > 1e-3


@settings(max_examples=6, deadline=None, phases=NO_SHRINK)
@given(layout=st.sampled_from(LAYOUT_NAMES), num_adds=st.integers(3, 12),
       seed=st.integers(0, 2**16))
def test_uniform_kit_gathers_its_indices_with_unit_weights(layout, num_adds, seed):
    state = fill(jitted("uniform", capacity=CAPACITY, batch_size=BATCH, layout=layout),
                 3, num_adds, 3)
    kit = make_uniform(capacity=CAPACITY, batch_size=BATCH, layout=LAYOUTS[layout])
    assert kit.init() == ()
    batch = jax.jit(kit.sample)(state, jax.random.key(seed))
    np.testing.assert_array_equal(np.asarray(batch.weights), np.ones(BATCH, np.float32))
    counters = np.asarray(batch.experience.reward)[:, 0]
    np.testing.assert_array_equal(stored_counter(state, layout)[np.asarray(batch.indices)],
                                  counters)
    assert jax.jit(kit.update)(state, batch.indices, jnp.ones(BATCH)) == ()
