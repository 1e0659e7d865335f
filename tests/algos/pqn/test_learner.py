"""PQN's learner on its own: acting over the available actions, epsilon on the learner's
own clock, the VDN and independent losses, BatchNorm's statistics, and the one-line errors
of its settings."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos import make_algo
from jaxmarl_accel.algos.pqn import PQNConfig
from jaxmarl_accel.algos.pqn import learner as pqn
from jaxmarl_accel.algos.pqn.config import epsilon
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.envs import make
from jaxmarl_accel.types import Rollout

SMALL = PQNConfig(hidden_sizes=(8,), rollout_length=4, epochs=2, minibatches=2,
                  epsilon_anneal_steps=100)
HUNT = (("episode_length", 5), ("grid_size", 4), ("num_agents", 2), ("num_stags", 1))


def hunt_spec():
    return make("stag_hunt", **dict(HUNT))[0].spec


def fake_rollout(spec, key, steps: int = 4, envs: int = 3) -> Rollout:
    """A rollout of random observations and actions (leaves ``[T, E, ...]``)."""
    keys = jax.random.split(key, 4)
    n, a = spec.num_agents, spec.num_actions
    ended = jnp.zeros((steps, envs)).at[1, 0].set(1.0)
    return Rollout(obs=jax.random.uniform(keys[0], (steps, envs, n, spec.obs_dim)),
                   action=jax.random.randint(keys[1], (steps, envs, n), 0, a),
                   log_prob=jnp.zeros((steps, envs, n)),
                   value=jax.random.normal(keys[2], (steps, envs, n)),
                   reward=jax.random.normal(keys[3], (steps, envs, n)),
                   next_value=jnp.zeros((steps, envs, n)), terminated=ended, ended=ended)


def test_sample_takes_only_available_actions_and_values_their_best():
    spec = hunt_spec()
    algo = make_algo("pqn_vdn", spec, SMALL)
    state = algo.init(jax.random.PRNGKey(0))
    envs, n, a = 64, spec.num_agents, spec.num_actions
    obs = jax.random.uniform(jax.random.PRNGKey(1), (envs, n, spec.obs_dim))
    avail = jnp.zeros((envs, n, a), bool).at[..., 2].set(True).at[:, 0, 4].set(True)
    step, carry = jax.jit(algo.on_policy.sample)(state, (), obs, None, avail,
                                                 jax.random.PRNGKey(2))
    assert carry == ()
    taken = np.asarray(step.env_action)
    assert set(taken[:, 1]) == {2} and set(taken[:, 0]) <= {2, 4}
    assert len(set(taken[:, 0])) == 2  # epsilon 1 at the start: random over the available
    q = pqn.nets.q_values(pqn.make_skeleton("pqn_vdn", spec, SMALL).net, state.params,
                          state.batch_stats, obs)
    np.testing.assert_allclose(step.value[:, 1], q[:, 1, 2], atol=1e-6)
    np.testing.assert_allclose(step.value[:, 0], jnp.maximum(q[:, 0, 2], q[:, 0, 4]), atol=1e-6)
    greedy = jax.jit(algo.policy(False))
    action, one_hot, carry = greedy(state, (), jax.random.PRNGKey(3), obs[0], avail[0])
    assert carry == () and one_hot.shape == (n, a)
    assert int(action[1]) == 2 and int(action[0]) == int(jnp.where(
        q[0, 0, 2] >= q[0, 0, 4], 2, 4))


def test_epsilon_falls_on_the_env_steps_learned_from():
    spec = hunt_spec()
    algo = make_algo("pqn", spec, SMALL)
    state = algo.init(jax.random.PRNGKey(0))
    update = jax.jit(algo.update)
    for expected_steps in (12, 24):
        state, metrics, _ = update(state, fake_rollout(spec, jax.random.PRNGKey(1)), None,
                                   jax.random.PRNGKey(2))
        assert int(state.env_steps) == expected_steps
    assert int(state.updates) == 2 * SMALL.epochs * SMALL.minibatches
    np.testing.assert_allclose(metrics["epsilon"], 1.0 - 0.9 * 12 / 100, rtol=1e-6)
    np.testing.assert_allclose(epsilon(SMALL, jnp.array([0, 50, 100, 1000])),
                               [1.0, 0.55, 0.1, 0.1], rtol=1e-6)


@pytest.mark.parametrize("name", ["pqn", "pqn_vdn"])
def test_loss_is_the_squared_error_of_the_summed_or_each_agents_q(name):
    spec = hunt_spec()
    s = pqn.make_skeleton(name, spec, SMALL)
    state = pqn.init(s, jax.random.PRNGKey(0))
    rollout = fake_rollout(spec, jax.random.PRNGKey(1))
    obs, action = rollout.obs[0], rollout.action[0]  # [E, N, ...]
    q = pqn.nets.q_values(s.net, state.params, state.batch_stats, obs)
    taken = jnp.take_along_axis(q, action[..., None], -1)[..., 0]
    target = jnp.ones(obs.shape[:1] if name == "pqn_vdn" else obs.shape[:2])
    got, _ = pqn.loss(s, state.params, state.batch_stats, pqn.Minibatch(obs, action, target))
    predicted = taken.sum(-1) if name == "pqn_vdn" else taken
    np.testing.assert_allclose(got, jnp.mean((predicted - 1.0) ** 2), rtol=1e-5)
    returns = pqn.targets(s, rollout)
    assert returns.shape == ((4, 3) if name == "pqn_vdn" else (4, 3, spec.num_agents))


def test_batch_norm_learns_batch_statistics_and_acts_on_their_averages():
    spec = hunt_spec()
    config = dataclasses.replace(SMALL, norm="batch_norm", norm_input=True)
    algo = make_algo("pqn_vdn", spec, config)
    state = algo.init(jax.random.PRNGKey(0))
    assert state.batch_stats  # the input's and the hidden layer's running averages
    after, metrics, _ = jax.jit(algo.update)(state, fake_rollout(spec, jax.random.PRNGKey(1)),
                                             None, jax.random.PRNGKey(2))
    assert all(np.isfinite(float(v)) for v in metrics.values())
    moved = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), state.batch_stats,
                         after.batch_stats)
    assert all(jax.tree.leaves(moved))
    obs = jnp.ones((3, spec.num_agents, spec.obs_dim))  # acting: the same for one env or many
    one = algo.on_policy.value(after, (), obs[:1], None)
    np.testing.assert_allclose(algo.on_policy.value(after, (), obs, None)[:1], one, rtol=1e-6)
    assert make_algo("pqn", spec, SMALL).init(jax.random.PRNGKey(0)).batch_stats == {}


@pytest.mark.parametrize(("settings", "message"), [
    ({"agent": "rnn", "norm_input": True}, "agent 'rnn': the recurrent Q-network normalizes"),
    ({"norm": "group"}, "norm must be one of layer_norm, batch_norm, none"),
    ({"q_lambda": 1.5}, "q_lambda must lie in [0, 1]"),
    ({"minibatches": 0}, "minibatches must be an int >= 1"),
    ({"epsilon_start": 0.1, "epsilon_finish": 0.5}, "epsilon_finish must be <="),
])
def test_bad_settings_are_one_line(settings, message):
    with pytest.raises(ValueError) as error:
        PQNConfig(**settings)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_rollout_that_does_not_divide_into_minibatches_and_continuous_actions_are_refused():
    with pytest.raises(ValueError, match=r"minibatches \(3\) must divide the rollout's 16 joint "
                                         r"steps \(rollout_length 4 x num_envs 4\)"):
        TrainConfig(env="stag_hunt", env_kwargs=HUNT, algo="pqn", num_envs=4,
                    learner=dataclasses.replace(SMALL, minibatches=3))
    spread = make("simple_spread", continuous_actions=True)[0].spec
    with pytest.raises(ValueError, match="algo 'pqn_vdn' needs discrete actions"):
        make_algo("pqn_vdn", spread, SMALL)


def test_the_bootstrap_of_a_reached_observation_is_its_best_available_action():
    spec = hunt_spec()
    s = pqn.make_skeleton("pqn", spec, SMALL)
    algo = make_algo("pqn", spec, SMALL)
    state = algo.init(jax.random.PRNGKey(0))
    obs = jax.random.uniform(jax.random.PRNGKey(1), (16, spec.num_agents, spec.obs_dim))
    q = pqn.nets.q_values(s.net, state.params, state.batch_stats, obs)
    best = jnp.argmax(q, axis=-1)  # the unmasked argmax, made unavailable
    avail = ~jax.nn.one_hot(best, spec.num_actions, dtype=bool)
    masked = algo.on_policy.value(state, (), obs, None, avail)
    np.testing.assert_allclose(masked, jnp.max(jnp.where(avail, q, -jnp.inf), axis=-1),
                               rtol=1e-6)
    assert np.all(np.asarray(masked) < np.asarray(jnp.max(q, axis=-1)))
    np.testing.assert_array_equal(algo.on_policy.value(state, (), obs, None, None),
                                  jnp.max(q, axis=-1))


def test_the_rollout_bootstraps_its_last_step_over_the_actions_available_there():
    from jaxmarl_accel.envs.policies import available_actions
    from jaxmarl_accel.trainer.rounds.rollout import make_collect
    from jaxmarl_accel.trainer.train import make_trainer

    config = TrainConfig(env="stag_hunt", env_kwargs=HUNT, algo="pqn", num_envs=8,
                         total_env_steps=32, eval_every=32, eval_episodes=2, learner=SMALL)
    trainer = make_trainer(config)
    s = pqn.make_skeleton("pqn", trainer.env.spec, SMALL)
    state = trainer.init(jax.random.PRNGKey(0))
    after, rollout, _ = jax.jit(make_collect(config, trainer.env, trainer.env_params,
                                             trainer.algo))(state)
    assert not rollout.ended[-1].any()  # 4 steps of episodes of 5: the last step goes on
    q = pqn.nets.q_values(s.net, state.algo.params, state.algo.batch_stats, after.obs)
    avail = jax.vmap(available_actions, in_axes=(None, 0, None))(
        trainer.env, after.env_state, trainer.env_params)
    assert not avail.all()  # some agents stand at a wall
    masked = jnp.max(jnp.where(avail, q, -jnp.inf), axis=-1)
    np.testing.assert_allclose(rollout.next_value[-1], masked, rtol=1e-6)
    # the case this checks: somewhere the best action of all is not available
    assert np.any(np.asarray(jnp.max(q, axis=-1)) > np.asarray(masked))
    returns = pqn.targets(s, rollout)[-1]
    np.testing.assert_allclose(returns, SMALL.reward_scale * rollout.reward[-1]
                               + SMALL.gamma * masked, rtol=1e-5, atol=1e-6)
