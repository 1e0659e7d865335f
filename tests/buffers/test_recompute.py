"""``observe=``: a replay of compact rows (an env's physical state) whose samples hold the
observations recomputed from them, equal to those of a replay of the observations: bit for
bit for every sampler, layout, index sharing and ``next_obs`` mode, over random chains of
adds with resets and wrap-around, and for the trainer's own env steps."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.buffers import estimate_bytes, make_buffer
from jaxmarl_accel.buffers.next_slot import side_capacity
from jaxmarl_accel.compact_rows import observe_rows
from jaxmarl_accel.envs import make
from jaxmarl_accel.trainer.steps import example_transition, transition_step
from jaxmarl_accel.tree_util import tree_leaf_bytes
from jaxmarl_accel.types import Transition
from tests.buffers.helpers import NO_SHRINK
from tests.buffers.test_next_slot import SAMPLERS, assert_same_bits, sample_in_lockstep

ENV, PARAMS = make("simple_spread", num_agents=3, k_nearest=2)
AGENTS, WIDTH, BATCH = ENV.spec.num_agents, ENV.spec.physical_state_dim, 8
POOL = np.array([0.0, -0.0, 1.0, 2.5, -0.5], np.float32)  # few values: equal draws and ties


def observe(compact: jax.Array) -> jax.Array:
    """Spread's own observation of one packed physical state ``[N, F] -> [N, D]``."""
    return ENV.observe_physical(compact, PARAMS)


observed = jax.jit(functools.partial(observe_rows, observe))


def chain(seed: int, num_envs: int, num_adds: int, min_length: int | None,
          end_chance: float) -> list[tuple[Transition, Transition]]:
    """``num_adds`` adds of E envs in lock step, each as ``(compact, observed)``: the same
    transitions with packed physical states ``[E, N, F]`` in ``obs`` / ``next_obs``, and with
    their observations ``[E, N, D]``. Episodes end (after ``min_length`` steps) with
    ``end_chance`` per step; the fresh state sometimes equals the pre-reset one."""
    rng = np.random.default_rng(seed)
    draw = lambda: rng.choice(POOL, (num_envs, AGENTS, WIDTH)).astype(np.float32)
    state = draw()
    age = rng.integers(0, min_length or 1, num_envs)
    adds = []
    for _ in range(num_adds):
        final = draw()
        age += 1
        ended = (age >= (min_length or 1)) & (rng.random(num_envs) < end_chance)
        reset = np.where((rng.random(num_envs) < 0.2)[:, None, None], final, draw())
        compact = Transition(
            obs=jnp.asarray(state),
            action=jnp.asarray(rng.normal(size=(num_envs, AGENTS, 5)), jnp.float32),
            reward=jnp.asarray(rng.normal(size=(num_envs, AGENTS)), jnp.float32),
            next_obs=jnp.asarray(final), done=jnp.zeros((num_envs, AGENTS), jnp.float32))
        adds.append((compact, compact.replace(obs=observed(compact.obs),
                                              next_obs=observed(compact.next_obs))))
        state = np.where(ended[:, None, None], reset, final)
        age = np.where(ended, 0, age)
    return adds


def example(physical: bool) -> Transition:
    return example_transition(ENV.spec, 5, physical_state=physical)


@functools.cache
def pair(sampler: str, kwargs: tuple, capacity: int, num_envs: int, next_obs: str,
         chunk: int | None, **config):
    """(observations, physical states) buffers with jitted add / sample / update_priorities."""
    def jitted(buffer):
        return buffer, jax.jit(buffer.add), jax.jit(buffer.sample), jax.jit(
            buffer.update_priorities)

    common = dict(capacity=capacity, batch_size=BATCH, next_obs=next_obs, **config,
                  **dict(kwargs))
    if next_obs == "next_slot":
        common["num_envs"] = num_envs
    return (jitted(make_buffer(sampler, **common)),
            jitted(make_buffer(sampler, observe=observe, observe_chunk=chunk, **common)))


@pytest.mark.parametrize(("next_obs", "chunk"),
                         [("stored", None), ("next_slot", None), ("next_slot", 3)])
@pytest.mark.parametrize(("sampler", "kwargs", "config"), SAMPLERS,
                         ids=[f"{s}-{'-'.join(map(str, c.values()))}" for s, _, c in SAMPLERS])
@settings(max_examples=3, deadline=None, phases=NO_SHRINK)
@given(seed=st.integers(0, 2**31), rounds=st.floats(0.8, 3.0),
       min_length=st.sampled_from([None, 3]))
@pytest.mark.fast_cases(1)
def test_samples_equal_the_observation_replays_bit_for_bit(
        sampler, kwargs, config, next_obs, chunk, seed, rounds, min_length):
    capacity, num_envs = 20, 3  # chunk 3: the 8 (24 per-agent) joint steps in a scan
    buffers = pair(sampler, kwargs, capacity, num_envs, next_obs, chunk, **config)
    num_adds = max(1, math.ceil(rounds * capacity / num_envs))
    batches = ((obs, compact) for compact, obs in
               chain(seed, num_envs, num_adds, min_length, 0.6))
    assert sample_in_lockstep(buffers, (example(False), example(True)), batches, seed)


def random_policy(env):
    """Uniform random actions and their one-hot vectors, a policy of the one signature."""

    def policy(algo_state, carry, key, obs, avail):
        action = env.random_action(key)
        return action, jax.nn.one_hot(action, env.spec.num_actions), carry

    return policy


