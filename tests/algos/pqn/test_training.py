"""PQN and PQN-VDN in the trainer shell: the rollout round trains the stag hunt (available
actions) and MPE's simple_tag (two teams) under jit + vmap of 2 seeds, a state restored
from a checkpoint's items continues the run exactly, and the command line's bad inputs are
one-line errors with status 2."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxmarl_accel.algos.pqn import PQNConfig
from jaxmarl_accel.cli import run
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.runs.run_store import checkpoint_items, state_from_items
from jaxmarl_accel.trainer.train import make_trainer

TINY = PQNConfig(hidden_sizes=(8,), rollout_length=5, epochs=2, minibatches=2,
                 epsilon_anneal_steps=20)
ENVS = {"stag_hunt": (("episode_length", 4), ("grid_size", 4), ("num_agents", 2),
                      ("num_stags", 1)),
        "simple_tag": (("num_obstacles", 0), ("num_predators", 2))}


@pytest.mark.parametrize(("algo", "env"), [("pqn_vdn", "stag_hunt"), ("pqn", "simple_tag")])
@pytest.mark.fast_cases(1)
def test_a_tiny_run_trains_under_jit_and_vmap_and_resumes_exactly(algo, env):
    config = TrainConfig(env=env, env_kwargs=ENVS[env], algo=algo, num_envs=2,
                         total_env_steps=20, eval_every=10, eval_episodes=2, learner=TINY)
    trainer = make_trainer(config)
    assert trainer.num_chunks == 2 and trainer.steps_per_chunk == 10
    run_chunk = jax.jit(jax.vmap(trainer.run_chunk, in_axes=(0, None)))
    start = jax.jit(jax.vmap(trainer.init))(jax.random.split(jax.random.PRNGKey(0), 2))
    middle, first = run_chunk(start, np.int32(0))
    end, second = run_chunk(middle, np.int32(1))
    for chunk, metrics in enumerate((first, second)):
        np.testing.assert_array_equal(metrics.env_steps, [10 * (chunk + 1)] * 2)
        np.testing.assert_array_equal(metrics.updates, 2 * 2)
        for value in jax.tree.leaves((metrics.learner, metrics.eval_return)):
            assert np.all(np.isfinite(value))
    np.testing.assert_array_equal(end.algo.env_steps, [20, 20])
    assert not np.allclose(end.algo.params["Dense_0"]["kernel"][0],
                           end.algo.params["Dense_0"]["kernel"][1])  # seeds differ
    items = {name: np.asarray(leaf) for name, leaf in checkpoint_items(middle).items()}
    restored = state_from_items(jax.eval_shape(lambda: middle), items)
    for a, b in zip(jax.tree.leaves((end, second)),
                    jax.tree.leaves(run_chunk(restored, np.int32(1))), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("extra", "message"), [
    (["--minibatches", "3"], "error: --minibatches (3) must divide the rollout's 40 joint "
                             "steps (--rollout-length 5 x --num-envs 8)"),
    (["--agent", "rnn", "--minibatches", "3"], "error: --minibatches (3) must divide "
                                               "--num-envs (8): agent 'rnn' learns from whole"),
    (["--agent", "rnn", "--norm", "batch_norm"], "error: --agent 'rnn': the recurrent "
                                                 "Q-network normalizes with layer_norm or none"),
    (["--clip-eps", "0.1"], "error: --clip-eps applies to the on-policy family"),
    (["--batch-size", "64"], "error: --batch-size (64) must keep its default"),
])
def test_bad_inputs_are_one_line_with_status_2(extra, message, capsys):
    argv = ["--algo", "pqn_vdn", "--env", "stag_hunt", "--num-envs", "8", "--rollout-length",
            "5", "--minibatches", "4", "--quiet", *extra]
    with pytest.raises(SystemExit) as exit_:
        run.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in err, err


@pytest.mark.slow
def test_pqn_vdn_trains_a_chunk_on_smax_3m_with_its_available_actions():
    config = TrainConfig(env="jaxmarl:HeuristicEnemySMAX",
                         env_kwargs=(("max_steps", 6), ("scenario", "3m")), algo="pqn_vdn",
                         num_envs=2, total_env_steps=20, eval_every=20, eval_episodes=2,
                         learner=TINY)
    trainer = make_trainer(config)
    _, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0))
    assert np.asarray(metrics.updates).sum() == 2 * 2 * 2
    assert np.all(np.isfinite(np.asarray(metrics.eval_return)))
    won = np.asarray(metrics.eval_stats["won"])
    assert np.all((won >= 0) & (won <= 1))
