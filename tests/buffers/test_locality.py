"""Prioritized locality (paper 000 IV-B1): windows, Lemma 1 weights, PER as its one-neighbor
case."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from jaxmarl_accel.buffers import sum_tree
from jaxmarl_accel.buffers.locality import spread_order
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


@pytest.mark.parametrize("batch_size", [1, 2, 3, 7, 64, 100, 1024])
def test_spread_order_is_a_permutation_whose_prefixes_cover_all_strata(batch_size):
    order = spread_order(batch_size)
    np.testing.assert_array_equal(np.sort(order), np.arange(batch_size))
    # every prefix of m strata leaves no gap wider than 6 B / m strata (a random permutation
    # leaves gaps of about ln(m) B / m): the used references span the whole priority mass
    for m in range(1, batch_size + 1):
        edges = np.sort(np.append(order[:m], order[0] + batch_size))
        assert np.diff(edges).max() <= max(6 * batch_size / m, 1)
