"""The shared agent network: its inputs, the unrolled GRU equals step-by-step calls (on both
of its paths: the hand-written backward pass of small batches and the rematerialized scan),
and every row sees only the rows before it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos.value import gru, networks

N, OBS, A, H, B, ROWS = 3, 5, 4, 8, 2, 6


def test_agent_inputs_are_observation_id_and_previous_action():
    obs = jax.random.normal(jax.random.key(0), (B, ROWS, N, OBS))
    prev = jax.nn.one_hot(jnp.ones((B, ROWS, N), jnp.int32), A)
    x = jax.jit(networks.agent_inputs)(obs, prev)
    assert x.shape == (B, ROWS, N, OBS + N + A)
    np.testing.assert_array_equal(x[..., :OBS], obs)
    np.testing.assert_array_equal(x[0, 0, :, OBS:OBS + N], np.eye(N))
    np.testing.assert_array_equal(x[..., OBS + N:], prev)
    ff = jax.jit(lambda o: networks.agent_inputs(o, None))(obs[0, 0])
    assert ff.shape == (N, OBS + N)


def test_agent_inputs_without_ids_are_observation_and_previous_action():
    obs = jax.random.normal(jax.random.key(0), (B, ROWS, N, OBS))
    prev = jax.nn.one_hot(jnp.ones((B, ROWS, N), jnp.int32), A)
    x = jax.jit(lambda o, p: networks.agent_inputs(o, p, ids=False))(obs, prev)
    np.testing.assert_array_equal(x, jnp.concatenate([obs, prev], -1))
    agent = networks.make_agent("rnn", H, A, ids=False)
    assert networks.input_width(agent, OBS, N, A) == OBS + A
    assert networks.input_width(networks.make_agent("mlp", H, A), OBS, N, A) == OBS + N


@pytest.fixture(params=["saved_gates", "rematerialized"])
def path(request, monkeypatch):
    """Run a test on each of :func:`networks.unroll`'s two paths."""
    if request.param == "rematerialized":
        monkeypatch.setattr(networks, "SAVED_GATES_BYTES", 0)
    return request.param


@pytest.mark.fast_cases(1)
def test_unroll_equals_step_by_step_calls_from_a_zero_state(path):
    agent = networks.make_agent("rnn", H, A)
    params = networks.init_agent(agent, jax.random.key(1), OBS + N + A)
    obs = jax.random.normal(jax.random.key(2), (B, ROWS, N, OBS))
    prev = jax.nn.one_hot(jax.random.randint(jax.random.key(6), (B, ROWS, N), 0, A), A)
    q = jax.jit(lambda p, o, a: networks.unroll(agent, p, o, a))(params, obs, prev)
    assert q.shape == (B, ROWS, N, A)
    h = jnp.zeros((B, N, H))
    x = networks.agent_inputs(obs, prev)
    for t in range(ROWS):
        h, q_t = agent.apply(params, h, x[:, t])
        np.testing.assert_allclose(q[:, t], q_t, rtol=1e-5, atol=1e-6)
    # the gradient through either path equals that of the plain loop
    def looped(p):
        h, total = jnp.zeros((B, N, H)), 0.0
        for t in range(ROWS):
            h, q_t = agent.apply(p, h, x[:, t])
            total = total + jnp.sum(q_t**2)
        return total

    grads = jax.jit(jax.grad(lambda p: jnp.sum(networks.unroll(agent, p, obs, prev)**2)))(params)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), grads,
                 jax.grad(looped)(params))


def test_unroll_is_causal_and_starts_fresh_in_every_episode(path):
    agent = networks.make_agent("rnn", H, A)
    params = networks.init_agent(agent, jax.random.key(3), OBS + N)
    x = jax.random.normal(jax.random.key(4), (B, ROWS, N, OBS))
    unroll = jax.jit(lambda x: networks.unroll(agent, params, x, None))
    changed = x.at[:, 3:].add(1.0).at[1].add(1.0)  # later rows of both, all of episode 1
    q, q2 = unroll(x), unroll(changed)
    np.testing.assert_array_equal(q[0, :3], q2[0, :3])
    assert not np.allclose(q[0, 3:], q2[0, 3:])
    one = unroll(x[:1])  # episode 0 alone: the other episode does not leak in
    np.testing.assert_allclose(one[0], q[0], rtol=1e-6, atol=1e-7)


def test_agents_without_ids_cannot_tell_agents_with_equal_inputs_apart(path):
    agent = networks.make_agent("rnn", H, A, ids=False)
    params = networks.init_agent(agent, jax.random.key(1), OBS + A)
    obs = jnp.broadcast_to(jax.random.normal(jax.random.key(2), (B, ROWS, 1, OBS)),
                           (B, ROWS, N, OBS))
    prev = jnp.zeros((B, ROWS, N, A))
    q = jax.jit(lambda p: networks.unroll(agent, p, obs, prev))(params)
    np.testing.assert_allclose(q[:, :, 1:], jnp.broadcast_to(q[:, :, :1], q[:, :, 1:].shape),
                               rtol=1e-6)
    with_ids = networks.make_agent("rnn", H, A)
    params = networks.init_agent(with_ids, jax.random.key(1), OBS + N + A)
    q = networks.unroll(with_ids, params, obs, prev)
    assert not np.allclose(q[:, :, 0], q[:, :, 1])


