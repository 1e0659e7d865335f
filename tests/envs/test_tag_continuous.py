"""envs.tag_continuous: golden scenarios per rule, shapes, jit / vmap, bad input, and side by
side with WarpDrive's numpy ``TagContinuous`` (``WARPDRIVE_SRC``): the seeded start, every
step from the same state and actions, and tag counts under random actions."""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.envs import make
from jaxmarl_accel.envs import tag_continuous as tc
from jaxmarl_accel.envs.tag_continuous_setup import warpdrive_order
from tests.envs.warpdrive_reference import load, requires_warpdrive

KEY = jax.random.PRNGKey(0)
TURNS = 21  # default num_turn_levels + 1
# joint action indices with the default levels: acceleration index * 21 + turn index
NOOP, SPEED_UP, SLOW_DOWN, LEFT_TURN = 0, 20 * TURNS, 1 * TURNS, 20
SMALL = {"num_taggers": 1, "num_runners": 2, "grid_length": 10.0, "episode_length": 20,
         "num_other_agents_observed": 2, "tagging_distance": 0.05, "edge_hit_penalty": -0.5}


def _env(**kwargs):
    return _cached_env(tuple(sorted({**SMALL, **kwargs}.items())))


@functools.cache
def _cached_env(kwargs):
    # one compiled step per configuration for the whole module
    env, params = make("tag_continuous", **dict(kwargs))
    return env, params, jax.jit(env.step)


def _at(params, x, y, direction=None, speed=None):
    n = len(x)
    state = tc.initial_state(KEY, params, False)
    return state.replace(x=jnp.asarray(x, jnp.float32), y=jnp.asarray(y, jnp.float32),
                         direction=jnp.zeros(n) if direction is None else jnp.asarray(
                             direction, jnp.float32),
                         speed=jnp.zeros(n) if speed is None else jnp.asarray(speed, jnp.float32))


def test_defaults_and_spec():
    env, params = make("tag_continuous")
    assert env.spec.teams == ("tagger",) * 10 + ("runner",) * 100
    assert env.spec.obs_dim == 7 * 10 + 1 and env.spec.num_actions == 21 * 21
    assert env.spec.terminates
    assert env.spec.episode_stats == ("tags", "steps_before_first_tag")
    assert float(params.tagging_margin) == pytest.approx(0.4)
    np.testing.assert_allclose(np.asarray(params.acceleration_actions)[[0, 1, 20]], [0, -0.1, 0.1])
    acc, turn = tc.split_action(jnp.arange(441), TURNS)
    np.testing.assert_array_equal(tc.join_action(acc, turn, TURNS), jnp.arange(441))


def test_acceleration_accumulates_and_caps():
    env, params, step = _env()
    state = _at(params, [1.0, 5.0, 9.0], [1.0, 5.0, 9.0])
    _, state, *_ = step(KEY, state, jnp.array([NOOP, SPEED_UP, NOOP]), params)
    np.testing.assert_allclose([state.acceleration[1], state.speed[1], state.x[1]],
                               [0.1, 0.1, 5.1], rtol=1e-6)
    _, state, *_ = step(KEY, state, jnp.array([NOOP, NOOP, NOOP]), params)
    np.testing.assert_allclose([state.speed[1], state.x[1]], [0.2, 5.3], rtol=1e-6)
    for _ in range(6):
        _, state, *_ = step(KEY, state, jnp.array([NOOP, SPEED_UP, NOOP]), params)
    assert float(state.speed[1]) == 1.0 and float(state.acceleration[1]) == 0.0  # capped
    _, state, *_ = step(KEY, state, jnp.array([NOOP, LEFT_TURN, NOOP]), params)
    np.testing.assert_allclose(state.direction[1], 2.356, rtol=1e-6)


def test_edges_clip_and_penalize():
    env, params, step = _env()
    state = _at(params, [9.5, 5.0, 1.0], [9.5, 5.0, 1.0], speed=[0.9, 0.0, 0.0])
    _, state, reward, *_ = step(KEY, state, jnp.array([NOOP, NOOP, NOOP]), params)
    assert float(state.x[0]) == 10.0 and float(state.y[0]) == 9.5
    np.testing.assert_allclose(reward, [-0.5, 0.0, 0.0])


