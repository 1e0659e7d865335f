"""OW-QMIX and CW-QMIX (Rashid et al. 2020): the weights' rules on hand-made cases, the
weighted loss by hand, w = 1 giving QMIX's loss and gradients against the same targets,
and the one-line refusals."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.algos import make_algo
from jaxmarl_accel.algos.registry import algo_phases
from jaxmarl_accel.algos.value import mixers, targets, wqmix
from jaxmarl_accel.algos.value.learner import episode_loss, make_skeleton
from tests.algos.helpers import assert_trees_close
from tests.algos.value.helpers import (
    SMALL,
    SMALL_MLP,
    random_episodes,
    train_on_one_batch,
    value_spec,
)

LENGTHS, TERMINATED = (4, 2), (False, True)
TINY = dataclasses.replace(SMALL, qstar_hidden=8, qstar_layers=2)


def test_optimistic_weight_is_one_where_qmix_underestimates_the_target():
    q_tot = jnp.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 0.5]])
    y = jnp.array([[2.0, 2.0, 2.0], [0.0, -0.5, 0.6]])
    got = jax.jit(wqmix.optimistic_weights, static_argnums=2)(q_tot, y, 0.1)
    np.testing.assert_allclose(got, [[1.0, 0.1, 0.1], [1.0, 0.1, 1.0]])  # equal: w


def test_central_weight_is_one_at_greedy_actions_or_targets_above_qstar():
    is_greedy = jnp.array([[True, False, False, True]])
    y = jnp.array([[0.0, 2.0, 1.0, 5.0]])
    qstar_greedy = jnp.array([[1.0, 1.0, 1.0, 9.0]])
    got = jax.jit(wqmix.central_weights, static_argnums=3)(is_greedy, y, qstar_greedy, 0.25)
    np.testing.assert_allclose(got, [[1.0, 1.0, 0.25, 1.0]])  # y == Q*: not above


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), w=st.floats(0.01, 1.0), raise_by=st.floats(0.0, 5.0))
def test_weights_are_one_or_w_and_a_higher_target_never_lowers_them(seed, w, raise_by):
    rng = np.random.default_rng(seed)
    q_tot, y, star = (jnp.asarray(rng.normal(size=(3, 5)), jnp.float32) for _ in range(3))
    is_greedy = jnp.asarray(rng.uniform(size=(3, 5)) < 0.3)
    for weights in (lambda t: wqmix.optimistic_weights(q_tot, t, w),
                    lambda t: wqmix.central_weights(is_greedy, t, star, w)):
        low, high = np.asarray(weights(y)), np.asarray(weights(y + raise_by))
        assert np.all(np.isclose(low, 1.0) | np.isclose(low, w))
        assert np.all(high >= low)
    assert np.all(np.asarray(wqmix.central_weights(is_greedy, y, star, w))[np.asarray(is_greedy)]
                  == 1.0)


@pytest.mark.parametrize("name", ["owqmix", "cwqmix"])
@pytest.mark.fast_cases(1)
def test_the_weighted_loss_by_hand(name):
    spec = value_spec(2, 3)
    config = dataclasses.replace(TINY, wqmix_w=0.1)
    algo, phases = make_algo(name, spec, config), algo_phases(name, spec, config)
    state = algo.init(jax.random.key(0))
    batch = random_episodes(jax.random.key(1), spec, LENGTHS, TERMINATED, rows=5)
    q = jax.jit(phases.agent_q)(state, batch)
    y = jax.jit(phases.targets)(state, batch, q)
    _, info = jax.jit(phases.loss_and_grad)(state, batch, jnp.ones(2), y)
    q_taken = targets.chosen(q[:, :-1], batch.action[:, :-1])
    q_tot = np.asarray(mixers.qmix(spec, config).apply(state.params.mixer, q_taken,
                                                          batch.state[:, :-1])[..., 0])
    y0, star_greedy = np.asarray(y[..., 0]), np.asarray(y[..., 1])
    if name == "owqmix":
        w = np.where(q_tot < y0, 1.0, 0.1)
    else:
        avail = np.asarray(batch.avail[:, :-1])
        masked = np.where(avail | ~avail.any(-1, keepdims=True), np.asarray(q[:, :-1]), -np.inf)
        greedy = (masked.argmax(-1) == np.asarray(batch.action[:, :-1])).all(-1)
        w = np.where(greedy | (y0 > star_greedy), 1.0, 0.1)
    filled = np.asarray(batch.filled[:, :-1])
    qmix_part = (filled * w * (q_tot - y0) ** 2).sum() / filled.sum()
    star = float(info.weighted["wqmix_qstar_loss"])
    np.testing.assert_allclose(info.loss, qmix_part + star, rtol=1e-4)
    np.testing.assert_allclose(info.weighted["wqmix_weight_mean"],
                               (w * filled).sum() / filled.sum(), rtol=1e-5)
    # the priority is QMIX's: each episode's mean |Q_tot - y|
    np.testing.assert_allclose(info.td, (filled * np.abs(q_tot - y0)).sum(1) / filled.sum(1),
                               rtol=1e-4)


@pytest.mark.parametrize("name", ["owqmix", "cwqmix"])
@pytest.mark.fast_cases(1)
def test_with_w_one_the_qmix_part_and_its_gradients_are_qmix_s(name):
    spec = value_spec(2, 3)
    config = dataclasses.replace(TINY, wqmix_w=1.0)
    batch = random_episodes(jax.random.key(2), spec, LENGTHS, TERMINATED, rows=5)
    weights = jnp.array([1.0, 0.5])
    algo, phases = make_algo(name, spec, config), algo_phases(name, spec, config)
    state = algo.init(jax.random.key(0))
    qmix_sk = make_skeleton(spec, config, mixers.qmix(spec, config))
    q = jax.jit(phases.agent_q)(state, batch)
    y = jax.jit(phases.targets)(state, batch, q)
    grads, info = jax.jit(phases.loss_and_grad)(state, batch, weights, y)

    def qmix_loss(params):
        return episode_loss(qmix_sk, params, phases.agent_q(state.replace(
            params=params), batch), batch, weights, y[..., :1])[0]

    qmix_params = state.params.replace(qstar=None)
    expected, expected_grads = jax.jit(jax.value_and_grad(qmix_loss))(qmix_params)
    np.testing.assert_allclose(info.loss - info.weighted["wqmix_qstar_loss"], expected,
                               rtol=1e-5)
    assert_trees_close(grads.agent, expected_grads.agent, rtol=1e-4, atol=1e-6)
    assert_trees_close(grads.mixer, expected_grads.mixer, rtol=1e-4, atol=1e-6)


def test_owqmix_updates_under_jit_and_its_qstar_learns():
    spec = value_spec(2, 3)
    algo = make_algo("owqmix", spec, dataclasses.replace(TINY, lr=1e-2))
    batch = random_episodes(jax.random.key(3), spec, LENGTHS, TERMINATED, rows=5)
    _, metrics, td, star = train_on_one_batch(algo, batch, 25, "wqmix_qstar_loss")
    assert td.shape == (2,) and bool(jnp.all(td >= 0))
    assert star[-1] < 0.3 * star[0]
    assert 0.1 <= float(metrics["wqmix_weight_mean"]) <= 1.0


@pytest.mark.parametrize("name", ["owqmix", "cwqmix"])
def test_wqmix_needs_the_global_state_in_one_line(name):
    with pytest.raises(ValueError, match=f"env: algo '{name}' mixes") as error:
        make_algo(name, value_spec(2, 3, state_dim=0), TINY)
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="agent: algo") as error:
        make_algo(name, value_spec(2, 3), SMALL_MLP)
    assert "\n" not in str(error.value)
