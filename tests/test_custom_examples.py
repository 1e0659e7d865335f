"""An environment, a learner family and a replay sampler from outside the package
(``examples/custom_env.py``, ``examples/custom_learner.py``, ``examples/custom_sampler.py``):
trained through ``make_train`` and through the command line by reference (``module:attr``),
interrupted, resumed exactly and evaluated, with no file of ``jaxmarl_accel/`` changed; every
way a reference can fail is one line, status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmarl_accel as jm
from jaxmarl_accel.cli import evaluate, run
from jaxmarl_accel.runs import progress
from jaxmarl_accel.runs.checkpoint import Checkpoints
from tests.cli.test_run import exit_code, one_line, restore_params

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = "examples.custom_env:make"
ALGO = "examples.custom_learner:SPEC"
SAMPLER = "examples.custom_sampler:SPEC"
TINY = ["--env", ENV, "--env-kwargs", "num_agents=2,width=5,episode_length=8",
        "--algo", ALGO, "--hidden", "16", "--seeds", "2", "--num-envs", "4",
        "--update-every", "8", "--batch-size", "16", "--buffer-capacity", "400",
        "--learning-starts", "32", "--eval-every", "64", "--total-env-steps", "192",
        "--eval-episodes", "2", "--baseline-episodes", "4", "--quiet"]


@pytest.fixture(autouse=True)
def in_repo(monkeypatch):
    """The command runs in the repository's folder, where ``examples`` is found."""
    monkeypatch.chdir(REPO)


@pytest.mark.parametrize("algo", ["matd3", "qmix"])
def test_a_user_environment_trains_through_make_train(algo):
    from examples.custom_env import make

    jm.register_env("ring", make, replace=True)
    learner = {"matd3": jm.ActorCriticConfig(hidden_sizes=(16,)),
               "qmix": jm.ValueConfig(hidden=16, mixer_embed=8, hypernet_hidden=16)}[algo]
    config = jm.TrainConfig(env="ring", env_kwargs=(("num_agents", 2), ("width", 5)),
                            algo=algo, learner=learner, num_envs=4, update_every=8,
                            batch_size=8, buffer_capacity=64, learning_starts=16,
                            eval_every=64, total_env_steps=128, eval_episodes=2)
    _, metrics = jax.jit(jax.vmap(jm.make_train(config)))(
        jax.random.split(jax.random.PRNGKey(0), 2))
    assert metrics.eval_return.shape == (2, 2, 2)  # [seeds, chunks, agents]
    assert np.all(np.isfinite(np.asarray(metrics.eval_return)))
    assert int(np.asarray(metrics.updates).sum()) > 0


def interrupt_after(monkeypatch, steps: int) -> None:
    real_update = progress.ProgressBar.update

    def update(bar, done, *args, **kwargs):
        real_update(bar, done, *args, **kwargs)
        if done == steps:
            raise KeyboardInterrupt

    monkeypatch.setattr(progress.ProgressBar, "update", update)


@pytest.mark.slow
def test_a_user_learner_and_environment_train_resume_and_evaluate_through_the_cli(
        tmp_path, monkeypatch, capsys):
    whole, cut = str(tmp_path / "whole"), str(tmp_path / "cut")
    assert run.main([*TINY, "--out", whole]) == 0
    with open(os.path.join(whole, "config.json")) as file:
        config = json.load(file)
    assert (config["train"]["algo"], config["train"]["env"]) == (ALGO, ENV)
    interrupt_after(monkeypatch, 64)
    assert run.main([*TINY, "--out", cut]) == 130
    monkeypatch.undo()
    monkeypatch.chdir(REPO)
    assert run.main(["--resume", cut, "--quiet"]) == 0
    for left, right in zip(jax.tree.leaves(restore_params(whole, 2, everything=True)),
                           jax.tree.leaves(restore_params(cut, 2, everything=True)), strict=True):
        np.testing.assert_array_equal(np.asarray(left), np.asarray(right))
    capsys.readouterr()
    assert evaluate.main([whole, "--episodes", "2"]) == 0
    with open(os.path.join(whole, "evaluation.json")) as file:
        scores = json.load(file)
    assert len(scores["episode_return_per_seed"]) == 2 and scores["algo"] == ALGO