def test_tags_go_to_the_nearest_tagger_and_runners_exit():
    env, params, step = _env(num_taggers=2, num_runners=3, num_other_agents_observed=3)
    x, y = [2.0, 8.0, 2.3, 1.8, 7.0], [2.0, 8.0, 2.0, 2.1, 8.0]
    state = _at(params, x, y)
    obs, state, reward, terminated, _, info = step(KEY, state, jnp.zeros(5, jnp.int32), params)
    np.testing.assert_allclose(reward, [20.0, 0.0, -10.0, -10.0, 0.0])  # runner 4 is 1 away
    assert int(info["tags"]) == 2 and not bool(terminated)
    assert int(info["steps_before_first_tag"]) == 0  # this step tagged
    np.testing.assert_array_equal(state.in_game, [True, True, False, False, True])
    assert np.any(np.asarray(obs[2:4]) != 0.0, axis=1).all()  # observed before the exit
    obs, state, reward, *_ = step(KEY, state, jnp.full(5, SPEED_UP, jnp.int32), params)
    np.testing.assert_array_equal(state.speed[2:4], 0.0)  # out of the game: they stop
    np.testing.assert_array_equal(obs[2:4], 0.0)
    np.testing.assert_array_equal(reward[2:4], 0.0)
    # agent 0 sees two agents in the game (1 and 4); its third column is padding
    flags = np.asarray(obs[0, 6 * 3:7 * 3])
    np.testing.assert_array_equal(flags, [1.0, 1.0, 0.0])
    state = state.replace(x=state.x.at[4].set(state.x[1]), y=state.y.at[4].set(state.y[1]))
    _, _, _, terminated, _, info = step(KEY, state, jnp.zeros(5, jnp.int32), params)
    assert bool(terminated) and int(info["tags"]) == 1


def test_runners_stay_when_exits_are_off():
    env, params, step = _env(runner_exits_game_after_tagged=False)
    assert not env.spec.terminates
    state = _at(params, [2.0, 2.2, 9.0], [2.0, 2.0, 9.0])
    for _ in range(2):
        _, state, reward, terminated, _, info = step(KEY, state, jnp.zeros(3, jnp.int32),
                                                     params)
        np.testing.assert_allclose(reward, [10.0, -10.0, 0.0])
        assert int(info["tags"]) == 1 and not bool(terminated)
        assert "steps_before_first_tag" not in info and env.spec.episode_stats == ("tags",)


def test_end_of_game_reward_and_truncation():
    env, params, step = _env()
    params = params.replace(episode_length=jnp.asarray(2, jnp.int32))
    state = _at(params, [2.0, 2.2, 9.0], [2.0, 2.0, 9.0])
    _, state, reward, *_ = step(KEY, state, jnp.zeros(3, jnp.int32), params)
    np.testing.assert_allclose(reward, [10.0, -10.0, 0.0])
    obs, state, reward, terminated, truncated, info = step(KEY, state, jnp.zeros(3, jnp.int32),
                                                           params)
    np.testing.assert_allclose(reward, [0.0, 0.0, 1.0])  # only the runner still in the game
    assert bool(truncated) and not bool(terminated) and int(state.step) == 0
    assert float(info["final_obs"][0, -1]) == 1.0 and float(obs[0, -1]) == 0.0


def test_observation_layout():
    env, params, _ = _env(num_other_agents_observed=1, max_speed=2.0)
    state = _at(params, [1.0, 3.0, 9.0], [1.0, 2.0, 1.0], direction=[0.0, np.pi, 0.0],
                speed=[0.5, 1.0, 0.0])
    diagonal = 10.0 * np.sqrt(2.0)
    expect = [2 / diagonal, 1 / diagonal, 0.25, 0.0, 0.5, 0.0, 1.0, 0.0]
    observe = jax.jit(tc.observe, static_argnums=(2, 3))
    np.testing.assert_allclose(observe(state, params, 1, 1)[0], expect, rtol=1e-6)
    full = observe(state.replace(in_game=jnp.array([True, True, False])), params, 1, None)
    assert full.shape == (3, 7 * 2 + 1)
    np.testing.assert_allclose(full[2], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0])


