"""simple_tag: step-for-step parity with jaxmarl 0.2.0 (3 predators, 1 prey) and mpe2."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxmarl.environments.mpe.simple_tag import SimpleTagMPE
from mpe2 import simple_tag_v3

from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.mpe import simple_tag
from jaxmarl_accel.envs.policies import team_rows
from tests.envs.mpe_reference import compare_jaxmarl, compare_mpe2, our_rollouts, seed_keys
from tests.envs.rollouts import check_shape_bound_functions, mixed_policy

TOL = 1e-5
SEEDS = [0, 1, 2]


def _chasing(env):
    """Scripted predators, random prey: contacts (and their rewards) happen often."""
    return mixed_policy(env, team_rows(env, "predator"))


def test_tag_3v1_matches_jaxmarl():
    env, params = make("simple_tag")
    ref = SimpleTagMPE()
    ours = our_rollouts(env, params, seed_keys(SEEDS), _chasing(env))
    assert compare_jaxmarl(ref, ours).max_diff() < TOL


@pytest.mark.parametrize(
    "num_predators,num_prey,num_obstacles,continuous",
    [(1, 1, 0, False), (4, 3, 1, False), (6, 2, 3, True)])
@pytest.mark.fast_cases(1)
def test_tag_matches_mpe2(num_predators, num_prey, num_obstacles, continuous):
    env, params = make("simple_tag", num_predators=num_predators, num_prey=num_prey,
                       num_obstacles=num_obstacles, continuous_actions=continuous)
    ref = simple_tag_v3.parallel_env(num_good=num_prey, num_adversaries=num_predators,
                                     num_obstacles=num_obstacles, continuous_actions=continuous)
    ours = our_rollouts(env, params, seed_keys(SEEDS[:2]), _chasing(env))
    assert compare_mpe2(ref, ours).max_diff() < TOL
    assert np.abs(ours.rewards).sum() > 0  # the comparison covered captures or boundary penalties


def test_k_nearest_matches_mpe2_partial_observability():
    env, params = make("simple_tag", num_predators=5, num_prey=3, num_obstacles=2, k_nearest=3)
    ref = simple_tag_v3.parallel_env(num_good=3, num_adversaries=5, num_obstacles=2,
                                     num_agent_neighbors=3, num_landmark_neighbors=2)
    ours = our_rollouts(env, params, seed_keys(SEEDS[:2]), _chasing(env))
    assert compare_mpe2(ref, ours).max_diff() < TOL


def test_jaxmarl_tag_deviates_beyond_3v1():
    """Why tag with several prey is checked against mpe2: jaxmarl's observation is wrong."""
    env, params = make("simple_tag", num_predators=2, num_prey=2, num_obstacles=1)
    assert env.spec.obs_sizes == (4 + 2 + 6 + 4,) * 2 + (4 + 2 + 6 + 2,) * 2
    ref = SimpleTagMPE(num_good_agents=2, num_adversaries=2, num_obs=1)
    obs, _ = ref.reset(jax.random.PRNGKey(0))
    assert obs["adversary_0"].shape[0] != env.spec.obs_sizes[0]


def test_own_predator_reward_splits_the_shared_reward():
    """``predator_reward="own"``: the same dynamics, the predators' rewards are the shared
    reward's contacts counted per predator (they sum to it), the prey's are unchanged."""
    kw = dict(num_predators=6, num_prey=3, num_obstacles=1)
    shared_env, params = make("simple_tag", **kw)
    own_env, own_params = make("simple_tag", predator_reward="own", **kw)
    keys = seed_keys(SEEDS)
    shared = our_rollouts(shared_env, params, keys, _chasing(shared_env))
    own = our_rollouts(own_env, own_params, keys, _chasing(own_env))
    np.testing.assert_array_equal(own.obs, shared.obs)
    pred_own, pred_shared = own.rewards[..., :6], shared.rewards[..., :6]
    np.testing.assert_allclose(pred_own.sum(-1), pred_shared[..., 0], rtol=1e-6)
    np.testing.assert_array_equal(own.rewards[..., 6:], shared.rewards[..., 6:])
    assert pred_shared.sum() > 0 and (pred_own >= 0).all()
    assert np.all(pred_own % 10 == 0)
    assert (pred_own != pred_own[..., :1]).any()  # contacts differ between predators


def _still_state(env, params, key, pos):
    """The reset state of ``env`` with its entities moved to ``pos`` [N + K, 2], at rest."""
    _, state = env.reset(key, params)
    return state.replace(pos=jnp.asarray(pos, jnp.float32),
                         vel=jnp.zeros_like(state.vel))


@pytest.mark.parametrize("arena", [0.5, 3.0])
@pytest.mark.fast_cases(1)
def test_arena_scales_the_start_box_and_the_prey_boundary(arena):
    env, params = make("simple_tag", num_predators=40, num_prey=20, num_obstacles=10,
                       arena=arena)
    _, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(
        jax.random.split(jax.random.key(0), 64), params)
    agents, obstacles = np.abs(np.asarray(state.pos[:, :60])), np.abs(np.asarray(state.pos[:, 60:]))
    assert agents.max() <= arena and agents.max() > 0.95 * arena
    assert obstacles.max() <= 0.9 * arena and obstacles.max() > 0.85 * arena
    # one prey at 0.95 s, 1.05 s and 1.5 s of the box (no contacts): the penalty of pos / s
    one, one_params = make("simple_tag", num_predators=1, num_prey=1, num_obstacles=0)
    big, big_params = make("simple_tag", num_predators=1, num_prey=1, num_obstacles=0,
                           arena=arena)
    still = jnp.zeros(2, jnp.int32)  # no move
    for x in (0.95, 1.05, 1.5):
        pos = np.array([[-0.5, 0.0], [x, 0.3]])
        want = one.step(jax.random.key(1), _still_state(one, one_params, jax.random.key(2), pos),
                        still, one_params)[2]
        got = big.step(jax.random.key(1), _still_state(big, big_params, jax.random.key(2),
                                                       pos * arena), still, big_params)[2]
        np.testing.assert_allclose(got, want, rtol=1e-5)
        assert want[1] < 0  # the prey is penalized


def test_scripted_prey_stay_in_a_larger_box():
    """Scripted prey against random predators keep inside the scaled box and use it."""
    env, params = make("simple_tag", num_predators=12, num_prey=4, num_obstacles=2, arena=3.0)
    rolls = our_rollouts(env, params, seed_keys(SEEDS), mixed_policy(env, team_rows(env, "prey")),
                         num_steps=75)
    prey = np.abs(np.asarray(rolls.states.pos[..., 12:16, :]))
    assert 1.5 < prey.max() < 3.0  # beyond mpe2's box, inside this one


@pytest.mark.parametrize("kwargs,match", [
    (dict(arena=0.0), "arena must be a number > 0"),
    (dict(arena=True), "arena must be a number > 0"),
    (dict(predator_reward="mine"), "predator_reward must be one of"),
])
def test_tag_rejects_bad_arena_and_reward(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make("simple_tag", **kwargs)


def test_module_functions_bound_to_a_shape_are_what_the_env_runs():
    env, params = make("simple_tag", num_predators=4, num_prey=2, num_obstacles=3, k_nearest=3)
    shape = simple_tag.TagShape(num_predators=4, num_prey=2, num_obstacles=3, k_nearest=3,
                                k_landmarks=3, obs_dim=env.spec.obs_dim, continuous=False,
                                predator_reward="shared")
    check_shape_bound_functions(simple_tag, shape, env, params, jnp.array([5, 0]))
