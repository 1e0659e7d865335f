"""Assembles a scenario's pure functions into an :class:`~jaxmarl_accel.envs.base.Env`.

A scenario module supplies five small pure functions over :class:`~.core.MPEState` and its
params pytree, and :func:`build_env` adds everything that is shared: action validation at
trace time, the physics step, the time limit, auto-reset with ``info["final_obs"]``, the
uniform random policy and the MPE renderer. The params pytree of every scenario must have
the fields ``world`` (:class:`~.core.WorldParams`) and ``episode_length`` (int32 scalar);
the rest is its own.

Functions a scenario supplies (``N`` agents, ``E`` entities):

* ``init(key, params) -> MPEState`` (``step = 0``);
* ``decode(actions, params) -> (force [N, 2], comm [N, dim_c])``: the agents' action force
  (scaled by accel) and new communication state (e.g. :func:`moves_decoder`);
* ``observe(state, params) -> obs [N, spec.obs_dim]`` float32, zero padded;
* ``reward(state, params) -> [N]`` float32, of the state reached by the step;
* ``scripted(key, state, params) -> actions`` of ``spec.action_shape``.

and, optionally, a :class:`Physical` (e.g. :func:`agents_and_still_landmarks`): how to pack
the part of the state ``observe`` reads into ``[N, F]`` and back, so that a replay can store
it instead of the observation and recompute the observation when it samples.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxmarl_accel.envs import moves
from jaxmarl_accel.envs.base import Env, EnvSpec, bind_static
from jaxmarl_accel.envs.mpe import core
from jaxmarl_accel.envs.mpe.render import render_mpe
from jaxmarl_accel.types import PyTree


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


class Physical(NamedTuple):
    """The packed physical state of a scenario (see :attr:`~.base.Env.physical_state`).

    Attributes:
      width: F, the packed row width per agent.
      position_columns: ``(start, stop)`` of the agent's absolute position in its row.
      pack: ``(state) -> [N, F]`` float32, everything ``observe`` reads.
      unpack: ``([N, F]) -> MPEState`` with every field ``observe`` reads as in the state
        it was packed from (the others may differ).
    """

    width: int
    pack: Callable[[core.MPEState], jax.Array]
    unpack: Callable[[jax.Array], core.MPEState]
    position_columns: tuple[int, int] | None = None


def agents_and_still_landmarks(num_agents: int, num_landmarks: int, dim_c: int) -> Physical:
    """:class:`Physical` of scenarios whose observations read only the agents' positions and
    velocities and the landmarks' positions: landmarks never move (velocity zero), agents
    are silent (``comm`` always zero) and ``step`` and ``goal`` are not observed (spread,
    tag).

    Row i of the ``[N, F]`` packing is ``[vel_i (2), pos_i (2), landmark chunk (W)]`` with
    ``W = ceil(2L / N)``: the L landmark positions, flattened, zero padded to ``N * W``
    numbers and cut into N chunks. ``F = 4 + W``.
    """
    n, num_l = num_agents, num_landmarks
    chunk = -(-2 * num_l // n)

    def pack(state: core.MPEState) -> jax.Array:
        landmarks = state.pos[n:].reshape(-1)
        landmarks = jnp.pad(landmarks, (0, n * chunk - 2 * num_l)).reshape(n, chunk)
        return jnp.concatenate([state.vel[:n], state.pos[:n], landmarks], axis=1)

    def unpack(packed: jax.Array) -> core.MPEState:
        landmarks = packed[:, 4:].reshape(-1)[:2 * num_l].reshape(num_l, 2)
        return core.MPEState(
            pos=jnp.concatenate([packed[:, 2:4], landmarks]),
            vel=jnp.concatenate([packed[:, :2], jnp.zeros((num_l, 2), packed.dtype)]),
            comm=jnp.zeros((n, dim_c), jnp.float32), step=jnp.zeros((), jnp.int32),
            goal=jnp.zeros((0,), jnp.int32))

    return Physical(width=4 + chunk, pack=pack, unpack=unpack, position_columns=(2, 4))


def random_action(spec: EnvSpec, key: jax.Array) -> jax.Array:
    """Uniform valid actions of ``spec.action_shape``: ``[N, act_dim]`` float32 in ``[0, 1)``
    (continuous) or ``[N]`` int32 in ``[0, spec.action_sizes[i])`` (discrete)."""
    if spec.continuous:
        return jax.random.uniform(key, spec.action_shape, jnp.float32)
    sizes = jnp.asarray(spec.action_sizes, jnp.int32)
    return jax.random.randint(key, spec.action_shape, 0, sizes, jnp.int32)


def build_env(
    spec: EnvSpec,
    init: Callable[[jax.Array, PyTree], core.MPEState],
    decode: Callable[[jax.Array, PyTree], tuple[jax.Array, jax.Array]],
    observe: Callable[[core.MPEState, PyTree], jax.Array],
    reward: Callable[[core.MPEState, PyTree], jax.Array],
    scripted: Callable[[jax.Array, core.MPEState, PyTree], jax.Array],
    colliders: slice | None = None,
    physical: Physical | None = None,
    observe_at: Callable[[core.MPEState, PyTree, jax.Array], jax.Array] | None = None,
) -> Env:
    """Builds the :class:`Env` of one scenario (see the module docstring).

    ``terminated`` is always False (MPE has no terminal states); ``truncated`` is True on
    the step that reaches ``params.episode_length`` steps, and that step returns the first
    observation of a fresh episode, with the last one in ``info["final_obs"]``.

    ``colliders`` (static slice of entities) restricts contact forces to the entities that can
    collide at all (see :func:`~.core.world_step`); ``params.world.collide`` still switches
    collisions within it, but cannot switch them on outside it.

    With ``physical`` the env has ``physical_state`` and ``observe_physical`` (``observe``
    of the unpacked state), its spec ``physical_state_dim``, and ``step`` also reports
    ``info["final_physical_state"]``, the pre-reset state packed, and
    ``observe_physical_at``: ``observe_at(state, params, agents)`` (some agents' rows of
    ``observe``, e.g. k-nearest rows from ``[M, N]`` distances) of the unpacked state, or
    those rows of ``observe`` where the scenario gives no ``observe_at``. The env is drawn
    by :func:`~jaxmarl_accel.envs.mpe.render.render_mpe`.
    """
    if physical is not None:
        spec = dataclasses.replace(spec, physical_state_dim=physical.width,
                                   physical_position_columns=physical.position_columns)

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
        info = {"final_obs": final_obs}
        if physical is not None:
            info["final_physical_state"] = physical.pack(next_state)
        return obs, new_state, rew, terminated, truncated, info

    def scripted_action(key: jax.Array, state: core.MPEState, params: PyTree) -> jax.Array:
        return scripted(key, state, params)

    env = Env(spec=spec, reset=reset, step=step, scripted_action=scripted_action,
              random_action=bind_static(random_action, spec), render=render_mpe)
    if physical is None:
        return env

    def observe_physical(packed: jax.Array, params: PyTree) -> jax.Array:
        return observe(physical.unpack(packed), params)

    def observe_physical_at(packed: jax.Array, params: PyTree, agents: jax.Array) -> jax.Array:
        if observe_at is None:
            return observe(physical.unpack(packed), params)[agents]
        return observe_at(physical.unpack(packed), params, agents)

    return env._replace(physical_state=physical.pack, observe_physical=observe_physical,
                        observe_physical_at=observe_physical_at)
