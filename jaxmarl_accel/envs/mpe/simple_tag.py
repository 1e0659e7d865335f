"""Predator-prey (``simple_tag``): N predators chase M prey among K obstacles.

Semantics of PettingZoo's ``simple_tag_v3`` (mpe2) for any N, M, K. Agents are ordered
predators first, then prey (``spec.teams``); entities are the agents, then the obstacles.
Predators: radius 0.075, accel 3, max speed 1.0. Prey: radius 0.05, accel 4, max speed 1.3.
Obstacles: radius 0.2, fixed. Everything collides. Agents start uniform in ``[-1, 1]^2``,
obstacles in ``[-0.9, 0.9]^2``, at rest. Prey are ordinary (trainable) agents. ``arena=s``
(not in mpe2; default 1) scales the box by s: agents start in ``[-s, s]^2``, obstacles in
``[-0.9 s, 0.9 s]^2``, and the prey's boundary penalty and the scripted prey's walls use
``pos / s``; sizes, speeds and observations are unchanged, so at N = 1,000 predators a box
of half-width s holds them at ``1 / s^2`` of the default density.

Observation of agent i (true sizes in ``spec.obs_sizes``; prey rows are zero padded)::

    [vel_i (2), pos_i (2), obstacle_k - pos_i (2 per obstacle),
     pos_j - pos_i (2 per other agent j, in index order),
     vel_p (2 per prey p other than i, in index order)]

so predators see ``4 + 2K + 2(N+M-1) + 2M`` numbers (the velocity of *every* prey) and prey
``2`` fewer. With ``k_nearest=k`` every agent sees its ``k_nearest_landmarks`` (default
``min(k, K)``) nearest obstacles and its ``k`` nearest other agents with their velocities,
zero where that agent is a predator (mpe2's partial observability): ``4 + 2k_l + 4k``.

Rewards: every predator gets ``+10`` per colliding (prey, predator) pair (shared; with
``predator_reward="own"``, not in mpe2, +10 per prey it touches itself, as paper 003's
taggers are rewarded for their own tags); prey p gets
``-10`` per predator touching it minus mpe2's boundary penalty ``sum_d bound(|pos_p[d]| / s)``,
``bound(x) = 0 if x < 0.9 else 10 (x - 0.9) if x < 1 else min(exp(2x - 2), 10)``.

Intended differences from the references: jaxmarl 0.2.0 hard-codes 16/14-dim observations,
shows predators only the last agent's velocity and gives prey no other prey's velocity, and
indexes its prey-collision matrix out of range for M > 1; it is right only for 3v1 (and 2
obstacles, where we match it step for step). Obstacles start in ``[-0.9, 0.9]^2`` as in mpe2
(jaxmarl draws them in ``[-1, 1]^2``). Episodes last ``episode_length`` steps (default 25,
as mpe2; jaxmarl runs 26). Continuous actions are clipped to ``[0, 1]`` as mpe2's wrapper does.

Scripted policy: predators run at their nearest prey (aimed at its position plus its velocity
times the time to reach it); prey run from their nearest predator, pushed back towards the
centre near the boundary and away from obstacles; the direction is mapped to a move.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_accel.checks import check_choice
from jaxmarl_accel.envs import moves
from jaxmarl_accel.envs.base import Env, EnvSpec
from jaxmarl_accel.envs.mpe import core
from jaxmarl_accel.envs.mpe.scenario import agents_and_still_landmarks, build_env, moves_decoder
from jaxmarl_accel.envs.registry import Scenario, Team, register_scenario

PREDATOR_COLOR = (0.85, 0.35, 0.35)
PREY_COLOR = (0.35, 0.85, 0.35)
OBSTACLE_COLOR = (0.25, 0.25, 0.25)
DIM_C = 2
PREDATOR_REWARDS = ("shared", "own")
FLEE_GAIN, CENTRE_GAIN, BRAKE_GAIN, WALL_GAIN = 2.0, 1.0, 1.0, 10.0


@struct.dataclass
class TagParams:
    """Numeric settings of simple_tag.

    Attributes:
      world: physical settings (:class:`~.core.WorldParams`).
      episode_length: int32 steps per episode.
      capture_reward: float32 reward per (prey, predator) contact (10).
      obstacle_bound: float32 obstacles start uniform in ``[-b s, b s]^2`` (0.9).
      arena: float32 half-width s of the box the agents start in (1, as mpe2).
    """

    world: core.WorldParams
    episode_length: jax.Array
    capture_reward: jax.Array
    obstacle_bound: jax.Array
    arena: jax.Array


class TagShape(NamedTuple):
    """Static sizes and flags of one simple_tag (hashable; the first argument of its
    functions).

    Attributes:
      num_predators: N predators (agents ``0 .. N-1``).
      num_prey: M prey (agents ``N .. N+M-1``).
      num_obstacles: K obstacles (entities ``N+M .. N+M+K-1``).
      k_nearest: other agents observed in large-N mode, or ``None`` (all).
      k_landmarks: obstacles observed in large-N mode (``None`` with ``k_nearest``).
      obs_dim: padded observation width.
      continuous: actions are ``[N+M, 5]`` move vectors.
      predator_reward: ``"shared"`` or ``"own"``.
    """

    num_predators: int
    num_prey: int
    num_obstacles: int
    k_nearest: int | None
    k_landmarks: int | None
    obs_dim: int
    continuous: bool
    predator_reward: str

    @property
    def num_agents(self) -> int:
        """N + M, predators and prey."""
        return self.num_predators + self.num_prey


def boundary_penalty(pos: jax.Array) -> jax.Array:
    """mpe2's out-of-bounds penalty of each prey, ``[M, 2] -> [M]``."""
    x = jnp.abs(pos)
    ramp = (x - 0.9) * 10.0
    wall = jnp.minimum(jnp.exp(jnp.minimum(2.0 * x - 2.0, 10.0)), 10.0)
    return jnp.sum(jnp.where(x < 0.9, 0.0, jnp.where(x < 1.0, ramp, wall)), axis=-1)


