"""A2C, PPO and MAPPO in the trainer shell: the rollout round trains MPE's simple_tag (two
teams, discrete) and simple_spread (continuous) under jit + vmap of 2 seeds, MAPPO and the
recurrent learners train from the command line (MPE spread) and on SMAX 3m, a state restored from
a checkpoint's items (recurrent carries included) continues the run exactly, and bad flags
are one-line usage errors."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from jaxmarl_accel.algos.on_policy import OnPolicyConfig
from jaxmarl_accel.cli import run
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.runs.run_store import checkpoint_items, state_from_items
from jaxmarl_accel.trainer.train import make_trainer

TINY = OnPolicyConfig(hidden_sizes=(8,), rollout_length=5, epochs=2, minibatches=2)


def tiny(algo: str, env: str, **kwargs) -> TrainConfig:
    on_policy = (TINY if algo in ("ppo", "mappo")
                 else dataclasses.replace(TINY, epochs=4, minibatches=4))
    return TrainConfig(env=env, algo=algo, num_envs=2, total_env_steps=20, eval_every=10,
                       eval_episodes=2, learner=on_policy, **kwargs)


def run_two_chunks(config: TrainConfig, resume: bool):
    """Two chunks of 2 seeds under jit + vmap: ``(trainer, start, end state, metrics of
    each chunk)``; with ``resume`` the second chunk also runs from the first one's state
    written out as a checkpoint's items and read back, and must give the same."""
    trainer = make_trainer(config)
    run_chunk = jax.jit(jax.vmap(trainer.run_chunk, in_axes=(0, None)))
    start = jax.jit(jax.vmap(trainer.init))(jax.random.split(jax.random.PRNGKey(0), 2))
    middle, first = run_chunk(start, np.int32(0))
    end, second = run_chunk(middle, np.int32(1))
    if resume:
        items = {name: np.asarray(leaf) for name, leaf in checkpoint_items(middle).items()}
        restored = state_from_items(jax.eval_shape(lambda: middle), items)
        for a, b in zip(jax.tree.leaves((end, second)),
                        jax.tree.leaves(run_chunk(restored, np.int32(1))), strict=True):
            np.testing.assert_array_equal(a, b)
    return trainer, start, end, (first, second)


@pytest.mark.parametrize(("algo", "env", "env_kwargs"), [
    ("ppo", "simple_tag", (("num_obstacles", 0), ("num_predators", 2))),
    ("a2c", "simple_spread", (("continuous_actions", True), ("num_agents", 2))),
])
@pytest.mark.fast_cases(1)
def test_a_tiny_run_trains_every_team_under_jit_and_vmap(algo, env, env_kwargs):
    config = tiny(algo, env, env_kwargs=env_kwargs)
    trainer, start, final, chunks = run_two_chunks(config, resume=algo == "ppo")
    assert trainer.num_chunks == 2 and trainer.steps_per_chunk == 10
    assert len(start.algo.params) == len(set(trainer.env.spec.teams))
    for chunk, metrics in enumerate(chunks):
        np.testing.assert_array_equal(metrics.env_steps, [10 * (chunk + 1)] * 2)
        np.testing.assert_array_equal(metrics.updates, 2 * 2 if algo == "ppo" else 1)
        for value in jax.tree.leaves((metrics.learner, metrics.eval_return)):
            assert np.all(np.isfinite(value))
        assert metrics.eval_return.shape == (2, trainer.env.spec.num_agents)
    # every team learned
    for before, after in zip(start.algo.params, final.algo.params, strict=True):
        changed = jax.tree.map(lambda a, b: bool(np.any(np.asarray(a) != np.asarray(b))),
                               before, after)
        assert any(jax.tree.leaves(changed))
    kernel = final.algo.params[0]["net"]["params"]["Dense_0"]["kernel"]
    assert not np.array_equal(kernel[0], kernel[1])  # the seeds differ
    if env == "simple_tag":  # each team's learners against random and scripted others
        from jaxmarl_accel.cli.evaluate import cross_play

        matchups = cross_play(trainer, final.algo, jax.random.key(0), 3)["cross_play"]
        assert set(matchups) == {f"{team}_vs_{opponent}" for team in ("predator", "prey")
                                 for opponent in ("random", "scripted")}
        for record in matchups.values():
            assert len(record["team_return_per_seed"]) == 2
            assert np.all(np.isfinite(record["team_return_per_seed"]))