SPREAD = dict(num_agents=6, k_nearest=3)
TAG = dict(num_predators=5, num_prey=2, num_obstacles=3, k_nearest=3)


# each case compiles its own program: the fast tier runs each env and each next_obs mode once
# (next_slot on the spread, whose samples are equal bit for bit; the stored mode's bits are the
# fast tier's in test_samples_equal_the_observation_replays_bit_for_bit), the slow tier the rest
@pytest.mark.parametrize(("name", "kwargs", "next_obs"), [
    pytest.param("simple_spread", SPREAD, "stored", marks=pytest.mark.slow,
                 id="simple_spread-kwargs0-stored"),
    pytest.param("simple_spread", SPREAD, "next_slot", id="simple_spread-kwargs0-next_slot"),
    pytest.param("simple_tag", TAG, "stored", id="simple_tag-kwargs1-stored"),
    pytest.param("simple_tag", TAG, "next_slot", marks=pytest.mark.slow,
                 id="simple_tag-kwargs1-next_slot"),
])
def test_the_trainers_env_steps_sample_the_envs_observations(name, kwargs, next_obs):
    env, params = make(name, episode_length=5, **kwargs)
    num_envs, capacity, action_dim = 4, 48, env.spec.num_actions
    policy = random_policy(env)
    options = dict(capacity=capacity, batch_size=16, next_obs=next_obs)
    if next_obs == "next_slot":
        options.update(num_envs=num_envs, episode_length=5)
    stored = make_buffer("uniform", **options)
    compact = make_buffer("uniform", observe=lambda p: env.observe_physical(p, params),
                          observe_chunk=5, **options)

    def steps(key):
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(key, num_envs), params)
        states = (stored.init(example_transition(env.spec, action_dim)),
                  compact.init(example_transition(env.spec, action_dim, physical_state=True)))

        def body(carry, key):
            env_state, obs, (a, b) = carry
            act_key, step_key = jax.random.split(key)
            both = [transition_step(env, params, policy, None, env_state, obs, act_key,
                                    step_key, physical_state=physical)
                    for physical in (False, True)]
            a, b = stored.add(a, both[0].transition), compact.add(b, both[1].transition)
            return (both[0].env_state, both[0].obs, (a, b)), None

        carry = jax.lax.scan(body, (env_state, obs, states), jax.random.split(key, 30))[0]
        a, b = carry[2]
        sample_key = jax.random.PRNGKey(7)
        return stored.sample(a, sample_key), compact.sample(b, sample_key)

    want, got = jax.jit(steps)(jax.random.PRNGKey(1))
    assert got.experience.obs.shape == (16, env.spec.num_agents, env.spec.obs_dim)
    assert_same_bits(got.indices, want.indices)
    for field in ("obs", "next_obs"):
        a, b = getattr(want.experience, field), getattr(got.experience, field)
        if name == "simple_spread":
            assert_same_bits(b, a)
        else:  # tag's first observation of an episode: the last bit (envs/test_physical_state)
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=0, atol=2.5e-7)


@pytest.mark.parametrize("next_obs", ["stored", "next_slot"])
def test_the_state_stores_the_compact_rows_and_the_estimate_counts_them(next_obs):
    capacity, num_envs = 1000, 10
    options = dict(capacity=capacity, next_obs=next_obs)
    if next_obs == "next_slot":
        options.update(num_envs=num_envs, episode_length=25)
    buffer = make_buffer("uniform", batch_size=BATCH, observe=observe, **options)
    state = jax.eval_shape(buffer.init, example(True))
    assert state.experience.obs.shape == (capacity, AGENTS, WIDTH)
    counted = estimate_bytes(example(True), observe=observe, **options)
    assert counted == tree_leaf_bytes(state)
    full = estimate_bytes(example(False), **options)
    # rows of [N, D] replaced by [N, F]: obs and next_obs of every slot, or (next_slot)
    # obs of every slot, the head and the side ring
    rows = (capacity + num_envs + side_capacity(capacity, num_envs, 25)
            if next_obs == "next_slot" else 2 * capacity)
    assert full - counted == rows * AGENTS * (ENV.spec.obs_dim - WIDTH) * 4


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(observe="spread"), "observe must be a function"),
    (dict(observe=observe, layout="episode"), "layout 'episode' stores whole episodes"),
    (dict(observe_chunk=4), "observe_chunk: only used with observe"),
    (dict(observe=observe, observe_chunk=0), "observe_chunk must be a positive int"),
])
def test_options_are_checked_in_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_buffer("uniform", capacity=64, batch_size=8, **kwargs)


def test_init_refuses_what_it_cannot_observe():
    buffer = make_buffer("uniform", capacity=16, batch_size=4, observe=observe)
    with pytest.raises(ValueError, match="obs and next_obs fields"):
        buffer.init({"obs": jnp.zeros((AGENTS, WIDTH))})
    with pytest.raises(ValueError, match=r"one compact row per agent \[N, F\]"):
        buffer.init(example(True).replace(obs=jnp.zeros((AGENTS,))))
    wrong = make_buffer("uniform", capacity=16, batch_size=4, observe=lambda c: c.reshape(-1))
    with pytest.raises(ValueError, match=r"observe must map obs \(3, 6\) to \[N, D\]"):
        wrong.init(example(True))