def _check(num_predators, num_prey, num_obstacles, k_nearest, k_land, length, arena,
           predator_reward):
    for name, value, low in (("num_predators", num_predators, 1), ("num_prey", num_prey, 1),
                             ("num_obstacles", num_obstacles, 0)):
        if not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    others = num_predators + num_prey - 1
    if k_nearest is not None and not 1 <= k_nearest <= others:
        raise ValueError(
            f"k_nearest must be in [1, num_predators + num_prey - 1 = {others}] (other "
            f"agents observed), got {k_nearest}")
    if k_land is not None and not 0 <= k_land <= num_obstacles:
        raise ValueError(
            f"k_nearest_landmarks must be in [0, num_obstacles = {num_obstacles}], got {k_land}")
    if not isinstance(length, int) or length < 1:
        raise ValueError(f"episode_length must be an int >= 1, got {length!r}")
    if isinstance(arena, bool) or not isinstance(arena, (int, float)) or not arena > 0:
        raise ValueError(f"arena must be a number > 0 (the box's half-width), got {arena!r}")
    check_choice("predator_reward", predator_reward, PREDATOR_REWARDS)


def make(
    num_predators: int = 3,
    num_prey: int = 1,
    num_obstacles: int = 2,
    episode_length: int = 25,
    continuous_actions: bool = False,
    k_nearest: int | None = None,
    k_nearest_landmarks: int | None = None,
    arena: float = 1.0,
    predator_reward: str = "shared",
) -> tuple[Env, TagParams]:
    """Builds simple_tag.

    Args:
      num_predators: N >= 1 (mpe2's ``num_adversaries``).
      num_prey: M >= 1 (mpe2's ``num_good``).
      num_obstacles: K >= 0.
      episode_length: steps per episode (default 25).
      continuous_actions: ``[N+M, 5]`` move vectors instead of ``[N+M]`` discrete moves.
      k_nearest: observe only the k nearest other agents (and obstacles), large-N mode.
      k_nearest_landmarks: obstacles observed in large-N mode (default ``min(k_nearest, K)``).
      arena: half-width s > 0 of the box (default 1, mpe2's): start positions, the prey's
        boundary penalty and the scripted prey's walls scale with it.
      predator_reward: ``"shared"`` (mpe2: every predator gets +10 per contact of any
        predator) or ``"own"`` (+10 per prey the predator itself touches).

    Returns:
      ``(env, params)``.
    """
    k_land = k_nearest_landmarks
    if k_nearest is not None and k_land is None and isinstance(num_obstacles, int):
        k_land = max(min(k_nearest, num_obstacles), 0)
    _check(num_predators, num_prey, num_obstacles, k_nearest, k_land, episode_length, arena,
           predator_reward)
    spec = _spec(num_predators, num_prey, num_obstacles, k_nearest, k_land, episode_length,
                 continuous_actions)
    shape = TagShape(num_predators=num_predators, num_prey=num_prey,
                     num_obstacles=num_obstacles, k_nearest=k_nearest, k_landmarks=k_land,
                     obs_dim=spec.obs_dim, continuous=continuous_actions,
                     predator_reward=predator_reward)
    params = TagParams(world=_world(num_predators, num_prey, num_obstacles),
                       episode_length=jnp.asarray(episode_length, jnp.int32),
                       capture_reward=jnp.asarray(10.0, jnp.float32),
                       obstacle_bound=jnp.asarray(0.9, jnp.float32),
                       arena=jnp.asarray(arena, jnp.float32))
    env = build_env(
        spec, functools.partial(init, shape), moves_decoder(continuous_actions, DIM_C),
        functools.partial(observe, shape), functools.partial(reward, shape),
        functools.partial(scripted, shape),
        physical=agents_and_still_landmarks(shape.num_agents, num_obstacles, DIM_C),
        observe_at=None if k_nearest is None else functools.partial(observe_at, shape))
    return env, params


