"""Neighbourhood critics and team parameter sharing
(jaxmarl_accel.algos.actor_critic.local_critic)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos import ActorCriticConfig, make_algo
from jaxmarl_accel.algos.actor_critic import local_critic as lc
from jaxmarl_accel.algos.actor_critic.local_critic import update as lc_update
from jaxmarl_accel.algos.registry import variant_of
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.envs import make
from jaxmarl_accel.trainer.train import make_train
from jaxmarl_accel.types import Transition


def _states(env, params, key, steps=6):
    """Observations of a few random joint steps, ``[steps, N, obs_dim]`` (one compiled
    scan: stepping the env op by op compiles each of its operations on its own)."""

    def run(key):
        def step(state, k):
            act_key, step_key = jax.random.split(k)
            obs, state, *_ = env.step(step_key, state, env.random_action(act_key), params)
            return state, obs

        return jax.lax.scan(step, env.reset(key, params)[1], jax.random.split(key, steps))[1]

    return jax.jit(run)(key)


def _init_and_samples(sk, batch, weight):
    """The learner's initial state and its samples of ``batch`` (compiled together)."""
    def run(weight):
        state = lc.init(sk, jax.random.PRNGKey(0))
        return state, lc.samples(sk, state, batch, weight, jax.random.PRNGKey(2))

    return jax.jit(run)(weight)


@pytest.mark.parametrize("name, kwargs, k, rel", [
    ("simple_spread", {"num_agents": 12, "k_nearest": 4}, 4, slice(4 + 2 * 4, 4 + 2 * 4 + 8)),
    ("simple_tag", {"num_predators": 10, "num_prey": 3, "k_nearest": 5, "num_obstacles": 2,
                    "k_nearest_landmarks": 2}, 5, slice(8, 18)),
])
@pytest.mark.fast_cases(1)
def test_neighbours_from_the_observation_are_the_ones_the_env_observes(name, kwargs, k, rel):
    env, params = make(name, **kwargs)
    obs = _states(env, params, jax.random.PRNGKey(3))
    for joint in obs:
        pos = lc.positions(env.spec, joint)
        near = jax.jit(lc.nearest_agents, static_argnums=2)(pos, None, k)
        seen = joint[:, rel].reshape(env.spec.num_agents, k, 2)
        np.testing.assert_allclose(pos[near] - pos[:, None], seen, atol=1e-6)
        some = jnp.array([0, 5, 2])
        np.testing.assert_array_equal(lc.nearest_agents(pos, some, k), near[some])


def test_critic_input_does_not_grow_with_the_agents():
    for kind, width in (("knearest", 10 + 5 + 3 * 5), ("meanfield", 10 + 5 + 5)):
        assert lc.critic_width(kind, 10, 5, 3) == width
        x = lc.critic_features(kind, jnp.ones((7, 10)), jnp.ones((7, 5)), jnp.ones((7, 3, 5)))
        assert x.shape == (7, width)
    mean = lc.critic_features("meanfield", jnp.zeros((1, 2)), jnp.zeros((1, 1)),
                              jnp.array([[[1.0], [3.0]]]))
    np.testing.assert_allclose(mean, [[0, 0, 0, 2.0]])


def test_team_groups_follow_the_teams():
    env, _ = make("simple_tag", num_predators=4, num_prey=2)
    groups = lc.make_groups(env.spec, "team")
    assert groups.count == 2
    np.testing.assert_array_equal(groups.of_agent, [0, 0, 0, 0, 1, 1])
    assert [b.agents.tolist() for b in groups.blocks] == [[[0, 1, 2, 3]], [[4, 5]]]
    per_agent = lc.make_groups(env.spec, "agent")
    assert per_agent.count == 6 and per_agent.blocks[0].agents.shape == (6, 1)


def _batch(env, params, key, bsz):
    """A replay-like batch ``[B, N, ...]`` of random joint steps."""
    obs = _states(env, params, key, bsz + 1)
    n, a = env.spec.num_agents, env.spec.act_dim
    ka, kr = jax.random.split(key)
    return Transition(obs=obs[:-1], action=jax.random.uniform(ka, (bsz, n, a)),
                      reward=jax.random.normal(kr, (bsz, n)), next_obs=obs[1:],
                      done=jnp.zeros((bsz, n)).at[0].set(1.0))


def _np_neighbours(pos, i, k):
    d = np.sqrt(((pos - pos[i]) ** 2).sum(-1))
    d[i] = np.inf
    return np.argsort(d, kind="stable")[:k]


@pytest.mark.parametrize("sharing, critic, batch", [
    ("agent", "knearest", "joint_steps"), ("team", "meanfield", "joint_steps"),
    ("team", "knearest", "joint_steps"), ("agent", "pic", "joint_steps"),
    ("team", "pic", "pairs")])
