"""TD(lambda) targets against numpy transcriptions, double-Q bootstrap values, epsilon-greedy
over available actions, and the epsilon schedule."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.algos.value import ValueConfig, targets

GAMMA = 0.9
T = 6
# (steps taken, terminated at the last one): full length truncated, terminated early,
# truncated early, terminated at the limit, one step.
EPISODES = [(6, False), (3, True), (4, False), (6, True), (1, False)]


def _batch(heads: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    bsz = len(EPISODES)
    t = np.arange(T + 1)[None]
    lens = np.array([length for length, _ in EPISODES])[:, None]
    filled = (t < lens).astype(np.float32)
    term = ((t == lens - 1) & np.array([d for _, d in EPISODES])[:, None]).astype(np.float32)
    reward = rng.normal(size=(bsz, T + 1)).astype(np.float32) * filled
    q = rng.normal(size=(bsz, T + 1, heads)).astype(np.float32)
    return reward, term, filled, q


def numpy_recursion(reward, term, filled, q, gamma, lam):
    """y_t = r_t + gamma (1 - term_t) [(1 - lam) Q(t+1) + lam G(t+1)], G(t+1) = y_{t+1}
    while row t+1 is filled and Q(t+1) at the row after the last filled step."""
    bsz, rows, heads = q.shape
    y = np.zeros((bsz, rows - 1, heads))
    for b in range(bsz):
        length = int(filled[b].sum())
        for t in reversed(range(length)):
            cont = y[b, t + 1] if t + 1 < length else q[b, t + 1]
            y[b, t] = reward[b, t] + gamma * (1 - term[b, t]) * (
                (1 - lam) * q[b, t + 1] + lam * cont)
    return y


def numpy_forward_view(reward, term, filled, q, gamma, lam):
    """The lambda-return as the weighted average of n-step returns (Sutton & Barto eq.
    12.3): sum_n (1 - lam) lam^(n-1) G_{t:t+n} + lam^(L-t-1) G_{t:L}."""
    def n_step(b, t, n):
        ret = sum(gamma**k * reward[b, t + k] for k in range(n))
        alive = 1.0 - term[b, t:t + n].max()
        return ret + gamma**n * alive * q[b, t + n]

    bsz, rows, heads = q.shape
    y = np.zeros((bsz, rows - 1, heads))
    for b in range(bsz):
        length = int(filled[b].sum())
        for t in range(length):
            horizon = length - t
            y[b, t] = sum((1 - lam) * lam ** (n - 1) * n_step(b, t, n) for n in range(1, horizon))
            y[b, t] += lam ** (horizon - 1) * n_step(b, t, horizon)
    return y


def numpy_pymarl2_form(reward, term, filled, q, gamma, lam):
    """The reference code's recursion: start at row T with Q(T) (1 - terminated anywhere),
    then ret_t = lam gamma ret_{t+1} + filled_t (r_t + (1 - lam) gamma Q(t+1) (1 - term_t))."""
    ret = np.zeros_like(q)
    ret[:, -1] = q[:, -1] * (1 - term.sum(1))[:, None]
    for t in reversed(range(q.shape[1] - 1)):
        ret[:, t] = lam * gamma * ret[:, t + 1] + filled[:, t, None] * (
            reward[:, t, None] + (1 - lam) * gamma * q[:, t + 1] * (1 - term[:, t, None]))
    return ret[:, :-1]


@pytest.mark.parametrize("lam", [0.0, 0.6, 1.0])
@pytest.mark.parametrize("heads", [1, 3])
def test_td_lambda_matches_the_numpy_recursion_and_forward_view(lam, heads):
    reward, term, filled, q = _batch(heads)
    y = jax.jit(targets.td_lambda_targets, static_argnums=(4, 5))(
        reward, term, filled, q, GAMMA, lam)
    assert y.shape == (len(EPISODES), T, heads)
    mask = filled[:, :-1, None] > 0
    ref = numpy_recursion(reward, term, filled, q, GAMMA, lam)
    np.testing.assert_allclose(np.where(mask, y, 0), np.where(mask, ref, 0), rtol=1e-5, atol=1e-5)
    fwd = numpy_forward_view(reward, term, filled, q, GAMMA, lam)
    np.testing.assert_allclose(np.where(mask, y, 0), np.where(mask, fwd, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lam", [0.0, 0.6, 1.0])
def test_td_lambda_agrees_with_the_reference_form_where_episodes_end_at_t_or_terminate(lam):
    reward, term, filled, q = _batch(1, seed=1)
    y = np.asarray(targets.td_lambda_targets(reward, term, filled, q, GAMMA, lam))
    ref = numpy_pymarl2_form(reward, term, filled, q, GAMMA, lam)
    for b, (length, done) in enumerate(EPISODES):
        same = done or length == T
        close = np.allclose(y[b, :length], ref[b, :length], rtol=1e-5, atol=1e-5)
        assert close == same or (lam == 0.0 and close)  # lam 0 never looks past t + 1


def test_td_lambda_special_cases():
    reward, term, filled, q = _batch(1, seed=2)
    one_step = targets.td_lambda_targets(reward, term, filled, q, GAMMA, 0.0)
    expect = reward[:, :-1, None] + GAMMA * (1 - term[:, :-1, None]) * q[:, 1:]
    mask = filled[:, :-1, None] > 0
    np.testing.assert_allclose(np.where(mask, one_step, 0), np.where(mask, expect, 0), rtol=1e-5)
    mc = np.asarray(targets.td_lambda_targets(reward, term, filled, q, GAMMA, 1.0))
    b = 1  # terminated after 3 steps: the plain discounted return
    np.testing.assert_allclose(mc[b, 0, 0], reward[b, 0] + GAMMA * reward[b, 1]
                               + GAMMA**2 * reward[b, 2], rtol=1e-5)
    b = 2  # truncated after 4 steps: bootstrapped on Q(4)
    ret = sum(GAMMA**k * reward[b, k] for k in range(4)) + GAMMA**4 * q[b, 4, 0]
    np.testing.assert_allclose(mc[b, 0, 0], ret, rtol=1e-5)


def test_bootstrap_q_double_and_plain():
    target_q = jnp.array([[1.0, 5.0, 3.0, 9.0]])
    online_q = jnp.array([[0.0, 1.0, 2.0, 7.0]])
    avail = jnp.array([[True, True, True, False]])
    double = jax.jit(targets.bootstrap_q, static_argnums=3)(target_q, online_q, avail, True)
    plain = jax.jit(targets.bootstrap_q, static_argnums=3)(target_q, online_q, avail, False)
    assert double[0] == 3.0  # online argmax over available actions: 2
    assert plain[0] == 5.0  # target's own maximum over available actions
    grad = jax.grad(lambda o: targets.bootstrap_q(target_q, o, avail, True).sum())(online_q)
    assert not np.any(grad)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_greedy_and_epsilon_greedy_pick_available_actions(seed):
    k_q, k_avail, k_act = jax.random.split(jax.random.key(seed), 3)
    q = 10 * jax.random.normal(k_q, (64, 3, 6))
    avail = jax.random.uniform(k_avail, (64, 3, 6)) < 0.3
    avail = avail.at[..., 5].set(avail[..., 5] | ~avail.any(-1))
    greedy = jax.jit(targets.greedy)(q, avail)
    assert bool(jnp.all(jnp.take_along_axis(avail, greedy[..., None], -1)))
    assert bool(jnp.all(greedy == jnp.argmax(jnp.where(avail, q, -1e9), -1)))
    for eps in (1.0, 0.5):
        picked = jax.jit(targets.epsilon_greedy)(q, avail, jnp.float32(eps), k_act)
        assert picked.dtype == jnp.int32
        assert bool(jnp.all(jnp.take_along_axis(avail, picked[..., None], -1)))


def test_epsilon_one_is_uniform_over_available_and_zero_is_greedy():
    q = jnp.array([0.0, 3.0, 1.0, 2.0])
    avail = jnp.array([True, False, True, True])
    keys = jax.random.split(jax.random.key(0), 3000)
    draw = jax.jit(jax.vmap(targets.epsilon_greedy, in_axes=(None, None, None, 0)))
    counts = np.bincount(np.asarray(draw(q, avail, jnp.float32(1.0), keys)), minlength=4)
    assert counts[1] == 0 and np.all(np.abs(counts[[0, 2, 3]] / 3000 - 1 / 3) < 0.04)
    assert np.all(np.asarray(draw(q, avail, jnp.float32(0.0), keys)) == 3)


def test_epsilon_greedy_draws_match_the_two_key_formula():
    """An explore coin from the first split key, a uniform available action (a Gumbel argmax
    over logits 0 / -inf) from the second, the greedy action otherwise."""
    k_q, k_avail = jax.random.split(jax.random.key(5))
    q = jax.random.normal(k_q, (128, 3, 6))
    avail = (jax.random.uniform(k_avail, (128, 3, 6)) < 0.5).at[..., 2].set(True)

    @jax.jit
    def direct(key):
        explore_key, uniform_key = jax.random.split(key)
        uniform = jnp.argmax(jnp.where(avail, 0.0, -jnp.inf)
                             + jax.random.gumbel(uniform_key, avail.shape), -1)
        explore = jax.random.uniform(explore_key, uniform.shape) < 0.3
        return jnp.where(explore, uniform, jnp.argmax(jnp.where(avail, q, -jnp.inf), -1))

    draw = jax.jit(targets.epsilon_greedy)
    for i in range(5):
        key = jax.random.key(10 + i)
        np.testing.assert_array_equal(draw(q, avail, jnp.float32(0.3), key), direct(key))


def test_epsilon_schedule_is_linear_then_flat():
    config = ValueConfig(epsilon_start=1.0, epsilon_finish=0.05, epsilon_anneal_steps=100)
    eps = jax.jit(lambda s: targets.epsilon(config, s))
    for steps, want in ((0, 1.0), (50, 0.525), (100, 0.05), (10_000, 0.05)):
        np.testing.assert_allclose(eps(jnp.int32(steps)), want, rtol=1e-6)
