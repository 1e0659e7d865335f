"""envs.tag_gridworld: golden scenarios per rule, shapes, jit / vmap, bad input, and step for
step against WarpDrive's numpy ``TagGridWorld`` (``WARPDRIVE_SRC``)."""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.envs import make
from jaxmarl_accel.envs import tag_gridworld as tg
from tests.envs.warpdrive_reference import load, requires_warpdrive

KEY = jax.random.PRNGKey(0)
STAY, RIGHT, LEFT, UP, DOWN = range(5)


def _env(**kwargs):
    return _cached_env(tuple(sorted(kwargs.items())))


@functools.cache
def _cached_env(kwargs):
    # one compiled step per configuration for the whole module
    env, params = make("tag_gridworld", **dict(kwargs))
    return env, params, jax.jit(env.step)


def _at(params, cells):
    return tg.initial_state(params).replace(pos=jnp.asarray(cells, jnp.int32))


def test_defaults_and_spec():
    env, params = make("tag_gridworld")
    assert env.spec.teams == ("tagger",) * 4 + ("runner",)
    assert env.spec.obs_dim == 4 * 5 + 1 and env.spec.num_actions == 5
    assert env.spec.episode_stats == ("tags", "steps_before_first_tag") and env.spec.terminates
    assert int(params.grid_length) == 100 and int(params.episode_length) == 100
    obs, state = env.reset(KEY, params)
    np.testing.assert_array_equal(state.pos, [[50, 50]] * 4 + [[0, 0]])


def test_tag_rewards_terminates_and_resets():
    env, params, step = _env(num_taggers=2, grid_length=4, use_full_observation=False)
    state = _at(params, [[1, 0], [3, 3], [0, 0]])
    obs, new, reward, terminated, truncated, info = step(KEY, state, jnp.array([LEFT, STAY,
                                                                                 STAY]), params)
    np.testing.assert_allclose(reward, [10.0, 10.0, -5.0])  # every tagger shares the tag
    assert bool(terminated) and not bool(truncated) and int(info["tags"]) == 1
    np.testing.assert_array_equal(info["still_in_the_game"], [True, True, False])
    np.testing.assert_array_equal(new.pos, params.start)  # auto-reset
    np.testing.assert_array_equal(obs, env.reset(KEY, params)[0])
    # the final observation is taken before the runner leaves: it sees its nearest tagger
    np.testing.assert_allclose(info["final_obs"][2], [0, 0, 0, 0, 1, 0.01])


def test_no_tag_step_cost_and_walls():
    env, params, step = _env(num_taggers=2, grid_length=4)
    state = _at(params, [[4, 2], [2, 0], [0, 4]])
    _, new, reward, terminated, truncated, info = step(KEY, state, jnp.array([RIGHT, DOWN,
                                                                               UP]), params)
    np.testing.assert_array_equal(new.pos, [[4, 2], [2, 0], [0, 4]])  # clipped at the edges
    np.testing.assert_allclose(reward, [-0.11, -0.11, -0.09], rtol=1e-6)
    assert not bool(terminated | truncated) and int(info["tags"]) == 0
    assert int(info["steps_before_first_tag"]) == 1  # nobody tagged yet
    _, new, reward, *_ = step(KEY, state, jnp.array([LEFT, UP, RIGHT]), params)
    np.testing.assert_array_equal(new.pos, [[3, 2], [2, 1], [1, 4]])  # the edge cell is on
    np.testing.assert_allclose(reward, [-0.01, -0.01, 0.01], rtol=1e-6)


def test_time_limit_truncates():
    env, params, step = _env(num_taggers=1, grid_length=4, episode_length=3)
    _, state = env.reset(KEY, params)
    for _ in range(3):
        obs, state, _, terminated, truncated, info = step(KEY, state, jnp.array([0, 0]), params)
    assert bool(truncated) and not bool(terminated) and int(state.step) == 0
    assert float(info["final_obs"][0, -1]) == 1.0 and float(obs[0, -1]) == 0.0


def test_runners_exit_one_by_one():
    env, params, step = _env(num_taggers=2, num_runners=3, grid_length=4,
                             use_full_observation=False)
    state = _at(params, [[1, 1], [3, 3], [1, 2], [3, 2], [0, 4]])
    _, state, reward, terminated, _, info = step(KEY, state, jnp.array([UP, DOWN, 0, 0, 0]),
                                                 params)
    assert int(info["tags"]) == 2 and not bool(terminated)
    assert int(info["steps_before_first_tag"]) == 0  # this step tagged
    np.testing.assert_allclose(reward, [20.0, 20.0, -5.0, -5.0, 0.01])
    np.testing.assert_array_equal(state.in_game, [True, True, False, False, True])
    obs, state, reward, *_ = step(KEY, state, jnp.array([0, 0, RIGHT, RIGHT, 0]), params)
    np.testing.assert_array_equal(state.pos[2:4], [[1, 2], [3, 2]])  # out: they stay
    np.testing.assert_allclose(reward, [-0.01, -0.01, 0.0, 0.0, 0.01])
    np.testing.assert_array_equal(obs[2:4], 0.0)
    np.testing.assert_allclose(obs[0, 2:4], [0.0, 1.0])  # the only runner left: (0, 4)
    state = state.replace(pos=state.pos.at[4].set(jnp.array([1, 3])))
    _, _, _, terminated, _, info = step(KEY, state, jnp.array([0, 0, 0, 0, DOWN]), params)
    assert bool(terminated) and int(info["tags"]) == 1


