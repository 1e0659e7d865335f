"""``next_obs="next_slot"``: samples equal the stored mode's bit for bit, for every sampler,
layout and index sharing, over random chains of adds with random resets and wrap-around."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.buffers import LAYOUTS, estimate_bytes, make_buffer, storage
from jaxmarl_accel.buffers.next_slot import next_obs_of, side_capacity
from jaxmarl_accel.tree_util import tree_leaf_bytes
from jaxmarl_accel.types import Transition
from tests.buffers.helpers import NO_SHRINK, PER_KW

AGENTS, DIM, BATCH = 2, 2, 8
POOL = np.array([0.0, -0.0, 1.0, 2.5], np.float32)  # few values: equal draws happen often


def example() -> Transition:
    """One transition (leaves ``[N, ...]``)."""
    zeros = jnp.zeros((AGENTS, DIM), jnp.float32)
    return Transition(obs=zeros, action=jnp.zeros((AGENTS, 3), jnp.float32),
                      reward=jnp.zeros(AGENTS, jnp.float32), next_obs=zeros,
                      done=jnp.zeros(AGENTS, jnp.float32))


def chain(seed: int, num_envs: int, num_adds: int, min_length: int | None,
          end_chance: float) -> list[Transition]:
    """``num_adds`` adds of E envs stepped in lock step (leaves ``[E, N, ...]``).

    An episode may end once it has lasted ``min_length`` steps (every step when None), with
    ``end_chance`` per step; its env then starts from a fresh observation, sometimes equal
    to the pre-reset one bit for bit. Every next_obs is the pre-reset observation.
    """
    rng = np.random.default_rng(seed)
    draw = lambda: rng.choice(POOL, (num_envs, AGENTS, DIM)).astype(np.float32)
    obs = draw()
    age = rng.integers(0, min_length or 1, num_envs)  # episodes start out of phase
    adds = []
    for _ in range(num_adds):
        final = draw()
        age += 1
        ended = (age >= (min_length or 1)) & (rng.random(num_envs) < end_chance)
        reset = np.where((rng.random(num_envs) < 0.2)[:, None, None], final, draw())
        adds.append(Transition(
            obs=jnp.asarray(obs), action=jnp.asarray(rng.normal(size=(num_envs, AGENTS, 3)),
                                                     jnp.float32),
            reward=jnp.asarray(rng.normal(size=(num_envs, AGENTS)), jnp.float32),
            next_obs=jnp.asarray(final),
            done=jnp.asarray(np.repeat(ended[:, None], AGENTS, 1), jnp.float32)))
        obs = np.where(ended[:, None, None], reset, final)
        age = np.where(ended, 0, age)
    return adds


def assert_same_bits(got, want) -> None:
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.shape, a.dtype) == (b.shape, b.dtype)
        assert a.tobytes() == b.tobytes(), (a, b)


@functools.cache
def pair(sampler: str, kwargs: tuple, capacity: int, num_envs: int,
         episode_length: int | None, **config):
    """(stored, next_slot) buffers with jitted add / sample / update_priorities."""
    def jitted(buffer):
        return buffer, jax.jit(buffer.add), jax.jit(buffer.sample), jax.jit(
            buffer.update_priorities)

    common = dict(capacity=capacity, batch_size=BATCH, **config, **dict(kwargs))
    return (jitted(make_buffer(sampler, **common)),
            jitted(make_buffer(sampler, next_obs="next_slot", num_envs=num_envs,
                               episode_length=episode_length, **common)))


@functools.cache
def all_next_obs(capacity: int, num_envs: int, layout: str):
    """Jitted ``next_obs`` of every slot ``[C, N, D]``."""
    slots = jnp.arange(capacity, dtype=jnp.int32)
    return jax.jit(lambda state: next_obs_of(state, slots, capacity, num_envs, LAYOUTS[layout]))


@settings(max_examples=16, deadline=None, phases=NO_SHRINK)
@given(num_envs=st.integers(1, 4), extra=st.integers(0, 9), seed=st.integers(0, 2**31),
       rounds=st.floats(0.2, 3.5), min_length=st.sampled_from([None, 1, 2, 5]),
       layout=st.sampled_from(["transition_major", "agent_major"]))
def test_every_slot_reads_back_the_next_obs_it_was_added_with(
        num_envs, extra, seed, rounds, min_length, layout):
    capacity = max(num_envs + extra, BATCH)  # often not a multiple of E, sometimes < 2E
    (stored, add_a, _, _), (compact, add_b, _, _) = pair("uniform", (), capacity, num_envs,
                                                          min_length, layout=layout)
    state_a, state_b = stored.init(example()), compact.init(example())
    read = all_next_obs(capacity, num_envs, layout)
    slots = jnp.arange(capacity)
    num_adds = max(1, math.ceil(rounds * capacity / num_envs))  # wraps when rounds > 1
    for batch in chain(seed, num_envs, num_adds, min_length, end_chance=0.5):
        state_a, state_b = add_a(state_a, batch), add_b(state_b, batch)
        assert_same_bits(read(state_b), storage.gather(state_a.experience, slots,
                                                       LAYOUTS[layout]).next_obs)
        assert_same_bits(state_b.experience, state_a.experience.replace(next_obs=None))


SAMPLERS = [
    ("uniform", (), {}),
    ("uniform", (), dict(layout="agent_major")),
    ("uniform", (), dict(index_sharing="per_agent")),
    ("per", PER_KW, {}),
    ("per", PER_KW, dict(index_sharing="per_agent")),
    ("neighbor", (("neighbors", 4),), {}),
    ("neighbor", (("neighbors", 4), ("window", "centred")), dict(layout="agent_major")),
    ("prioritized_locality", PER_KW, {}),
    ("reuse", (("reuse_ratio", 0.5), ("reuse_window", 2)), {}),
]


@pytest.mark.parametrize(("capacity", "num_envs"), [(20, 3), (10, 6)])
@pytest.mark.parametrize(("sampler", "kwargs", "config"), SAMPLERS,
                         ids=[f"{s}-{'-'.join(map(str, c.values()))}" for s, _, c in SAMPLERS])
@settings(max_examples=4, deadline=None, phases=NO_SHRINK)
@given(seed=st.integers(0, 2**31), rounds=st.floats(0.8, 3.0),
       min_length=st.sampled_from([None, 3]))
@pytest.mark.fast_cases(1)
def test_samples_equal_the_stored_modes_bit_for_bit(
        sampler, kwargs, config, capacity, num_envs, seed, rounds, min_length):
    buffers = pair(sampler, kwargs, capacity, num_envs, min_length, **config)
    num_adds = max(1, math.ceil(rounds * capacity / num_envs))
    batches = ((batch, batch) for batch in chain(seed, num_envs, num_adds, min_length, 0.6))
    samples = sample_in_lockstep(buffers, (example(), example()), batches, seed)
    assert samples or num_adds * num_envs < BATCH


def sample_in_lockstep(buffers, examples, batches, seed: int) -> int:
    """Adds each ``(batch_a, batch_b)`` of ``batches`` to buffers a and b (each ``(buffer,
    add, sample, update_priorities)``), samples both with the same key once they can, checks
    the samples and then the sampler states after the same priority updates are equal bit
    for bit; returns the number of samples compared."""
    (buf_a, add_a, sample_a, update_a), (buf_b, add_b, sample_b, update_b) = buffers
    state_a, state_b = buf_a.init(examples[0]), buf_b.init(examples[1])
    rng = np.random.default_rng(seed)
    samples = 0
    for step, (batch_a, batch_b) in enumerate(batches):
        state_a, state_b = add_a(state_a, batch_a), add_b(state_b, batch_b)
        if not buf_a.can_sample(state_a):
            continue
        key = jax.random.PRNGKey(step)
        got, want = sample_b(state_b, key), sample_a(state_a, key)
        assert_same_bits(got, want)
        errors = jnp.asarray(rng.exponential(size=(*want.indices.shape, AGENTS)), jnp.float32)
        state_a = update_a(state_a, want.indices, errors)
        state_b = update_b(state_b, got.indices, errors)
        assert_same_bits(state_b.sampler, state_a.sampler)
        samples += 1
    return samples


@pytest.mark.slow
def test_an_overwritten_side_entry_is_never_returned():
    # the side ring is sized for episodes of >= 10 steps, but every step ends one
    capacity, num_envs = 40, 2
    (stored, add_a, _, _), (compact, add_b, _, _) = pair("uniform", (), capacity, num_envs, 10)
    state_a, state_b = stored.init(example()), compact.init(example())
    for batch in chain(3, num_envs, 60, None, 1.0):
        state_a, state_b = add_a(state_a, batch), add_b(state_b, batch)
    got = np.asarray(all_next_obs(capacity, num_envs, "transition_major")(state_b))
    want = np.asarray(state_a.experience.next_obs)
    lost = np.isnan(got).all(axis=(1, 2))
    assert lost.any() and not np.isnan(want).any()
    assert got[~lost].tobytes() == want[~lost].tobytes()


@struct.dataclass
class WithNeighbors:
    """A transition with more fields than :class:`Transition`, one of them left out."""

    obs: jax.Array
    next_obs: jax.Array
    neighbors: jax.Array
    next_neighbors: jax.Array
    unused: jax.Array | None = None


def test_other_fields_are_stored_as_they_are():
    capacity, num_envs = 12, 3
    buffers = [make_buffer("uniform", capacity=capacity, batch_size=BATCH, **kw)
               for kw in ({}, dict(next_obs="next_slot", num_envs=num_envs))]
    ints = jnp.zeros((AGENTS, 2), jnp.int32)
    states = [b.init(WithNeighbors(example().obs, example().obs, ints, ints)) for b in buffers]
    for step, batch in enumerate(chain(5, num_envs, 9, None, 0.5)):
        ids = jnp.arange(num_envs * AGENTS * 2, dtype=jnp.int32).reshape(num_envs, AGENTS, 2)
        item = WithNeighbors(batch.obs, batch.next_obs, ids + step, ids - step)
        states = [jax.jit(b.add)(s, item) for b, s in zip(buffers, states, strict=True)]
    stored, compact = (jax.jit(b.sample)(s, jax.random.PRNGKey(1))
                       for b, s in zip(buffers, states, strict=True))
    assert compact.experience.unused is None
    assert_same_bits(compact, stored)


def test_adds_and_samples_in_a_scan_vmapped_over_seeds_equal_one_seed_at_a_time():
    capacity, num_envs = 14, 3
    adds = chain(9, num_envs, 12, 4, 0.5)
    adds = jax.tree.map(lambda *leaves: jnp.stack(leaves), *adds)  # leaves [T, E, N, ...]
    buffer = make_buffer("per", capacity=capacity, batch_size=BATCH, next_obs="next_slot",
                         num_envs=num_envs, episode_length=4, **dict(PER_KW))

    def run(key):
        def step(state, inputs):
            batch, step_key = inputs
            state = buffer.add(state, batch)
            sample = buffer.sample(state, step_key)
            errors = jax.random.uniform(step_key, (BATCH, AGENTS))
            return buffer.update_priorities(state, sample.indices, errors), sample

        keys = jax.random.split(key, adds.obs.shape[0])
        return jax.lax.scan(step, buffer.init(example()), (adds, keys))

    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    together = jax.jit(jax.vmap(run))(keys)
    for seed in range(2):
        alone = jax.jit(run)(keys[seed])
        assert_same_bits(jax.tree.map(lambda leaf, s=seed: leaf[s], together), alone)


def test_side_ring_is_sized_from_the_shortest_episode():
    assert side_capacity(1_000_000, 10, 25) == 40_010
    assert side_capacity(20, 3, 5) == 7
    assert side_capacity(20, 3, 1) == 20 and side_capacity(20, 3, None) == 20


@pytest.mark.parametrize("layout", ["transition_major", "agent_major"])
def test_the_state_stores_each_observation_once(layout):
    capacity, num_envs, length = 1000, 10, 25
    stored = estimate_bytes(example(), capacity=capacity, layout=layout)
    compact = make_buffer("uniform", capacity=capacity, batch_size=BATCH, layout=layout,
                          next_obs="next_slot", num_envs=num_envs, episode_length=length)
    state = jax.eval_shape(compact.init, example())
    assert state.experience.next_obs is None
    obs_bytes, side = AGENTS * DIM * 4, side_capacity(capacity, num_envs, length)
    extra = num_envs * obs_bytes + capacity * 4 + side * (obs_bytes + 4) + 4
    assert stored - tree_leaf_bytes(state) == capacity * obs_bytes - extra
    assert estimate_bytes(example(), capacity=capacity, layout=layout, next_obs="next_slot",
                          num_envs=num_envs, episode_length=length) == (
        tree_leaf_bytes(state))


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(next_obs="derived"), "next_obs must be one of"),
    (dict(num_envs=4), "num_envs: only used with next_obs='next_slot'"),
    (dict(next_obs="next_slot"), "num_envs .* must be an int"),
    (dict(next_obs="next_slot", num_envs=65), "num_envs .* must be an int"),
    (dict(next_obs="next_slot", num_envs=2, episode_length=0), "episode_length must be"),
    (dict(next_obs="next_slot", num_envs=2, layout="episode"), "layout 'episode'"),
])
def test_options_are_checked_in_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_buffer("uniform", capacity=64, batch_size=8, **kwargs)


def test_init_and_add_refuse_what_they_cannot_derive():
    buffer = make_buffer("uniform", capacity=16, batch_size=4, next_obs="next_slot",
                         num_envs=2)
    with pytest.raises(ValueError, match="obs and next_obs fields"):
        buffer.init({"obs": jnp.zeros((2, 3))})
    with pytest.raises(ValueError, match="must match obs"):
        buffer.init(example().replace(next_obs=jnp.zeros((AGENTS, DIM + 1))))
    with pytest.raises(ValueError, match="floating observations"):
        ints = jnp.zeros((AGENTS, DIM), jnp.int32)
        buffer.init(example().replace(obs=ints, next_obs=ints))
    state = buffer.init(example())
    with pytest.raises(ValueError, match="num_envs=2 transitions per add, got 3"):
        buffer.add(state, chain(0, 3, 1, None, 0.5)[0])
