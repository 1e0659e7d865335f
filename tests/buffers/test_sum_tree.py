"""Sum tree: exact prefix search, last-write-wins updates, and no float32 drift."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.buffers import sum_tree

CAPACITY = 100
set_leaves = jax.jit(sum_tree.set_leaves)
find = jax.jit(sum_tree.find)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**30), zero_fraction=st.sampled_from([0.0, 0.5, 0.95]))
def test_find_matches_a_prefix_sum_search(seed, zero_fraction):
    rng = np.random.default_rng(seed)
    priorities = rng.exponential(size=CAPACITY).astype(np.float32)
    priorities[rng.random(CAPACITY) < zero_fraction] = 0.0
    priorities[rng.integers(CAPACITY)] = 1.0  # never all zero
    tree = set_leaves(sum_tree.init(CAPACITY), jnp.arange(CAPACITY), jnp.asarray(priorities))
    np.testing.assert_array_equal(np.asarray(tree), np.asarray(sum_tree.rebuild(tree)))
    targets = rng.random(64).astype(np.float32) * float(sum_tree.total(tree))
    found = np.asarray(find(tree, jnp.asarray(targets)))
    assert np.all(priorities[found] > 0)
    # away from interval edges (float rounding), the leaf is the float64 prefix-sum answer
    edges = np.cumsum(priorities.astype(np.float64))
    expected = np.searchsorted(edges, targets, side="right")
    clear = np.min(np.abs(targets[:, None] - edges[None, :]), axis=1) > 1e-4 * edges[-1]
    np.testing.assert_array_equal(found[clear], expected[clear])


def test_duplicate_slots_last_write_wins():
    tree = set_leaves(sum_tree.init(8), jnp.array([3, 5, 3, 3]), jnp.array([1.0, 2.0, 7.0, 4.0]))
    np.testing.assert_array_equal(np.asarray(sum_tree.leaves(tree, jnp.array([3, 5]))), [4.0, 2.0])
    assert float(sum_tree.total(tree)) == 6.0


def _random_update(key, num_slots):
    slot_key, value_key, zero_key = jax.random.split(key, 3)
    slots = jax.random.randint(slot_key, (num_slots,), 0, CAPACITY)
    exponent = jax.random.uniform(value_key, (num_slots,), minval=-20.0, maxval=10.0)
    values = jnp.exp(exponent) * (jax.random.uniform(zero_key, (num_slots,)) > 0.2)
    return slots, values


def _delta_set(tree, slots, values):
    """The drift-prone alternative: add each leaf's change to all its ancestors."""
    num_leaves = tree.shape[0] // 2

    def one(i, tree):
        node = num_leaves + slots[i]
        delta = values[i] - tree[node]
        ancestors = node // (2 ** jnp.arange(num_leaves.bit_length()))
        return tree.at[ancestors].add(delta)

    return jax.lax.fori_loop(0, slots.shape[0], one, tree)


@jax.jit
def _many_updates(key):
    """150k batched updates of 16 slots (2.4M leaf writes), priorities over 13 decades.

    The history ends by setting every leaf to 1e-3 (late training: small TD errors).
    """

    def body(step, trees):
        ours, delta = trees
        slots, values = _random_update(jax.random.fold_in(key, step), 16)
        return sum_tree.set_leaves(ours, slots, values), _delta_set(delta, slots[:2], values[:2])

    start = sum_tree.init(CAPACITY)
    ours, delta = jax.lax.fori_loop(0, 150_000, body, (start, start))
    every, small = jnp.arange(CAPACITY), jnp.full((CAPACITY,), 1e-3)
    return sum_tree.set_leaves(ours, every, small), _delta_set(delta, every, small)


def test_millions_of_updates_leave_no_float32_drift():
    ours, delta = _many_updates(jax.random.key(0))
    # every internal node is exactly the float32 sum of its children, after 2.4M updates
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(sum_tree.rebuild(ours)))
    leaves = np.asarray(ours)[ours.shape[0] // 2:]
    np.testing.assert_allclose(float(sum_tree.total(ours)), leaves.astype(np.float64).sum(),
                               rtol=1e-5)
    # the delta-update tree of the same kind of history has drifted (the test can fail)
    delta_leaves = np.asarray(delta)[delta.shape[0] // 2:].astype(np.float64)
    assert abs(float(sum_tree.total(delta)) - delta_leaves.sum()) > 0.1 * delta_leaves.sum()
    # sampling late in training never returns a zero-priority slot, even at the very top
    targets = jnp.concatenate([
        jnp.linspace(0.0, 1.0, 4096) * sum_tree.total(ours),
        jnp.full((4,), sum_tree.total(ours)),
    ])
    found = np.asarray(find(ours, targets))
    assert np.all(leaves[found] > 0) and np.all(found < CAPACITY)


def test_shape_of_the_tree():
    assert [sum_tree.depth_for(c) for c in (1, 2, 3, 100, 128, 129)] == [1, 1, 2, 7, 7, 8]
    tree = jax.jit(sum_tree.init, static_argnums=0)(100)
    assert tree.shape == (256,) and tree.dtype == jnp.float32 and not np.any(np.asarray(tree))


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**30), batch_size=st.sampled_from([1, 5, 32]))
def test_stratified_draws_under_jit_one_per_stratum(seed, batch_size):
    rng = np.random.default_rng(seed)
    priorities = rng.exponential(size=CAPACITY).astype(np.float32)
    priorities[rng.random(CAPACITY) < 0.5] = 0.0
    priorities[0] = 1.0
    tree = set_leaves(sum_tree.init(CAPACITY), jnp.arange(CAPACITY), jnp.asarray(priorities))
    np.testing.assert_array_equal(np.asarray(jax.jit(sum_tree.rebuild)(tree)), np.asarray(tree))
    total = float(jax.jit(sum_tree.total)(tree))
    key = jax.random.key(seed)
    targets = np.asarray(jax.jit(sum_tree.stratified_targets, static_argnums=2)(
        tree, key, batch_size))
    # target i lies in stratum i, [i, i + 1) * total / B (up to float32 rounding)
    centred = targets / (total / batch_size) - (np.arange(batch_size) + 0.5)
    assert np.all(np.abs(centred) <= 0.5 + 1e-4)
    slots = jax.jit(sum_tree.stratified_sample, static_argnums=2)(tree, key, batch_size)
    np.testing.assert_array_equal(slots, find(tree, jnp.asarray(targets)))  # same draws
    found = np.asarray(jax.jit(sum_tree.leaves)(tree, slots))
    np.testing.assert_array_equal(found, priorities[np.asarray(slots)])
    assert np.all(found > 0)
