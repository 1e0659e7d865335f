"""Prioritized locality (paper 000 IV-B1): windows, Lemma 1 weights, PER as its one-neighbor
case."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from jaxmarl_accel.buffers.locality import (
    locality_counts,
    locality_probability,
    spread_order,
    window_start,
)
from tests.buffers.helpers import NO_SHRINK, PER_KW, jitted, priority_leaves, with_priorities

CAPACITY = 32
PER_CONFIG = dict(capacity=CAPACITY, batch_size=CAPACITY)


def leaves(state):
    return priority_leaves(state, CAPACITY)


def brute_force_q(priorities, size, scale, thresholds=(0.33, 0.66), counts=(1, 2, 4)):
    """q_j over chronological positions by enumerating every reference's window."""
    q = np.zeros(size)
    for ref in range(size):
        level = priorities[ref] / scale
        k = counts[int(level >= thresholds[0]) + int(level >= thresholds[1])]
        start = max(min(ref, size - k), 0)
        q[start:start + k] += priorities[ref]
    return q / priorities[:size].sum()


@settings(max_examples=8, deadline=None, phases=NO_SHRINK)
@given(seed=st.integers(0, 2**16), num_adds=st.integers(11, 30))
@example(seed=19140, num_adds=25)  # a heavy leaf of one to two strata was not drawn
def test_prioritized_locality_windows_and_lemma1_weights(seed, num_adds):
    buf = jitted("prioritized_locality", (("alpha", 1.0),), **PER_CONFIG)
    rng = np.random.default_rng(seed)
    # half the slots light (k = 1), half spread over k = 1, 2, 4 at the heavy leaf's scale;
    # the total stays below 16 * 70 + 16 * 8 + 100, so the heavy leaf covers two strata
    ceiling = rng.permutation(np.repeat([8.0, 70.0], CAPACITY // 2))[:, None]
    errors = rng.uniform(1.0, ceiling, (CAPACITY, 3)).astype(np.float32)
    errors[rng.integers(CAPACITY)] = 100.0  # the scale: always drawn (asserted below)
    state = with_priorities(buf, errors, num_adds)
    batch = buf.sample(state, jax.random.key(seed))
    oldest = int(state.write_pos)  # full buffer: the oldest slot is the write head
    chrono = leaves(state)[(oldest + np.arange(CAPACITY)) % CAPACITY]
    # the scale is the largest *drawn* reference: a leaf covering two strata always is
    assert chrono.max() >= 2 * chrono.sum() / CAPACITY
    positions = (np.asarray(batch.indices) - oldest) % CAPACITY
    # every sampled position lies in the window of some reference (q > 0)
    q = brute_force_q(chrono, CAPACITY, chrono.max())
    assert np.all(q[positions] > 0)
    expected = q[positions] ** -0.4  # Lemma 1, constant factors cancel in the normalization
    np.testing.assert_allclose(np.asarray(batch.weights), expected / expected.max(), rtol=2e-4)


def test_prioritized_locality_with_one_neighbor_is_per():
    errors = np.random.default_rng(2).uniform(0.1, 4.0, (CAPACITY, 3)).astype(np.float32)
    batches = []
    for sampler, kwargs in (("per", PER_KW), ("prioritized_locality",
                                               (*PER_KW, ("thresholds", (2.0, 2.0))))):
        buf = jitted(sampler, kwargs, **PER_CONFIG)
        batches.append(buf.sample(with_priorities(buf, errors), jax.random.key(3)))
    per, local = batches
    order_per, order_local = np.argsort(per.indices), np.argsort(local.indices)
    np.testing.assert_array_equal(np.asarray(per.indices)[order_per],
                                  np.asarray(local.indices)[order_local])
    np.testing.assert_allclose(np.asarray(per.weights)[order_per],
                               np.asarray(local.weights)[order_local], rtol=1e-5)


@pytest.mark.parametrize("batch_size", [1, 2, 3, 7, 64, 100, 1024])
def test_spread_order_is_a_permutation_whose_prefixes_cover_all_strata(batch_size):
    order = spread_order(batch_size)
    np.testing.assert_array_equal(np.sort(order), np.arange(batch_size))
    # every prefix of m strata leaves no gap wider than 6 B / m strata (a random permutation
    # leaves gaps of about ln(m) B / m): the used references span the whole priority mass
    for m in range(1, batch_size + 1):
        edges = np.sort(np.append(order[:m], order[0] + batch_size))
        assert np.diff(edges).max() <= max(6 * batch_size / m, 1)


def test_locality_counts_and_window_start_under_jit():
    values = jnp.array([0.1, 0.33, 0.5, 0.66, 1.0], jnp.float32)  # [R]
    counts = jax.jit(locality_counts, static_argnums=(2, 3))(
        values, jnp.float32(1.0), (0.33, 0.66), (1, 2, 4))
    assert counts.dtype == jnp.int32 and counts.tolist() == [1, 2, 2, 4, 4]
    # windows of 4 from positions 0, 5, 8, 9 in 10 written slots: the last two shift back
    starts = jax.jit(window_start)(jnp.array([0, 5, 8, 9]), jnp.int32(4), jnp.int32(10))
    assert starts.tolist() == [0, 5, 6, 6]
    assert jax.jit(window_start)(jnp.array([0]), jnp.int32(4), jnp.int32(2)).tolist() == [0]


@settings(max_examples=6, deadline=None, phases=NO_SHRINK)
@given(seed=st.integers(0, 2**16), num_adds=st.integers(4, 30))
def test_locality_probability_under_jit_matches_enumerating_every_window(seed, num_adds):
    buf = jitted("prioritized_locality", (("alpha", 1.0),), **PER_CONFIG)
    errors = np.random.default_rng(seed).uniform(1.0, 70.0, (CAPACITY, 3)).astype(np.float32)
    state = with_priorities(buf, errors, num_adds)  # wrapped or not, depending on num_adds
    size = int(state.size)
    oldest = (int(state.write_pos) - size) % CAPACITY
    chrono = leaves(state)[(oldest + np.arange(size)) % CAPACITY]
    scale = chrono.max()
    q = jax.jit(locality_probability, static_argnums=(3, 4, 5))(
        state, jnp.arange(size), jnp.float32(scale), (0.33, 0.66), (1, 2, 4), CAPACITY)
    np.testing.assert_allclose(np.asarray(q), brute_force_q(chrono, size, scale), rtol=1e-5)
