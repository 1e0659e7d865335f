"""The buffer factory and sampler registry: argument checks, every sampler under jit, in a
scan and vmapped over seeds."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example as explicit_example
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.buffers import SAMPLERS, estimate_bytes, make_buffer
from tests.buffers.helpers import (
    LAYOUT_NAMES,
    NO_SHRINK,
    assert_consistent,
    example,
    fill,
    jitted,
    live_range,
    stored_counter,
    transitions,
)

CAPACITY, BATCH, PER_ADD = 25, 8, 3


@pytest.mark.parametrize(
    ("sampler", "kwargs", "message"),
    [
        ("uniform", dict(capacity=0, batch_size=1), "capacity must be a positive int"),
        ("uniform", dict(capacity=8, batch_size=9), "batch_size .* must not exceed"),
        ("uniform", dict(capacity=8, batch_size=2, layout="rows"), "layout must be one of"),
        ("uniform", dict(capacity=8, batch_size=2, index_sharing="x"), "index_sharing must"),
        ("uniform", dict(capacity=8, batch_size=2, alpha=0.5), "alpha: not an option"),
        ("fifo", dict(capacity=8, batch_size=2), "sampler must be one of"),
        ("neighbor", dict(capacity=64, batch_size=6, neighbors=4), "multiple of neighbors"),
        ("neighbor", dict(capacity=64, batch_size=6, neighbors=3, window="centred"), "even"),
        ("neighbor", dict(capacity=64, batch_size=8, window="back"), "window must be one of"),
        ("per", dict(capacity=8, batch_size=2, alpha=1.5), "alpha must be a number"),
        ("per", dict(capacity=8, batch_size=2, reduction="sum"), "reduction must be one of"),
        ("prioritized_locality", dict(capacity=64, batch_size=8, thresholds=(0.7, 0.3)),
         "thresholds"),
        ("prioritized_locality", dict(capacity=64, batch_size=8, counts=(1, 0, 4)), "counts"),
        ("reuse", dict(capacity=64, batch_size=8, reuse_ratio=2.0), "reuse_ratio must"),
        ("reuse", dict(capacity=64, batch_size=8, decay=0.0), "decay must"),
    ],
)
def test_factory_rejects_bad_arguments(sampler, kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_buffer(sampler, **kwargs)


def test_per_sampler_factories_are_exported():
    from jaxmarl_accel import buffers

    for name in buffers.SAMPLERS:
        assert callable(getattr(buffers, f"make_{name}_buffer"))


@settings(max_examples=14, deadline=None, phases=NO_SHRINK)
@given(
    sampler=st.sampled_from(SAMPLERS),
    layout=st.sampled_from(LAYOUT_NAMES),
    sharing=st.sampled_from(["shared", "per_agent"]),
    num_agents=st.sampled_from([1, 3]),
    num_adds=st.integers(0, 25),
    seed=st.integers(0, 2**16),
)
# 12 of 25 slots filled: the authors' reuse ranks the unfilled top slots (zero items)
@explicit_example(sampler="reuse_block", layout="transition_major", sharing="per_agent",
                  num_agents=3, num_adds=4, seed=0)
def test_samples_are_current_intact_transitions(
    sampler, layout, sharing, num_agents, num_adds, seed
):
    buf = jitted(sampler, capacity=CAPACITY, batch_size=BATCH, layout=layout,
                 index_sharing=sharing)
    state = fill(buf, num_agents, num_adds, PER_ADD)
    lo, hi = live_range(num_adds, PER_ADD, CAPACITY)
    assert bool(buf.can_sample(state)) == (hi - lo >= BATCH)
    if hi - lo < BATCH:
        return
    key = jax.random.key(seed)
    batch = buf.sample(state, key)
    lead = (num_agents, BATCH) if sharing == "per_agent" else (BATCH,)
    assert batch.indices.shape == lead and batch.indices.dtype == jnp.int32
    assert batch.weights.shape == lead and batch.weights.dtype == jnp.float32
    assert batch.experience.obs.shape == (*lead, num_agents, 2)
    written = np.asarray(batch.indices) < int(state.size)  # filled slots are [0, size)
    if sampler != "reuse_block":  # the AccMER authors' reuse ranks unfilled slots too
        assert written.all()
    assert_consistent(jax.tree.map(lambda leaf: np.asarray(leaf)[written], batch.experience),
                      num_agents)
    counters = np.asarray(batch.experience.reward)[..., 0]
    assert np.all(counters[~written] == 0)  # ... which hold zero items
    assert np.all((counters[written] >= lo) & (counters[written] < hi))  # never overwritten
    np.testing.assert_array_equal(stored_counter(state, layout)[np.asarray(batch.indices)],
                                  counters)
    weights = np.asarray(batch.weights)
    assert np.all(np.isfinite(weights) & (weights > 0) & (weights <= 1.0))
    jax.tree.map(np.testing.assert_array_equal, batch, buf.sample(state, key))  # deterministic
    if sharing == "per_agent" and sampler != "reuse" and num_agents > 1:
        assert len({tuple(row) for row in np.asarray(batch.indices)}) > 1  # own draws
    errors = jnp.ones((*lead, num_agents))
    updated = buf.update_priorities(state, batch.indices, errors)
    jax.tree.map(np.testing.assert_array_equal, updated.experience, state.experience)
    if sampler in ("uniform", "neighbor"):
        jax.tree.map(np.testing.assert_array_equal, updated, state)


def test_samplers_run_inside_a_scan_vmapped_over_seeds():
    num_agents, num_envs = 3, 4

    def run(sampler, key):
        buffer = make_buffer(sampler, capacity=64, batch_size=8, reuse_window=5) if sampler == (
            "reuse") else make_buffer(sampler, capacity=64, batch_size=8)

        def step(state, step_key):
            add_key, sample_key, td_key = jax.random.split(step_key, 3)
            counters = jax.random.uniform(add_key, (num_envs,))
            state = buffer.add(state, transitions(counters, num_agents))
            batch = buffer.sample(state, sample_key)
            errors = jax.random.uniform(td_key, (8, num_agents))
            state = buffer.update_priorities(state, batch.indices, errors)
            return state, batch.indices

        state = buffer.init(example(num_agents))
        return jax.lax.scan(step, state, jax.random.split(key, 20))

    keys = jax.random.split(jax.random.key(0), 2)
    for sampler in SAMPLERS:
        state, indices = jax.jit(jax.vmap(lambda k, s=sampler: run(s, k)))(keys)
        assert indices.shape == (2, 20, 8)
        assert state.size.tolist() == [64, 64]
        assert not np.array_equal(indices[0], indices[1])  # seeds differ


def test_one_registry_names_the_samplers_and_make_buffer_dispatches_through_it():
    from jaxmarl_accel import buffers

    assert buffers.registered_samplers()[:len(buffers.SAMPLERS)] == buffers.SAMPLERS
    assert [name for name in buffers.SAMPLERS if buffers.is_prioritized(name)] == [
        "per", "prioritized_locality", "reuse", "reuse_block"]
    assert buffers.INDEX_SHARING == ("shared", "per_agent")
    state0 = fill(jitted("uniform", capacity=CAPACITY, batch_size=BATCH), 3, 5, PER_ADD)
    for name in buffers.SAMPLERS:
        spec = buffers.sampler_spec(name)
        assert spec.name == name and spec.summary
        factory = spec.make
        assert factory is getattr(buffers, f"make_{name}_buffer")
        via_registry = make_buffer(name, capacity=CAPACITY, batch_size=BATCH)
        direct = factory(capacity=CAPACITY, batch_size=BATCH)
        states = [jax.jit(buffer.add)(buffer.init(example(3)), state0.experience)
                  for buffer in (via_registry, direct)]
        jax.tree.map(np.testing.assert_array_equal, *states)
        batches = [jax.jit(buffer.sample)(state, jax.random.key(1))
                   for buffer, state in zip((via_registry, direct), states, strict=True)]
        jax.tree.map(np.testing.assert_array_equal, *batches)


def test_registry_errors_name_the_valid_choices():
    with pytest.raises(ValueError, match=r"sampler must be one of uniform, neighbor, "):
        make_buffer("fifo", capacity=8, batch_size=2)
    with pytest.raises(ValueError, match=r"window: not an option of sampler 'per'; valid: "
                                         r"\['alpha', 'beta', 'beta_final', 'beta_steps', "
                                         r"'reduction'\]"):
        make_buffer("per", capacity=8, batch_size=2, window="forward")
    with pytest.raises(ValueError, match=r"layout must be one of transition_major, "
                                         r"agent_major.*; got 'rows'"):
        make_buffer("reuse", capacity=8, batch_size=2, layout="rows")
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="batch_size must be a positive int"):
            make_buffer("uniform", capacity=8, batch_size=bad)


def test_estimate_bytes_is_the_state_the_buffer_allocates():
    for sampler in SAMPLERS:
        buffer = make_buffer(sampler, capacity=CAPACITY, batch_size=BATCH)
        state = jax.jit(buffer.init)(example(3))
        allocated = sum(leaf.nbytes for leaf in jax.tree.leaves(state))
        assert estimate_bytes(example(3), capacity=CAPACITY, sampler=sampler,
                              batch_size=BATCH) == allocated
    # sampler options reach the count: the reused set is [round(ratio * B)]
    ratios = [estimate_bytes(example(3), capacity=CAPACITY, sampler="reuse", batch_size=BATCH,
                             reuse_ratio=ratio) for ratio in (0.25, 0.5)]
    assert ratios[1] - ratios[0] == 4 * 2


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_sampling_eagerly_below_a_batch_is_a_one_line_error(sampler):
    buffer = make_buffer(sampler, capacity=16, batch_size=8)
    state = buffer.add(buffer.init(example(2)),
                       jax.tree.map(lambda x: jnp.stack([x] * 3), example(2)))
    with pytest.raises(ValueError, match="batch_size: the replay holds 3 entries") as error:
        buffer.sample(state, jax.random.key(0))
    assert "\n" not in str(error.value)
    # under jit the check cannot run: can_sample is the guard there
    assert not bool(jax.jit(buffer.can_sample)(state))
    jax.jit(buffer.sample)(state, jax.random.key(0))


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
def test_add_and_init_errors_name_the_field(layout):
    buffer = make_buffer("uniform", capacity=CAPACITY, batch_size=BATCH, layout=layout)
    state = buffer.init(example(3))
    good = transitions(np.arange(4), 3)
    with pytest.raises(ValueError, match=r"^add: batch field 'obs' has leaf shape \(4, 3, 7\), "
                                         r"expected \(E, 3, 2\)"):
        buffer.add(state, good.replace(obs=jnp.zeros((4, 3, 7), jnp.float32)))
    with pytest.raises(ValueError, match=r"^add: batch field 'reward' has leaf dtype int32, "
                                         r"stored as float32"):
        buffer.add(state, good.replace(reward=good.reward.astype(jnp.int32)))
    with pytest.raises(ValueError, match=r"disagree on the env axis E: .*'action': 2"):
        buffer.add(state, good.replace(action=good.action[:2]))
    with pytest.raises(ValueError, match=r"^example_transition: field 'reward' has shape \(\)"):
        buffer.init(example(3).replace(reward=jnp.float32(0)))