@pytest.mark.parametrize(("argv", "message"), [
    (["--algo", "maddpg", "--clip-eps", "0.3"],
     "--clip-eps applies to the on-policy family (a2c, ppo, mappo); algo 'maddpg' does not use it"),
    (["--algo", "a2c", "--epochs", "2"], "--epochs (2) applies to algos 'ppo' and 'mappo'"),
    (["--algo", "ppo", "--actor-lr", "0.1"], "--actor-lr applies to the actor-critic family"),
    (["--algo", "ppo", "--sampler", "per"],
     "--sampler ('per') must keep its default: algo 'ppo' keeps no replay"),
    (["--algo", "ppo", "--minibatches", "7"], "--minibatches (7) must divide"),
    (["--algo", "ppo", "--gae-lambda", "2"], "--gae-lambda must lie in [0, 1]"),
    (["--algo", "ppo", "--env", "simple_tag", "--team-lr", "tagger=0.1"],
     "--team-lr names tagger, but the env's teams are predator, prey"),
    (["--algo", "a2c", "--team-lr", "agent=0"], "--team-lr must name each team once with a "
                                                "rate > 0"),
    (["--algo", "maddpg", "--agent", "rnn"], "--agent applies to the value-based family"),
    (["--algo", "mappo", "--agents", "1000"],
     "the global state of simple_spread cannot be formed at this scale"),
    (["--algo", "ppo", "--agent", "rnn", "--num-envs", "6"],
     "--minibatches (4) must divide --num-envs (6): with agent 'rnn'"),
])
def test_bad_flags_are_one_line_usage_errors(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        run.main([*argv, "--out", str(tmp_path / "run")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("algo", "agent"), [("mappo", "rnn"), ("mappo", "mlp"), ("a2c", "rnn")])
@pytest.mark.fast_cases(1)
def test_mappo_and_the_recurrent_learners_train_from_the_command_line(algo, agent, tmp_path):
    out = tmp_path / "run"
    ppo_flags = ["--minibatches", "2", "--epochs", "2"] if algo == "mappo" else []
    argv = ["--algo", algo, "--agent", agent, "--env", "simple_spread", "--agents", "2",
            "--seeds", "2", "--num-envs", "2", "--rollout-length", "5", *ppo_flags,
            "--hidden-sizes", "8", "--total-env-steps", "20", "--eval-every", "10",
            "--eval-episodes", "2", "--baseline-episodes", "2", "--devices", "1", "--quiet",
            "--out", str(out)]
    assert run.main(argv) == 0
    lines = (out / "metrics.csv").read_text().strip().splitlines()
    assert len(lines) == 1 + 2 * 2  # header + chunks x seeds


@pytest.mark.slow
def test_recurrent_mappo_trains_on_smax_with_its_world_state():
    config = tiny("mappo", "jaxmarl:HeuristicEnemySMAX",
                  env_kwargs=(("max_steps", 10), ("scenario", "3m")))
    config = dataclasses.replace(config, learner=dataclasses.replace(config.learner,
                                                                      agent="rnn"))
    trainer, start, final, chunks = run_two_chunks(config, resume=False)
    spec = trainer.env.spec
    assert trainer.algo.on_policy.reads_world and spec.state_dim == 72
    critic = final.algo.params[0]["critic"]["params"]["layers_0"]["kernel"]
    assert critic.shape == (2, spec.state_dim + spec.num_agents, 8)  # [seeds, S + N, H]
    for metrics in chunks:
        for value in jax.tree.leaves((metrics.learner, metrics.eval_return)):
            assert np.all(np.isfinite(value))


@pytest.mark.parametrize("algo", ["mappo", "a2c"])
@pytest.mark.fast_cases(1)
def test_recurrent_runs_resume_exactly_with_their_carries(algo):
    config = tiny(algo, "simple_tag", env_kwargs=(("num_obstacles", 0), ("num_predators", 2)))
    config = dataclasses.replace(config, learner=dataclasses.replace(config.learner,
                                                                      agent="rnn"))
    trainer, start, final, chunks = run_two_chunks(config, resume=True)
    assert final.carry["net"].shape == (2, 2, trainer.env.spec.num_agents, 8)
    for metrics in chunks:
        assert np.all(np.isfinite(np.asarray(metrics.eval_return)))


def test_help_groups_the_on_policy_flags():
    text = run.build_parser().format_help()
    group = text.index("on-policy learners: a2c, ppo, mappo")
    for flag in ("--rollout-length", "--clip-eps", "--gae-lambda", "--epochs", "--minibatches",
                 "--value-coef", "--entropy-coef"):
        assert text.index(f"  {flag}") > group
    assert "0.98 for the on-policy family" in text  # --gamma's default for a2c and ppo


@pytest.mark.slow
def test_training_episodes_count_the_envs_statistics_across_rounds():
    """Episodes of 20 steps span rollouts of 3: the running counters carry from round to
    round and restart with each episode. On a field where the taggers always tag every
    runner, every training episode ends with exactly ``num_runners`` tags."""
    config = TrainConfig(
        env="tag_continuous", algo="a2c", num_envs=2, total_env_steps=120, eval_every=60,
        eval_episodes=2, learner=OnPolicyConfig(hidden_sizes=(8,), rollout_length=3),
        env_kwargs=(("episode_length", 20), ("grid_length", 1.0), ("num_other_agents_observed", 4),
                    ("num_runners", 3), ("num_taggers", 2), ("tagging_distance", 0.5)))
    trainer = make_trainer(config)
    state, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0))
    assert set(state.episode_stats) == {"tags", "steps_before_first_tag"}
    assert state.episode_stats["tags"].shape == (2,)
    np.testing.assert_array_equal(metrics.train_stats["tags"], [3.0, 3.0])
    sparse = dataclasses.replace(config, env_kwargs=tuple(
        (k, 0.05 if k == "tagging_distance" else v) for k, v in config.env_kwargs))
    metrics = jax.jit(make_trainer(sparse).train)(jax.random.PRNGKey(0))[1]
    tags, before = metrics.train_stats["tags"], metrics.train_stats["steps_before_first_tag"]
    assert np.all((tags >= 0) & (tags <= 3)) and np.any(tags > 0)
    assert np.all((before >= 0) & (before <= 20)) and np.any(before > 0)