@pytest.mark.fast_cases(1)
def test_critic_targets_match_a_loop_over_agents(sharing, critic, batch):
    """y_i = r_i + gamma (1 - d_i) Q'_g(i)(o'_i, a'_i, a'_nb (, o'_nb)), computed agent by
    agent with numpy neighbours (MADDPG, deterministic continuous actors: no sampling
    noise)."""
    env, params = make("simple_tag", num_predators=5, num_prey=2, k_nearest=3,
                       continuous_actions=True)
    config = ActorCriticConfig(sharing=sharing, critic=critic, critic_k=3, shared_batch=batch)
    variant = variant_of("maddpg", env.spec, config)
    sk = lc.make_skeleton(env.spec, config, variant)
    batch = _batch(env, params, jax.random.PRNGKey(1), 4)
    state, blocks = _init_and_samples(sk, batch, jnp.ones(4))
    k, gamma = 3, config.gamma
    @jax.jit
    def target_q(g, i, nb, nxt):
        """The target critic of group ``g`` at agent ``i``'s next observation, with the
        target actors' next actions of ``i`` and of its neighbours ``nb``."""
        def act(j):
            actor = jax.tree.map(lambda leaf: leaf[jnp.asarray(sk.groups.of_agent)[j]],
                                 state.target_actor)
            return jax.nn.sigmoid(sk.actor_mlp.apply(actor, nxt[j]))

        x = lc.critic_features(critic, nxt[i], act(i), jax.vmap(act)(nb), nxt[nb])
        return sk.critic_mlp.apply(jax.tree.map(lambda c: c[g, 0], state.target_critic), x)[0]

    for block, s in zip(sk.groups.blocks, blocks, strict=True):
        group = lc_update._groups_of(sk, state, block)
        y = jax.jit(jax.vmap(lambda g, smp: lc_update.group_target(sk, g, smp)))(group, s)
        for gi in range(block.agents.shape[0]):
            g = block.first + gi
            for p in range(s.rows.shape[1]):
                row, i = int(s.rows[gi, p]), int(s.agents[gi, p])
                nxt = np.asarray(batch.next_obs[row])
                nb = _np_neighbours(nxt[:, 2:4], i, k)
                q = target_q(g, i, nb, nxt)
                want = batch.reward[row, i] + gamma * (1 - batch.done[row, i]) * q
                np.testing.assert_allclose(y[gi, p], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("critic", ["knearest", "pic"])
@pytest.mark.fast_cases(1)
def test_pairs_draw_one_agent_of_each_team_per_joint_step(critic):
    env, params = make("simple_tag", num_predators=6, num_prey=2, k_nearest=3)
    config = ActorCriticConfig(sharing="team", critic=critic, critic_k=3, shared_batch="pairs")
    sk = lc.make_skeleton(env.spec, config, variant_of("matd3", env.spec, config))
    batch = _batch(env, params, jax.random.PRNGKey(1), 5)
    state, blocks = _init_and_samples(sk, batch, jnp.arange(5.0))
    for block, s in zip(sk.groups.blocks, blocks, strict=True):
        assert s.rows.shape == (1, 5)
        np.testing.assert_array_equal(s.rows[0], np.arange(5))
        assert set(np.asarray(s.agents[0]).tolist()) <= set(block.agents[0].tolist())
        np.testing.assert_array_equal(s.weight[0], np.arange(5.0))
        for p in range(5):
            i = int(s.agents[0, p])
            nb = _np_neighbours(np.asarray(batch.obs[p, :, 2:4]), i, 3)
            np.testing.assert_array_equal(s.neighbour_action[0, p], batch.action[p, nb])
            np.testing.assert_array_equal(s.obs[0, p], batch.obs[p, i])
            if critic == "pic":
                np.testing.assert_array_equal(s.neighbour_obs[0, p], batch.obs[p, nb])
                nb_next = _np_neighbours(np.asarray(batch.next_obs[p, :, 2:4]), i, 3)
                np.testing.assert_array_equal(s.next_neighbour_obs[0, p],
                                              batch.next_obs[p, nb_next])
            else:
                assert s.neighbour_obs is None and s.next_neighbour_obs is None


@pytest.mark.slow
def test_team_loss_is_the_mean_of_its_agents_losses():
    """Shared parameters: the team's critic gradient is the mean of its agents' gradients."""
    env, params = make("simple_spread", num_agents=5, k_nearest=2)
    config = ActorCriticConfig(sharing="team", critic="knearest", critic_k=2)
    sk = lc.make_skeleton(env.spec, config, variant_of("maddpg", env.spec, config))
    batch = _batch(env, params, jax.random.PRNGKey(1), 3)
    state, (s,) = _init_and_samples(sk, batch, jnp.ones(3))
    s = jax.tree.map(lambda x: x[0], s)
    critic = jax.tree.map(lambda c: c[0], state.critic)
    y = jnp.linspace(-1, 1, s.rows.shape[0])
    grad = jax.jit(lambda smp, yy: jax.grad(
        lambda c: lc_update._critic_loss(c, sk, smp, yy)[0])(critic))
    whole = grad(s, y)
    per_agent = [grad(jax.tree.map(lambda x, i=i: x[s.agents == i], s), y[s.agents == i])
                 for i in range(5)]
    mean = jax.tree.map(lambda *g: sum(g) / 5, *per_agent)
    for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(mean), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("algo, sharing, critic, batch", [
    ("maddpg", "agent", "knearest", "joint_steps"),
    ("matd3", "team", "meanfield", "pairs"),
    ("masac", "team", "knearest", "joint_steps"),
    ("matd3", "team", "pic", "pairs"),
])
@pytest.mark.fast_cases(1)
def test_trains_under_jit(algo, sharing, critic, batch):
    config = TrainConfig(
        algo=algo, env="simple_tag", env_kwargs=(("k_nearest", 3), ("num_predators", 5)),
        num_envs=4, buffer_capacity=1000, batch_size=16, total_env_steps=600, eval_every=300,
        learning_starts=0, update_every=100, eval_episodes=1,
        learner=ActorCriticConfig(sharing=sharing, critic=critic, critic_k=3,
                               shared_batch=batch))
    state, metrics = jax.jit(make_train(config))(jax.random.PRNGKey(0))
    groups = 2 if sharing == "team" else 6
    assert jax.tree.leaves(state.algo.actor)[0].shape[0] == groups
    assert np.all(np.asarray(metrics.updates) > 0)
    for value in jax.tree.leaves(metrics):
        assert np.all(np.isfinite(np.asarray(value)))


def test_actor_gradient_flows_through_its_own_action_only():
    env, params = make("simple_spread", num_agents=4, k_nearest=2, continuous_actions=True)
    config = ActorCriticConfig(critic="knearest", critic_k=2)
    sk = lc.make_skeleton(env.spec, config, variant_of("maddpg", env.spec, config))
    batch = _batch(env, params, jax.random.PRNGKey(1), 3)
    state, (s,) = _init_and_samples(sk, batch, jnp.ones(3))
    s0 = jax.tree.map(lambda x: x[0], s)
    actor, critics = jax.tree.map(lambda x: x[0], state.actor), jax.tree.map(
        lambda c: c[0], state.critic)
    loss = lambda nb: lc_update._actor_loss(actor, sk, critics, s0._replace(neighbour_action=nb),
                                     jax.random.PRNGKey(0), jnp.zeros(()))[0]
    # the neighbours' actions are data: the actor's loss moves with them, its gradient
    # with respect to them is not part of the actor's update
    assert float(jnp.abs(jax.jit(jax.grad(loss))(s0.neighbour_action)).sum()) > 0
    g = jax.jit(jax.grad(lambda a: lc_update._actor_loss(a, sk, critics, s0, jax.random.PRNGKey(0),
                                                      jnp.zeros(()))[0]))(actor)
    assert all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree.leaves(g))


