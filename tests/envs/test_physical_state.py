"""``Env.physical_state`` / ``observe_physical``: the env's own observation function of the
packed physical state gives the observations ``reset`` and ``step`` give: bit for bit, except
tag's observation of a freshly reset state, where XLA fuses the obstacles' scaling
(``uniform * 0.9``) into the env's own observation as a multiply-add (the last bit of a few
numbers; the stored state holds the rounded product)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.envs import SCENARIOS, make
from jaxmarl_accel.envs.mpe.core import MPEState
from jaxmarl_accel.envs.mpe.scenario import agents_and_still_landmarks

CASES = [
    ("simple_spread", dict(num_agents=6, k_nearest=3)),
    ("simple_spread", dict(num_agents=7, num_landmarks=3, k_nearest=4, k_nearest_landmarks=2)),
    ("simple_spread", dict(num_agents=3)),
    ("simple_tag", dict(num_predators=5, num_prey=2, num_obstacles=3, k_nearest=3)),
    ("simple_tag", dict(num_predators=4, num_prey=1, num_obstacles=0, k_nearest=2)),
    ("simple_tag", dict(continuous_actions=True)),
]


def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def assert_observed(got, want, exact: bool) -> None:
    """Bit for bit, or (a fresh tag episode) to the last bit of float32 positions."""
    if exact:
        assert same_bits(got, want)
    else:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=2.5e-7)


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=[f"{n}-{k}" for n, k in CASES])
@pytest.mark.fast_cases(1)
def test_recomputed_observations_equal_the_envs_under_jit(name, kwargs):
    env, params = make(name, episode_length=4, **kwargs)
    spec, num_envs = env.spec, 5
    observe = jax.jit(jax.vmap(env.observe_physical, in_axes=(0, None)))
    pack = jax.jit(jax.vmap(env.physical_state))
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(
        jax.random.split(jax.random.PRNGKey(0), num_envs), params)
    assert pack(state).shape == (num_envs, spec.num_agents, spec.physical_state_dim)
    assert pack(state).dtype == jnp.float32
    fresh_exact = name == "simple_spread"
    assert_observed(observe(pack(state), params), obs, fresh_exact)
    ends = 0
    for t in range(11):  # two resets per env (episodes of 4 steps)
        keys = jax.random.split(jax.random.PRNGKey(t + 1), num_envs)
        actions = jax.vmap(env.random_action)(keys)
        obs, state, _, _, truncated, info = step(keys, state, actions, params)
        assert same_bits(observe(info["final_physical_state"], params), info["final_obs"])
        recomputed = observe(pack(state), params)
        for e in range(num_envs):
            assert_observed(recomputed[e], obs[e], fresh_exact or not truncated[e])
        ends += int(np.sum(truncated))
    assert ends == 2 * num_envs


@pytest.mark.parametrize(("num_agents", "num_landmarks", "width"),
                         [(1000, 1000, 6), (1001, 2, 5), (6, 6, 6), (4, 0, 4), (3, 7, 9)])
def test_the_packing_keeps_every_landmark_and_is_4_plus_ceil_2l_over_n_wide(
        num_agents, num_landmarks, width):
    physical = agents_and_still_landmarks(num_agents, num_landmarks, dim_c=2)
    assert physical.width == width
    rng = np.random.default_rng(0)
    entities = num_agents + num_landmarks
    pos = jnp.asarray(rng.normal(size=(entities, 2)), jnp.float32)
    vel = jnp.zeros((entities, 2), jnp.float32).at[:num_agents].set(
        jnp.asarray(rng.normal(size=(num_agents, 2)), jnp.float32))
    state = MPEState(pos=pos, vel=vel, comm=jnp.zeros((num_agents, 2)),
                     step=jnp.zeros((), jnp.int32), goal=jnp.zeros((0,), jnp.int32))
    packed = jax.jit(physical.pack)(state)
    assert packed.shape == (num_agents, width)
    back = jax.jit(physical.unpack)(packed)
    assert same_bits(back.pos, pos) and same_bits(back.vel, vel)


def test_envs_without_a_physical_state_have_none():
    has = {name for name in SCENARIOS if make(name)[0].physical_state is not None}
    assert has == {"simple_spread", "simple_tag"}
    for name in SCENARIOS:
        env = make(name)[0]
        assert (env.observe_physical is None) == (env.physical_state is None)
        assert (env.observe_physical_at is None) == (env.physical_state is None)
        assert (env.spec.physical_state_dim == 0) == (env.physical_state is None)


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=[f"{n}-{k}" for n, k in CASES])
@pytest.mark.fast_cases(1)
def test_observing_some_agents_gives_their_rows_bit_for_bit(name, kwargs):
    """``observe_physical_at`` (k-nearest rows from ``[M, N]`` distances) equals the rows of
    ``observe_physical``, for any agents (repeated, out of order), under jit and vmap."""
    env, params = make(name, episode_length=6, **kwargs)
    n, num_envs = env.spec.num_agents, 4
    _, state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.PRNGKey(3), num_envs), params)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    for t in range(3):  # moving agents, so that velocities and neighbours vary
        keys = jax.random.split(jax.random.PRNGKey(10 + t), num_envs)
        _, state, *_ = step(keys, state, jax.vmap(env.random_action)(keys), params)
    packed = jax.vmap(env.physical_state)(state)
    full = jax.jit(jax.vmap(env.observe_physical, in_axes=(0, None)))(packed, params)
    at = jax.jit(jax.vmap(env.observe_physical_at, in_axes=(0, None, 0)))
    rng = np.random.default_rng(0)
    reverse = np.tile(np.arange(n)[::-1], (num_envs, 1))
    for agents in (rng.integers(0, n, size=(num_envs, 7)), reverse, np.zeros((num_envs, 1), int)):
        got = at(packed, params, jnp.asarray(agents, jnp.int32))
        want = np.take_along_axis(np.asarray(full), agents[..., None], axis=1)
        assert same_bits(got, want)
