"""The Env contract (envs/base.py) and the registry (envs/__init__.py), through simple_spread
and simple_tag: shapes, jit/vmap, retracing, auto-reset, episode length, params, large-N mode
and bad input."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.envs import SCENARIOS, make


def _two_steps(env, params, num_envs: int, scripted: bool = True):
    """Reset and two steps of ``num_envs`` vmapped envs (random, then scripted), one compile."""

    def run(key):
        key_reset, key_a, key_b = jax.random.split(key, 3)
        obs0, state = env.reset(key_reset, params)
        act = env.random_action(key_a)
        _, state, _, _, _, _ = env.step(key_a, state, act, params)
        act_b = env.scripted_action(key_b, state, params) if scripted else act
        out = env.step(key_b, state, act_b, params)
        return obs0, act, out

    return jax.jit(jax.vmap(run))(jax.random.split(jax.random.PRNGKey(0), num_envs))


def _check_padding(spec, obs):
    for i, size in enumerate(spec.obs_sizes):
        assert np.all(np.asarray(obs)[..., i, size:] == 0)


@pytest.mark.parametrize("num_agents", [1, 3, 12, 48])
@pytest.mark.fast_cases(1)
def test_spread_shapes(num_agents):
    env, params = make("simple_spread", num_agents=num_agents)
    spec = env.spec
    assert spec.obs_dim == 4 + 2 * num_agents + 4 * (num_agents - 1)
    obs0, act, (obs, state, rew, term, trunc, info) = _two_steps(env, params, 2)
    assert obs0.shape == obs.shape == info["final_obs"].shape == (2, num_agents, spec.obs_dim)
    assert act.shape == (2, num_agents) and act.dtype == jnp.int32
    assert rew.shape == (2, num_agents) and rew.dtype == jnp.float32
    assert term.shape == trunc.shape == (2,) and not term.any() and not trunc.any()
    assert state.pos.shape == (2, 2 * num_agents, 2) and state.step.tolist() == [2, 2]
    assert np.isfinite(np.asarray(obs)).all() and np.isfinite(np.asarray(rew)).all()


@pytest.mark.parametrize("counts", [(1, 1, 0), (3, 1, 2), (12, 4, 1), (36, 12, 3)])
@pytest.mark.fast_cases(1)
def test_tag_shapes_and_padding(counts):
    n_pred, n_prey, n_obs = counts
    env, params = make("simple_tag", num_predators=n_pred, num_prey=n_prey,
                       num_obstacles=n_obs, continuous_actions=True)
    spec, n = env.spec, n_pred + n_prey
    pred_size = 4 + 2 * n_obs + 2 * (n - 1) + 2 * n_prey
    assert spec.obs_sizes == (pred_size,) * n_pred + (pred_size - 2,) * n_prey
    assert spec.teams == ("predator",) * n_pred + ("prey",) * n_prey
    obs0, act, (obs, _, rew, _, _, _) = _two_steps(env, params, 2)
    assert obs.shape == (2, n, pred_size) and rew.shape == (2, n)
    assert act.shape == (2, n, 5) and float(act.min()) >= 0 and float(act.max()) <= 1
    _check_padding(spec, obs0)
    _check_padding(spec, obs)
    rew = np.asarray(rew)
    assert np.all(rew[:, :n_pred] == rew[:, :1])  # predators share their reward


def test_large_n_mode_thousand_agents():
    env, params = make("simple_spread", num_agents=1000, k_nearest=4)
    assert env.spec.obs_dim == 4 + 2 * 4 + 4 * 4
    obs0, _, (obs, _, rew, _, _, _) = _two_steps(env, params, 2, scripted=False)
    assert obs.shape == (2, 1000, env.spec.obs_dim) and np.isfinite(np.asarray(obs)).all()
    env, params = make("simple_tag", num_predators=750, num_prey=250, num_obstacles=10,
                       k_nearest=4)
    assert env.spec.obs_sizes == (4 + 2 * 4 + 4 * 4,) * 1000
    obs0, _, (obs, _, rew, _, _, _) = _two_steps(env, params, 1)  # scripted tag is O(N M)
    assert obs.shape == (1, 1000, 28) and np.isfinite(np.asarray(rew)).all()


def test_no_retracing_and_params_are_traced():
    env, params = make("simple_spread", num_agents=3)
    step = jax.jit(chex.assert_max_traces(env.step, n=1))
    obs, state = jax.jit(env.reset)(jax.random.PRNGKey(0), params)
    key = jax.random.PRNGKey(1)
    truncations = []
    for t in range(30):
        if t == 10:
            params = params.replace(episode_length=jnp.int32(8), local_ratio=jnp.float32(0.1))
        key, key_act, key_step = jax.random.split(key, 3)
        obs, state, _, _, trunc, _ = step(key_step, state, env.random_action(key_act), params)
        truncations.append(bool(trunc))
    # 10 steps at length 25, then the episode (at step 10 >= 8) ends at once and every 8 steps.
    assert [t for t, x in enumerate(truncations) if x] == [10, 18, 26]


def test_vmap_over_params():
    env, params = make("simple_spread", num_agents=3)
    ratios = jnp.array([0.0, 1.0])
    batch = jax.tree.map(lambda x: jnp.stack([x, x]), params).replace(local_ratio=ratios)
    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    _, state = jax.vmap(env.reset, in_axes=(None, 0))(keys[0], batch)
    act = jnp.zeros((2, 3), jnp.int32)
    _, _, rew, _, _, _ = jax.jit(jax.vmap(env.step))(keys, state, act, batch)
    pos = np.asarray(state.pos[0])  # both envs start from the same state
    dist = np.linalg.norm(pos[:3, None] - pos[None, 3:], axis=-1).min(axis=0).sum()
    np.testing.assert_allclose(rew[0], -dist, rtol=1e-5)  # ratio 0: global reward only
    assert np.all(np.asarray(rew[1]) <= 0) and np.all(np.asarray(rew[1]) % 1 == 0)


def test_auto_reset_final_obs_and_episode_length():
    env, params = make("simple_tag", episode_length=5)
    assert env.spec.episode_length == 5 and int(params.episode_length) == 5
    long_params = params.replace(episode_length=jnp.int32(1000))

    def body(state, key):
        act = env.random_action(key)
        out = env.step(key, state, act, params)
        no_reset = env.step(key, state, act, long_params)  # same step, never truncated
        return out[1], (out, no_reset[0])

    _, state = env.reset(jax.random.PRNGKey(0), params)
    keys = jax.random.split(jax.random.PRNGKey(1), 12)
    _, ((obs, states, _, term, trunc, info), obs_no_reset) = jax.jit(
        lambda s: jax.lax.scan(body, s, keys))(state)
    assert np.flatnonzero(np.asarray(trunc)).tolist() == [4, 9]
    assert not np.asarray(term).any()
    final = np.asarray(info["final_obs"])
    np.testing.assert_array_equal(final, obs_no_reset)  # the observation before any reset
    same = np.all(np.asarray(obs) == final, axis=(1, 2))
    assert same.tolist() == [not t for t in np.asarray(trunc)]
    assert np.asarray(states.step).tolist() == [1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2]
    # a fresh episode starts at rest
    assert np.all(np.asarray(states.vel[4]) == 0)
    assert np.abs(np.asarray(states.pos[:, 4:])).max() <= 0.9  # obstacles start in [-0.9, 0.9]


def test_bad_input():
    with pytest.raises(ValueError, match="simple_spread"):
        make("simple_sprad")
    with pytest.raises(ValueError, match="num_agents"):
        make("simple_spread", num_agents=0)
    with pytest.raises(ValueError, match="num_obstacles"):
        make("simple_tag", num_obstacles=-1)
    with pytest.raises(ValueError, match="num_prey"):
        make("simple_tag", num_prey=0)
    with pytest.raises(ValueError, match="k_nearest"):
        make("simple_spread", num_agents=4, k_nearest=4)
    with pytest.raises(ValueError, match="k_nearest_landmarks"):
        make("simple_tag", k_nearest=2, k_nearest_landmarks=3)
    with pytest.raises(ValueError, match="local_ratio"):
        make("simple_spread", local_ratio=1.5)
    env, params = make("simple_spread", num_agents=3)
    _, state = env.reset(jax.random.PRNGKey(0), params)
    step = jax.jit(env.step)
    with pytest.raises(ValueError, match=r"\(3,\)"):
        step(jax.random.PRNGKey(0), state, jnp.zeros((4,), jnp.int32), params)
    with pytest.raises(ValueError, match=r"int with shape \(3,\)"):
        step(jax.random.PRNGKey(0), state, jnp.zeros((3,), jnp.float32), params)
    env, params = make("simple_tag", continuous_actions=True)
    _, state = env.reset(jax.random.PRNGKey(0), params)
    with pytest.raises(ValueError, match=r"\(4, 5\)"):
        env.step(jax.random.PRNGKey(0), state, jnp.zeros((4,), jnp.int32), params)


def test_registry_lists_spread_and_tag():
    assert {"simple_spread", "simple_tag"} <= set(SCENARIOS)


@pytest.mark.parametrize("name, kwargs", [("simple_spread", {"num_agents": 3}),
                                          ("stag_hunt", {"num_agents": 3})])
@pytest.mark.parametrize("wrap", [list, tuple])
def test_step_rejects_a_python_sequence_of_actions(name, kwargs, wrap):
    env, params = make(name, **kwargs)
    _, state = jax.jit(env.reset)(jax.random.PRNGKey(0), params)
    message = (rf"^actions for {name} must be an array \(int with shape \(3,\)\), "
               rf"got {wrap.__name__}")
    for step in (env.step, jax.jit(env.step)):
        with pytest.raises(ValueError, match=message):
            step(jax.random.PRNGKey(1), state, wrap([0, 1, 2]), params)
    # an array of the same actions (numpy included: a constant of the compiled step, it
    # reaches the check as a numpy array) is accepted
    actions = np.array([0, 1, 2], np.int32)
    jax.jit(lambda: env.step(jax.random.PRNGKey(1), state, actions, params))()
