"""Cooperative navigation (``simple_spread``): N agents cover L landmarks without colliding.

Semantics of PettingZoo's ``simple_spread_v3`` (mpe2) and jaxmarl 0.2.0's ``MPE_simple_spread_v3``:
agents of radius 0.15, accel 5, unbounded speed, colliding with each other; landmarks of
radius 0.05, fixed, not colliding; every entity starts uniform in ``[-1, 1]^2`` at rest.

Observation of agent i (``obs_dim = 4 + 2L + 4(N-1)``, all agents alike)::

    [vel_i (2), pos_i (2), landmark_l - pos_i (2 per landmark),
     pos_j - pos_i (2 per other agent j, in index order), comm_j (2 per other agent)]

(comm is always zero: agents are silent, kept for mpe2's observation size.) With
``k_nearest=k`` the landmark block holds the ``k_nearest_landmarks`` (default ``k``) nearest
landmarks and the agent blocks the ``k`` nearest other agents, closest first, as mpe2's
``num_landmark_neighbors`` / ``num_agent_neighbors``: ``obs_dim = 4 + 2k_l + 4k``.

Reward of agent i: ``local_ratio * (-#{j != i : |p_i - p_j| < 0.3}) + (1 - local_ratio) *
(-sum_l min_j |p_j - landmark_l|)``.

Intended differences from the references: ``num_landmarks`` may differ from N (mpe2 ties
them; jaxmarl allows it too); episodes last ``episode_length`` steps (default 25, as mpe2;
jaxmarl runs 26 because it truncates when its counter *before* the step reaches 25);
continuous actions are clipped to ``[0, 1]`` (as mpe2's wrapper; jaxmarl does not clip).
Landmarks never collide, so contact forces are computed among the N agents only
(``params.world.collide`` of a landmark has no effect).

Scripted policy: each agent is assigned a landmark by :func:`~.assignment.assign` on the
agent-landmark distances (exact for L <= 8, greedy above; with L < N several agents may
share), then a proportional-derivative controller ``kp * (target - pos) - kd * vel`` is
mapped to the nearest discrete move (or to the continuous move vector). Measured per agent
per episode over 2,000 episodes (N = 3, standard error about 0.2): random -26.7, scripted
-7.4 (discrete) / -5.9 (continuous) at 25 steps; -27.8 and -7.5 / -5.9 at jaxmarl's 26.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_accel.envs import moves
from jaxmarl_accel.envs.base import Env, EnvSpec
from jaxmarl_accel.envs.mpe import core
from jaxmarl_accel.envs.mpe.assignment import assign
from jaxmarl_accel.envs.mpe.scenario import agents_and_still_landmarks, build_env, moves_decoder
from jaxmarl_accel.envs.registry import Scenario, Team, register_scenario

AGENT_COLOR = (0.35, 0.35, 0.85)
LANDMARK_COLOR = (0.25, 0.25, 0.25)
DIM_C = 2
PD_GAINS = (15.0, 3.5)  # kp, kd of the scripted controller (per unit of accel)


@struct.dataclass
class SpreadParams:
    """Numeric settings of simple_spread.

    Attributes:
      world: physical settings (:class:`~.core.WorldParams`).
      episode_length: int32 steps per episode.
      local_ratio: float32 weight of the local (collision) reward.
    """

    world: core.WorldParams
    episode_length: jax.Array
    local_ratio: jax.Array


class SpreadShape(NamedTuple):
    """Static sizes and flags of one simple_spread (hashable; the first argument of its
    functions).

    Attributes:
      num_agents: N agents (entities ``0 .. N-1``).
      num_landmarks: L landmarks (entities ``N .. N+L-1``).
      seen_agents: other agents in an observation (``N - 1``, or k in large-N mode).
      seen_landmarks: landmarks in an observation (L, or ``k_l`` in large-N mode).
      nearest_only: large-N mode (``k_nearest`` given): the nearest ones are observed,
        closest first.
      continuous: actions are ``[N, 5]`` move vectors.
    """

    num_agents: int
    num_landmarks: int
    seen_agents: int
    seen_landmarks: int
    nearest_only: bool
    continuous: bool


def _check_counts(num_agents, num_landmarks, k_nearest, k_landmarks, local_ratio, length):
    if not isinstance(num_agents, int) or num_agents < 1:
        raise ValueError(f"num_agents must be an int >= 1, got {num_agents!r}")
    if not isinstance(num_landmarks, int) or num_landmarks < 1:
        raise ValueError(f"num_landmarks must be an int >= 1, got {num_landmarks!r}")
    if k_nearest is not None and not 1 <= k_nearest <= num_agents - 1:
        raise ValueError(
            f"k_nearest must be in [1, num_agents - 1 = {num_agents - 1}] (other agents "
            f"observed), got {k_nearest}")
    if k_landmarks is not None and not 1 <= k_landmarks <= num_landmarks:
        raise ValueError(
            f"k_nearest_landmarks must be in [1, num_landmarks = {num_landmarks}], "
            f"got {k_landmarks}")
    if not 0.0 <= local_ratio <= 1.0:
        raise ValueError(f"local_ratio must be in [0, 1], got {local_ratio}")
    if not isinstance(length, int) or length < 1:
        raise ValueError(f"episode_length must be an int >= 1, got {length!r}")


def make(
    num_agents: int = 3,
    num_landmarks: int | None = None,
    local_ratio: float = 0.5,
    episode_length: int = 25,
    continuous_actions: bool = False,
    k_nearest: int | None = None,
    k_nearest_landmarks: int | None = None,
) -> tuple[Env, SpreadParams]:
    """Builds simple_spread.

    Args:
      num_agents: N >= 1.
      num_landmarks: L >= 1 (default N).
      local_ratio: weight of the collision penalty in ``[0, 1]``.
      episode_length: steps per episode (default 25).
      continuous_actions: ``[N, 5]`` move vectors instead of ``[N]`` discrete moves.
      k_nearest: observe only the k nearest other agents (and landmarks), large-N mode.
      k_nearest_landmarks: landmarks observed in large-N mode (default ``min(k_nearest, L)``).

    Returns:
      ``(env, params)``.
    """
    n = num_agents
    num_landmarks = n if num_landmarks is None else num_landmarks
    k_land = k_nearest_landmarks
    if k_nearest is not None and k_land is None and isinstance(num_landmarks, int):
        k_land = min(k_nearest, num_landmarks)
    _check_counts(n, num_landmarks, k_nearest, k_land, local_ratio, episode_length)
    shape = SpreadShape(num_agents=n, num_landmarks=num_landmarks,
                        seen_agents=n - 1 if k_nearest is None else k_nearest,
                        seen_landmarks=num_landmarks if k_nearest is None else k_land,
                        nearest_only=k_nearest is not None, continuous=continuous_actions)
    obs_dim = 4 + 2 * shape.seen_landmarks + (2 + DIM_C) * shape.seen_agents
    spec = EnvSpec(
        name="simple_spread", num_agents=n, obs_dim=obs_dim, obs_sizes=(obs_dim,) * n,
        teams=("agent",) * n, continuous=continuous_actions, num_actions=moves.NUM_MOVES,
        action_sizes=(moves.NUM_MOVES,) * n, act_dim=moves.NUM_MOVES,
        episode_length=episode_length,
        position_columns=(2, 4))  # observations start [velocity, position, ...]
    world = core.make_world_params(
        size=np.r_[np.full(n, 0.15), np.full(num_landmarks, 0.05)],
        movable=np.r_[np.ones(n, bool), np.zeros(num_landmarks, bool)],
        collide=np.r_[np.ones(n, bool), np.zeros(num_landmarks, bool)],
        color=np.array([AGENT_COLOR] * n + [LANDMARK_COLOR] * num_landmarks),
        accel=np.full(n, 5.0))
    params = SpreadParams(world=world, episode_length=jnp.asarray(episode_length, jnp.int32),
                          local_ratio=jnp.asarray(local_ratio, jnp.float32))
    env = build_env(spec, functools.partial(init, shape), moves_decoder(continuous_actions, DIM_C),
                    functools.partial(observe, shape), functools.partial(reward, shape),
                    functools.partial(scripted, shape), colliders=slice(0, n),
                    physical=agents_and_still_landmarks(n, num_landmarks, DIM_C),
                    observe_at=functools.partial(observe_at, shape) if shape.nearest_only else None)
    return env, params


def init(shape: SpreadShape, key: jax.Array, params: SpreadParams) -> core.MPEState:
    """A fresh episode: every entity uniform in ``[-1, 1]^2`` (``pos [N + L, 2]``, agents
    then landmarks), at rest, silent (``comm [N, 2]`` zeros), ``step`` 0, no goal."""
    n = shape.num_agents
    pos = core.uniform_positions(key, n + shape.num_landmarks, 1.0)
    return core.MPEState(pos=pos, vel=jnp.zeros_like(pos),
                         comm=jnp.zeros((n, DIM_C), jnp.float32),
                         step=jnp.zeros((), jnp.int32), goal=jnp.zeros((0,), jnp.int32))


def _nearest_parts(shape: SpreadShape, state: core.MPEState, me: jax.Array, is_me: jax.Array
                   ) -> list:
    """k-nearest observation blocks of the agents at positions ``me [R, 2]`` (``is_me
    [R, N]``: which agent each row is), from ``[R, N]`` distances: ``[landmark offsets
    [R, k_l, 2], agent offsets [R, k, 2], their comm [R, k, 2]]``, closest first."""
    n = shape.num_agents
    agent_pos, landmark_pos = state.pos[:n], state.pos[n:]
    _, land_dist = core.pairwise_delta(me, landmark_pos)
    land_idx = core.nearest_index(land_dist, shape.seen_landmarks)
    _, agent_dist = core.pairwise_delta(me, agent_pos)
    other_idx = core.nearest_index(jnp.where(is_me, jnp.inf, agent_dist), shape.seen_agents)
    return [landmark_pos[land_idx] - me[:, None], agent_pos[other_idx] - me[:, None],
            state.comm[other_idx]]


def observe(shape: SpreadShape, state: core.MPEState, params: SpreadParams) -> jax.Array:
    """Observations ``[N, obs_dim]`` float32, one row per agent (module docstring)."""
    n = shape.num_agents
    pos, agent_pos = state.pos, state.pos[:n]
    landmark_pos = pos[n:]
    if not shape.nearest_only:
        land_rel = core.relative_positions(agent_pos, landmark_pos)
        other_rel = core.exclude_self(core.relative_positions(agent_pos, agent_pos))
        other_comm = core.exclude_self(jnp.broadcast_to(state.comm, (n,) + state.comm.shape))
    else:
        land_rel, other_rel, other_comm = _nearest_parts(shape, state, agent_pos,
                                                         jnp.eye(n, dtype=bool))
    return _assemble([state.vel[:n], agent_pos, land_rel, other_rel, other_comm])


def _assemble(parts: list) -> jax.Array:
    """Observation rows ``[R, obs_dim]`` float32: the blocks ``parts`` (each ``[R, ...]``)
    flattened per row and concatenated."""
    rows = parts[0].shape[0]
    return jnp.concatenate([p.reshape(rows, -1) for p in parts], axis=1).astype(jnp.float32)


def observe_at(shape: SpreadShape, state: core.MPEState, params: SpreadParams,
               agents: jax.Array) -> jax.Array:
    """k-nearest observation rows ``[R, obs_dim]`` of the agents ``agents [R]`` int, from
    ``[R, N]`` distances (``observe(...)[agents]`` bit for bit)."""
    me = state.pos[agents]
    return _assemble([state.vel[agents], me, *_nearest_parts(
        shape, state, me, agents[:, None] == jnp.arange(shape.num_agents)[None, :])])


def reward(shape: SpreadShape, state: core.MPEState, params: SpreadParams) -> jax.Array:
    """Rewards ``[N]`` float32 of the state reached (module docstring)."""
    n = shape.num_agents
    agent_pos, size, collide = state.pos[:n], params.world.size, params.world.collide
    hit = core.is_collision(agent_pos, agent_pos, size[:n], size[:n])
    hit = hit & collide[:n, None] & collide[None, :n] & ~jnp.eye(n, dtype=bool)
    local = -jnp.sum(hit, axis=1).astype(jnp.float32)
    _, dist = core.pairwise_delta(agent_pos, state.pos[n:])
    global_rew = -jnp.sum(jnp.min(dist, axis=0))
    ratio = params.local_ratio
    return ratio * local + (1.0 - ratio) * global_rew


def scripted(shape: SpreadShape, key: jax.Array, state: core.MPEState, params: SpreadParams
             ) -> jax.Array:
    """The scripted policy of the module docstring: actions ``[N]`` int32 moves, or
    ``[N, 5]`` float32 move vectors (continuous)."""
    n = shape.num_agents
    agent_pos = state.pos[:n]
    _, dist = core.pairwise_delta(agent_pos, state.pos[n:])
    target = state.pos[n:][assign(dist)]
    kp, kd = PD_GAINS
    direction = kp * (target - agent_pos) - kd * state.vel[:n]
    if shape.continuous:
        return moves.moves_to_continuous(direction)
    return moves.direction_to_move(direction)


SCENARIO = register_scenario(Scenario(
    "simple_spread", make, "cooperative navigation: N agents cover L landmarks without colliding",
    (Team("agents", "num_agents"),)))
