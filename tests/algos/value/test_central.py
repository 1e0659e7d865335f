"""Weighted QMIX's Q* (Rashid et al. 2020): its own agent network and feed-forward mixer,
targets bootstrapped from the target Q* at QMIX's greedy next joint actions, and a loss
whose Q* part reaches Q*'s parameters only."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos import make_algo
from jaxmarl_accel.algos.registry import algo_phases
from jaxmarl_accel.algos.value import central, targets
from tests.algos.helpers import assert_trees_close
from tests.algos.value.helpers import SMALL, random_episodes, value_spec

LENGTHS, TERMINATED = (4, 2), (False, True)
TINY = dataclasses.replace(SMALL, qstar_hidden=8, qstar_layers=2)


def _setup(name: str = "owqmix", **over):
    spec = value_spec(2, 3)
    config = dataclasses.replace(TINY, **over)
    algo = make_algo(name, spec, config)
    state = algo.init(jax.random.key(0))
    batch = random_episodes(jax.random.key(1), spec, LENGTHS, TERMINATED, rows=5)
    return spec, algo, state, batch, algo_phases(name, spec, config)


def test_qstar_has_its_own_agent_network_and_a_state_value():
    spec, algo, state, _, _ = _setup()
    qstar = state.params.qstar
    assert isinstance(qstar, central.QStarParams)
    shapes = jax.tree.map(jnp.shape, (qstar.agent, state.params.agent))
    assert shapes[0] == shapes[1]  # QMIX's agent architecture, its own parameters
    pairs = zip(jax.tree.leaves(qstar.agent), jax.tree.leaves(state.params.agent), strict=True)
    assert not all(np.allclose(a, b) for a, b in pairs)
    net = central.QStarNet(hidden=8, layers=2)
    params = net.init(jax.random.key(2), jnp.zeros((1, 2)), jnp.zeros((1, 7)))
    assert len(params["params"]) == 2 + 1 + 2  # 2 hidden layers, the output, V's 2 layers
    out = jax.jit(net.apply)(params, jnp.ones((3, 4, 2)), jnp.ones((3, 4, 7)))
    assert out.shape == (3, 4, 1)


@pytest.mark.parametrize("double_q", [True, False])
@pytest.mark.fast_cases(1)
def test_targets_bootstrap_from_the_target_qstar_at_qmix_greedy_next_actions(double_q):
    """One-step targets (lambda 0): ``y_t = r_t + gamma (1 - term_t) Q*^-(s_{t+1}, u^g_{t+1})``
    with ``u^g`` the greedy available actions of the online (double Q) or target QMIX
    agents; column 1 is ``Q*^-(s_t, u^g_t)``."""
    _, algo, state, batch, phases = _setup(td_lambda=0.0, double_q=double_q)
    # distinct online, target and Q* networks
    other = algo.init(jax.random.key(7))
    state = state.replace(target=other.params)
    q = jax.jit(phases.agent_q)(state, batch)
    y = np.asarray(jax.jit(phases.targets)(state, batch, q))
    assert y.shape == (2, 4, 2)
    avail = batch.avail | ~batch.avail.any(-1, keepdims=True)
    chooser = q if double_q else jax.jit(phases.agent_q)(other, batch)
    greedy = targets.greedy(chooser, avail)
    sk = central.make_qstar(TINY, 3)
    boot = np.asarray(central.qstar_at(sk, other.params.qstar, batch, greedy, batch.state))
    np.testing.assert_allclose(y[..., 1], boot[:, :-1], rtol=1e-5, atol=1e-5)
    reward, term = np.asarray(batch.reward), np.asarray(batch.terminated)
    expect = reward[:, :-1] + TINY.gamma * (1 - term[:, :-1]) * boot[:, 1:]
    filled = np.asarray(batch.filled[:, :-1]) > 0
    np.testing.assert_allclose(y[..., 0][filled], expect[filled], rtol=1e-5, atol=1e-5)


def test_qstar_loss_trains_qstar_only_and_qmix_loss_never_reaches_qstar():
    _, algo, state, batch, phases = _setup(wqmix_w=1.0)
    q = jax.jit(phases.agent_q)(state, batch)
    y = jax.jit(phases.targets)(state, batch, q)
    grads, info = jax.jit(phases.loss_and_grad)(state, batch, jnp.ones(2), y)
    sk = central.make_qstar(TINY, 3)

    def qstar_only(qstar_params):
        return central.qstar_loss(sk, qstar_params, batch, batch.state, y[..., 0])[0]

    assert_trees_close(grads.qstar, jax.jit(jax.grad(qstar_only))(state.params.qstar), rtol=1e-4)
    np.testing.assert_allclose(info.weighted["wqmix_qstar_loss"],
                               jax.jit(qstar_only)(state.params.qstar), rtol=1e-5)


def test_masked_mean_and_greedy_steps_by_hand():
    x = jnp.array([[1.0, 5.0], [3.0, 100.0]])
    mask = jnp.array([[True, True], [True, False]])
    assert float(jax.jit(central.masked_mean)(x, mask)) == 3.0
    spec = value_spec(2, 3)
    batch = random_episodes(jax.random.key(3), spec, (2,), (False,), rows=3)
    q = jnp.array([[[[0.0, 1.0, 2.0], [5.0, 1.0, 0.0]]] * 3])  # [1, 3, 2, 3]
    avail = jnp.ones((1, 3, 2, 3), bool).at[0, 1, 0, 2].set(False)
    action = jnp.array([[[2, 0], [1, 0], [0, 0]]], jnp.int32)
    got = jax.jit(central.greedy_steps)(q, batch.replace(avail=avail, action=action))
    # row 0: both greedy; row 1: agent 0's greedy available action is 1 (2 is unavailable)
    np.testing.assert_array_equal(got, [[True, True]])
