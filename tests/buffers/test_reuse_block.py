"""The AccMER authors' reuse sampler (``reuse_block``): a weight table over every slot,
written every ``write_every`` updates with the batch's mean priority into a rolling block of
b slots and then decayed; each batch the top half of the table (ties towards the higher
slot) plus distinct uniform draws from the filled slots. Checked against a plain-Python model
of the reference code's list operations, under jit, for transition and episode storage."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from jaxmarl_accel.buffers import make_buffer
from jaxmarl_accel.buffers.reuse_block import top_slots_high_first, write_block
from tests.buffers.helpers import NO_SHRINK, jitted
from tests.buffers.test_reuse import (
    AGENTS,
    BATCH,
    CAPACITY,
    arrivals,
    counter_of,
    first_item,
    items,
    td_errors,
)


class Model:
    """The reference code's table as Python lists: ``update_weight_table`` (a write that
    wraps is two writes, each followed by the decay) and ``sample``'s ranking."""

    def __init__(self, capacity: int, decay: float, initial: float):
        self.table, self.index, self.decay = [initial] * capacity, 0, decay

    def write(self, length: int, value: float) -> None:
        if self.index + length <= len(self.table):
            for i in range(length):
                self.table[self.index + i] = value
            self.table = [w * self.decay for w in self.table]
            self.index = (self.index + length) % len(self.table)
        else:
            left = len(self.table) - self.index
            self.write(left, value)
            self.write(length - left, value)

    def reused(self, num: int) -> list[int]:
        ranked = sorted(((w, i) for i, w in enumerate(self.table)), reverse=True)
        return [i for _, i in ranked[:num]]


CASES = [  # layout, reuse_ratio, decay, write_every
    ("transition_major", 0.5, 0.8, 1),
    ("episode", 0.5, 0.8, 3),
    ("agent_major", 0.25, 0.9, 2),
    ("episode", 1.0, 1.0, 1),
]


@pytest.mark.parametrize(("layout", "ratio", "decay", "every"), CASES)
@settings(max_examples=3, deadline=None, phases=NO_SHRINK)
@given(seed=st.integers(0, 2**16), adds=st.lists(st.integers(0, 3), min_size=14, max_size=14))
def test_block_reuse_follows_the_reference_code(layout, ratio, decay, every, seed, adds):
    """Update by update: S- is the model's top K (unfilled slots included), S+ distinct
    filled slots, the first full batch slots 0..b-1, the table and its counter the model's
    after each write of the filled items' mean priority (0 for none; the counter wraps, 14
    updates of 8 slots over 32)."""
    buf = jitted("reuse_block", (("reuse_ratio", ratio), ("decay", decay),
                                 ("write_every", every)),
                 capacity=CAPACITY, batch_size=BATCH, layout=layout)
    num_reused = round(ratio * BATCH)
    model, stored = Model(CAPACITY, decay, 0.01), np.full(CAPACITY, -1.0)
    state, rng = buf.init(first_item(layout)), np.random.default_rng(seed)
    for update, (counters, written) in enumerate(arrivals(adds)):
        if counters.size:
            state = buf.add(state, items(layout, counters))
            stored[counters % CAPACITY] = counters
        size = min(written, CAPACITY)
        batch = buf.sample(state, jax.random.key(seed + update))
        indices = np.asarray(batch.indices)
        if size == BATCH:
            np.testing.assert_array_equal(indices, np.arange(BATCH))
        else:
            np.testing.assert_array_equal(indices[:num_reused], model.reused(num_reused))
            fresh = indices[num_reused:]
            assert len(set(fresh.tolist())) == len(fresh) and np.all(fresh < size)
        filled = indices < size
        counters = counter_of(batch.experience, layout)
        np.testing.assert_array_equal(counters[filled], stored[indices[filled]])
        assert np.all(counters[~filled] == 0)  # unfilled slots gather zero items
        np.testing.assert_array_equal(np.asarray(batch.weights), np.ones(BATCH))
        errors = td_errors(rng, layout)
        state = buf.update_priorities(state, batch.indices, jnp.asarray(errors))
        if update % every == 0:
            priorities = (errors.max(-1) if errors.ndim == 2 else errors) + 1e-6
            model.write(BATCH, float(priorities[filled].mean()) if filled.any() else 0.0)
        np.testing.assert_allclose(np.asarray(state.sampler.weights), model.table, rtol=1e-5)
        assert int(state.sampler.block_start) == model.index


def test_fresh_draws_are_distinct_and_uniform_over_the_filled_slots():
    """S+ is ``np.random.choice(size, b - K, replace=False)``: distinct slots of
    ``[0, size)``, each slot equally often (chi-square over 1500 jitted batches)."""
    buf = jitted("reuse_block", (), capacity=CAPACITY, batch_size=BATCH,
                 layout="transition_major")
    state = buf.add(buf.init(first_item("transition_major")), items("transition_major",
                                                                     np.arange(20)))
    keys = jax.random.split(jax.random.key(0), 1500)
    fresh = np.asarray(jax.vmap(lambda key: buf.sample(state, key).indices)(keys))[:, 4:]
    assert all(len(set(row)) == 4 for row in fresh.tolist()) and fresh.max() < 20
    counts = np.bincount(fresh.ravel(), minlength=20)
    assert stats.chisquare(counts).pvalue > 1e-3


def test_ranking_and_block_writes_on_hand_made_tables():
    """Ties go to the higher slot; a write that wraps decays the table twice (its first
    part twice, the wrapped part once), as the reference code's recursion does."""
    table = jnp.asarray([0.5, 0.9, 0.5, 0.9, 0.1], jnp.float32)
    np.testing.assert_array_equal(top_slots_high_first(table, 3), [3, 1, 2])
    written = write_block(jnp.ones(5, jnp.float32), jnp.asarray(3), 3, jnp.asarray(2.0), 0.5)
    np.testing.assert_allclose(written, [1.0, 0.25, 0.25, 0.5, 0.5])
    inside = write_block(jnp.ones(5, jnp.float32), jnp.asarray(1), 3, jnp.asarray(2.0), 0.5)
    np.testing.assert_allclose(inside, [0.5, 1.0, 1.0, 1.0, 0.5])


def test_block_reuse_runs_under_the_seed_vmap():
    """The write is a select over the table, not a per-seed branch: two seeds vmapped
    equal each run alone."""
    buffer = make_buffer("reuse_block", capacity=CAPACITY, batch_size=BATCH, write_every=2)
    example = first_item("transition_major")

    def run(key):
        state = buffer.add(buffer.init(example), items("transition_major", np.arange(12)))
        for _ in range(5):
            key, draw, noise = jax.random.split(key, 3)
            batch = buffer.sample(state, draw)
            errors = jax.random.uniform(noise, (BATCH, AGENTS))
            state = buffer.update_priorities(state, batch.indices, errors)
        return state.sampler.weights, batch.indices

    keys = jax.random.split(jax.random.key(3), 2)
    together = jax.jit(jax.vmap(run))(keys)
    for seed in range(2):
        alone = jax.jit(run)(keys[seed])
        for a, b in zip(alone, together, strict=True):
            np.testing.assert_array_equal(a, b[seed])


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(write_every=0), "write_every must be a positive int"),
    (dict(initial=0.0), "initial must be a number"),
    (dict(decay=1.5), "decay must be a number"),
    (dict(reuse_ratio=-0.1), "reuse_ratio must be a number"),
    (dict(window=3), "window: not an option of sampler 'reuse_block'"),
])
def test_bad_options_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as error:
        make_buffer("reuse_block", capacity=64, batch_size=8, **kwargs)
    assert "\n" not in str(error.value)
