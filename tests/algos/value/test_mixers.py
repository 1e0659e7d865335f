"""Mixers: QMIX is monotonic in every agent's value and its greedy joint action is the agents'
greedy actions (by enumeration); VDN is the sum; IQL keeps one head per agent."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos.value import mixers
from tests.algos.value.helpers import SMALL, STATE, value_spec


def _qmix(n: int, seed: int = 0):
    mixer = mixers.qmix(value_spec(n), SMALL)
    params = mixer.init(jax.random.key(seed), STATE)
    # larger hypernetwork outputs, so that the test also covers strongly mixed values
    params = jax.tree.map(lambda x: 3.0 * x, params)
    return mixer, params


@pytest.mark.parametrize("n", [2, 3, 5])
def test_qmix_is_monotonic_in_every_agent_value(n):
    mixer, params = _qmix(n)
    q = 5 * jax.random.normal(jax.random.key(1), (256, n))
    state = jax.random.normal(jax.random.key(2), (256, STATE))
    grad = jax.jit(jax.vmap(jax.grad(lambda q, s: mixer.apply(params, q, s)[0])))(q, state)
    assert grad.shape == (256, n)
    assert bool(jnp.all(grad >= 0.0))
    assert bool(jnp.any(grad > 0.0))


@pytest.mark.parametrize("name", ["qmix", "vdn"])
@pytest.mark.parametrize("n", [2, 3])
def test_greedy_joint_action_is_the_tuple_of_agent_argmaxes(name, n):
    actions = 4
    spec = value_spec(n, actions)
    if name == "qmix":
        mixer, params = _qmix(n, seed=3)
    else:
        mixer, params = mixers.vdn(spec, SMALL), {}
    joint = np.array(list(itertools.product(range(actions), repeat=n)))  # [A^N, N]
    q_agents = 3 * jax.random.normal(jax.random.key(4), (20, n, actions))
    state = jax.random.normal(jax.random.key(5), (20, STATE))

    def q_tot_of_all_joint(q, s):  # [N, A], [S] -> [A^N]
        q_joint = q[jnp.arange(n)[None], joint]  # [A^N, N]
        return mixer.apply(params, q_joint, jnp.broadcast_to(s, (len(joint), STATE)))[:, 0]

    values = jax.jit(jax.vmap(q_tot_of_all_joint))(q_agents, state)
    best_joint = joint[np.argmax(np.asarray(values), axis=1)]
    np.testing.assert_array_equal(best_joint, np.argmax(np.asarray(q_agents), axis=-1))


def test_qmix_uses_the_state_and_has_a_state_dependent_bias():
    mixer, params = _qmix(3)
    q = jnp.zeros((4, 3))
    state = jax.random.normal(jax.random.key(6), (4, STATE))
    out = jax.jit(mixer.apply)(params, q, state)
    assert out.shape == (4, 1)
    assert len(np.unique(np.asarray(out))) == 4  # V(s) differs between states
    assert mixer.heads == 1 and mixer.reads_state


def test_vdn_is_the_sum_and_iql_the_identity():
    spec = value_spec(3)
    q = jax.random.normal(jax.random.key(7), (2, 5, 3))
    state = jnp.zeros((2, 5, STATE))
    vdn, iql = mixers.vdn(spec, SMALL), mixers.iql(spec, SMALL)
    assert vdn.init(jax.random.key(0), STATE) == {} == iql.init(jax.random.key(0), STATE)
    np.testing.assert_allclose(jax.jit(vdn.apply)({}, q, state), q.sum(-1, keepdims=True),
                               rtol=1e-6)
    np.testing.assert_array_equal(jax.jit(iql.apply)({}, q, state), q)
    assert (vdn.heads, iql.heads) == (1, 3)
    assert not vdn.reads_state and not iql.reads_state
