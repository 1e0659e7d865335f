"""Assembles a scenario's pure functions into an :class:`~jaxmarl_accel.envs.base.Env`.

A scenario module supplies five small pure functions over :class:`~.core.MPEState` and its
params pytree, and :func:`build_env` adds everything that is shared: action validation at
trace time, the physics step, the time limit, auto-reset with ``info["final_obs"]``, and the
uniform random policy. The params pytree of every scenario must have the fields ``world``
(:class:`~.core.WorldParams`) and ``episode_length`` (int32 scalar); the rest is its own.

Functions a scenario supplies (``N`` agents, ``E`` entities):

* ``init(key, params) -> MPEState`` (``step = 0``);
* ``decode(actions, params) -> (force [N, 2], comm [N, dim_c])``: the agents' action force
  (scaled by accel) and new communication state (e.g. :func:`moves_decoder`);
* ``observe(state, params) -> obs [N, spec.obs_dim]`` float32, zero padded;
* ``reward(state, params) -> [N]`` float32, of the state reached by the step;
* ``heuristic(key, state, params) -> actions`` of ``spec.action_shape``.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxmarl_accel.envs import core, moves
from jaxmarl_accel.envs.base import Env, EnvSpec, PyTree


def moves_decoder(continuous: bool, dim_c: int = 0) -> Callable:
    """The ``decode`` function of scenarios whose agents only move (5 moves, silent).

    Args:
      continuous: whether actions are ``[N, 5]`` floats rather than ``[N]`` ints.
      dim_c: width of the (always zero) communication state.
    """

    def decode(actions: jax.Array, params: PyTree) -> tuple[jax.Array, jax.Array]:
        accel = params.world.accel
        if continuous:
            force = moves.decode_continuous_moves(actions, accel)
        else:
            force = moves.decode_discrete_moves(actions, accel)
        return force, jnp.zeros((actions.shape[0], dim_c), jnp.float32)

    return decode


def build_env(
    spec: EnvSpec,
    init: Callable[[jax.Array, PyTree], core.MPEState],
    decode: Callable[[jax.Array, PyTree], tuple[jax.Array, jax.Array]],
    observe: Callable[[core.MPEState, PyTree], jax.Array],
    reward: Callable[[core.MPEState, PyTree], jax.Array],
    heuristic: Callable[[jax.Array, core.MPEState, PyTree], jax.Array],
    colliders: slice | None = None,
) -> Env:
    """Builds the :class:`Env` of one scenario (see the module docstring).

    ``terminated`` is always False (MPE has no terminal states); ``truncated`` is True on
    the step that reaches ``params.episode_length`` steps, and that step returns the first
    observation of a fresh episode, with the last one in ``info["final_obs"]``.

    ``colliders`` (static slice of entities) restricts contact forces to the entities that can
    collide at all (see :func:`~.core.world_step`); ``params.world.collide`` still switches
    collisions within it, but cannot switch them on outside it.
    """

    def reset(key: jax.Array, params: PyTree) -> tuple[jax.Array, core.MPEState]:
        state = init(key, params)
        return observe(state, params), state

    def step(key: jax.Array, state: core.MPEState, actions: jax.Array, params: PyTree):
        moves.validate_actions(actions, spec.action_shape, spec.continuous, spec.name)
        force, comm = decode(actions, params)
        pos, vel = core.world_step(state.pos, state.vel, force, params.world, colliders)
        next_state = state.replace(pos=pos, vel=vel, comm=comm, step=state.step + 1)
        rew = reward(next_state, params).astype(jnp.float32)
        final_obs = observe(next_state, params)
        truncated = next_state.step >= params.episode_length
        # Select the state first and observe it once: observing a separate reset state and
        # selecting between two observations costs several times more on XLA:CPU.
        reset_state = init(key, params)
        new_state = jax.tree.map(lambda r, s: jnp.where(truncated, r, s), reset_state, next_state)
        obs = observe(new_state, params)
        terminated = jnp.zeros((), bool)
        return obs, new_state, rew, terminated, truncated, {"final_obs": final_obs}

    def random_action(key: jax.Array) -> jax.Array:
        if spec.continuous:
            return jax.random.uniform(key, spec.action_shape, jnp.float32)
        sizes = jnp.asarray(spec.action_sizes, jnp.int32)
        return jax.random.randint(key, spec.action_shape, 0, sizes, jnp.int32)

    def heuristic_action(key: jax.Array, state: core.MPEState, params: PyTree) -> jax.Array:
        return heuristic(key, state, params)

    return Env(spec=spec, reset=reset, step=step, heuristic_action=heuristic_action,
               random_action=random_action)
