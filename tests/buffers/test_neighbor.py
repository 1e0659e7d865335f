"""Neighbor slices (papers 000/002 Alg. 1): contiguous windows, every valid start drawable."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.buffers import BufferState
from jaxmarl_accel.buffers.neighbor import window_offsets, window_starts
from tests.buffers.helpers import (
    LAYOUT_NAMES,
    NO_SHRINK,
    fill,
    jitted,
    live_range,
    stored_counter,
)

CAPACITY, BATCH, PER_ADD = 25, 8, 3


@settings(max_examples=15, deadline=None, phases=NO_SHRINK)
@given(
    window=st.sampled_from(["forward", "centred"]),
    num_adds=st.integers(3, 30),
    seed=st.integers(0, 2**16),
)
def test_neighbor_windows_are_contiguous_in_time_and_layouts_agree(window, num_adds, seed):
    neighbors = 4
    batches = []
    for layout in LAYOUT_NAMES:
        buf = jitted("neighbor", (("neighbors", neighbors), ("window", window)),
                     capacity=CAPACITY, batch_size=BATCH, layout=layout)
        state = fill(buf, 3, num_adds, PER_ADD)
        batches.append(buf.sample(state, jax.random.key(seed)))
    jax.tree.map(np.testing.assert_array_equal, *batches)
    counters = np.asarray(batches[0].experience.reward)[:, 0].reshape(-1, neighbors)
    steps = np.diff(counters, axis=1)
    expected = [1, 1, 1] if window == "forward" else [1, 2, 1]  # centred skips the reference
    np.testing.assert_array_equal(steps, np.broadcast_to(expected, steps.shape))
    lo, hi = live_range(num_adds, PER_ADD, CAPACITY)
    assert np.all((counters >= lo) & (counters < hi))


@settings(max_examples=6, deadline=None, phases=NO_SHRINK)
@given(num_adds=st.integers(9, 20), seed=st.integers(0, 2**16))
def test_neighbor_starts_cover_every_valid_window(num_adds, seed):
    buf = jitted("neighbor", (("neighbors", 4), ("window", "forward")),
                 capacity=CAPACITY, batch_size=BATCH)
    state = fill(buf, 1, num_adds, PER_ADD)
    draw = jax.jit(jax.vmap(buf.sample, in_axes=(None, 0)))
    batch = draw(state, jax.random.split(jax.random.key(seed), 400))
    firsts = set(np.asarray(batch.experience.reward)[:, ::4, 0].reshape(-1).astype(int).tolist())
    # valid windows: 4 slots in memory holding 4 consecutive live transitions
    stored = stored_counter(state, "transition_major")
    lo, _ = live_range(num_adds, PER_ADD, CAPACITY)
    valid = {
        int(stored[s]) for s in range(CAPACITY - 3)
        if stored[s] >= lo and np.all(np.diff(stored[s:s + 4]) == 1)
    }
    assert firsts == valid


def test_window_offsets_forward_and_centred():
    span, keep = window_offsets(4, "forward")
    assert span == 4 and keep.tolist() == [0, 1, 2, 3]
    span, keep = window_offsets(4, "centred")  # [i - 2, i + 2] without i
    assert span == 5 and keep.tolist() == [0, 1, 3, 4]


@settings(max_examples=12, deadline=None, phases=NO_SHRINK)
@given(written=st.integers(5, 60), span=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_window_starts_under_jit_stay_in_written_slots_and_off_the_head(written, span, seed):
    size, write_pos = min(written, CAPACITY), written % CAPACITY
    state = BufferState(experience=(), write_pos=jnp.int32(write_pos), size=jnp.int32(size),
                        sampler=())
    draw = jax.jit(window_starts, static_argnums=(2, 3, 4))
    starts = np.asarray(draw(state, jax.random.key(seed), 64, span, CAPACITY))
    assert starts.dtype == np.int32 and np.all(np.diff(starts) >= 0)  # ascending reads
    assert np.all((starts >= 0) & (starts + span <= size))
    if written > CAPACITY:  # wrapped: no window holds the newest slot and then the oldest
        assert not np.any((starts < write_pos) & (starts + span > write_pos))
