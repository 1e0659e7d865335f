"""Renderer: frames of stored rollouts, and the GIF / PNG writer of experiments/render."""

from __future__ import annotations

import os
import subprocess
import sys

import imageio.v2 as imageio
import jax
import numpy as np
import pytest

from jaxmarl_accel.cli.render import render_to_files
from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.mpe.render import render_mpe
from jaxmarl_accel.envs.policies import scripted_policy
from jaxmarl_accel.envs.render import render_frame, render_rollout
from jaxmarl_accel.envs.render_grid import render_hunt
from jaxmarl_accel.envs.rollout import rollout


def test_rollout_frames_differ_and_kinds_are_drawn():
    env, params = make("simple_tag", num_predators=2, num_prey=1, num_obstacles=1)
    states = jax.jit(rollout, static_argnums=(0, 2, 4))(
        env, params, scripted_policy(env), jax.random.PRNGKey(0), 4).states
    frames = render_rollout(env, states, params, pixels=96)
    assert frames.shape == (4, 96, 96, 3) and frames.dtype == np.uint8
    assert not np.array_equal(frames[0], frames[-1])  # agents moved
    first = jax.tree.map(lambda x: x[0], states)
    one = render_frame(env, first, params, pixels=96)
    assert one.shape == (96, 96, 3)
    assert len(np.unique(one.reshape(-1, 3), axis=0)) > 10  # more than a blank canvas
    with pytest.raises(ValueError, match="time axis"):
        render_rollout(env, first, params)


def test_writes_gif_and_png(tmp_path):
    gif, png = render_to_files("simple_speaker_listener", str(tmp_path), steps=3, pixels=80)
    assert os.path.getsize(gif) > 0 and os.path.getsize(png) > 0
    frames = np.asarray(imageio.mimread(gif))
    assert frames.shape[0] == 3 and frames.shape[1:3] == (80, 80)
    assert not np.array_equal(frames[0], frames[-1])
    assert imageio.imread(png).shape[:2] == (80, 80)


def test_stag_hunt_frames_draw_the_grid_and_drop_frozen_agents():
    env, params = make("stag_hunt", num_agents=4, num_stags=2, num_hares=1, grid_size=6)
    states = jax.jit(rollout, static_argnums=(0, 2, 4))(
        env, params, scripted_policy(env), jax.random.PRNGKey(1), 5).states
    frames = render_rollout(env, states, params, pixels=90)
    assert frames.shape == (5, 90, 90, 3) and frames.dtype == np.uint8
    assert not np.array_equal(frames[0], frames[-1])
    first = jax.tree.map(lambda x: x[0], states)
    blue = np.array([64, 102, 217])  # the agents' fill colour

    def agent_pixels(state):
        image = render_frame(env, state, params, pixels=90).astype(int)
        return int(np.sum(np.abs(image - blue).sum(axis=-1) < 30))
    all_on_grid = agent_pixels(first)
    half_frozen = agent_pixels(first.replace(frozen=first.frozen.at[:2].set(True)))
    assert 0 < half_frozen < all_on_grid
    with pytest.raises(ValueError, match="time axis"):
        render_rollout(env, first, params)


def test_each_env_brings_its_renderer_and_one_without_gets_a_one_line_error():
    assert make("simple_spread")[0].render is render_mpe
    assert make("simple_reference")[0].render is render_mpe
    assert make("stag_hunt")[0].render is render_hunt
    env, params = make("tag_gridworld")
    assert env.render is None
    _, state = env.reset(jax.random.PRNGKey(0), params)
    with pytest.raises(ValueError, match="'tag_gridworld' cannot be drawn") as error:
        render_frame(env, state, params)
    assert "\n" not in str(error.value)


def test_goal_rings_are_drawn_only_for_states_with_a_goal():
    env, params = make("simple_speaker_listener")
    _, state = env.reset(jax.random.PRNGKey(0), params)
    with_goal = render_frame(env, state, params, pixels=80)
    without = render_frame(env, state.replace(goal=state.goal[:0]), params, pixels=80)
    assert not np.array_equal(with_goal, without)


def test_making_envs_and_importing_the_renderers_leaves_matplotlib_unimported():
    code = ("import sys; import jaxmarl_accel.envs as e; import jaxmarl_accel.envs.render; "
            "[e.make(name) for name in ('simple_tag', 'stag_hunt')]; "
            "print('matplotlib' in sys.modules)")
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert out.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize("flags, words", [
    (["--kwargs", "{bad"], "--kwargs is not JSON"),
    (["--kwargs", "[1]"], "--kwargs must be a JSON object"),
    (["--kwargs", '{"nope": 1}'], "simple_tag takes no nope"),
    (["--kwargs", '{"num_predators": -1}'], "--kwargs: num_predators"),
    (["--steps", "0"], "--steps must be >= 1"),
    (["--pixels", "0"], "--pixels must be >= 1"),
    (["--scenario", "tag_gridworld"], "--env: tag_gridworld has no renderer"),
    (["--env", "stag_hunt", "--agents", "0"], "--agents must be >= 1, got 0"),
    (["--env", "stag_hunt", "--env-kwargs", "nope=1"], "stag_hunt takes no nope"),
    (["--env", "simple_reference", "--agents", "3"], "--agents"),
    (["--env", "stag_hunt", "--env-kwargs", "num_stags=-1"], "--env-kwargs: num_stags"),
])
def test_render_command_refuses_bad_flags_in_one_line(tmp_path, capsys, flags, words):
    from jaxmarl_accel.cli.render import main

    with pytest.raises(SystemExit) as exit_info:
        main([*flags, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert len(err.strip().splitlines()) == 1 and words in err, err
    assert not os.listdir(tmp_path)


def test_render_takes_the_run_commands_env_flags(tmp_path, capsys):
    """``--env``, ``--env-kwargs`` and ``--agents`` as ``jaxmarl-accel run`` reads them
    (``--scenario`` is the same flag as ``--env``)."""
    from jaxmarl_accel.cli.render import main

    assert main(["--env", "stag_hunt", "--agents", "3", "--env-kwargs", "num_stags=2",
                 "--steps", "2", "--pixels", "48", "--out", str(tmp_path / "a")]) == 0
    assert main(["--scenario", "stag_hunt", "--kwargs", '{"num_agents": 3, "num_stags": 2}',
                 "--steps", "2", "--pixels", "48", "--out", str(tmp_path / "b")]) == 0
    first = imageio.mimread(tmp_path / "a" / "stag_hunt.gif")
    second = imageio.mimread(tmp_path / "b" / "stag_hunt.gif")
    assert len(first) == 2 and np.array_equal(np.stack(first), np.stack(second))
    assert "wrote" in capsys.readouterr().out
