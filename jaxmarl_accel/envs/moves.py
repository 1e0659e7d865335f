"""Agent actions of the MPE scenarios: decoding moves into forces, scripted steering, checks.

Discrete actions are mpe2's five moves (0 no-op, 1 -x, 2 +x, 3 -y, 4 +y); continuous ones
are mpe2's move vectors ``[no-op, -x, +x, -y, +y]`` in ``[0, 1]``. Scenarios turn either
into the action force ``[N, 2]`` of :func:`jaxmarl_accel.envs.mpe.core.world_step`; scripted
policies go the other way with :func:`seek_action`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

NUM_MOVES = 5  # discrete movement actions: no-op, -x, +x, -y, +y (mpe2's encoding)

# The unit force of each discrete move, [NUM_MOVES, 2].
MOVE_DIRECTIONS = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]], dtype=np.float32)
SEEK_GAINS = (4.0, 1.5)  # kp, kd of seek_action (per unit of accel)


def decode_discrete_moves(moves: jax.Array, accel: jax.Array) -> jax.Array:
    """Action force of discrete moves (0 no-op, 1 -x, 2 +x, 3 -y, 4 +y).

    Args:
      moves: ``[N]`` integer moves in ``[0, 5)``; any other value is a no-op (mpe2 asserts,
        jaxmarl moves anyway; neither can be checked inside a compiled step).
      accel: ``[N]`` sensitivity of each agent.

    Returns:
      ``[N, 2]`` force.
    """
    valid = (moves >= 0) & (moves < NUM_MOVES)
    force = jnp.asarray(MOVE_DIRECTIONS)[jnp.clip(moves, 0, NUM_MOVES - 1)]
    return force * (accel * valid)[:, None]


def decode_continuous_moves(actions: jax.Array, accel: jax.Array) -> jax.Array:
    """Action force of mpe2's continuous move vectors ``[no-op, -x, +x, -y, +y]``.

    Args:
      actions: ``[N, >=5]`` float; the first 5 entries are clipped to ``[0, 1]`` (as mpe2's
        ``ClipOutOfBoundsWrapper`` does) and give ``u = (a2 - a1, a4 - a3)``.
      accel: ``[N]`` sensitivity of each agent.

    Returns:
      ``[N, 2]`` force.
    """
    a = jnp.clip(actions[:, :NUM_MOVES], 0.0, 1.0)
    u = jnp.stack([a[:, 2] - a[:, 1], a[:, 4] - a[:, 3]], axis=-1)
    return u * accel[:, None]


def moves_to_continuous(direction: jax.Array) -> jax.Array:
    """Inverse of :func:`decode_continuous_moves` for unit-bounded directions.

    Args:
      direction: ``[N, 2]`` desired force per unit of accel (clipped to ``[-1, 1]``).

    Returns:
      ``[N, 5]`` move vector in ``[0, 1]``.
    """
    d = jnp.clip(direction, -1.0, 1.0)
    zero = jnp.zeros_like(d[:, 0])
    return jnp.stack(
        [zero, jnp.maximum(-d[:, 0], 0), jnp.maximum(d[:, 0], 0),
         jnp.maximum(-d[:, 1], 0), jnp.maximum(d[:, 1], 0)], axis=-1)


def direction_to_move(direction: jax.Array) -> jax.Array:
    """The discrete move whose unit force is closest to ``direction``.

    Args:
      direction: ``[N, 2]`` desired force per unit of accel.

    Returns:
      ``[N]`` int32 moves in ``[0, 5)``.
    """
    sq_err = jnp.sum((jnp.asarray(MOVE_DIRECTIONS)[None] - direction[:, None]) ** 2, -1)
    return jnp.argmin(sq_err, axis=-1).astype(jnp.int32)


def seek_action(target: jax.Array, pos: jax.Array, vel: jax.Array, continuous: bool) -> jax.Array:
    """Moves that steer agents to targets with a proportional-derivative controller.

    The desired force ``kp * (target - pos) - kd * vel`` (per unit of accel, gains
    :data:`SEEK_GAINS`) is mapped to the nearest discrete move or to mpe2's move vector.
    The scripted policies of speaker_listener, reference, adversary and push use it.

    Args:
      target, pos, vel: ``[A, 2]`` target position, position and velocity of A agents
        (axis 0: agent; axis 1: x, y).
      continuous: return ``[A, 5]`` move vectors in ``[0, 1]`` instead of ``[A]`` moves.

    Returns:
      ``[A]`` int32 moves in ``[0, 5)`` or ``[A, 5]`` float32 move vectors (axis 0: agent).
    """
    kp, kd = SEEK_GAINS
    direction = kp * (target - pos) - kd * vel
    if continuous:
        return moves_to_continuous(direction)
    return direction_to_move(direction)


def validate_actions(actions: jax.Array, shape: tuple[int, ...], continuous: bool, name: str):
    """Trace-time check of a joint action's shape and dtype (raises ``ValueError``).

    ``actions`` must be an array (jax or numpy): a Python list or tuple is rejected rather
    than converted, like a wrong dtype is rejected rather than cast.
    """
    kind = "float" if continuous else "int"
    if not (hasattr(actions, "shape") and hasattr(actions, "dtype")):
        raise ValueError(
            f"actions for {name} must be an array ({kind} with shape {tuple(shape)}), "
            f"got {type(actions).__name__}; wrap it in jnp.asarray")
    ok_dtype = jnp.issubdtype(actions.dtype, jnp.floating if continuous else jnp.integer)
    if tuple(actions.shape) != tuple(shape) or not ok_dtype:
        raise ValueError(
            f"actions for {name} must be {kind} with shape {tuple(shape)}, "
            f"got {actions.dtype} with shape {tuple(actions.shape)}")