def test_full_observation_layout():
    env, params, step = _env(num_taggers=2, grid_length=4)
    params = params.replace(episode_length=jnp.asarray(10, jnp.int32))
    state = _at(params, [[1, 2], [3, 4], [0, 1]])
    obs = tg.observe(state, params, 2, True)
    expect = [0.25, 0.75, 0.0, 0.5, 1.0, 0.25, 0, 0, 1, 0, 1, 0, 0.0]
    np.testing.assert_allclose(obs[1], expect)


@pytest.mark.parametrize("taggers,runners,full", [(1, 1, True), (999, 1, False),
                                                   (500, 500, False)])
def test_shapes_jit_and_vmap(taggers, runners, full):
    env, params = make("tag_gridworld", num_taggers=taggers, num_runners=runners,
                       use_full_observation=full)
    n, envs = taggers + runners, 3

    @jax.jit
    def run(keys):
        obs, state = jax.vmap(env.reset, (0, None))(keys, params)
        actions = jax.vmap(env.random_action)(keys)
        return obs, jax.vmap(env.step, (0, 0, 0, None))(keys, state, actions, params)

    obs, out = run(jax.random.split(KEY, envs))
    assert obs.shape == out[0].shape == (envs, n, env.spec.obs_dim)
    assert out[2].shape == (envs, n) and out[2].dtype == jnp.float32
    assert out[5]["tags"].shape == (envs,)


def test_scripted_taggers_catch_a_still_runner():
    env, params, step = _env(num_taggers=3, grid_length=10, use_full_observation=False)
    _, state = env.reset(KEY, params)
    policy = jax.jit(env.scripted_action)
    steps = 0
    terminated = False
    while not terminated and steps < 20:
        actions = policy(KEY, state, params).at[3].set(STAY)
        _, state, _, terminated, _, info = step(KEY, state, actions, params)
        steps += 1
    assert bool(terminated) and steps == 10  # 10 steps from (5, 5) to (0, 0)


def test_scripted_runner_flees():
    env, params = make("tag_gridworld", num_taggers=1, grid_length=10)
    state = _at(params, [[5, 5], [6, 5]])
    assert jax.jit(env.scripted_action)(KEY, state, params).tolist() == [RIGHT, RIGHT]


@pytest.mark.parametrize("kwargs,name", [
    ({"num_taggers": 0}, "num_taggers"), ({"num_runners": -1}, "num_runners"),
    ({"grid_length": 0}, "grid_length"), ({"episode_length": 0}, "episode_length"),
    ({"num_taggers": 9, "grid_length": 2}, "num_taggers + num_runners"),
    ({"wall_hit_penalty": float("nan")}, "wall_hit_penalty"),
    ({"starting_location_x": [0, 0]}, "starting_location")])
def test_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=re.escape(name)):
        make("tag_gridworld", **kwargs)


@requires_warpdrive
@pytest.mark.parametrize("full", [True, False])
def test_step_for_step_with_warpdrive(full):
    reference = load("tag_gridworld.tag_gridworld", "TagGridWorld")
    kwargs = {"num_taggers": 4, "grid_length": 5, "episode_length": 60,
              "use_full_observation": full, "wall_hit_penalty": 0.1,
              "tag_reward_for_tagger": 10.0, "tag_penalty_for_runner": 5.0,
              "step_cost_for_tagger": 0.01}
    ref = reference(**kwargs)
    env, params, step = _env(**kwargs)
    n, rng = 5, np.random.default_rng(int(full))
    for _episode in range(3):
        ref_obs = ref.reset()
        obs, state = env.reset(KEY, params)
        for t in range(60):
            np.testing.assert_allclose(obs, np.stack([ref_obs[i] for i in range(n)]),
                                       rtol=0, atol=1e-7)
            actions = rng.integers(0, 5, n)
            ref_obs, ref_rew, ref_done, _ = ref.step({i: int(a) for i, a in enumerate(actions)})
            obs, state, reward, terminated, truncated, info = step(
                KEY, state, jnp.asarray(actions, jnp.int32), params)
            np.testing.assert_array_equal(reward, np.float32([ref_rew[i] for i in range(n)]))
            assert ref_done["__all__"] == bool(terminated | truncated)
            obs = info["final_obs"]
            if ref_done["__all__"]:
                assert int(info["tags"]) == int(bool(terminated))
                break
            np.testing.assert_array_equal(state.pos[:, 0], ref.global_state["loc_x"][t + 1])
            np.testing.assert_array_equal(state.pos[:, 1], ref.global_state["loc_y"][t + 1])