@pytest.mark.parametrize("taggers,runners,k,full", [(1, 1, 1, True), (10, 990, 10, False)])
def test_shapes_jit_and_vmap(taggers, runners, k, full):
    env, params = make("tag_continuous", num_taggers=taggers, num_runners=runners,
                       num_other_agents_observed=k, use_full_observation=full)
    n, envs = taggers + runners, 2

    @jax.jit
    def run(keys):
        obs, state = jax.vmap(env.reset, (0, None))(keys, params)
        actions = jax.vmap(env.scripted_action, (0, 0, None))(keys, state, params)
        return obs, state, actions, jax.vmap(env.step, (0, 0, 0, None))(keys, state, actions,
                                                                         params)

    obs, state, actions, out = run(jax.random.split(KEY, envs))
    assert actions.shape == (envs, n) and int(actions.max()) < env.spec.num_actions
    assert obs.shape == out[0].shape == (envs, n, env.spec.obs_dim)
    assert out[2].shape == (envs, n) and out[5]["tags"].shape == (envs,)
    assert np.all((np.asarray(state.x) >= 0) & (np.asarray(state.x) < 20.0))


def test_scripted_tagger_turns_and_speeds_towards_its_runner():
    env, params = make("tag_continuous", **SMALL)
    state = _at(params, [5.0, 5.0, 9.0], [5.0, 8.0, 9.0])  # runner 1 straight up (pi/2)
    acc, turn = tc.split_action(jax.jit(env.scripted_action)(KEY, state, params)[0], TURNS)
    np.testing.assert_allclose(params.turn_actions[turn], np.pi / 2, atol=0.13)
    assert float(params.acceleration_actions[acc]) == pytest.approx(0.1)


@pytest.mark.parametrize("kwargs,name", [
    ({"num_taggers": 0}, "num_taggers"), ({"num_runners": -2}, "num_runners"),
    ({"tagging_distance": 0.0}, "tagging_distance"), ({"tagging_distance": -1}, "tagging_distance"),
    ({"grid_length": 0.0}, "grid_length"), ({"episode_length": 0}, "episode_length"),
    ({"num_other_agents_observed": 3}, "num_other_agents_observed"),
    ({"starting_location_x": [1.0, 2.0, 3.0]}, "starting_location_y"),
    ({"seed": 1, "starting_directions": [0.0]}, "starting_directions")])
def test_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=re.escape(name)):
        make("tag_continuous", **{**SMALL, **kwargs})


WD_CONFIG = {"num_taggers": 2, "num_runners": 10, "grid_length": 5.0, "episode_length": 40,
             "max_acceleration": 0.1, "min_acceleration": -0.1, "max_turn": 2.356,
             "min_turn": -2.356, "num_acceleration_levels": 20, "num_turn_levels": 20,
             "edge_hit_penalty": -0.1, "num_other_agents_observed": 4, "tagging_distance": 0.08,
             "tag_reward_for_tagger": 10.0, "tag_penalty_for_runner": -10.0,
             "step_penalty_for_tagger": -0.01, "step_reward_for_runner": 0.01,
             "end_of_game_reward_for_runner": 1.0}


def _reference(full: bool, exits: bool, seed: int):
    config = {**WD_CONFIG, "use_full_observation": full, "runner_exits_game_after_tagged": exits}
    ref = load("tag_continuous.tag_continuous", "TagContinuous")(seed=seed, **config)
    env, params = make("tag_continuous", seed=seed, **config)
    return ref, env, params, warpdrive_order(seed, 2, 10)


def _inject(ref, state, order):
    # WarpDrive's state at its current time <- ours (agent i of ours is its order[i])
    for key, value in (("loc_x", state.x), ("loc_y", state.y), ("speed", state.speed),
                       ("direction", state.direction), ("acceleration", state.acceleration)):
        ref.global_state[key][ref.timestep, order] = np.asarray(value)
    ref.still_in_the_game[order] = np.asarray(state.in_game, np.int32)
    ref.runners = {int(order[i]): True for i in range(2, 12) if bool(state.in_game[i])}
    ref.num_runners = len(ref.runners)


def _as_warpdrive(obs, order, full):
    # full observations list the others in each side's own index order: ours -> WarpDrive's
    if not full:
        return np.asarray(obs)
    n = len(order)
    cols = []
    for i in range(n):
        others = [j for j in range(n) if j != i]  # our column c is our agent others[c]
        cols.append([others.index(j) for j in sorted(others, key=lambda j: order[j])])
    rows = np.asarray(obs)[:, :-1].reshape(n, 7, n - 1)
    rows = np.take_along_axis(rows, np.asarray(cols)[:, None, :], axis=2)
    return np.concatenate([rows.reshape(n, -1), np.asarray(obs)[:, -1:]], axis=1)


