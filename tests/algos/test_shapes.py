"""Shapes and dtypes of init / act / update under jit, N in {1, 3, 6}, both action kinds.

Every (N, action kind) pair appears once and every algorithm is run with both action
kinds; discrete agents have different numbers of valid actions (padding is masked).
Continuous MASAC tunes its entropy coefficient (``auto_alpha``), discrete MASAC does not.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.algos.helpers import (
    BATCH,
    SMALL,
    SMALL_AUTO_ALPHA,
    compiled,
    make_spec,
    random_batch,
)

CASES = [("maddpg", 1, False), ("maddpg", 6, True), ("matd3", 3, False),
         ("matd3", 1, True), ("masac", 6, False), ("masac", 3, True)]


def spec_for(n: int, continuous: bool):
    sizes = tuple(5 if i % 2 == 0 else 3 for i in range(n))
    return make_spec(n, continuous, action_sizes=None if continuous else sizes)


def config_for(name: str, continuous: bool):
    return SMALL_AUTO_ALPHA if name == "masac" and continuous else SMALL


@pytest.mark.parametrize(("name", "n", "continuous"), CASES)
def test_act_and_update_shapes(name, n, continuous):
    spec = spec_for(n, continuous)
    fns = compiled(name, spec, config_for(name, continuous))
    adim = fns.algo.action_dim
    assert adim == (spec.act_dim if continuous else spec.num_actions)
    state = fns.init(jax.random.key(0))
    for leaf in jax.tree.leaves((state.actor, state.critic, state.actor_opt)):
        assert leaf.ndim == 0 or leaf.shape[0] == n
    obs = jax.random.normal(jax.random.key(1), (7, 4, n, spec.obs_dim))
    for explore in (True, False):
        env_action, vec = fns.act(state, obs, jax.random.key(2), explore)
        assert vec.shape == (7, 4, n, adim) and vec.dtype == jnp.float32
        if continuous:
            assert env_action.shape == (7, 4, n, spec.act_dim)
            assert env_action.dtype == jnp.float32
            assert np.all((np.asarray(env_action) >= 0) & (np.asarray(env_action) <= 1))
            np.testing.assert_array_equal(env_action, vec)
        else:
            assert env_action.shape == (7, 4, n) and env_action.dtype == jnp.int32
            assert np.all(np.asarray(env_action) < np.asarray(spec.action_sizes))
            np.testing.assert_array_equal(vec, jax.nn.one_hot(env_action, spec.num_actions))
    batch = random_batch(jax.random.key(3), spec, adim, BATCH)
    new, metrics, td = fns.update(state, batch, jnp.ones(BATCH), jax.random.key(4))
    assert td.shape == (BATCH, n) and np.all(np.asarray(td) >= 0)
    assert jax.tree.structure(new) == jax.tree.structure(state)
    for a, b in zip(jax.tree.leaves(new), jax.tree.leaves(state), strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
    assert int(new.step) == 1
    if name == "masac" and not continuous:
        np.testing.assert_array_equal(new.log_alpha, state.log_alpha)
    for key, value in metrics.items():
        assert value.shape == () and np.isfinite(float(value)), key
