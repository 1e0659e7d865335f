"""simple_tag: step-for-step parity with jaxmarl 0.2.0 (3 predators, 1 prey) and mpe2."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jaxmarl.environments.mpe.simple_tag import SimpleTagMPE
from mpe2 import simple_tag_v3

from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.policies import team_rows
from tests.envs.mpe_reference import compare_jaxmarl, compare_mpe2, our_rollouts, seed_keys
from tests.envs.rollouts import mixed_policy

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
