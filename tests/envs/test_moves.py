"""envs.moves: action decoding against mpe2's encoding, scripted steering and action checks,
every function under jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.envs import moves

_directions = st.lists(st.tuples(st.floats(-1, 1, width=32), st.floats(-1, 1, width=32)),
                       min_size=1, max_size=6).map(lambda d: np.asarray(d, np.float32))


def test_action_decoding_follows_mpe2():
    accel = jnp.array([2.0, 2.0, 2.0, 2.0, 2.0])
    discrete = jax.jit(moves.decode_discrete_moves)
    continuous = jax.jit(moves.decode_continuous_moves)
    force = discrete(jnp.arange(5), accel)
    np.testing.assert_array_equal(force, 2.0 * moves.MOVE_DIRECTIONS)
    out_of_range = discrete(jnp.array([-1, 5, 99]), accel[:3])
    np.testing.assert_array_equal(out_of_range, np.zeros((3, 2)))  # a no-op
    cont = jnp.array([[0.3, 0.2, 0.9, 1.5, -0.4]])
    np.testing.assert_allclose(continuous(cont, accel[:1]), [[1.4, -2.0]])
    direction = jnp.array([[0.9, 0.2], [0.1, -0.2], [-0.3, -0.8]])
    np.testing.assert_array_equal(jax.jit(moves.direction_to_move)(direction), [2, 0, 3])
    roundtrip = continuous(jax.jit(moves.moves_to_continuous)(direction), jnp.ones(3))
    np.testing.assert_allclose(roundtrip, direction, atol=1e-6)


def test_continuous_decoding_ignores_extra_entries_and_scales_by_accel():
    actions = jnp.array([[0.0, 0.0, 1.0, 0.0, 0.0, 0.7, 0.2], [0.5, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]])
    force = jax.jit(moves.decode_continuous_moves)(actions, jnp.array([3.0, 0.5]))
    np.testing.assert_allclose(force, [[3.0, 0.0], [-0.5, 0.5]])  # entries past 5: comm


@settings(max_examples=20, deadline=None)
@given(_directions)
def test_continuous_moves_round_trip_and_stay_in_the_unit_box(direction):
    vectors = jax.jit(moves.moves_to_continuous)(direction)
    assert vectors.shape == (len(direction), moves.NUM_MOVES)
    assert float(vectors.min()) >= 0.0 and float(vectors.max()) <= 1.0
    assert np.all(np.asarray(vectors[:, 0]) == 0.0)  # the no-op entry stays zero
    decoded = jax.jit(moves.decode_continuous_moves)(vectors, jnp.ones(len(direction)))
    np.testing.assert_allclose(decoded, direction, atol=1e-6)


@settings(max_examples=20, deadline=None)
@given(_directions.map(lambda d: 3.0 * d))
def test_direction_to_move_picks_the_nearest_unit_force(direction):
    move = np.asarray(jax.jit(moves.direction_to_move)(direction))
    assert move.dtype == np.int32 and move.min() >= 0 and move.max() < moves.NUM_MOVES
    sq_err = ((moves.MOVE_DIRECTIONS[None] - direction[:, None]) ** 2).sum(-1)
    np.testing.assert_allclose(sq_err[np.arange(len(move)), move], sq_err.min(-1), rtol=1e-6)


def test_seek_action_steers_to_the_target_and_damps_velocity():
    pos = jnp.array([[0.0, 0.0], [0.5, 0.5], [0.0, 0.0]])
    target = jnp.array([[0.3, 0.0], [0.5, 0.2], [0.0, 0.0]])
    vel = jnp.array([[0.0, 0.0], [0.0, 0.0], [0.4, 0.0]])  # agent 2 sits on its target
    seek = jax.jit(moves.seek_action, static_argnums=3)
    np.testing.assert_array_equal(seek(target, pos, vel, False), [2, 3, 1])  # +x, -y, brake
    vectors = seek(target, pos, vel, True)
    assert vectors.shape == (3, moves.NUM_MOVES) and vectors.dtype == jnp.float32
    kp, kd = moves.SEEK_GAINS
    desired = np.clip(kp * (target - pos) - kd * vel, -1.0, 1.0)
    np.testing.assert_allclose(moves.decode_continuous_moves(vectors, jnp.ones(3)), desired,
                               atol=1e-6)


def test_seek_action_brings_a_point_mass_to_rest_at_its_target():
    """Integrated with MPE's damping (0.25) and dt 0.1: continuous steering settles on the
    target; discrete steering stops inside its dead zone, where the no-op is the nearest move
    (``|kp * (target - pos)| < 0.5`` per axis)."""
    target = jnp.array([[0.6, -0.4], [-0.5, 0.5]])
    accel = jnp.full(2, 5.0)

    def run(continuous):
        def body(carry, _):
            pos, vel = carry
            act = moves.seek_action(target, pos, vel, continuous)
            force = (moves.decode_continuous_moves(act, accel) if continuous
                     else moves.decode_discrete_moves(act, accel))
            return (pos + 0.1 * vel, 0.75 * vel + 0.1 * force), None

        return jax.lax.scan(body, (jnp.zeros((2, 2)), jnp.zeros((2, 2))), None, 200)[0]

    dead_zone = 0.5 / moves.SEEK_GAINS[0]
    for continuous, atol in ((False, dead_zone), (True, 1e-4)):
        pos, vel = jax.jit(run, static_argnums=0)(continuous)
        assert float(jnp.abs(pos - target).max()) < atol
        assert float(jnp.abs(vel).max()) < 1e-4


def test_validate_actions_checks_shape_and_dtype_at_trace_time():
    def checked(shape, continuous):
        def step(actions):
            moves.validate_actions(actions, shape, continuous, "scenario_x")
            return actions

        return jax.jit(step)

    np.testing.assert_array_equal(checked((3,), False)(jnp.arange(3)), np.arange(3))
    assert checked((2, 5), True)(jnp.zeros((2, 5))).shape == (2, 5)
    with pytest.raises(ValueError, match=r"scenario_x must be int with shape \(3,\)"):
        checked((3,), False)(jnp.zeros(3))
    with pytest.raises(ValueError, match=r"got int32 with shape \(4,\)"):
        checked((3,), False)(jnp.zeros(4, jnp.int32))
    with pytest.raises(ValueError, match=r"float with shape \(2, 5\)"):
        checked((2, 5), True)(jnp.zeros((2,), jnp.int32))
