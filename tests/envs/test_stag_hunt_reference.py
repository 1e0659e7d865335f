"""envs.stag_hunt against the DCG authors' own stag hunt (Böhmer et al., 2020), side by side.

Both run the uniform random policy over available actions for a few hundred episodes with the
settings of DCG's ``rel_overgen.yaml`` (punishment as given); mean episode returns and
captures must agree within 4 standard errors of their difference. The reference is a local
copy of the DCG repository's ``src`` folder named by ``JAXMARL_ACCEL_DCG_SRC`` (the test is
skipped without it); it needs only numpy (its unused ``torch`` / ``pygame`` imports are
stubbed when those are not installed). Takes several minutes: the reference is pure Python.
"""

from __future__ import annotations

import importlib
import os
import sys
import types

import jax
import numpy as np
import pytest

from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.evaluate import evaluate_policy
from jaxmarl_accel.envs.policies import random_policy

DCG_SRC = os.environ.get("JAXMARL_ACCEL_DCG_SRC", "")
pytestmark = pytest.mark.skipif(
    not os.path.isfile(os.path.join(DCG_SRC, "envs", "stag_hunt.py")),
    reason="set JAXMARL_ACCEL_DCG_SRC to the DCG repository's src folder")

# DCG's rel_overgen.yaml (the relative-overgeneralization stag hunt), agent counts and
# punishment set per case.
DCG_ARGS = dict(
    world_shape=(10, 10), toroidal=False, agent_obs=(2, 2), agent_move_block=[0, 1, 2],
    capture_action=True, capture_conditions=[0, 1], capture_action_conditions=[2, 1],
    capture_freezes=True, capture_terminal=False, directed_observations=False,
    episode_limit=200, mountain_slope=0.0, mountain_spawn=False, mountain_agent_row=-1,
    n_hare=0, observe_state=False, observe_walls=False, observe_ids=False,
    observe_one_hot=False, p_stags_rest=0.0, p_hare_rest=0.0, prevent_cannibalism=True,
    print_caught_prey=False, print_frozen_agents=False, random_ghosts=False,
    remove_frozen=True, reward_hare=1, reward_stag=10, reward_collision=0, reward_time=0,
    state_as_graph=False)


@pytest.fixture(scope="module")
def dcg_stag_hunt():
    """The reference's ``StagHunt`` class, imported without its package's other envs."""
    before = set(sys.modules)
    saved_path = list(sys.path)
    for name in ("torch", "pygame"):
        if importlib.util.find_spec(name) is None:
            sys.modules[name] = types.ModuleType(name)
    package = types.ModuleType("envs")
    package.__path__ = [os.path.join(DCG_SRC, "envs")]
    sys.modules["envs"] = package
    sys.path.insert(0, DCG_SRC)
    try:
        yield importlib.import_module("envs.stag_hunt").StagHunt
    finally:
        sys.path[:] = saved_path
        for name in set(sys.modules) - before:
            del sys.modules[name]


def _reference_episodes(stag_hunt_cls, agents, stags, punishment, episodes, seed):
    """Returns and captures ``[episodes]`` of the reference under the random policy."""
    env = stag_hunt_cls(batch_size=1, n_agents=agents, n_stags=stags,
                        miscapture_punishment=punishment, **DCG_ARGS)
    np.random.seed(seed)  # the reference draws from numpy's global generator
    rng = np.random.default_rng(seed)
    returns, captures = np.zeros(episodes), np.zeros(episodes)
    for e in range(episodes):
        env.reset()
        for _ in range(DCG_ARGS["episode_limit"]):
            avail = np.asarray(env.get_avail_actions())
            actions = np.array([rng.choice(np.flatnonzero(row)) for row in avail])
            alive = int(env.prey_alive.sum())
            reward, terminated, _ = env.step(actions[:, None])
            returns[e] += float(reward[0])
            captures[e] += alive - int(env.prey_alive.sum())
            if terminated[0]:
                break
    return returns, captures


def _agree(ours, theirs, what):
    diff = ours.mean() - theirs.mean()
    se = np.sqrt(ours.var(ddof=1) / ours.size + theirs.var(ddof=1) / theirs.size)
    text = (f"{what}: ours {ours.mean():.3f} ({ours.size} episodes) vs DCG "
            f"{theirs.mean():.3f} ({theirs.size}); difference {diff:+.3f} = {diff / se:+.2f} "
            "standard errors")
    print(text)
    assert abs(diff) <= 4 * se + 1e-6, text


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the reference's numpy calls
@pytest.mark.parametrize("agents,stags,punishment,episodes",
                         [(8, 8, 0.0, 300), (16, 16, 0.0, 200), (8, 8, -1.5, 200)])
def test_random_policy_agrees_with_dcg(dcg_stag_hunt, agents, stags, punishment, episodes):
    env, params = make("stag_hunt", num_agents=agents, num_stags=stags,
                       miscapture_punishment=punishment)
    ours = evaluate_policy(env, params, random_policy(env), jax.random.PRNGKey(agents),
                           max(episodes, 1000))
    our_returns = np.asarray(ours.episode_returns[:, 0])
    our_captures = np.asarray(ours.stats["captures"], np.float64)
    returns, captures = _reference_episodes(dcg_stag_hunt, agents, stags, punishment,
                                            episodes, seed=agents)
    _agree(our_returns, returns, f"{agents}/{stags} punishment {punishment} return")
    _agree(our_captures, captures, f"{agents}/{stags} punishment {punishment} captures")
