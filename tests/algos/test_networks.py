"""Stacked per-agent actor and critic networks: one vmap equals a loop over agents."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.algos import networks
from tests.algos.helpers import agent_slice, mlp_numpy

N, OBS, C, B = 3, 4, 2, 5


def test_apply_actors_runs_each_agent_on_its_own_observation():
    mlp = networks.MLP((8, 8), 2)
    params = networks.init_actors(mlp, jax.random.key(0), N, OBS)
    obs = jax.random.normal(jax.random.key(1), (7, B, N, OBS))
    out = jax.jit(lambda p, o: networks.apply_actors(mlp, p, o))(params, obs)
    assert out.shape == (7, B, N, 2)
    for i in range(N):
        np.testing.assert_allclose(out[..., i, :], mlp_numpy(agent_slice(params, i),
                                                            np.asarray(obs)[..., i, :]),
                                   rtol=1e-5, atol=1e-6)
    kernel = np.asarray(params["params"]["Dense_0"]["kernel"])
    assert not np.allclose(kernel[0], kernel[1])  # independently initialised


def test_critics_see_all_observations_and_actions():
    obs = jax.random.normal(jax.random.key(0), (B, N, OBS))
    action = jax.random.uniform(jax.random.key(1), (B, N, 2))
    x = jax.jit(networks.critic_input)(obs, action)
    assert x.shape == (B, N * (OBS + 2))
    np.testing.assert_array_equal(x[:, :OBS], obs[:, 0])
    np.testing.assert_array_equal(x[:, N * OBS:N * OBS + 2], action[:, 0])
    mlp = networks.MLP((8,), 1)
    params = networks.init_critics(mlp, jax.random.key(2), N, C, x.shape[-1])
    assert jax.tree.leaves(params)[0].shape[:2] == (N, C)
    one_agent = agent_slice(params, 1)
    q = jax.jit(lambda p, x: networks.apply_critics(mlp, p, x))(one_agent, x)
    assert q.shape == (C, B)
    for c in range(C):
        np.testing.assert_allclose(q[c], mlp_numpy(agent_slice(one_agent, c), x)[:, 0],
                                   rtol=1e-5, atol=1e-6)
    assert jnp.all(q[0] != q[1])


def test_first_layer_then_the_rest_is_apply_critics():
    x = jax.random.normal(jax.random.key(0), (B, 11))
    mlp = networks.MLP((8, 6), 1)
    params = agent_slice(networks.init_critics(mlp, jax.random.key(1), N, C, 11), 2)
    assert [sorted(d) for d in networks.dense_layers(params)] == [["bias", "kernel"]] * 3

    @jax.jit
    def split(p, x):
        pre = networks.critics_first_layer(p, x)
        return pre, networks.critics_after_first_layer(p, pre)

    pre, q = split(params, x)
    assert pre.shape == (B, C, 8) and q.shape == (C, B)
    for c in range(C):
        dense = agent_slice(params, c)["params"]["Dense_0"]
        np.testing.assert_allclose(pre[:, c], np.asarray(x) @ np.asarray(dense["kernel"])
                                   + np.asarray(dense["bias"]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(q, jax.jit(lambda p, x: networks.apply_critics(mlp, p, x))(
        params, x), rtol=1e-6, atol=1e-7)