def _spec(n_pred: int, n_prey: int, n_obs: int, k_nearest: int | None, k_land: int | None,
          episode_length: int, continuous: bool) -> EnvSpec:
    n = n_pred + n_prey
    if k_nearest is None:
        pred_size = 4 + 2 * n_obs + 2 * (n - 1) + 2 * n_prey
        sizes = (pred_size,) * n_pred + (pred_size - 2,) * n_prey
    else:
        sizes = (4 + 2 * k_land + 4 * k_nearest,) * n
    return EnvSpec(
        name="simple_tag", num_agents=n, obs_dim=max(sizes), obs_sizes=sizes,
        teams=("predator",) * n_pred + ("prey",) * n_prey, continuous=continuous,
        num_actions=moves.NUM_MOVES, action_sizes=(moves.NUM_MOVES,) * n,
        act_dim=moves.NUM_MOVES, episode_length=episode_length,
        position_columns=(2, 4))  # observations start [velocity, position, ...]


def _world(n_pred: int, n_prey: int, n_obs: int) -> core.WorldParams:
    n = n_pred + n_prey
    is_pred = np.r_[np.ones(n_pred, bool), np.zeros(n_prey, bool)]
    return core.make_world_params(
        size=np.r_[np.where(is_pred, 0.075, 0.05), np.full(n_obs, 0.2)],
        movable=np.r_[np.ones(n, bool), np.zeros(n_obs, bool)],
        collide=np.ones(n + n_obs, bool),
        color=np.array([PREDATOR_COLOR] * n_pred + [PREY_COLOR] * n_prey
                       + [OBSTACLE_COLOR] * n_obs).reshape(n + n_obs, 3),
        accel=np.where(is_pred, 3.0, 4.0),
        max_speed=np.r_[np.where(is_pred, 1.0, 1.3), np.full(n_obs, np.inf)])