@pytest.mark.fast_cases(1)
def test_clamped_q_values_lie_in_the_bounds_and_have_no_gradient_outside(path):
    """The authors' clamped agent (``torch.clamp(q, -5, 2)``): values outside the bounds
    are the bounds, and the parameters get no gradient through them."""
    free = networks.make_agent("rnn", H, A)
    clamped = networks.make_agent("rnn", H, A, q_min=-0.05, q_max=0.05)
    params = networks.init_agent(free, jax.random.key(1), OBS + N + A)
    params = jax.tree.map(lambda p: 8.0 * p, params)  # Q-values well past the bounds
    obs = jax.random.normal(jax.random.key(2), (B, ROWS, N, OBS))
    prev = jax.nn.one_hot(jax.random.randint(jax.random.key(6), (B, ROWS, N), 0, A), A)
    q_free = networks.unroll(free, params, obs, prev)
    q = jax.jit(lambda p: networks.unroll(clamped, p, obs, prev))(params)
    np.testing.assert_allclose(q, jnp.clip(q_free, -0.05, 0.05), rtol=1e-5, atol=1e-6)
    inside = (q_free > -0.05) & (q_free < 0.05)
    assert 0 < int(inside.sum()) < inside.size
    # the gradient of sum(q) is that of the free network's sum over the Q-values inside
    grads = jax.grad(lambda p: jnp.sum(networks.unroll(clamped, p, obs, prev)))(params)
    want = jax.grad(lambda p: jnp.sum(jnp.where(inside, networks.unroll(free, p, obs, prev),
                                                0.0)))(params)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), grads,
                 want)


def test_both_paths_give_the_same_q_values_and_gradients(monkeypatch):
    agent = networks.make_agent("rnn", H, A)
    params = networks.init_agent(agent, jax.random.key(7), OBS + N + A)
    obs = jax.random.normal(jax.random.key(8), (B, ROWS, N, OBS))
    prev = jax.nn.one_hot(jax.random.randint(jax.random.key(9), (B, ROWS, N), 0, A), A)
    loss = lambda p: jnp.sum(jnp.sin(networks.unroll(agent, p, obs, prev)))
    fast = jax.jit(jax.value_and_grad(loss))(params)
    monkeypatch.setattr(networks, "SAVED_GATES_BYTES", 0)
    slow = jax.jit(jax.value_and_grad(loss))(params)
    q_fast = jax.jit(lambda p: networks.unroll(agent, p, obs, prev))(params)
    np.testing.assert_allclose(fast[0], slow[0], rtol=1e-6)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6),
                 fast[1], slow[1])
    assert q_fast.shape == (B, ROWS, N, A)


def test_recurrence_gradient_is_autodiff_of_the_cell_scan():
    """gru.recurrence's hand-written backward pass against jax.grad of the same scan."""
    keys = jax.random.split(jax.random.key(10), 8)
    g = [jax.random.normal(k, (ROWS, B * N, H)) for k in keys[:3]]
    w = [jax.random.normal(k, (H, H)) * 0.3 for k in keys[3:6]]
    b = jax.random.normal(keys[6], (H,))
    weights = jax.random.normal(keys[7], (ROWS, B * N, H))

    def autodiff(*args):
        def step(h, x):
            h, _ = gru._cell(h, *x, *args[3:])
            return h, h
        return jax.lax.scan(step, jnp.zeros((B * N, H)), tuple(args[:3]))[1]

    args = (*g, *w, b)
    ours = jax.jit(jax.grad(lambda *a: jnp.sum(gru.recurrence(*a) * weights),
                            argnums=tuple(range(7))))(*args)
    want = jax.grad(lambda *a: jnp.sum(autodiff(*a) * weights), argnums=tuple(range(7)))(*args)
    for mine, ref in zip(ours, want, strict=True):
        np.testing.assert_allclose(mine, ref, rtol=2e-4, atol=2e-5)
    np.testing.assert_array_equal(jax.jit(gru.recurrence)(*args), jax.jit(autodiff)(*args))


def test_large_batches_take_the_rematerialized_path():
    # stag-hunt batches (201 rows, 8 agents, inputs 75 + 8 + 6, hidden 64) keep the
    # memory-lean scan even at 32 episodes; 32 MPE-spread episodes (26 rows, 3 agents)
    # take the saved-gates path
    assert not networks.uses_saved_gates(201, 32 * 8, 89, 64)
    assert networks.uses_saved_gates(26, 32 * 3, 26, 64)


def test_wide_grus_keep_their_gates_up_to_a_limit_that_grows_with_the_width():
    # 32 SMAX 3m episodes of 102 rows (3 agents, inputs 42, hidden 512) keep 182 MB, which
    # the saved-gates path runs faster at that width; at 128 episodes it is too large
    assert networks.saved_gates_bytes(102, 32 * 3, 42, 512) > networks.SAVED_GATES_BYTES
    assert networks.uses_saved_gates(102, 32 * 3, 42, 512)
    assert not networks.uses_saved_gates(102, 128 * 3, 42, 512)
    assert networks.uses_saved_gates(26, 32 * 3, 26, 512)  # small batches at any width


def test_mlp_agent_shares_one_network_across_agents():
    agent = networks.make_agent("mlp", H, A)
    params = networks.init_agent(agent, jax.random.key(5), OBS + N)
    assert jax.tree.leaves(params)[0].ndim <= 2  # no agent axis
    x = networks.agent_inputs(jnp.zeros((N, OBS)), None)
    q = jax.jit(agent.apply)(params, x)
    assert q.shape == (N, A)
    assert len(np.unique(np.asarray(q[:, 0]))) == N  # the one-hot id tells agents apart
