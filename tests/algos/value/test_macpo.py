"""MAC-PO's optimal weights (paper 004, Lemma 1, eq. 2-3): f(pi) against brute force and
finite at 48 agents, the weight proportional to the Bellman error, the normalizations, and
the weighted learner: the weights by hand as loss weights and as priorities, with every
loss weight 1 its QMIX part is QMIX's loss and gradient, and where the weights act
(``macpo_weighting``) for MAC-PO and AccMER."""

from __future__ import annotations

import dataclasses
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.algos import make_algo
from jaxmarl_accel.algos.registry import algo_phases
from jaxmarl_accel.algos.value import central, macpo, mixers
from jaxmarl_accel.algos.value.learner import episode_loss, make_skeleton
from jaxmarl_accel.algos.value.specs import weighting_mode, weights_checker
from tests.algos.helpers import assert_trees_close
from tests.algos.value.helpers import SMALL, random_episodes, train_on_one_batch, value_spec

LENGTHS, TERMINATED = (4, 2), (False, True)
SMALL_MACPO = dataclasses.replace(SMALL, qstar_hidden=8, qstar_layers=2)
f_jit = jax.jit(macpo.joint_action_factor)


def brute_force_f(pi: np.ndarray) -> np.ndarray:
    """Eq. 3 term by term in float64: ``pi [..., n]`` -> ``[...]``."""
    n = pi.shape[-1]
    others = sum(np.prod(np.delete(pi, i, axis=-1), axis=-1) for i in range(n))
    return 1.0 + others - n * np.prod(pi, axis=-1)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 5), seed=st.integers(0, 2**16), extreme=st.booleans())
def test_f_matches_brute_force_for_up_to_five_agents(n, seed, extreme):
    rng = np.random.default_rng(seed)
    pi = rng.uniform(0.0, 1.0, size=(6, n))
    if extreme:  # certain and near-impossible actions
        pi[rng.uniform(size=pi.shape) < 0.3] = 1.0
        pi[rng.uniform(size=pi.shape) < 0.2] = 1e-6
    got = np.asarray(f_jit(jnp.log(jnp.asarray(pi, jnp.float32))))
    np.testing.assert_allclose(got, brute_force_f(pi), rtol=2e-5, atol=2e-6)


def test_f_is_finite_and_in_range_at_48_agents():
    rng = np.random.default_rng(0)
    cases = [np.full(48, -1e-3), np.full(48, -200.0), np.zeros(48), np.full(48, -np.inf),
             np.log(rng.uniform(1e-30, 1.0, 48)),
             np.concatenate([[-50.0], np.full(47, -1e-9)])]  # one deviator: f close to 2
    f = np.asarray(f_jit(jnp.asarray(np.stack(cases), jnp.float32)))
    assert np.all(np.isfinite(f)) and np.all((f >= 1.0) & (f <= 2.0))
    np.testing.assert_allclose(f[5], 2.0, rtol=1e-5)   # (1 - pi_1) prod_{j>1} pi_j ~ 1
    np.testing.assert_allclose(f[2], 1.0)              # every pi_i = 1
    # the naive product form is 0 / 0 here; the log form keeps the single deviator's term
    assert np.prod(np.exp(cases[1])) == 0.0


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**16), scale=st.floats(0.01, 100.0))
def test_the_weight_is_proportional_to_the_bellman_error(seed, scale):
    rng = np.random.default_rng(seed)
    td, gap = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    f = rng.uniform(1.0, 2.0, size=(4, 5))
    w = np.asarray(macpo.optimal_weights(jnp.asarray(td), jnp.asarray(gap), jnp.asarray(f)))
    scaled = macpo.optimal_weights(jnp.asarray(scale * td), jnp.asarray(gap), jnp.asarray(f))
    np.testing.assert_allclose(np.asarray(scaled), scale * w, rtol=1e-5)
    np.testing.assert_allclose(w, np.abs(td) * np.exp(-np.abs(gap)) * f, rtol=1e-5)