def init(shape: TagShape, key: jax.Array, params: TagParams) -> core.MPEState:
    """A fresh episode: agents uniform in ``[-s, s]^2`` and obstacles in ``[-b s, b s]^2``
    (``pos [N + M + K, 2]``, agents then obstacles), at rest, silent (``comm [N + M, 2]``
    zeros), ``step`` 0 and no goal (``goal [0]``)."""
    n, n_obs = shape.num_agents, shape.num_obstacles
    bound = jnp.concatenate([jnp.ones(n), jnp.full(n_obs, params.obstacle_bound)])
    pos = core.uniform_positions(key, n + n_obs, 1.0) * (bound[:, None] * params.arena)
    return core.MPEState(pos=pos, vel=jnp.zeros_like(pos),
                         comm=jnp.zeros((n, DIM_C), jnp.float32),
                         step=jnp.zeros((), jnp.int32), goal=jnp.zeros((0,), jnp.int32))


def _nearest_parts(shape: TagShape, state: core.MPEState, me: jax.Array, is_me: jax.Array
                   ) -> list:
    """k-nearest observation blocks of the agents at positions ``me [R, 2]`` (``is_me
    [R, N + M]``: which agent each row is), from ``[R, N + M]`` distances: ``[obstacle
    offsets [R, k_l, 2], agent offsets [R, k, 2], their velocities [R, k, 2]]`` (zero for
    predators)."""
    n = shape.num_agents
    agent_pos, agent_vel, obstacle_pos = state.pos[:n], state.vel[:n], state.pos[n:]
    is_pred = jnp.asarray(np.r_[np.ones(shape.num_predators, bool),
                                np.zeros(shape.num_prey, bool)])
    _, obs_dist = core.pairwise_delta(me, obstacle_pos)
    obstacle_rel = obstacle_pos[core.nearest_index(obs_dist, shape.k_landmarks)] - me[:, None]
    _, dist = core.pairwise_delta(me, agent_pos)
    near = core.nearest_index(jnp.where(is_me, jnp.inf, dist), shape.k_nearest)
    seen_vel = jnp.where(is_pred[near][..., None], 0.0, agent_vel[near])
    return [obstacle_rel, agent_pos[near] - me[:, None], seen_vel]


def _assemble(shape: TagShape, parts: list) -> jax.Array:
    """Observation rows ``[R, obs_dim]`` float32: the blocks ``parts`` (each ``[R, ...]``)
    flattened per row, concatenated and zero padded."""
    rows = parts[0].shape[0]
    obs = jnp.concatenate([p.reshape(rows, -1) for p in parts], axis=1).astype(jnp.float32)
    return jnp.pad(obs, ((0, 0), (0, shape.obs_dim - obs.shape[1])))


def observe_at(shape: TagShape, state: core.MPEState, params: TagParams, agents: jax.Array
               ) -> jax.Array:
    """k-nearest observation rows ``[R, obs_dim]`` of the agents ``agents [R]`` int, from
    ``[R, N + M]`` distances (``observe(...)[agents]`` bit for bit)."""
    me = state.pos[agents]
    return _assemble(shape, [state.vel[agents], me, *_nearest_parts(
        shape, state, me, agents[:, None] == jnp.arange(shape.num_agents)[None, :])])


def observe(shape: TagShape, state: core.MPEState, params: TagParams) -> jax.Array:
    """Observations ``[N + M, obs_dim]`` float32, one row per agent (module docstring)."""
    n, n_pred, n_prey = shape.num_agents, shape.num_predators, shape.num_prey
    agent_pos, agent_vel, obstacle_pos = state.pos[:n], state.vel[:n], state.pos[n:]
    if shape.k_nearest is None:
        obstacle_rel = core.relative_positions(agent_pos, obstacle_pos)
        other_rel = core.exclude_self(core.relative_positions(agent_pos, agent_pos))
        prey_vel = agent_vel[n_pred:]
        other_prey_vel = core.exclude_self(jnp.broadcast_to(prey_vel, (n_prey, n_prey, 2)))
        seen_vel = jnp.concatenate([
            jnp.broadcast_to(prey_vel, (n_pred, n_prey, 2)),
            jnp.pad(other_prey_vel, ((0, 0), (0, 1), (0, 0)))])
    else:
        obstacle_rel, other_rel, seen_vel = _nearest_parts(shape, state, agent_pos,
                                                           jnp.eye(n, dtype=bool))
    return _assemble(shape, [agent_vel, agent_pos, obstacle_rel, other_rel, seen_vel])