@requires_warpdrive
@pytest.mark.parametrize("full,exits", [(False, True), (True, False)])
def test_each_step_matches_warpdrive_from_the_same_state(full, exits):
    ref, env, params, order = _reference(full, exits, seed=7)
    ref_obs = ref.reset()
    obs, state = env.reset(KEY, params)
    np.testing.assert_array_equal(state.x, ref.global_state["loc_x"][0][order])
    np.testing.assert_array_equal(state.direction, ref.global_state["direction"][0][order])
    step, rng = jax.jit(env.step), np.random.default_rng(3)
    for t in range(40):
        np.testing.assert_allclose(_as_warpdrive(obs, order, full),
                                   np.stack([ref_obs[i] for i in order]), atol=1e-6)
        _inject(ref, state, order)
        acc, turn = rng.integers(0, 21, 12), rng.integers(0, 21, 12)
        ref_obs, ref_rew, ref_done, _ = ref.step(
            {int(order[i]): [int(acc[i]), int(turn[i])] for i in range(12)})
        obs, state, reward, terminated, truncated, info = step(
            KEY, state, jnp.asarray(acc * TURNS + turn, jnp.int32), params)
        np.testing.assert_array_equal(info["still_in_the_game"], ref.still_in_the_game[order])
        np.testing.assert_array_equal(reward, np.float32([ref_rew[i] for i in order]))
        assert ref_done["__all__"] == bool(terminated | truncated)
        obs = info["final_obs"]
        if ref_done["__all__"]:
            break
        now = ref.global_state
        for key, ours in (("speed", state.speed), ("acceleration", state.acceleration),
                          ("direction", state.direction)):
            np.testing.assert_array_equal(ours, now[key][t + 1][order], err_msg=key)
        for key, ours in (("loc_x", state.x), ("loc_y", state.y)):  # cos / sin: a few ulp
            np.testing.assert_allclose(ours, now[key][t + 1][order], rtol=0, atol=4e-6)
    assert t == 39 or exits


@requires_warpdrive
def test_random_play_agrees_with_warpdrive():
    ref, env, params, order = _reference(False, True, seed=11)
    episodes, rng = 20, np.random.default_rng(0)
    ref_tags = []
    for _ in range(episodes):
        ref.reset()
        done = False
        while not done:
            _, _, ref_done, _ = ref.step({i: list(rng.integers(0, 21, 2)) for i in range(12)})
            done = ref_done["__all__"]
        ref_tags.append(10 - ref.num_runners)

    def episode(key):
        _, state = env.reset(key, params)

        def body(carry, key):
            state, playing = carry  # count the first episode only (the step auto-resets)
            act_key, step_key = jax.random.split(key)
            _, state, _, terminated, truncated, info = env.step(
                step_key, state, env.random_action(act_key), params)
            return (state, playing & ~(terminated | truncated)), info["tags"] * playing

        _, tags = jax.lax.scan(body, (state, jnp.array(True)), jax.random.split(key, 40))
        return jnp.sum(tags)

    ours = np.asarray(jax.jit(jax.vmap(episode))(jax.random.split(KEY, 100)))
    ref_tags = np.asarray(ref_tags, float)
    spread = np.sqrt(ours.var() / ours.size + ref_tags.var() / ref_tags.size)
    assert abs(ours.mean() - ref_tags.mean()) < 4 * spread + 1e-9


def test_steps_before_the_first_tag_count_the_untagged_steps():
    env, params, step = _env(num_taggers=1, num_runners=2, num_other_agents_observed=2)
    state = _at(params, [2.0, 5.0, 9.0], [2.0, 5.0, 9.0])  # nobody within reach
    _, state, _, _, _, info = step(KEY, state, jnp.zeros(3, jnp.int32), params)
    assert int(info["tags"]) == 0 and int(info["steps_before_first_tag"]) == 1
    state = state.replace(x=state.x.at[1].set(state.x[0]), y=state.y.at[1].set(state.y[0]))
    _, state, _, _, _, info = step(KEY, state, jnp.zeros(3, jnp.int32), params)
    assert int(info["tags"]) == 1 and int(info["steps_before_first_tag"]) == 0
    _, state, _, _, _, info = step(KEY, state, jnp.zeros(3, jnp.int32), params)
    assert int(info["tags"]) == 0 and int(info["steps_before_first_tag"]) == 0  # one is out
