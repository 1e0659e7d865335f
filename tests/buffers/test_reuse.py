"""AccMER reuse (paper 004 Alg. 1): the top-K set is kept for a window, then refreshed."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.buffers import BufferState
from jaxmarl_accel.buffers.reuse import complement_uniform
from tests.buffers.helpers import NO_SHRINK, fill, jitted

CAPACITY = 32


@settings(max_examples=5, deadline=None, phases=NO_SHRINK)
@given(seed=st.integers(0, 2**16), ratio=st.sampled_from([0.5, 1.0]), num_adds=st.integers(3, 20))
def test_reuse_keeps_top_k_for_a_window_then_refreshes(seed, ratio, num_adds):
    batch_size, window, decay = 8, 3, 0.9
    buf = jitted("reuse", (("reuse_ratio", ratio), ("reuse_window", window), ("decay", decay)),
                 capacity=CAPACITY, batch_size=batch_size)
    state = fill(buf, 3, num_adds, 3)
    size = int(state.size)
    num_reused = int(round(ratio * batch_size))
    table = np.where(np.arange(CAPACITY) < size, 1.0, -np.inf)  # model of the weight table
    reused = np.arange(num_reused)
    rng = np.random.default_rng(seed)
    for update in range(2 * window + 1):
        batch = buf.sample(state, jax.random.key(update + seed))
        indices = np.asarray(batch.indices)
        np.testing.assert_array_equal(indices[:num_reused], reused)  # same S- all window
        fresh = indices[num_reused:]
        assert np.all(fresh < size) and not set(fresh.tolist()) & set(reused.tolist())
        np.testing.assert_allclose(np.asarray(batch.weights),
                                   table[indices] / table[indices].max(), rtol=1e-6)
        errors = rng.uniform(0.0, 2.0, (batch_size, 3)).astype(np.float32)
        state = buf.update_priorities(state, batch.indices, jnp.asarray(errors))
        table = table * decay
        for slot, value in zip(indices, errors.max(1) + 1e-6, strict=True):
            table[slot] = value  # the last occurrence wins
        np.testing.assert_allclose(np.asarray(state.sampler.weights), table, rtol=1e-5)
        if (update + 1) % window == 0:  # end of a window: S- becomes the new top-k
            reused = np.argsort(-table, kind="stable")[:num_reused]
        np.testing.assert_array_equal(np.sort(np.asarray(state.sampler.reused)), np.sort(reused))
        reused = np.asarray(state.sampler.reused)


@settings(max_examples=8, deadline=None, phases=NO_SHRINK)
@given(written=st.integers(6, 70), seed=st.integers(0, 2**16))
def test_complement_draws_under_jit_cover_exactly_the_written_slots_outside_the_reused(
    written, seed
):
    size = min(written, CAPACITY)
    state = BufferState(experience=(), write_pos=jnp.int32(written % CAPACITY),
                        size=jnp.int32(size), sampler=())
    rng = np.random.default_rng(seed)
    excluded = np.sort(rng.choice(size, 4, replace=False)).astype(np.int32)  # [K] distinct
    draw = jax.jit(jax.vmap(complement_uniform, in_axes=(None, 0, None, None, None)),
                   static_argnums=(3, 4))
    fresh = draw(state, jax.random.split(jax.random.key(seed), 200), jnp.asarray(excluded), 8,
                 CAPACITY)
    assert fresh.shape == (200, 8) and fresh.dtype == jnp.int32
    allowed = sorted(set(range(size)) - set(excluded.tolist()))
    assert sorted(set(np.asarray(fresh).reshape(-1).tolist())) == allowed


def test_new_transitions_enter_at_the_largest_decayed_weight():
    decay = 0.9
    buf = jitted("reuse", (("reuse_ratio", 0.5), ("decay", decay)), capacity=CAPACITY,
                 batch_size=8)
    state = fill(buf, 3, 4, 3)
    errors = np.random.default_rng(0).uniform(0.0, 2.0, (8, 3)).astype(np.float32)
    batch = buf.sample(state, jax.random.key(0))
    state = buf.update_priorities(state, batch.indices, jnp.asarray(errors))
    top = max(decay * 1.0, float(errors.max() + 1e-6))
    np.testing.assert_allclose(float(state.sampler.max_weight), top, rtol=1e-6)
    state = buf.add(state, jax.tree.map(lambda x: x[:3], state.experience))
    new_slots = np.arange(12, 15)
    np.testing.assert_allclose(np.asarray(state.sampler.weights)[new_slots], top, rtol=1e-6)
    weights = np.asarray(buf.sample(state, jax.random.key(1)).weights)
    assert np.all((weights > 0) & (weights <= 1.0))