@pytest.mark.parametrize("kwargs, message", [
    ({"sharing": "team"}, "sharing 'team' needs a critic"),
    ({"sharing": "team", "critic": "knearest", "learners": "sequential"}, "learners"),
    ({"critic": "meanfield", "actor_step": "linear"}, "actor_step 'linear'"),
    ({"critic": "pic", "actor_step": "full"}, "actor_step 'full'"),
    ({"critic": "pic", "learners": "sequential"}, "learners 'sequential'"),
    ({"shared_batch": "pairs", "critic": "pic"}, "needs --sharing team"),
    ({"shared_batch": "pairs", "critic": "knearest"}, "needs --sharing team"),
    ({"critic": "nearest"}, "critic must be one of"),
    ({"critic_k": 0}, "critic_k must be an int >= 1"),
])
def test_bad_combinations_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        ActorCriticConfig(**kwargs)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("critic", ["knearest", "pic"])
def test_neighbourhood_larger_than_the_agents_is_refused(critic):
    env, _ = make("simple_spread", num_agents=4)
    with pytest.raises(ValueError, match="can see 1 to 3 other agents") as err:
        make_algo("maddpg", env.spec, ActorCriticConfig(critic=critic, critic_k=4))
    assert "\n" not in str(err.value)
    env, _ = make("simple_speaker_listener")
    with pytest.raises(ValueError, match="observations hold no positions") as err:
        make_algo("maddpg", env.spec, ActorCriticConfig(critic=critic, critic_k=1))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("critic", ["knearest", "pic"])
@pytest.mark.fast_cases(1)
def test_team_sharing_keeps_parameters_independent_of_the_agents(critic):
    small, _ = make("simple_spread", num_agents=4, k_nearest=3)
    large, _ = make("simple_spread", num_agents=40, k_nearest=3)
    config = ActorCriticConfig(sharing="team", critic=critic, critic_k=3)
    sizes = [sum(x.size for x in jax.tree.leaves(make_algo("maddpg", env.spec, config).init(
        jax.random.PRNGKey(0)))) for env in (small, large)]
    assert sizes[0] == sizes[1]
    joint = dataclasses.replace(config, sharing="agent")
    per_agent = make_algo("maddpg", large.spec, joint).init(jax.random.PRNGKey(0))
    assert jax.tree.leaves(per_agent.actor)[0].shape[0] == 40
