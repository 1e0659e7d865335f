"""Semantics of one update: learner modes, target updates, MATD3 delay, IS weights, TD errors.

The specs and configurations are those of ``test_shapes`` so that compilations are shared.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.algos.helpers import BATCH, SMALL, compiled, random_batch
from tests.algos.test_shapes import config_for, spec_for

TAU = SMALL.tau


def _assert_trees_close(a, b, rtol=2e-5, atol=2e-6):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def _two_updates(fns, spec, lead=()):
    state = fns.init(jax.random.key(0))
    weights = jax.random.uniform(jax.random.key(5), (*lead, BATCH))
    outputs = []
    for step in range(2):
        batch = random_batch(jax.random.key(10 + step), spec, fns.algo.action_dim, BATCH, lead)
        state, metrics, td = fns.update(state, batch, weights, jax.random.key(20 + step))
        outputs.append((metrics, td))
    return state, outputs


@pytest.mark.parametrize(("name", "n", "continuous", "per_agent"), [
    ("maddpg", 6, True, False), ("matd3", 3, False, False), ("masac", 3, True, False),
    ("matd3", 3, False, True),
])
def test_parallel_equals_sequential(name, n, continuous, per_agent):
    """No agent reads another's new parameters in one update, so vmap == scan."""
    spec = spec_for(n, continuous)
    lead = (n,) if per_agent else ()
    config = config_for(name, continuous)
    parallel = compiled(name, spec, config)
    sequential = compiled(name, spec, dataclasses.replace(config, learners="sequential"))
    state_p, out_p = _two_updates(parallel, spec, lead)
    state_s, out_s = _two_updates(sequential, spec, lead)
    _assert_trees_close(state_p, state_s)
    _assert_trees_close(out_p, out_s, rtol=1e-4, atol=1e-5)
    assert out_p[0][1].shape == (n, BATCH) if per_agent else (BATCH, n)
    # The test can fail: the two updates did change the parameters.
    assert not np.allclose(state_p.critic["params"]["Dense_0"]["kernel"],
                           parallel.init(jax.random.key(0)).critic["params"]["Dense_0"]["kernel"])


def test_targets_move_by_tau():
    spec = spec_for(6, True)
    fns = compiled("maddpg", spec)
    state = fns.init(jax.random.key(0))
    for step in range(2):  # after the first update, targets and online parameters differ
        batch = random_batch(jax.random.key(step), spec, fns.algo.action_dim, BATCH)
        new, _, _ = fns.update(state, batch, jnp.ones(BATCH), jax.random.key(7))
        for online, old, target in [(new.actor, state.target_actor, new.target_actor),
                                    (new.critic, state.target_critic, new.target_critic)]:
            expected = jax.tree.map(lambda o, t: TAU * o + (1 - TAU) * t, online, old)
            _assert_trees_close(target, expected, rtol=1e-6, atol=1e-7)
            assert not np.allclose(jax.tree.leaves(target)[1], jax.tree.leaves(old)[1])
        state = new


def test_matd3_delays_actor_and_target_updates():
    spec = spec_for(3, False)
    fns = compiled("matd3", spec)
    s0 = fns.init(jax.random.key(0))
    batch = random_batch(jax.random.key(1), spec, fns.algo.action_dim, BATCH)
    s1, m1, _ = fns.update(s0, batch, jnp.ones(BATCH), jax.random.key(2))
    _assert_trees_close(s1.actor, s0.actor, rtol=0, atol=0)
    _assert_trees_close((s1.target_actor, s1.target_critic), (s0.actor, s0.critic), 0, 0)
    assert not np.allclose(jax.tree.leaves(s1.critic)[1], jax.tree.leaves(s0.critic)[1])
    assert float(m1["actor_updated"]) == 0.0
    s2, m2, _ = fns.update(s1, batch, jnp.ones(BATCH), jax.random.key(3))
    assert float(m2["actor_updated"]) == 1.0
    assert not np.allclose(jax.tree.leaves(s2.actor)[1], jax.tree.leaves(s1.actor)[1])
    expected = jax.tree.map(lambda o, t: TAU * o + (1 - TAU) * t, s2.critic, s1.target_critic)
    _assert_trees_close(s2.target_critic, expected, rtol=1e-6, atol=1e-7)


