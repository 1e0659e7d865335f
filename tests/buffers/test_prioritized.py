"""Proportional PER: frequencies, priorities, beta schedule, updates outside written slots."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from jaxmarl_accel.buffers.prioritized import PerSettings, beta_at, normalized_is_weights
from tests.buffers.helpers import PER_KW, fill, jitted, priority_leaves, with_priorities

CAPACITY = 32
PER_CONFIG = dict(capacity=CAPACITY, batch_size=CAPACITY)


def leaves(state):
    return priority_leaves(state, CAPACITY)


def test_per_frequencies_match_priorities_chi_square():
    buf = jitted("per", PER_KW, **PER_CONFIG)
    errors = np.random.default_rng(0).uniform(0.05, 5.0, (CAPACITY, 3)).astype(np.float32)
    state = with_priorities(buf, errors)
    draw = jax.jit(jax.vmap(buf.sample, in_axes=(None, 0)))
    indices = np.asarray(draw(state, jax.random.split(jax.random.key(1), 300)).indices)
    counts = np.bincount(indices.reshape(-1), minlength=CAPACITY)
    expected_p = (errors.max(1).astype(np.float64) + 1e-6) ** 0.6
    expected = counts.sum() * expected_p / expected_p.sum()
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    # and it is not uniform (the test can tell the two apart)
    assert stats.chisquare(counts, np.full(CAPACITY, counts.sum() / CAPACITY)).pvalue < 1e-6


def test_per_reduction_new_max_priority_and_beta_schedule():
    errors = np.random.default_rng(1).uniform(0.0, 3.0, (CAPACITY, 3)).astype(np.float32)
    for reduction, reduce in (("max", np.max), ("mean", np.mean)):
        buf = jitted("per", (*PER_KW, ("reduction", reduction)), **PER_CONFIG)
        state = with_priorities(buf, errors)
        np.testing.assert_allclose(leaves(state), (reduce(errors, 1) + 1e-6) ** 0.6, rtol=1e-5)
        # new transitions enter with the largest priority seen so far
        state = buf.add(state, jax.tree.map(lambda x: x[:3], state.experience))
        new_slots = (np.asarray(state.write_pos) - np.arange(1, 4)) % CAPACITY
        top = (reduce(errors, 1).max() + 1e-6) ** 0.6
        np.testing.assert_allclose(leaves(state)[new_slots], top, rtol=1e-5)
        for step in range(1, 4):
            batch = buf.sample(state, jax.random.key(step))
            beta = 0.4 + 0.6 * min(step + 1, 10) / 10  # with_priorities made update 1
            state = buf.update_priorities(state, batch.indices, jnp.asarray(errors))
            batch = buf.sample(state, jax.random.key(step))
            prob = leaves(state)[np.asarray(batch.indices)] / leaves(state).sum()
            expected = (CAPACITY * prob) ** -beta
            np.testing.assert_allclose(np.asarray(batch.weights), expected / expected.max(),
                                       rtol=2e-4)


def test_updates_from_batches_drawn_too_early_never_touch_unwritten_slots():
    for sampler in ("per", "prioritized_locality", "reuse"):
        buf = jitted(sampler, capacity=CAPACITY, batch_size=8)
        for num_adds in (0, 2):  # empty, then 6 of 32 slots written (can_sample is False)
            state = fill(buf, 3, num_adds, 3)
            batch = buf.sample(state, jax.random.key(0))
            state = buf.update_priorities(state, batch.indices, jnp.full((8, 3), 50.0))
            size = int(state.size)
            if sampler == "reuse":
                assert np.all(np.isneginf(np.asarray(state.sampler.weights)[size:]))
            else:
                np.testing.assert_array_equal(leaves(state)[size:], 0.0)
            if size == 0:
                np.testing.assert_array_equal(np.asarray(batch.weights) >= 0, True)


def test_beta_schedule_under_jit_is_linear_then_flat():
    per = PerSettings(alpha=0.6, beta=0.4, beta_final=1.0, beta_steps=10)
    beta = jax.jit(beta_at, static_argnums=1)
    got = [float(beta(jnp.int32(step), per)) for step in (0, 5, 10, 50)]
    np.testing.assert_allclose(got, [0.4, 0.7, 1.0, 1.0], rtol=1e-6)


def test_normalized_is_weights_under_jit():
    prob = jnp.array([0.5, 0.25, 0.25, 0.0], jnp.float32)  # [B], the last never drawable
    weights = np.asarray(jax.jit(normalized_is_weights)(jnp.int32(4), prob, jnp.float32(1.0)))
    np.testing.assert_allclose(weights, [0.5, 1.0, 1.0, 0.0])  # (4 P)^-1 over its max; inf -> 0
    # an empty buffer counts as size 1 and keeps the weights finite
    empty = jax.jit(normalized_is_weights)(jnp.int32(0), prob[:3], jnp.float32(0.5))
    assert np.all(np.isfinite(np.asarray(empty))) and float(empty.max()) == 1.0
