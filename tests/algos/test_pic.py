"""The permutation-invariant critic (jaxmarl_accel.algos.actor_critic.pic, ``critic="pic"`` of
jaxmarl_accel.algos.actor_critic.local_critic): shapes, invariance to the neighbours' order, size
independent of N, and one update of every algorithm under jit."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.algos import ActorCriticConfig, make_algo
from jaxmarl_accel.algos.actor_critic import local_critic as lc
from jaxmarl_accel.algos.actor_critic import pic
from jaxmarl_accel.algos.actor_critic.local_critic import update as lc_update
from jaxmarl_accel.cli import run
from jaxmarl_accel.envs import make
from jaxmarl_accel.types import Transition

K, OBS, ACT = 3, 7, 2
NET = pic.PermutationInvariantCritic((16, 8), 1 + K)
PARAMS = NET.init(jax.random.PRNGKey(0), jnp.zeros((1, (1 + K) * (OBS + ACT))))
Q = jax.jit(NET.apply)


def _nodes(key: jax.Array, batch: int = 5):
    """Random ``obs [B, obs]``, ``action [B, A]``, ``neighbour_obs [B, k, obs]``,
    ``neighbour_action [B, k, A]``."""
    keys = jax.random.split(key, 4)
    return (jax.random.normal(keys[0], (batch, OBS)), jax.random.normal(keys[1], (batch, ACT)),
            jax.random.normal(keys[2], (batch, K, OBS)),
            jax.random.normal(keys[3], (batch, K, ACT)))


def test_node_features_and_q_shapes():
    obs, action, nb_obs, nb_action = _nodes(jax.random.PRNGKey(1))
    x = jax.jit(lc.critic_features, static_argnums=0)("pic", obs, action, nb_action, nb_obs)
    assert x.shape == (5, lc.critic_width("pic", OBS, ACT, K)) == (5, (1 + K) * (OBS + ACT))
    nodes = np.asarray(x).reshape(5, 1 + K, OBS + ACT)
    np.testing.assert_array_equal(nodes[:, 0], np.concatenate([obs, action], -1))
    np.testing.assert_array_equal(nodes[:, 1:], np.concatenate([nb_obs, nb_action], -1))
    assert Q(PARAMS, x).shape == (5, 1)
    assert Q(PARAMS, x[None]).shape == (1, 5, 1)
    widths = {name: layer["kernel"].shape for name, layer in PARAMS["params"].items()}
    assert widths == {"self_0": (OBS + ACT, 16), "agg_0": (OBS + ACT, 16),
                      "self_1": (16, 8), "agg_1": (16, 8), "head": (16, 1)}


@settings(max_examples=20, deadline=None)
@given(order=st.permutations(range(K)), seed=st.integers(0, 2**16))
def test_q_is_invariant_to_the_neighbours_order(order, seed):
    obs, action, nb_obs, nb_action = _nodes(jax.random.PRNGKey(seed))
    x = lc.critic_features("pic", obs, action, nb_action, nb_obs)
    order = np.asarray(order)
    permuted = lc.critic_features("pic", obs, action, nb_action[:, order], nb_obs[:, order])
    np.testing.assert_allclose(Q(PARAMS, permuted), Q(PARAMS, x), rtol=1e-5, atol=1e-6)


def test_agent_i_is_not_one_of_its_neighbours():
    """Node i enters the head on its own: exchanging it with a neighbour changes Q."""
    obs, action, nb_obs, nb_action = _nodes(jax.random.PRNGKey(2))
    x = lc.critic_features("pic", obs, action, nb_action, nb_obs)
    swapped = lc.critic_features("pic", nb_obs[:, 0], nb_action[:, 0],
                                 nb_action.at[:, 0].set(action), nb_obs.at[:, 0].set(obs))
    assert not np.allclose(Q(PARAMS, swapped), Q(PARAMS, x))


@pytest.mark.parametrize("sharing", ["agent", "team"])
@pytest.mark.fast_cases(1)
def test_parameters_do_not_grow_with_the_agents(sharing):
    config = ActorCriticConfig(critic="pic", critic_k=3, sharing=sharing, hidden_sizes=(16, 16))
    per_group = []
    for n in (6, 30):
        env, _ = make("simple_spread", num_agents=n, k_nearest=3)
        state = make_algo("matd3", env.spec, config).init(jax.random.PRNGKey(0))
        groups = jax.tree.leaves(state.critic)[0].shape[0]
        assert groups == (1 if sharing == "team" else n)
        per_group.append(sum(x.size for x in jax.tree.leaves(state.critic)) // groups)
    assert per_group[0] == per_group[1]


def _batch(env, params, key: jax.Array, bsz: int) -> Transition:
    """A replay-like batch ``[B, N, ...]`` of consecutive random joint steps."""
    obs, state = env.reset(key, params)
    seen = [obs]
    for k in jax.random.split(key, bsz):
        act_key, step_key = jax.random.split(k)
        obs, state, *_ = env.step(step_key, state, env.random_action(act_key), params)
        seen.append(obs)
    seen = jnp.stack(seen)
    n, a = env.spec.num_agents, env.spec.act_dim
    action_key, reward_key = jax.random.split(key)
    return Transition(obs=seen[:-1], action=jax.random.uniform(action_key, (bsz, n, a)),
                      reward=jax.random.normal(reward_key, (bsz, n)), next_obs=seen[1:],
                      done=jnp.zeros((bsz, n)))


@pytest.mark.parametrize("algo, sharing, batch", [
    ("maddpg", "agent", "joint_steps"),
    ("matd3", "team", "pairs"),
    ("masac", "team", "joint_steps"),
    ("masac", "agent", "joint_steps"),
])
@pytest.mark.fast_cases(1)
def test_one_update_of_each_algorithm_is_finite_and_compiles_once(algo, sharing, batch):
    env, params = make("simple_spread", num_agents=6, k_nearest=3, continuous_actions=True)
    config = ActorCriticConfig(critic="pic", critic_k=3, sharing=sharing, shared_batch=batch,
                        hidden_sizes=(16, 16), policy_delay=1)
    learner = make_algo(algo, env.spec, config)
    state = learner.init(jax.random.PRNGKey(0))
    data = _batch(env, params, jax.random.PRNGKey(1), 8)
    chex.clear_trace_counter()  # the count is kept per function source, across tests
    update = jax.jit(chex.assert_max_traces(learner.update, n=1))
    new, metrics, td = update(state, data, jnp.ones(8), jax.random.PRNGKey(2))
    new, metrics, td = update(new, data, jnp.ones(8), jax.random.PRNGKey(3))
    assert td.shape == (8, 6)
    for value in [*jax.tree.leaves(new), *metrics.values(), td]:
        assert np.all(np.isfinite(np.asarray(value)))
    moved = lambda a, b: any(not np.array_equal(x, y) for x, y in
                             zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))
    assert moved(new.critic, state.critic) and moved(new.actor, state.actor)


@pytest.mark.slow
def test_actor_step_moves_only_its_own_action():
    """The neighbours' observations and actions are replayed data in the actor's loss: its
    gradient reaches the actor, and the loss depends on the neighbours' observations."""
    env, params = make("simple_spread", num_agents=6, k_nearest=3, continuous_actions=True)
    config = ActorCriticConfig(critic="pic", critic_k=3, hidden_sizes=(16, 16))
    from jaxmarl_accel.algos.registry import variant_of

    sk = lc.make_skeleton(env.spec, config, variant_of("maddpg", env.spec, config))
    state = lc.init(sk, jax.random.PRNGKey(0))
    (s,) = lc.samples(sk, state, _batch(env, params, jax.random.PRNGKey(1), 4), jnp.ones(4),
                      jax.random.PRNGKey(2))
    s0 = jax.tree.map(lambda x: x[0], s)
    assert s0.neighbour_obs.shape == (s0.rows.shape[0], 3, env.spec.obs_dim)
    actor, critics = (jax.tree.map(lambda x: x[0], tree) for tree in (state.actor, state.critic))
    loss = lambda a, nb_obs: lc_update._actor_loss(
        a, sk, critics, s0._replace(neighbour_obs=nb_obs), jax.random.PRNGKey(0), jnp.zeros(()))[0]
    by_actor, by_obs = jax.jit(jax.grad(loss, argnums=(0, 1)))(actor, s0.neighbour_obs)
    assert all(np.all(np.isfinite(np.asarray(g))) for g in jax.tree.leaves(by_actor))
    assert float(jnp.abs(by_obs).sum()) > 0


@pytest.mark.slow
def test_trains_from_the_cli(tmp_path):
    out = tmp_path / "pic"
    argv = ["--env", "simple_spread", "--agents", "6", "--env-kwargs", "k_nearest=3",
            "--seeds", "1", "--algo", "maddpg", "--critic", "pic", "--critic-k", "3",
            "--sharing", "team", "--hidden-sizes", "16", "16", "--buffer-capacity", "500",
            "--batch-size", "8", "--num-envs", "5", "--update-every", "50",
            "--learning-starts", "50", "--eval-every", "100", "--total-env-steps", "200",
            "--eval-episodes", "2", "--baseline-episodes", "2", "--quiet", "--out", str(out)]
    assert run.main(argv) == 0
    stored = json.loads(Path(out, "config.json").read_text())["train"]["learner"]
    assert stored["critic"] == "pic" and stored["sharing"] == "team"
    with Path(out, "metrics.csv").open() as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) >= 2
    assert all(np.isfinite(float(row["critic_loss"])) for row in rows if row["critic_loss"])
