"""The shared MPE physics core against a direct transcription of mpe2's per-pair loops."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.envs.mpe import core


def _world(num_entities: int, seed: int) -> core.WorldParams:
    rng = np.random.default_rng(seed)
    return core.make_world_params(
        size=rng.uniform(0.05, 0.3, num_entities),
        movable=rng.random(num_entities) < 0.7,
        collide=rng.random(num_entities) < 0.8,
        color=np.zeros((num_entities, 3)),
        accel=np.full(num_entities, 5.0),
        mass=rng.uniform(0.5, 2.0, num_entities),
        max_speed=np.where(rng.random(num_entities) < 0.5, 0.7, np.inf))


def _loop_step(pos, vel, force, world):
    """mpe2's World.step physics as per-pair Python loops (float64)."""
    size, movable, collide = map(np.asarray, (world.size, world.movable, world.collide))
    mass, max_speed = np.asarray(world.mass), np.asarray(world.max_speed)
    pos, vel = pos.astype(np.float64), vel.astype(np.float64)
    total = np.zeros_like(pos)
    total[: len(force)] = force * movable[: len(force), None]
    for a, b in itertools.combinations(range(len(pos)), 2):
        if not (collide[a] and collide[b]):
            continue
        delta = pos[a] - pos[b]
        dist = np.sqrt(np.sum(delta**2))
        pen = np.logaddexp(0, -(dist - size[a] - size[b]) / 1e-3) * 1e-3
        f = 1e2 * delta / dist * pen
        total[a] += f * movable[a]
        total[b] -= f * movable[b]
    new_pos, new_vel = pos.copy(), vel.copy()
    for i in range(len(pos)):
        if not movable[i]:
            continue
        new_pos[i] = pos[i] + vel[i] * 0.1
        new_vel[i] = vel[i] * 0.75 + total[i] / mass[i] * 0.1
        speed = np.linalg.norm(new_vel[i])
        if speed > max_speed[i]:
            new_vel[i] = new_vel[i] / speed * max_speed[i]
    return new_pos, new_vel


def test_contact_paths_cover_the_thresholds():
    # the entity counts below exercise every contact-force path
    assert 4 <= core.PAIR_GATHER_MAX_ENTITIES < 9 <= core.PAIRWISE_MAX_ENTITIES < 45


# 4: pair differences by gather; 9: by incidence matmul; 45: the dense [E, E] path
@pytest.mark.parametrize(("seed", "num_entities"), [(0, 4), (1, 9), (2, 9), (3, 45)])
def test_world_step_matches_pairwise_loops(seed, num_entities):
    num_agents = num_entities // 2 + 1
    world = _world(num_entities, seed)
    rng = np.random.default_rng(seed)
    pos = rng.uniform(-0.5, 0.5, (num_entities, 2)).astype(np.float32)
    vel = (rng.normal(size=(num_entities, 2)) * np.asarray(world.movable)[:, None]).astype(
        np.float32)
    force = rng.normal(size=(num_agents, 2)).astype(np.float32)
    new_pos, new_vel = jax.jit(core.world_step)(pos, vel, force, world)
    ref_pos, ref_vel = _loop_step(pos, vel, force, world)
    np.testing.assert_allclose(new_pos, ref_pos, atol=1e-5)
    np.testing.assert_allclose(new_vel, ref_vel, atol=1e-4, rtol=1e-5)
    speed = np.linalg.norm(np.asarray(new_vel), axis=1)
    assert np.all(speed <= np.asarray(world.max_speed) + 1e-5)


@pytest.mark.parametrize("num_entities", [4, 9, 45])
def test_coincident_entities_give_finite_forces(num_entities):
    world = _world(num_entities, 0).replace(
        collide=jnp.ones(num_entities, bool), movable=jnp.ones(num_entities, bool))
    pos = jnp.zeros((num_entities, 2))
    new_pos, new_vel = jax.jit(core.world_step)(pos, pos, jnp.ones((2, 2)), world)
    assert np.isfinite(np.asarray(new_pos)).all() and np.isfinite(np.asarray(new_vel)).all()


def test_uniform_positions_are_uniform_and_keyed():
    from scipy.stats import kstest

    keys = jax.random.split(jax.random.PRNGKey(0), 4000)
    pos = np.asarray(jax.jit(jax.vmap(lambda k: core.uniform_positions(k, 6, 0.9)))(keys))
    assert pos.shape == (4000, 6, 2) and np.abs(pos).max() <= 0.9
    assert kstest(pos.ravel() / 1.8 + 0.5, "uniform").pvalue > 1e-3
    flat = pos.reshape(4000, -1)
    assert np.abs(np.corrcoef(flat.T) - np.eye(12)).max() < 0.08  # no coordinate correlation
    assert np.unique(flat[:, 0]).size > 3990  # different keys, different draws
    same = core.uniform_positions(jax.random.key(7), 3, 1.0)
    np.testing.assert_array_equal(same, core.uniform_positions(jax.random.PRNGKey(7), 3, 1.0))


def test_positions_and_goal_share_one_draw():
    keys = jax.random.split(jax.random.PRNGKey(1), 3000)
    draws = {g: jax.jit(jax.vmap(lambda k, g=g: core.positions_and_goal(k, 5, 3, g)))(keys)
             for g in (1, 2, 3)}
    pos, goal = (np.asarray(x) for x in draws[3])
    assert pos.shape == (3000, 5, 2) and goal.shape == (3000, 3) and goal.dtype == np.int32
    for g in (1, 2):  # fewer goals: the same positions and a prefix of the same goals
        np.testing.assert_array_equal(draws[g][0], pos)
        np.testing.assert_array_equal(draws[g][1], goal[:, :g])
    np.testing.assert_array_equal(pos, jax.vmap(lambda k: core.uniform_positions(k, 5, 1.0))(keys))
    counts = np.stack([np.bincount(goal[:, j], minlength=3) for j in range(3)])
    assert counts.shape == (3, 3) and np.abs(counts / 3000 - 1 / 3).max() < 0.04
    with pytest.raises(ValueError, match="num_goals"):
        core.positions_and_goal(keys[0], 5, 3, 0)