def test_minmax_normalization_maps_the_filled_items_onto_floor_to_one():
    w = jnp.array([[0.2, 5.0, 1.0], [3.0, 100.0, 0.0]])
    mask = jnp.array([[True, True, True], [True, False, False]])
    out = np.asarray(jax.jit(macpo.normalize, static_argnums=(2, 3))(w, mask, "minmax", 0.1))
    np.testing.assert_allclose(out[mask], 0.1 + 0.9 * (np.asarray(w)[mask] - 0.2) / 4.8,
                               rtol=1e-6)
    assert out[~np.asarray(mask)].tolist() == [0.0, 0.0]  # unfilled items: no weight
    equal = macpo.normalize(jnp.ones((2, 2)), jnp.ones((2, 2), bool), "minmax", 0.1)
    np.testing.assert_allclose(equal, 1.0)
    raw = macpo.normalize(w, mask, "none", 0.1)
    np.testing.assert_allclose(raw, jnp.where(mask, w, 0.0))
    mean = macpo.normalize(w, mask, "mean", 0.1)  # divided by the filled steps' mean, 2.3
    np.testing.assert_allclose(mean, jnp.where(mask, w / 2.3, 0.0), rtol=1e-6)
    np.testing.assert_allclose(macpo.normalize(jnp.zeros((2, 2)), mask[:, :2], "mean", 0.1),
                               [[1.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="how must be one of"):
        macpo.normalize(w, mask, "softmax", 0.1)


def _algo_batch(name: str = "macpo", **over):
    spec = value_spec(2, 3)
    config = dataclasses.replace(SMALL_MACPO, **over)
    algo = make_algo(name, spec, config)
    state = algo.init(jax.random.key(1))
    batch = random_episodes(jax.random.key(4), spec, LENGTHS, TERMINATED, rows=5)
    return spec, config, algo, state, batch, algo_phases(name, spec, config)


# each case compiles its own programs; the priority case is the slow tier's (the fast tier
# checks that weights as priorities leave the loss in test_as_priorities_the_weights_...)
@pytest.mark.parametrize("over", [{"macpo_weighting": "loss", "macpo_floor": 1.0},
                                  {"macpo_weighting": "priority"}])
@pytest.mark.fast_cases(1)
def test_with_every_loss_weight_one_the_qmix_part_is_qmix_s(over):
    """Weights as priorities only, or min-max loss weights with floor 1: the loss minus
    Q*'s own term, and the gradient of the agents and mixer, are QMIX's against the same
    targets (those of the target Q*)."""
    spec, config, algo, state, batch, phases = _algo_batch(**over)
    weights = jnp.array([1.0, 0.5])
    q = jax.jit(phases.agent_q)(state, batch)
    y = jax.jit(phases.targets)(state, batch, q)
    grads, info = jax.jit(phases.loss_and_grad)(state, batch, weights, y)
    qmix_sk = make_skeleton(spec, config, mixers.qmix(spec, config))

    def qmix_loss(params):
        q_params = phases.agent_q(state.replace(params=params), batch)
        return episode_loss(qmix_sk, params, q_params, batch, weights, y[..., :1])[0]

    loss_and_grads = jax.jit(jax.value_and_grad(qmix_loss))
    expected, expected_grads = loss_and_grads(state.params.replace(qstar=None))
    np.testing.assert_allclose(info.loss - info.weighted["macpo_qstar_loss"], expected,
                               rtol=1e-5)
    assert_trees_close(grads.agent, expected_grads.agent, rtol=1e-4, atol=1e-6)
    assert_trees_close(grads.mixer, expected_grads.mixer, rtol=1e-4, atol=1e-6)


def _by_hand(spec, config, state, batch, q, y):
    """Eq. 2 per step, unnormalized: ``|Q_tot - y| exp(-|Q_tot - Q*|) f(pi)`` [B, T], the
    QMIX squared errors [B, T] and the filled mask [B, T]."""
    q_taken = jnp.take_along_axis(q[:, :-1], batch.action[:, :-1, :, None], -1)[..., 0]
    s = batch.state
    q_tot = mixers.qmix(spec, config).apply(state.params.mixer, q_taken, s[:, :-1])[..., 0]
    q_star = central.qstar_at(central.make_qstar(config, spec.num_actions), state.params.qstar,
                              batch, batch.action, s)[:, :-1]
    avail = batch.avail[:, :-1] | ~batch.avail[:, :-1].any(-1, keepdims=True)  # padding rows
    logits = jnp.where(avail, q[:, :-1], -jnp.inf)
    pi = jnp.take_along_axis(jax.nn.softmax(logits), batch.action[:, :-1, :, None], -1)[..., 0]
    f = brute_force_f(np.asarray(pi, np.float64))
    filled = np.asarray(batch.filled[:, :-1])
    w = np.where(filled > 0, np.abs(q_tot - y[..., 0]) * np.exp(-np.abs(q_tot - q_star)) * f, 0)
    return w, np.asarray(q_tot - y[..., 0]) ** 2, filled


def test_weights_multiply_each_steps_squared_error_and_the_priority_is_their_mean():
    spec, config, algo, state, batch, phases = _algo_batch(macpo_weighting="loss",
                                                   macpo_normalization="none")
    q = jax.jit(phases.agent_q)(state, batch)
    y = jax.jit(phases.targets)(state, batch, q)
    _, info = jax.jit(phases.loss_and_grad)(state, batch, jnp.ones(2), y)
    w, squared, filled = _by_hand(spec, config, state, batch, q, y)
    star = float(info.weighted["macpo_qstar_loss"])
    np.testing.assert_allclose(info.loss, (filled * w * squared).sum() / filled.sum() + star,
                               rtol=1e-4)
    np.testing.assert_allclose(info.td, (w * filled).sum(1) / filled.sum(1), rtol=1e-4)


def test_as_priorities_the_weights_leave_the_loss_and_are_the_episodes_priorities():
    spec, config, algo, state, batch, phases = _algo_batch(macpo_weighting="priority")
    q = jax.jit(phases.agent_q)(state, batch)
    y = jax.jit(phases.targets)(state, batch, q)
    _, info = jax.jit(phases.loss_and_grad)(state, batch, jnp.ones(2), y)
    w, squared, filled = _by_hand(spec, config, state, batch, q, y)
    star = float(info.weighted["macpo_qstar_loss"])
    np.testing.assert_allclose(info.loss, (filled * squared).sum() / filled.sum() + star,
                               rtol=1e-4)
    np.testing.assert_allclose(info.td, (w * filled).sum(1) / filled.sum(1), rtol=1e-4)


def test_where_the_weights_act_auto_resolves_per_learner_and_sampler():
    auto = SMALL
    macpo_auto, accmer_auto = "priority", "both"  # the records' own (value/specs.py)
    assert weighting_mode(auto, macpo_auto) == "priority"  # its default sampler, per
    assert weighting_mode(auto, macpo_auto, "per") == "priority"
    assert weighting_mode(auto, macpo_auto, "uniform") == "loss"  # the sampler ignores them
    assert weighting_mode(auto, accmer_auto, "reuse") == "both"  # eq. 1 and Alg. 1
    for mode in ("priority", "loss", "both"):
        assert weighting_mode(dataclasses.replace(SMALL, macpo_weighting=mode), macpo_auto,
                              "uniform") == mode
    check = weights_checker("macpo", macpo_auto)
    check(types.SimpleNamespace(learner=auto, sampler="uniform", sampler_kwargs=()))
    with pytest.raises(ValueError, match="macpo_weighting 'priority': sampler 'uniform' "
                                         "ignores priorities") as error:
        check(types.SimpleNamespace(learner=dataclasses.replace(SMALL, macpo_weighting="priority"),
                                    sampler="uniform", sampler_kwargs=()))
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="mode must be one of"):
        macpo.weighting(SMALL, "auto")


def test_macpo_trains_q_star_and_returns_nonnegative_priorities():
    spec = value_spec(2, 3)
    algo = make_algo("macpo", spec, dataclasses.replace(SMALL_MACPO, lr=1e-2))
    batch = random_episodes(jax.random.key(5), spec, LENGTHS, TERMINATED, rows=5)
    _, metrics, td, star = train_on_one_batch(algo, batch, 30, "macpo_qstar_loss")
    assert td.shape == (2,) and bool(jnp.all(jnp.isfinite(td) & (td >= 0)))
    assert star[-1] < 0.3 * star[0]
    assert {"macpo_f_pi_mean", "macpo_weight_mean", "macpo_bellman_error"} <= set(metrics)
    assert 1.0 <= float(metrics["macpo_f_pi_mean"]) <= 2.0


@pytest.mark.parametrize("name", ["vdn", "iql"])
def test_macpo_weights_need_a_mixer_that_reads_the_state(name):
    spec = value_spec()
    with pytest.raises(ValueError, match="weighting: macpo weights QMIX's loss"):
        make_skeleton(spec, SMALL, getattr(mixers, name)(spec, SMALL),
                      macpo.weighting(SMALL, "loss"))


def test_bad_macpo_settings_are_one_line_errors():
    for kwargs, message in (({"macpo_normalization": "softmax"}, "macpo_normalization"),
                            ({"macpo_floor": 1.5}, "macpo_floor"),
                            ({"qstar_layers": 0}, "qstar_layers"),
                            ({"macpo_weighting": "sampling"}, "macpo_weighting")):
        with pytest.raises(ValueError, match=message) as error:
            dataclasses.replace(SMALL, **kwargs)
        assert "\n" not in str(error.value)


