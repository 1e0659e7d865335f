"""Cooperative referring (``simple_reference``): each agent tells the other where to go.

Semantics of PettingZoo's ``simple_reference_v3`` (mpe2) and jaxmarl 0.2.0's
``MPE_simple_reference_v3``. Two agents (team ``"agent"``) and 3 landmarks of distinct
colours. ``state.goal[j]`` (uniform at reset) is the landmark agent j must reach, and only
the *other* agent knows it, so both agents must speak and listen. Agents move (accel 5,
unbounded speed) and speak on a 10-symbol channel; agents and landmarks have radius 0.05
(mpe2's default); nothing collides; every entity starts uniform in ``[-1, 1]^2`` at rest.

Observation of agent i (``obs_dim = 21``; ``o = 1 - i`` is the other agent)::

    [vel_i (2), landmark_l - pos_i (2 per landmark), colour of landmark goal[o] (3),
     comm_o (10)]

Landmark colours (``params.world.color``) are 0.25 except 0.75 on the landmark's channel.

Actions. Discrete (``num_actions = action_sizes[i] = 50``, mpe2's encoding): index
``a = move + 5 * say`` with ``move = a % 5`` (0 no-op, 1 -x, 2 +x, 3 -y, 4 +y) and
``say = a // 5`` in ``[0, 10)``, which sets the agent's comm to the one-hot ``e_say``.
Continuous (``act_dim = 15``): ``[mpe2 move vector (5), comm vector (10)]``, clipped to
``[0, 1]``. Out-of-range discrete indices are clipped to ``[0, 50)``.

Reward of agent i: with ``r_i = -|p_o - p_{landmark goal[o]}|`` (how well the agent it
guides has done), ``local_ratio * r_i + (1 - local_ratio) * (r_0 + r_1) / 2``.

Intended differences from the references: episodes last ``episode_length`` steps (default
25, as mpe2; jaxmarl runs 26); continuous actions are clipped (jaxmarl does not clip);
radii are mpe2's 0.05 (jaxmarl draws 0.15 / 0.2; only drawing sees them).

Scripted policy: agent i says ``goal[o]`` (the landmark it knows the other must reach) and
steers to the landmark named by the other's current comm (its argmax, i.e. what was said at
the previous step) with the proportional-derivative controller of
:func:`~.moves.seek_action`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_accel.envs import moves
from jaxmarl_accel.envs.base import Env, EnvSpec
from jaxmarl_accel.envs.mpe import core
from jaxmarl_accel.envs.mpe.scenario import build_env
from jaxmarl_accel.envs.registry import Scenario, Team, register_scenario

NUM_AGENTS = 2
NUM_LANDMARKS = 3
DIM_C = 10
AGENT_COLOR = (0.25, 0.25, 0.25)
LANDMARK_COLORS = ((0.75, 0.25, 0.25), (0.25, 0.75, 0.25), (0.25, 0.25, 0.75))


@struct.dataclass
class ReferenceParams:
    """Numeric settings of simple_reference.

    Attributes:
      world: physical settings (:class:`~.core.WorldParams`).
      episode_length: int32 steps per episode.
      local_ratio: float32 weight of the agent's own reward against the mean.
    """

    world: core.WorldParams
    episode_length: jax.Array
    local_ratio: jax.Array


def make(
    local_ratio: float = 0.5, episode_length: int = 25, continuous_actions: bool = False
) -> tuple[Env, ReferenceParams]:
    """Builds simple_reference (2 agents, 3 landmarks, 10 symbols).

    Args:
      local_ratio: weight of the agent's own reward in ``[0, 1]``.
      episode_length: steps per episode (default 25).
      continuous_actions: ``[2, 15]`` float actions instead of ``[2]`` discrete indices.

    Returns:
      ``(env, params)``.
    """
    if not 0.0 <= local_ratio <= 1.0:
        raise ValueError(f"local_ratio must be in [0, 1], got {local_ratio}")
    if not isinstance(episode_length, int) or episode_length < 1:
        raise ValueError(f"episode_length must be an int >= 1, got {episode_length!r}")
    n, num_l = NUM_AGENTS, NUM_LANDMARKS
    obs_dim = 2 + 2 * num_l + 3 + DIM_C
    num_actions = moves.NUM_MOVES * DIM_C
    spec = EnvSpec(
        name="simple_reference", num_agents=n, obs_dim=obs_dim, obs_sizes=(obs_dim,) * n,
        teams=("agent",) * n, continuous=continuous_actions, num_actions=num_actions,
        action_sizes=(num_actions,) * n, act_dim=moves.NUM_MOVES + DIM_C,
        episode_length=episode_length)
    world = core.make_world_params(
        size=np.full(n + num_l, 0.05),
        movable=np.r_[np.ones(n, bool), np.zeros(num_l, bool)],
        collide=np.zeros(n + num_l, bool),
        color=np.array([AGENT_COLOR] * n + list(LANDMARK_COLORS)),
        accel=np.full(n, 5.0))
    params = ReferenceParams(world=world, episode_length=jnp.asarray(episode_length, jnp.int32),
                             local_ratio=jnp.asarray(local_ratio, jnp.float32))
    other = jnp.array([1, 0])

    def init(key: jax.Array, params: ReferenceParams) -> core.MPEState:
        """Reset: ``pos``, ``vel`` ``[E, 2]`` (entities uniform in ``[-1, 1)^2``, at rest),
        ``comm`` ``[2, DIM_C]`` zeros, ``goal`` ``[2]`` agent j's landmark (uniform)."""
        pos, goal = core.positions_and_goal(key, n + num_l, num_l, num_goals=n)
        return core.MPEState(pos=pos, vel=jnp.zeros_like(pos),
                             comm=jnp.zeros((n, DIM_C), jnp.float32),
                             step=jnp.zeros((), jnp.int32), goal=goal)

    def decode(actions: jax.Array, params: ReferenceParams) -> tuple[jax.Array, jax.Array]:
        accel = params.world.accel
        if continuous_actions:
            force = moves.decode_continuous_moves(actions, accel)
            comm = jnp.clip(actions[:, moves.NUM_MOVES:], 0.0, 1.0)
        else:
            index = jnp.clip(actions, 0, num_actions - 1)
            force = moves.decode_discrete_moves(index % moves.NUM_MOVES, accel)
            comm = jax.nn.one_hot(index // moves.NUM_MOVES, DIM_C)
        return force, comm.astype(jnp.float32)

    def observe(state: core.MPEState, params: ReferenceParams) -> jax.Array:
        agent_pos = state.pos[:n]
        land_rel = (state.pos[n:][None] - agent_pos[:, None]).reshape(n, -1)
        goal_color = params.world.color[n + state.goal[other]]
        parts = [state.vel[:n], land_rel, goal_color, state.comm[other]]
        return jnp.concatenate(parts, axis=1).astype(jnp.float32)

    def reward(state: core.MPEState, params: ReferenceParams) -> jax.Array:
        target = state.pos[n + state.goal]  # [n, 2]: landmark of each agent
        guided = -jnp.linalg.norm(state.pos[:n] - target, axis=-1)[other]
        ratio = params.local_ratio
        return (ratio * guided + (1.0 - ratio) * jnp.mean(guided)).astype(jnp.float32)

    def scripted(key: jax.Array, state: core.MPEState, params: ReferenceParams) -> jax.Array:
        heard = jnp.argmax(state.comm[other], axis=-1)
        move = moves.seek_action(state.pos[n + heard], state.pos[:n], state.vel[:n],
                                continuous_actions)
        say = state.goal[other]
        if continuous_actions:
            return jnp.concatenate([move, jax.nn.one_hot(say, DIM_C)], axis=1)
        return (move + moves.NUM_MOVES * say).astype(jnp.int32)

    nothing = slice(0, 0)  # no entity collides: no contact forces to compute
    env = build_env(spec, init, decode, observe, reward, scripted, colliders=nothing)
    return env, params


SCENARIO = register_scenario(Scenario(
    "simple_reference", make, "cooperative referring: each of two agents tells the other "
    "where to go", (Team("agents", 2),), agent_count=None))