def reward(shape: TagShape, state: core.MPEState, params: TagParams) -> jax.Array:
    """Rewards ``[N + M]`` float32 of the state reached: predators' then prey's."""
    n, n_pred = shape.num_agents, shape.num_predators
    size, collide = params.world.size, params.world.collide
    hit = core.is_collision(state.pos[n_pred:n], state.pos[:n_pred], size[n_pred:n],
                            size[:n_pred])  # [M, N]
    hit = hit & collide[n_pred:n, None] & collide[None, :n_pred]
    bonus = params.capture_reward
    if shape.predator_reward == "own":
        pred_rew = bonus * jnp.sum(hit, axis=0).astype(jnp.float32)
    else:
        pred_rew = jnp.full((n_pred,), bonus * jnp.sum(hit))
    prey_rew = (-bonus * jnp.sum(hit, axis=1)
                - boundary_penalty(state.pos[n_pred:n] / params.arena))
    return jnp.concatenate([pred_rew, prey_rew])


def scripted(shape: TagShape, key: jax.Array, state: core.MPEState, params: TagParams
             ) -> jax.Array:
    """The scripted policy of the module docstring: actions ``[N + M]`` int32 moves, or
    ``[N + M, 5]`` float32 move vectors (continuous)."""
    n, n_pred, n_prey = shape.num_agents, shape.num_predators, shape.num_prey
    pos, vel = state.pos[:n], state.vel[:n]
    delta, dist = core.pairwise_delta(pos[:n_pred], pos[n_pred:])  # [N, M]
    prey = jnp.argmin(dist, axis=1)
    lead = jnp.min(dist, axis=1, keepdims=True) / params.world.max_speed[:n_pred, None]
    chase = pos[n_pred:][prey] + vel[n_pred:][prey] * lead - pos[:n_pred]
    pred = jnp.argmin(dist, axis=0)
    away = -delta[pred, jnp.arange(n_prey)]
    near = jnp.min(dist, axis=0)[:, None]
    prey_pos, prey_vel = pos[n_pred:], vel[n_pred:]
    urgency = jnp.clip(1.5 - near, 0.0, 1.0)
    flee = FLEE_GAIN * urgency * away / (near + 1e-6)
    scaled = prey_pos / params.arena
    flee = flee - CENTRE_GAIN * scaled - BRAKE_GAIN * prey_vel
    flee = flee - WALL_GAIN * jnp.sign(scaled) * jnp.maximum(jnp.abs(scaled) - 0.75, 0.0)
    if shape.num_obstacles:
        push, obs_dist = core.pairwise_delta(prey_pos, state.pos[n:])
        gap = jnp.maximum(0.25 - (obs_dist - params.world.size[n:]), 0.0)
        flee = flee + jnp.sum(push / (obs_dist[..., None] + 1e-6) * gap[..., None] * 8.0, 1)
    chase = chase / (jnp.linalg.norm(chase, axis=-1, keepdims=True) + 1e-6)
    direction = jnp.concatenate([chase, flee])
    if shape.continuous:
        return moves.moves_to_continuous(direction)
    return moves.direction_to_move(direction)


SCENARIO = register_scenario(Scenario(
    "simple_tag", make, "predator-prey: N predators chase M prey among K obstacles",
    (Team("predators", "num_predators"), Team("prey", "num_prey")), agent_count="num_predators"))
