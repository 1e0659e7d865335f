"""Ring storage and its named layouts; the pure byte estimate."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.buffers import LAYOUTS, estimate_bytes, make_buffer, storage
from jaxmarl_accel.tree_util import tree_leaf_bytes
from tests.buffers.helpers import (
    LAYOUT_NAMES,
    example,
    fill,
    jitted,
    live_range,
    stored_counter,
    transitions,
)

SETTINGS = settings(max_examples=12, deadline=None)


@SETTINGS
@given(
    capacity=st.sampled_from([8, 13]),
    per_add=st.sampled_from([1, 3, 5]),
    num_adds=st.integers(1, 12),
    layout=st.sampled_from(LAYOUT_NAMES),
)
def test_add_matches_a_ring_model(capacity, per_add, num_adds, layout):
    buf = jitted("uniform", capacity=capacity, batch_size=2, layout=layout)
    state = fill(buf, 3, num_adds, per_add)
    ring = np.full(capacity, -1.0)
    for counter in range(num_adds * per_add):  # reference: write one at a time
        ring[counter % capacity] = counter
    stored = stored_counter(state, layout)
    written = ring >= 0
    np.testing.assert_array_equal(stored[written], ring[written])
    np.testing.assert_array_equal(stored[~written], 0.0)
    lo, hi = live_range(num_adds, per_add, capacity)
    assert int(state.size) == hi - lo == written.sum()
    assert int(state.write_pos) == hi % capacity


@SETTINGS
@given(num_agents=st.sampled_from([1, 3]), seed=st.integers(0, 2**16))
def test_layouts_return_identical_transitions_for_identical_indices(num_agents, seed):
    states = [fill(jitted("uniform", capacity=13, batch_size=4, layout=layout), num_agents, 7, 3)
              for layout in LAYOUT_NAMES]
    indices = jax.random.randint(jax.random.key(seed), (2, 6), 0, 13)
    gathered = [jax.jit(storage.gather, static_argnums=2)(s.experience, indices,
                                                          storage.LAYOUTS[layout])
                for s, layout in zip(states, LAYOUT_NAMES, strict=True)]
    jax.tree.map(np.testing.assert_array_equal, *gathered)
    assert gathered[0].obs.shape == (2, 6, num_agents, 2)


def test_add_under_jit_with_donation_updates_in_place():
    buffer = make_buffer("uniform", capacity=16, batch_size=4)
    add = jax.jit(buffer.add, donate_argnums=0)
    state = buffer.init(example(3))
    old = state.experience.obs
    state = add(state, transitions(np.arange(5), 3))
    assert old.is_deleted()  # the storage was donated, not copied
    np.testing.assert_array_equal(np.asarray(state.experience.reward[:5, 0]), np.arange(5))


def test_add_rejects_mismatched_batches():
    buffer = make_buffer("uniform", capacity=8, batch_size=2)
    state = buffer.init(example(3))
    with pytest.raises(ValueError, match="leaf shape"):
        buffer.add(state, transitions(np.arange(2), 2))
    with pytest.raises(ValueError, match="E=9"):
        buffer.add(state, transitions(np.arange(9), 3))
    bad = transitions(np.arange(2), 3)
    with pytest.raises(ValueError, match="dtype"):
        buffer.add(state, bad.replace(reward=bad.reward.astype(jnp.int32)))


def test_estimate_bytes_counts_storage_and_sampler_state():
    one = 3 * 2 * 4 * 2 + 3 * 2 * 4 + 3 * 4 * 2  # obs, next_obs, action, reward, done
    ring = 4 + 4  # write_pos, size
    assert estimate_bytes(example(3), capacity=100) == 100 * one + ring
    spec = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), example(3))
    # sum tree over 128 leaves, max priority, step
    assert estimate_bytes(spec, capacity=100, sampler="per") == (
        100 * one + ring + 4 * 2 * 128 + 4 + 4)
    # weight table [C], the reused set [K = 0.5 * 10], max weight, window step, window length
    assert estimate_bytes(spec, capacity=100, sampler="reuse", batch_size=10) == (
        100 * one + ring + 4 * 100 + 4 * 5 + 4 + 4 + 4)
    for layout in storage.LAYOUTS:  # the layout moves bytes, it does not add any
        assert estimate_bytes(spec, capacity=100, layout=layout) == 100 * one + ring


def test_layouts_are_named_and_chosen_once():
    for name, layout in storage.LAYOUTS.items():
        assert layout.name == name
        store = jax.eval_shape(lambda layout=layout: layout.alloc(example(3).obs, 7))
        assert store.shape[layout.slot_axis] == 7
        assert layout.item_shape(store) == example(3).obs.shape


def test_init_only_allocates():
    big = jax.ShapeDtypeStruct((24, 1_000_000), jnp.float32)  # 96 MB per transition
    buffer = make_buffer("uniform", capacity=1_000_000, batch_size=4)
    state = jax.eval_shape(buffer.init, {"obs": big})  # 96 TB: counted, never refused here
    assert state.experience["obs"].shape == (1_000_000, 24, 1_000_000)
    assert estimate_bytes({"obs": big}, capacity=1_000_000) == 96 * 10**12 + 8


@SETTINGS
@given(
    layout=st.sampled_from(LAYOUT_NAMES),
    capacity=st.integers(4, 12),
    num_agents=st.sampled_from([1, 3]),
    seed=st.integers(0, 2**16),
)
def test_layout_functions_under_jit_match_a_transition_major_model(
    layout, capacity, num_agents, seed
):
    """Through every layout, write / gather / windows see the same ``[C, N, ...]`` model."""
    named = storage.LAYOUTS[layout]
    rng = np.random.default_rng(seed)
    item = {"x": jnp.zeros((num_agents, 2), jnp.float32), "y": jnp.zeros((num_agents,), jnp.int32)}
    model = {"x": np.zeros((capacity, num_agents, 2), np.float32),
             "y": np.zeros((capacity, num_agents), np.int32)}
    store = jax.jit(storage.init_storage, static_argnums=(1, 2))(item, capacity, named)
    assert tree_leaf_bytes(store) == capacity * tree_leaf_bytes(item)
    slots = rng.permutation(capacity)[: rng.integers(1, capacity + 1)].astype(np.int32)
    new = {"x": rng.normal(size=(slots.size, num_agents, 2)).astype(np.float32),
           "y": rng.integers(0, 99, (slots.size, num_agents)).astype(np.int32)}
    store = jax.jit(storage.write, static_argnums=3)(store, jnp.asarray(slots), new, named)
    for name in model:
        model[name][slots] = new[name]
    indices = rng.integers(0, capacity, (2, 5)).astype(np.int32)
    got = jax.jit(storage.gather, static_argnums=2)(store, jnp.asarray(indices), named)
    jax.tree.map(np.testing.assert_array_equal, got, {k: v[indices] for k, v in model.items()})
    span = int(rng.integers(1, capacity + 1))
    starts = rng.integers(0, capacity - span + 1, (3,)).astype(np.int32)
    windows = jax.jit(storage.gather_windows, static_argnums=(2, 3))(
        store, jnp.asarray(starts), span, named)
    expected = {k: np.stack([v[s:s + span] for s in starts]) for k, v in model.items()}
    jax.tree.map(np.testing.assert_array_equal, windows, expected)


def test_the_two_layouts_place_slots_where_their_names_say():
    item = jnp.zeros((3, 2), jnp.float32)  # [N, d]
    assert storage.LAYOUTS["transition_major"].alloc(item, 5).shape == (5, 3, 2)  # [C, N, d]
    assert storage.LAYOUTS["agent_major"].alloc(item, 5).shape == (3, 5, 2)  # [N, C, d]


@SETTINGS
@given(capacity=st.integers(1, 20), written=st.integers(0, 60), seed=st.integers(0, 2**16))
def test_ring_arithmetic_under_jit(capacity, written, seed):
    """Chronological positions count from the oldest slot; slot_of inverts chronological."""
    state = storage.BufferState(experience=(), write_pos=jnp.int32(written % capacity),
                                size=jnp.int32(min(written, capacity)), sampler=())
    oldest = jax.jit(storage.oldest_slot, static_argnums=1)(state, capacity)
    assert int(oldest) == (written - min(written, capacity)) % capacity
    slots = jnp.asarray(np.random.default_rng(seed).integers(0, capacity, 7), jnp.int32)
    positions = jax.jit(storage.chronological, static_argnums=2)(slots, state, capacity)
    np.testing.assert_array_equal(positions, (np.asarray(slots) - int(oldest)) % capacity)
    back = jax.jit(storage.slot_of, static_argnums=2)(positions, state, capacity)
    np.testing.assert_array_equal(back, slots)


def test_layout_registry_iterates_names_and_is_exported():
    from jaxmarl_accel import buffers

    assert buffers.LAYOUTS is storage.LAYOUTS
    assert list(buffers.LAYOUTS)[:2] == ["transition_major", "agent_major"]
    assert "agent_major" in buffers.LAYOUTS and "rows" not in buffers.LAYOUTS
    assert all(isinstance(layout, buffers.StorageLayout) for layout in LAYOUTS.values())
