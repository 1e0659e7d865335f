"""PER, prioritized locality and reuse: frequencies, IS weights, schedules, windows."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from scipy import stats

from jaxmarl_accel.buffers import sum_tree
from jaxmarl_accel.buffers.prioritized import spread_order
from tests.buffers.helpers import fill, jitted

NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
CAPACITY = 32
PER_CONFIG = dict(capacity=CAPACITY, batch_size=CAPACITY)
PER_KW = (("alpha", 0.6), ("beta", 0.4), ("beta_final", 1.0), ("beta_steps", 10))


def leaves(state):
    return np.asarray(sum_tree.leaves(state.sampler.tree, jnp.arange(CAPACITY)))


def with_priorities(buf, errors, num_adds=14):
    """Full (wrapped) buffer of 3 agents whose slot i got per-agent TD errors ``errors[i]``."""
    state = fill(buf, 3, num_adds, 3)
    return buf.update_priorities(state, jnp.arange(CAPACITY), jnp.asarray(errors))


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
def test_prioritized_locality_windows_and_lemma1_weights(seed, num_adds):
    buf = jitted("prioritized_locality", (("alpha", 1.0),), **PER_CONFIG)
    rng = np.random.default_rng(seed)
    errors = rng.uniform(1.0, 70.0, (CAPACITY, 3)).astype(np.float32)
    errors[rng.integers(CAPACITY)] = 100.0  # heavier than a stratum: always drawn, the scale
    state = with_priorities(buf, errors, num_adds)
    batch = buf.sample(state, jax.random.key(seed))
    oldest = int(state.write_pos)  # full buffer: the oldest slot is the write head
    chrono = leaves(state)[(oldest + np.arange(CAPACITY)) % CAPACITY]
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


@pytest.mark.parametrize("batch_size", [1, 2, 3, 7, 64, 100, 1024])
def test_spread_order_is_a_permutation_whose_prefixes_cover_all_strata(batch_size):
    order = spread_order(batch_size)
    np.testing.assert_array_equal(np.sort(order), np.arange(batch_size))
    # every prefix of m strata leaves no gap wider than 6 B / m strata (a random permutation
    # leaves gaps of about ln(m) B / m): the used references span the whole priority mass
    for m in range(1, batch_size + 1):
        edges = np.sort(np.append(order[:m], order[0] + batch_size))
        assert np.diff(edges).max() <= max(6 * batch_size / m, 1)