@pytest.mark.slow
def test_a_user_sampler_trains_and_resumes_through_the_cli(tmp_path, monkeypatch):
    """A run of 320 env steps (36 updates) with the recent-experience sampler by reference,
    next to one interrupted after 128 and resumed: the sampler's own update counter is in
    both final replays (so it was the sampler drawn with), and they are equal."""
    argv = [*TINY[:TINY.index("--total-env-steps")], "--total-env-steps", "320",
            *TINY[TINY.index("--total-env-steps") + 2:],
            "--sampler", SAMPLER, "--sampler-kwargs", "recency=3"]
    whole, cut = str(tmp_path / "whole"), str(tmp_path / "cut")
    assert run.main([*argv, "--out", whole]) == 0
    with open(os.path.join(whole, "config.json")) as file:
        config = json.load(file)["train"]
    assert (config["sampler"], config["sampler_kwargs"]) == (SAMPLER, {"recency": 3})
    interrupt_after(monkeypatch, 128)
    assert run.main([*argv, "--out", cut]) == 130
    monkeypatch.undo()
    monkeypatch.chdir(REPO)
    assert run.main(["--resume", cut, "--quiet"]) == 0
    finals = [read_arrays(os.path.join(out, "checkpoints")) for out in (whole, cut)]
    for final in finals:
        assert final[".buffer.sampler.updates"].tolist() == [37, 37]  # (320 - 32) / 8 + 1
    for left, right in zip(*(jax.tree.leaves(final) for final in finals), strict=True):
        np.testing.assert_array_equal(np.asarray(left), np.asarray(right))


def read_arrays(folder):
    """Every array of the newest checkpoint in ``folder``, keyed by its state path."""
    checkpoints = Checkpoints(folder)
    step = checkpoints.latest_step()
    target = {name: jax.ShapeDtypeStruct(tuple(entry["shape"]), jnp.dtype(entry["dtype"]))
              for name, entry in checkpoints.index(step)["arrays"].items()}
    return {name: np.asarray(value) for name, value in checkpoints.restore(step, target).items()}


def test_a_user_learner_has_its_own_flags_in_help(capsys):
    with pytest.raises(SystemExit):
        run.main(["--algo", ALGO, "--help"])
    text = capsys.readouterr().out
    assert "independent DQN learners: " in text and "--epsilon-anneal-updates" in text


BROKEN = "raise ImportError('cannot find libfoo.so')\n"
CLASHING = """
import dataclasses
from jaxmarl_accel.algos import registry
registry.register_algo(dataclasses.replace(registry.algo_spec("qmix")))
"""
NOT_AN_ENV = "def make(**kwargs):\n    return 42\n"
NOT_A_BUFFER = "def make(*, capacity, batch_size, layout='x', index_sharing='y'):\n    return 7\n"


@pytest.mark.parametrize(("argv", "message"), [
    (["--algo", "nosuch_pkg_q.mod:SPEC"], "error: algo 'nosuch_pkg_q.mod:SPEC': no module named "
                                          "'nosuch_pkg_q'"),
    (["--env", "nosuch_pkg_q.mod:make"], "--env 'nosuch_pkg_q.mod:make': no module named"),
    (["--algo", "user_broken_q:SPEC"], "importing module 'user_broken_q' failed: ImportError: "
                                       "cannot find libfoo.so"),
    (["--env", "user_not_an_env_q:make"], "its factory returned an object of type int, not"),
    (["--algo", "examples.custom_env:make"], "is an object of type function, not a "
                                             "jaxmarl_accel.AlgoSpec"),
    (["--algo", "user_clashing_q:SPEC"], "ValueError: algo 'qmix' is already registered"),
    (["--sampler", "nosuch_pkg_q.mod:SPEC"], "--sampler 'nosuch_pkg_q.mod:SPEC': no module "
                                             "named 'nosuch_pkg_q'"),
    (["--sampler", "examples.custom_sampler:NOPE"], "module 'examples.custom_sampler' has no "
                                                    "attribute 'NOPE'"),
    (["--sampler", "examples.custom_learner:SPEC"], "is an object of type AlgoSpec, not a "
                                                    "jaxmarl_accel.buffers.SamplerSpec"),
    (["--sampler", "examples.custom_env:make"], "its factory raised TypeError: make() got an "
                                                "unexpected keyword argument 'capacity'"),
    (["--sampler", "user_not_a_buffer_q:make"], "its factory returned int, not a "
                                                "jaxmarl_accel.buffers.Buffer"),
])
def test_bad_references_are_one_line_with_status_2(argv, message, tmp_path, monkeypatch,
                                                   capsys):
    for name, text in (("user_broken_q", BROKEN), ("user_clashing_q", CLASHING),
                       ("user_not_an_env_q", NOT_AN_ENV),
                       ("user_not_a_buffer_q", NOT_A_BUFFER)):
        (tmp_path / f"{name}.py").write_text(text)
        sys.modules.pop(name, None)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert exit_code([*argv, "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in one_line(err) and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("script", ["custom_env.py", "custom_learner.py", "custom_sampler.py"])
def test_the_example_scripts_run_as_documented(script):
    proc = subprocess.run([sys.executable, os.path.join("examples", script), "--steps", "512",
                           "--seeds", "1"], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, JAX_PLATFORMS="cpu"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "final evaluation return per seed" in proc.stdout