def test_zero_importance_weight_removes_a_sample_from_the_critic_update():
    spec = spec_for(6, True)
    fns = compiled("maddpg", spec)
    state = fns.init(jax.random.key(0))
    batch = random_batch(jax.random.key(1), spec, fns.algo.action_dim, BATCH)
    other = random_batch(jax.random.key(2), spec, fns.algo.action_dim, BATCH)
    changed = jax.tree.map(lambda x, y: x.at[0].set(3.0 * y[0]), batch, other)
    weights = jnp.ones(BATCH).at[0].set(0.0)
    key = jax.random.key(3)
    new_a, _, td_a = fns.update(state, batch, weights, key)
    new_b, _, td_b = fns.update(state, changed, weights, key)
    _assert_trees_close(new_a.critic, new_b.critic, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(td_a[1:], td_b[1:], rtol=1e-5)
    # With weight 1 the changed sample does change the critic (the test can fail).
    new_c, _, _ = fns.update(state, changed, jnp.ones(BATCH), key)
    assert not np.allclose(jax.tree.leaves(new_a.critic)[1], jax.tree.leaves(new_c.critic)[1])


def _mlp(params, x):
    """Numpy forward pass of a flax ``MLP`` (Dense_0..Dense_k, ReLU between)."""
    layers = params["params"]
    for i in range(len(layers)):
        dense = layers[f"Dense_{i}"]
        x = x @ np.asarray(dense["kernel"]) + np.asarray(dense["bias"])
        if i < len(layers) - 1:
            x = np.maximum(x, 0.0)
    return x


def test_td_errors_match_a_hand_computation():
    """MADDPG continuous: ``|Q_i(x, a) - r_i - gamma (1 - d_i) Q'_i(x', sigmoid(mu'(o')))|``."""
    spec = spec_for(6, True)
    fns = compiled("maddpg", spec)
    state = fns.init(jax.random.key(0))
    batch = random_batch(jax.random.key(1), spec, fns.algo.action_dim, BATCH)
    state, _, _ = fns.update(state, batch, jnp.ones(BATCH), jax.random.key(2))  # targets != online
    _, _, td = fns.update(state, batch, jnp.ones(BATCH), jax.random.key(3))
    b = jax.tree.map(np.asarray, batch)
    n = spec.num_agents
    agent = lambda tree, i: jax.tree.map(lambda x: np.asarray(x)[i], tree)
    next_act = np.stack([1 / (1 + np.exp(-_mlp(agent(state.target_actor, j), b.next_obs[:, j])))
                         for j in range(n)], axis=1)
    x = np.concatenate([b.obs.reshape(BATCH, -1), b.action.reshape(BATCH, -1)], -1)
    x_next = np.concatenate([b.next_obs.reshape(BATCH, -1), next_act.reshape(BATCH, -1)], -1)
    expected = np.zeros((BATCH, n))
    for i in range(n):
        q = _mlp(agent(agent(state.critic, i), 0), x)[:, 0]
        q_next = _mlp(agent(agent(state.target_critic, i), 0), x_next)[:, 0]
        y = b.reward[:, i] + SMALL.gamma * (1 - b.done[:, i]) * q_next
        expected[:, i] = np.abs(q - y)
    np.testing.assert_allclose(np.asarray(td), expected, rtol=1e-4, atol=1e-5)


def test_masac_auto_alpha_moves_toward_the_target_entropy():
    """Initial squashed-Gaussian policies have entropy near 0 per dimension, above the
    default target ``-act_dim``, so the first Adam step lowers every ``log(alpha)`` by
    ``alpha_lr``."""
    spec = spec_for(3, True)
    config = config_for("masac", True)
    fns = compiled("masac", spec, config)
    state = fns.init(jax.random.key(0))
    batch = random_batch(jax.random.key(1), spec, fns.algo.action_dim, BATCH)
    new, metrics, _ = fns.update(state, batch, jnp.ones(BATCH), jax.random.key(2))
    expected = np.log(config.alpha) - config.alpha_lr
    np.testing.assert_allclose(np.asarray(new.log_alpha), expected, rtol=1e-5)
    assert float(metrics["alpha"]) < config.alpha
