"""Sweeps: settings vmapped beside seeds in one program equal the runs of each setting."""

from __future__ import annotations

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos import ActorCriticConfig, OnPolicyConfig, ValueConfig
from jaxmarl_accel.algos.pqn import PQNConfig
from jaxmarl_accel.algos.registry import family_of, registered_algos, sweepable_fields
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.envs import make
from jaxmarl_accel.trainer.sweep import (
    Sweep,
    check_sweep,
    grid,
    lane_keys,
    lane_values,
    make_sweep_train,
    make_sweep_trainer,
    sample_ranges,
    setting_config,
    with_values,
)
from jaxmarl_accel.trainer.train import make_trainer

pytestmark = pytest.mark.xdist_group("sweep")

SEEDS = 2
RTOL, ATOL = 2e-4, 2e-6
"""A setting's lanes against its own run after a few updates: float32 rounding (a constant
the compiler folds rounds otherwise than the same value read from an array)."""


def tiny(algo: str) -> TrainConfig:
    """A run of a few updates of ``algo`` on a small task of its family."""
    family = family_of(algo)
    if family == "actor_critic":
        return TrainConfig(
            env="simple_spread", env_kwargs=(("num_agents", 2),), algo=algo,
            learner=ActorCriticConfig(hidden_sizes=(8, 8)), buffer_capacity=200, batch_size=16,
            num_envs=4, total_env_steps=160, update_every=20, learning_starts=40,
            eval_every=80, eval_episodes=2)
    if family == "value":
        return TrainConfig(
            env="stag_hunt", algo=algo, env_kwargs=(("episode_length", 5), ("grid_size", 4),
                                                    ("num_agents", 2), ("num_stags", 1)),
            learner=ValueConfig(hidden=8, mixer_embed=4, hypernet_hidden=8, qstar_hidden=8,
                                qstar_layers=1, target_update_episodes=4),
            buffer_capacity=8, batch_size=2, num_envs=2, total_env_steps=40, eval_every=20,
            eval_episodes=2)
    if family == "pqn":
        return TrainConfig(
            env="simple_tag", algo=algo, num_envs=4, total_env_steps=80, eval_every=40,
            eval_episodes=2, env_kwargs=(("num_obstacles", 0), ("num_predators", 2)),
            learner=PQNConfig(hidden_sizes=(8,), rollout_length=10, minibatches=2))
    return TrainConfig(
        env="simple_tag", algo=algo, num_envs=4, total_env_steps=80, eval_every=40,
        eval_episodes=2, env_kwargs=(("num_obstacles", 0), ("num_predators", 2)),
        learner=OnPolicyConfig(hidden_sizes=(8, 8), rollout_length=10,
                               minibatches=2 if algo == "ppo" else 4))


SWEEPS = {
    "matd3": Sweep(("actor_lr", "tau", "target_noise"), ((0.01, 0.01, 0.2), (0.003, 0.05, 0.3))),
    "qmix": Sweep(("lr", "td_lambda", "epsilon_start"), ((1e-3, 0.6, 1.0), (3e-3, 0.8, 0.5))),
    "ppo": Sweep(("lr", "clip_eps", "entropy_coef"), ((1e-3, 0.2, 0.05), (3e-3, 0.1, 0.01))),
}


