"""Population-based training steps: the worst lanes copy the best lanes' learners and
perturbed values, without a new program."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.algos import ActorCriticConfig
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.trainer.pbt import FACTORS, exploit_explore, make_apply
from jaxmarl_accel.trainer.rounds.state import TrainState

CONFIG = TrainConfig(algo="matd3", learner=ActorCriticConfig(hidden_sizes=(8,)))


def test_the_worst_quarter_copies_the_best_quarter_and_perturbs_its_values():
    scores = [5.0, -3.0, 9.0, 1.0, 7.0, -8.0, 2.0, float("nan")]
    hyper = {"actor_lr": np.linspace(1e-3, 8e-3, 8), "tau": np.full(8, 0.9)}
    step = exploit_explore(CONFIG, scores, hyper, np.random.default_rng(0))
    assert set(step.replaced) == {7, 5}  # nan counts as the worst
    kept = [lane for lane in range(8) if lane not in step.replaced]
    np.testing.assert_array_equal(step.parents[kept], kept)
    for lane in step.replaced:
        parent = step.parents[lane]
        assert parent in (2, 4)  # the best quarter
        ratio = step.hyper["actor_lr"][lane] / hyper["actor_lr"][parent]
        assert min(abs(ratio - f) for f in FACTORS) < 1e-12
        # tau 0.9 x 1.25 is refused by the config (tau <= 1): the parent's value is kept
        assert step.hyper["tau"][lane] in (0.9 * 0.8, 0.9)
    again = exploit_explore(CONFIG, scores, hyper, np.random.default_rng(0))
    np.testing.assert_array_equal(again.parents, step.parents)


def test_apply_copies_the_parents_learners_and_sets_the_values():
    state = TrainState(algo={"w": jnp.arange(4.0)[:, None] * jnp.ones((4, 3))},
                       buffer={"b": jnp.arange(4.0)}, env_state={}, obs=jnp.zeros((4, 1)),
                       episode_return=jnp.zeros((4, 1)), key=jnp.zeros((4, 2), jnp.uint32),
                       env_steps=jnp.zeros(4, jnp.int32), hyper={"tau": jnp.zeros(4)})
    out = make_apply()(state, np.asarray([0, 3, 2, 3], np.int32),
                       {"tau": np.asarray([0.1, 0.2, 0.3, 0.4])})
    np.testing.assert_array_equal(np.asarray(out.algo["w"])[:, 0], [0.0, 3.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(out.buffer["b"]), [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.asarray(out.hyper["tau"]), [0.1, 0.2, 0.3, 0.4], rtol=1e-6)


def test_a_lane_that_copies_another_starts_its_carries_again_and_keeps_its_envs():
    lanes, envs = 4, 3
    state = TrainState(algo={"w": jnp.arange(4.0)}, buffer=(), env_state={"t": jnp.arange(4.0)},
                       obs=jnp.zeros((lanes, envs, 1)),
                       episode_return=jnp.zeros((lanes, envs, 1)),
                       key=jnp.zeros((lanes, 2), jnp.uint32), env_steps=jnp.zeros(4, jnp.int32),
                       hyper={"lr": jnp.zeros(4)},
                       carry={"net": 1.0 + jnp.arange(lanes * envs * 2.0).reshape(lanes, envs, 2)})
    before = np.asarray(state.carry["net"])
    first = {"net": jnp.full((envs, 2), -1.0)}
    out = make_apply(initial_carry=first)(state, np.asarray([0, 3, 2, 3], np.int32),
                                          {"lr": np.ones(4)})
    carry = np.asarray(out.carry["net"])
    np.testing.assert_array_equal(carry[1], -1.0)  # lane 1 copied lane 3's learner
    np.testing.assert_array_equal(carry[[0, 2, 3]], before[[0, 2, 3]])
    np.testing.assert_array_equal(np.asarray(out.env_state["t"]), [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(out.algo["w"]), [0.0, 3.0, 2.0, 3.0])
