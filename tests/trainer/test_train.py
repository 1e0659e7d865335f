"""The trainer: one compiled scan per run, vmapped over seeds, chunked == whole."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos import ActorCriticConfig
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.trainer.train import make_trainer

pytestmark = pytest.mark.xdist_group("train")  # one worker computes the module's fixtures


def tiny_config(**overrides) -> TrainConfig:
    settings = dict(
        env="simple_spread", env_kwargs=(("num_agents", 3),), algo="maddpg",
        learner=ActorCriticConfig(hidden_sizes=(16, 16)), buffer_capacity=1_000, batch_size=32,
        num_envs=5, total_env_steps=600, update_every=50, learning_starts=100,
        eval_every=200, eval_episodes=4)
    settings.update(overrides)
    return TrainConfig(**settings)


@pytest.fixture(scope="module")
def trainer():
    return make_trainer(tiny_config())


@pytest.fixture(scope="module")
def whole_run(trainer):
    """Two seeds of the whole run, compiled once for the module."""
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    return keys, jax.jit(jax.vmap(trainer.train))(keys)


def test_train_runs_for_several_seeds_and_seeds_differ(whole_run):
    _, (state, metrics) = whole_run
    chex.assert_shape(metrics.eval_return, (2, 3, 3))  # [seeds, chunks, agents]
    assert np.all(np.isfinite(np.asarray(metrics.eval_return)))
    np.testing.assert_array_equal(np.asarray(metrics.env_steps[0]), [200, 400, 600])
    np.testing.assert_array_equal(np.asarray(state.env_steps), [600, 600])
    # rounds end at 50, 100, ...; updates start once 100 transitions are stored
    np.testing.assert_array_equal(np.asarray(metrics.updates[0]), [3, 4, 4])
    for leaf in jax.tree.leaves(metrics.learner):
        assert np.all(np.isfinite(np.asarray(leaf)))
    params = jax.tree.leaves(state.algo)[0]
    assert not np.allclose(np.asarray(params[0]), np.asarray(params[1]))


def test_chunked_run_equals_whole_run_and_never_retraces(trainer, whole_run):
    keys, (whole_state, whole_metrics) = whole_run

    @jax.jit
    @chex.assert_max_traces(n=1)
    def chunk(state, index):
        return jax.vmap(trainer.run_chunk, in_axes=(0, None))(state, index)

    state = jax.jit(jax.vmap(trainer.init))(keys)
    returns = []
    for index in range(trainer.num_chunks):
        state, metrics = chunk(state, jnp.int32(index))
        returns.append(np.asarray(metrics.eval_return))
    np.testing.assert_allclose(np.stack(returns, axis=1), np.asarray(whole_metrics.eval_return),
                               rtol=1e-5, atol=1e-5)
    chex.assert_trees_all_close(state.algo, whole_state.algo, rtol=1e-5, atol=1e-6)
    chex.clear_trace_counter()


def test_prey_scripted_needs_a_scenario_with_prey():
    with pytest.raises(ValueError, match="needs a scenario with prey"):
        make_trainer(tiny_config(prey="scripted"))


@pytest.mark.slow
def test_a_shorter_last_chunk_stops_at_total_env_steps(whole_run):
    """500 env steps with an evaluation every 200: the third chunk runs 2 of its 4 rounds,
    in the same compiled chunk program; the first two chunks are those of the 600-step run."""
    keys, (_, whole_metrics) = whole_run
    trainer = make_trainer(tiny_config(total_env_steps=500))
    assert trainer.num_chunks == 3
    state, metrics = jax.jit(jax.vmap(trainer.train))(keys)
    np.testing.assert_array_equal(np.asarray(metrics.env_steps[0]), [200, 400, 500])
    np.testing.assert_array_equal(np.asarray(state.env_steps), [500, 500])
    np.testing.assert_array_equal(np.asarray(metrics.updates[0]), [3, 4, 2])
    np.testing.assert_allclose(np.asarray(metrics.eval_return[:, :2]),
                               np.asarray(whole_metrics.eval_return[:, :2]), rtol=1e-5, atol=1e-5)
    assert np.all(np.isfinite(np.asarray(metrics.eval_return)))


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["owqmix", "macpo", "accmer"])
def test_learners_with_qstar_train_over_seeds_with_their_samplers(algo):
    """Tiny stag hunt, 2 seeds: OW-QMIX, MAC-PO drawing episodes by its weights (PER, the
    tree holds the returned priorities) and AccMER's reuse window floor(C / b)."""
    from jaxmarl_accel.algos.value import ValueConfig
    from jaxmarl_accel.buffers import sum_tree

    config = TrainConfig(**{
        "env": "stag_hunt", "algo": algo,
        "env_kwargs": (("episode_length", 5), ("grid_size", 4), ("num_agents", 2),
                       ("num_stags", 1)),
        "learner": ValueConfig(hidden=8, mixer_embed=4, hypernet_hidden=8, qstar_hidden=8,
                                    qstar_layers=1),
        "buffer_capacity": 8, "batch_size": 2, "num_envs": 2, "total_env_steps": 40,
        "eval_every": 20, "eval_episodes": 2})
    trainer = make_trainer(config)
    state, metrics = jax.jit(jax.vmap(trainer.train))(jax.random.split(jax.random.key(0), 2))
    updated = np.asarray(metrics.updates) > 0
    prefix = "wqmix" if algo == "owqmix" else "macpo"
    for name in ("loss", f"{prefix}_qstar_loss", f"{prefix}_weight_mean"):
        assert np.all(np.isfinite(np.asarray(metrics.learner[name])))
    assert updated.any()
    sampler = state.buffer.sampler
    if algo == "owqmix":
        weight = np.asarray(metrics.learner["wqmix_weight_mean"])[updated]
        assert np.all((weight >= 0.1 - 1e-6) & (weight <= 1.0 + 1e-6))
    elif algo == "macpo":  # alpha 1: the tree's leaves are the priorities (+ 1e-6)
        leaves = np.asarray(jax.vmap(lambda tree: sum_tree.leaves(tree, jnp.arange(8)))(
            sampler.tree))
        assert np.all(np.isfinite(leaves) & (leaves > 0))
    else:
        np.testing.assert_array_equal(np.asarray(sampler.window), [8 // 2] * 2)


@pytest.mark.slow
def test_episode_updates_make_k_updates_a_round_each_on_its_own_batch():
    """``episode_updates=3``: three learner updates after each round that learns (the
    learner's step counter and the chunks' update counts are 3x those of one a round), the
    target copied on the same episode clock, and different parameters at the end."""
    from jaxmarl_accel.algos.value import ValueConfig

    def run(updates):
        config = TrainConfig(
            env="stag_hunt", algo="qmix", env_kwargs=(("episode_length", 5), ("grid_size", 4),
                                                      ("num_agents", 2), ("num_stags", 1)),
            learner=ValueConfig(hidden=8, mixer_embed=4, hypernet_hidden=8,
                                target_update_episodes=4),
            buffer_capacity=8, batch_size=2, num_envs=2, total_env_steps=40, eval_every=20,
            eval_episodes=2, episode_updates=updates)
        trainer = make_trainer(config)
        return jax.jit(jax.vmap(trainer.train))(jax.random.split(jax.random.key(0), 2))

    (one, one_metrics), (three, three_metrics) = run(1), run(3)
    np.testing.assert_array_equal(np.asarray(three_metrics.updates),
                                  3 * np.asarray(one_metrics.updates))
    assert int(np.asarray(one.algo.step)[0]) > 0
    np.testing.assert_array_equal(np.asarray(three.algo.step), 3 * np.asarray(one.algo.step))
    np.testing.assert_array_equal(np.asarray(three.algo.last_target_update),
                                  np.asarray(one.algo.last_target_update))
    assert np.all(np.isfinite(np.asarray(three_metrics.learner["loss"])))
    assert not np.allclose(np.asarray(jax.tree.leaves(three.algo.params)[0]),
                           np.asarray(jax.tree.leaves(one.algo.params)[0]))


def test_episode_updates_are_refused_on_the_other_rounds():
    with pytest.raises(ValueError, match="episode_updates .* must keep its default"):
        TrainConfig(algo="a2c", env="simple_spread", episode_updates=2)


def test_running_episode_statistics_end_with_their_episode():
    from jaxmarl_accel.trainer.rounds.state import add_episode_stats

    running = {"tags": jnp.array([2.0, 0.0, 5.0])}
    running, finished = add_episode_stats(running, {"tags": jnp.array([1.0, 1.0, 0.0])},
                                          jnp.array([True, False, False]))
    np.testing.assert_array_equal(running["tags"], [0.0, 1.0, 5.0])
    assert float(finished["tags"]) == 3.0
    running, finished = add_episode_stats(running, {"tags": jnp.array([0.0, 2.0, 1.0])},
                                          jnp.array([False, True, True]))
    np.testing.assert_array_equal(running["tags"], [0.0, 0.0, 0.0])
    assert float(finished["tags"]) == 9.0


@pytest.mark.parametrize("round_kind", ["transition", "episode"])
def test_the_update_is_traced_once_per_program(monkeypatch, round_kind):
    """The cond that skips updates before learning starts returns zeros shaped like the
    update's metrics without tracing the update a second time (``shapes_once``), for 2 seeds
    and a shorter last chunk (``within_run`` wraps the round in another such cond)."""
    from jaxmarl_accel.algos.value import ValueConfig
    from jaxmarl_accel.trainer import steps
    from jaxmarl_accel.trainer.rounds import episode, transition

    module = transition if round_kind == "transition" else episode
    traced = []

    def counted(*args, **kwargs):
        traced.append(1)
        return steps.learn_step(*args, **kwargs)

    monkeypatch.setattr(module, "learn_step", counted)
    if round_kind == "transition":
        config = tiny_config(total_env_steps=500)  # the third chunk runs 2 of its 4 rounds
    else:
        config = TrainConfig(
            env="stag_hunt", algo="qmix", env_kwargs=(("episode_length", 5), ("grid_size", 4),
                                                      ("num_agents", 2), ("num_stags", 1)),
            learner=ValueConfig(hidden=8, mixer_embed=4, hypernet_hidden=8),
            buffer_capacity=8, batch_size=2, num_envs=2, total_env_steps=50, eval_every=20,
            eval_episodes=2)
    trainer = make_trainer(config)
    assert trainer.total_steps % trainer.steps_per_chunk != 0  # within_run's cond is there
    jax.jit(jax.vmap(trainer.train)).trace(jax.random.split(jax.random.PRNGKey(0), 2))
    assert len(traced) == 1


def test_shapes_once_reads_the_shapes_of_the_last_trace_and_traces_otherwise():
    from jaxmarl_accel.trainer.rounds.state import shapes_once

    calls = []

    def fn(x, y):
        calls.append(1)
        return {"sum": x + y, "outer": jnp.outer(x, y)}

    run, shapes = shapes_once(fn)
    x, y = jnp.ones(3), jnp.arange(3.0)
    first = shapes(x, y)  # nothing traced yet: eval_shape traces fn
    assert len(calls) == 1 and first["outer"].shape == (3, 3)
    np.testing.assert_array_equal(run(x, y)["sum"], [1.0, 2.0, 3.0])
    assert len(calls) == 2
    again = shapes(x, y)
    assert len(calls) == 2  # read from run's trace
    assert jax.tree.map(lambda s: (s.shape, s.dtype), again) == jax.tree.map(
        lambda s: (s.shape, s.dtype), first)
    shapes(jnp.ones(4), jnp.ones(4))  # other types: traced
    assert len(calls) == 3


def test_batched_like_broadcasts_only_under_a_vmap_of_its_reference():
    from jaxmarl_accel.trainer.train import batched_like

    zeros, keys = jnp.zeros((2, 3)), jax.random.split(jax.random.PRNGKey(0), 4)
    assert batched_like(zeros, keys[0]) is zeros
    out = jax.jit(jax.vmap(lambda k: (batched_like(zeros, k), batched_like(k, k))))(keys)
    assert out[0].shape == (4, 2, 3) and np.all(np.asarray(out[0]) == 0)
    np.testing.assert_array_equal(np.asarray(out[1]), np.asarray(keys))


def test_the_scan_over_chunks_starts_from_a_state_batched_over_seeds(trainer):
    """Under ``vmap(train)`` every leaf of the scan's initial carry has the seed axis (the
    empty replay included), so vmap batches the chunk's body once, not twice."""
    jaxpr = jax.make_jaxpr(jax.vmap(trainer.train))(jax.random.split(jax.random.PRNGKey(0), 3))
    (scan,) = [eqn for eqn in jaxpr.jaxpr.eqns if eqn.primitive.name == "scan"]
    consts, carry = scan.params["num_consts"], scan.params["num_carry"]
    carry_avals = [v.aval for v in scan.invars[consts:consts + carry]]
    assert carry_avals and all(a.shape[:1] == (3,) for a in carry_avals)