@pytest.mark.parametrize("algo", sorted(SWEEPS))
@pytest.mark.slow
def test_each_setting_of_a_sweep_trains_as_its_own_run(algo):
    """Setting k's lanes (one program for K=2 settings x 2 seeds) against a run of setting k
    alone at the same seeds: parameters and learning curves within float32 rounding."""
    config, sweep = tiny(algo), SWEEPS[algo]
    check_sweep(config, sweep)
    chex.clear_trace_counter()  # the counter is keyed by the function's code, not its closure
    key = jax.random.PRNGKey(3)
    program = jax.jit(jax.vmap(chex.assert_max_traces(make_sweep_train(config, sweep.names),
                                                      n=1)))
    state, metrics = program(lane_keys(key, sweep, SEEDS), lane_values(sweep, SEEDS))
    chex.assert_shape(state.env_steps, (sweep.num_settings * SEEDS,))
    first = jax.tree.leaves(state.algo)
    assert any(not np.allclose(leaf[0], leaf[SEEDS]) for leaf in first)  # the values act
    for k in range(sweep.num_settings):
        alone = make_trainer(setting_config(config, sweep, k))
        single, single_metrics = jax.jit(jax.vmap(alone.train))(jax.random.split(key, SEEDS))
        lanes = slice(k * SEEDS, (k + 1) * SEEDS)
        chex.assert_trees_all_close(jax.tree.map(lambda x, at=lanes: x[at], state.algo),
                                    single.algo, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(np.asarray(metrics.eval_return[lanes]),
                                   np.asarray(single_metrics.eval_return), rtol=RTOL, atol=1e-4)
        for name, value in sweep.setting(k).items():
            np.testing.assert_allclose(np.asarray(state.hyper[name][lanes]), value, rtol=1e-7)
    # the same program with the settings swapped: no new trace, the lanes swap with them
    swapped = Sweep(sweep.names, sweep.values[::-1])
    state2, _ = program(lane_keys(key, swapped, SEEDS), lane_values(swapped, SEEDS))
    chex.assert_trees_all_equal(jax.tree.map(lambda x: x[:SEEDS], state2.algo),
                                jax.tree.map(lambda x: x[SEEDS:], state.algo))


@pytest.mark.parametrize("algo", registered_algos())
@pytest.mark.fast_cases(1)
def test_every_declared_field_is_a_value_of_the_program(algo):
    """Every field a learner declares sweepable traces as an array (no concretization, no
    Python branch on it): one chunk of a lane with all of them traced at once."""
    names = sweepable_fields(algo)
    assert names, f"{algo} declares no sweepable field"
    config = tiny(algo)
    if algo == "masac":  # its continuous head reads the log-std clips
        config = dataclasses.replace(config, env_kwargs=(("continuous_actions", True),
                                                         ("num_agents", 2)))
    made = make(config.env, **dict(config.env_kwargs))

    def lane(key, hyper):
        trainer = make_trainer(with_values(config, hyper), made)
        return trainer.run_chunk(trainer.init(key), jnp.int32(0))

    hyper = {name: jnp.full((2,), float(getattr(config.learner, name) or 0.5), jnp.float32)
             for name in names}
    jax.eval_shape(jax.vmap(lane), jax.random.split(jax.random.PRNGKey(0), 2), hyper)


def test_a_sweep_refuses_what_it_cannot_run_in_one_line():
    config = tiny("matd3")
    cases = {
        "not a field": Sweep(("actor_lrr",), ((0.1,),)),
        "changes an array shape": Sweep(("hidden_sizes",), ((8.0,),)),
        "finite number": Sweep(("tau",), ((float("nan"),),)),
        "no settings": Sweep(("tau",), ()),
        "tau must lie in [0, 1]": Sweep(("tau",), ((0.1,), (2.0,))),
        "named twice": Sweep(("tau", "tau"), ((0.1, 0.2),)),
    }
    for words, sweep in cases.items():
        with pytest.raises(ValueError, match=None) as info:
            check_sweep(config, sweep)
        assert words in str(info.value) and "\n" not in str(info.value), str(info.value)
    with pytest.raises(ValueError, match="algo 'a2c' does not read 'clip_eps'; it can sweep lr"):
        check_sweep(tiny("a2c"), Sweep(("clip_eps",), ((0.2,),)))  # PPO's only


def test_grids_and_samples_are_the_settings_asked_for():
    sweep = grid({"actor_lr": (0.01, 0.001), "tau": (0.01, 0.005, 0.001)})
    assert sweep.num_settings == 6
    assert sweep.setting(1) == {"actor_lr": 0.01, "tau": 0.005}
    drawn = sample_ranges({"actor_lr": ("log", 1e-4, 1e-2), "tau": ("lin", 0.0, 0.1)}, 50)
    values = np.asarray(drawn.values)
    assert values.shape == (50, 2)
    assert (values[:, 0] >= 1e-4).all() and (values[:, 0] <= 1e-2).all()
    assert (values[:, 1] >= 0).all() and (values[:, 1] <= 0.1).all()
    assert np.median(values[:, 0]) < 3e-3  # log-uniform: median near 1e-3
    assert drawn == sample_ranges({"actor_lr": ("log", 1e-4, 1e-2), "tau": ("lin", 0.0, 0.1)},
                                  50)


@pytest.mark.slow
def test_the_sweep_trainer_lanes_start_as_the_seeds_of_each_setting():
    config, sweep = tiny("matd3"), grid({"tau": (0.01, 0.02)})
    trainer = make_sweep_trainer(config, sweep, seeds=2)
    assert trainer.lanes == 4
    state = jax.jit(trainer.init_lanes)(jax.random.PRNGKey(0))
    np.testing.assert_allclose(np.asarray(state.hyper["tau"]), [0.01, 0.01, 0.02, 0.02])
    alone = jax.jit(jax.vmap(make_trainer(config).init))(
        jax.random.split(jax.random.PRNGKey(0), 2))
    chex.assert_trees_all_equal(jax.tree.map(lambda x: x[2:], state.algo), alone.algo)
    chunk = jax.jit(jax.vmap(trainer.trainer.run_chunk, in_axes=(0, None)))
    after, metrics = chunk(state, jnp.int32(0))
    chex.assert_shape(metrics.env_steps, (4,))
    np.testing.assert_allclose(np.asarray(after.hyper["tau"]), [0.01, 0.01, 0.02, 0.02])


@pytest.mark.slow
def test_lanes_in_groups_compute_what_one_vmap_computes():
    """The CPU chunk runs a sweep's lanes one setting after another (a loop over groups);
    the numbers are those of one vmap over every lane, and the grouped chunk copies no more
    than one group's state (a ``lax.map`` over the groups held a second copy of every
    lane's replay: temporaries 1.34x the state)."""
    from jaxmarl_accel.trainer.sharding import DeviceLayout, make_sharded_trainer

    config = dataclasses.replace(tiny("matd3"), buffer_capacity=4000)
    sweep = grid({"actor_lr": (0.01, 0.003)})
    lanes = make_sweep_trainer(config, sweep, seeds=2)
    out = []
    for groups in (1, 2):
        sharded = make_sharded_trainer(lanes.trainer, DeviceLayout(1, 1), lanes.lanes,
                                       init_lanes=lanes.init_lanes, lane_groups=groups)
        state_bytes = sum(x.size * x.dtype.itemsize
                          for x in jax.tree.leaves(sharded.abstract_state))
        memory = sharded.run_chunk.lower(sharded.abstract_state,
                                         np.int32(0)).compile().memory_analysis()
        if groups > 1:  # one group's slice of the state, and a little more
            assert memory.temp_size_in_bytes <= 1.1 * state_bytes / groups + 2**20
        state = sharded.init(np.asarray(jax.random.PRNGKey(1)))
        for chunk in range(2):
            state, metrics = sharded.run_chunk(state, np.int32(chunk))
        out.append((state.algo, metrics.eval_return))
    chex.assert_trees_all_close(out[0], out[1], rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="lane_groups"):
        make_sharded_trainer(lanes.trainer, DeviceLayout(1, 1), lanes.lanes,
                             init_lanes=lanes.init_lanes, lane_groups=3)
