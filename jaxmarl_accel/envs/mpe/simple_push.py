"""Keep-away (``simple_push``): an adversary pushes a good agent away from its goal.

Semantics of PettingZoo's ``simple_push_v3`` (mpe2) and jaxmarl 0.2.0's
``MPE_simple_push_v3``. Agents ``0 .. A-1`` are adversaries (team ``"adversary"``), agents
``A .. A+G-1`` good agents (team ``"agent"``; mpe2 has A = G = 1, jaxmarl allows more), and
there are 2 landmarks, one of which (uniform at reset) is the goal. Agents have radius 0.05,
accel 5, unbounded speed, and collide with each other (softplus contact force); landmarks
(radius 0.05) do not collide; agents are silent; every entity starts uniform in
``[-1, 1]^2`` at rest. Actions are the 5 moves (discrete ``[N]`` or mpe2's continuous
``[N, 5]`` move vectors, clipped to ``[0, 1]``).

Observations (``obs_dim = 17 + 2(N-1)``; adversaries' rows are zero padded)::

    good agent i: [vel_i (2), goal - pos_i (2), own colour (3), landmark_l - pos_i (2 each),
                   landmark colours (3 each), pos_j - pos_i (2 per other agent j)]
    adversary i:  [vel_i (2), landmark_l - pos_i (2 each), pos_j - pos_i (2 per other j)]

A good agent's colour is 0.25 except 0.75 on channel ``goal + 1``; landmark l's colour
(``params.world.color``) is 0.1 except 0.9 on channel ``l + 1`` (mpe2's colours).

Rewards: good agent i gets ``-|p_i - p_goal|``; adversary i gets
``min_good |p_g - p_goal| - |p_i - p_goal|``.

Intended differences from the references: team sizes are free (mpe2 fixes 1 v 1); episodes
last ``episode_length`` steps (default 25, as mpe2; jaxmarl runs 26); continuous actions
are clipped (jaxmarl does not clip); landmark radius 0.05 as mpe2 (jaxmarl draws 0.2; it
only matters for drawing since landmarks do not collide).

Scripted policy: good agents steer to the goal. An adversary cannot see the goal, so it
guesses the landmark nearest to the good agent nearest to it and blocks that agent: it
steers to the point 0.1 from the guessed landmark towards the good agent, where it sits
between the two (its own reward only loses those 0.1). Both steer with the
proportional-derivative controller of :func:`~.moves.seek_action`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_accel.envs import moves
from jaxmarl_accel.envs.base import Env, EnvSpec
from jaxmarl_accel.envs.mpe import core
from jaxmarl_accel.envs.mpe.scenario import build_env, moves_decoder
from jaxmarl_accel.envs.registry import Scenario, Team, register_scenario

NUM_LANDMARKS = 2
ADVERSARY_COLOR = (0.75, 0.25, 0.25)
AGENT_COLOR = (0.25, 0.25, 0.25)
LANDMARK_COLORS = ((0.1, 0.9, 0.1), (0.1, 0.1, 0.9))
BLOCK_OFFSET = 0.1  # distance from the guessed goal at which a scripted adversary blocks


@struct.dataclass
class PushParams:
    """Numeric settings of simple_push.

    Attributes:
      world: physical settings (:class:`~.core.WorldParams`).
      episode_length: int32 steps per episode.
    """

    world: core.WorldParams
    episode_length: jax.Array


def _check(name: str, value: object) -> None:
    if not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")


def make(
    num_good: int = 1,
    num_adversaries: int = 1,
    episode_length: int = 25,
    continuous_actions: bool = False,
) -> tuple[Env, PushParams]:
    """Builds simple_push.

    Args:
      num_good: good agents G >= 1 (mpe2: 1).
      num_adversaries: adversaries A >= 1 (mpe2: 1).
      episode_length: steps per episode (default 25).
      continuous_actions: ``[N, 5]`` move vectors instead of ``[N]`` discrete moves.

    Returns:
      ``(env, params)``.
    """
    for name, value in (("num_good", num_good), ("num_adversaries", num_adversaries),
                        ("episode_length", episode_length)):
        _check(name, value)
    num_a, num_l = num_adversaries, NUM_LANDMARKS
    n = num_a + num_good
    good_size = 2 + 2 + 3 + 2 * num_l + 3 * num_l + 2 * (n - 1)
    adversary_size = 2 + 2 * num_l + 2 * (n - 1)
    spec = EnvSpec(
        name="simple_push", num_agents=n, obs_dim=good_size,
        obs_sizes=(adversary_size,) * num_a + (good_size,) * num_good,
        teams=("adversary",) * num_a + ("agent",) * num_good, continuous=continuous_actions,
        num_actions=moves.NUM_MOVES, action_sizes=(moves.NUM_MOVES,) * n,
        act_dim=moves.NUM_MOVES, episode_length=episode_length)
    world = core.make_world_params(
        size=np.full(n + num_l, 0.05),
        movable=np.r_[np.ones(n, bool), np.zeros(num_l, bool)],
        collide=np.r_[np.ones(n, bool), np.zeros(num_l, bool)],
        color=np.array([ADVERSARY_COLOR] * num_a + [AGENT_COLOR] * num_good
                       + list(LANDMARK_COLORS)),
        accel=np.full(n, 5.0))
    params = PushParams(world=world, episode_length=jnp.asarray(episode_length, jnp.int32))
    is_good = jnp.arange(n) >= num_a

    def init(key: jax.Array, params: PushParams) -> core.MPEState:
        return core.start_with_goal(key, n, num_l)

    def observe(state: core.MPEState, params: PushParams) -> jax.Array:
        agent_pos, vel = state.pos[:n], state.vel[:n]
        goal_rel = state.pos[n + state.goal[0]] - agent_pos
        own_color = jnp.full((3,), 0.25).at[state.goal[0] + 1].set(0.75)
        land_rel = (state.pos[n:][None] - agent_pos[:, None]).reshape(n, -1)
        land_color = params.world.color[n:].reshape(-1)
        other_rel = core.exclude_self(core.relative_positions(agent_pos, agent_pos))
        other_rel = other_rel.reshape(n, -1)
        good = jnp.concatenate(
            [vel, goal_rel, jnp.broadcast_to(own_color, (n, 3)), land_rel,
             jnp.broadcast_to(land_color, (n, 3 * num_l)), other_rel], axis=1)
        adversary = jnp.concatenate(
            [vel, land_rel, other_rel, jnp.zeros((n, good_size - adversary_size))], axis=1)
        return jnp.where(is_good[:, None], good, adversary).astype(jnp.float32)

    def reward(state: core.MPEState, params: PushParams) -> jax.Array:
        dist = jnp.linalg.norm(state.pos[:n] - state.pos[n + state.goal[0]], axis=-1)
        adversary_rew = jnp.min(dist[num_a:]) - dist
        return jnp.where(is_good, -dist, adversary_rew).astype(jnp.float32)

    def scripted(key: jax.Array, state: core.MPEState, params: PushParams) -> jax.Array:
        agent_pos, landmark_pos = state.pos[:n], state.pos[n:]
        _, agent_dist = core.pairwise_delta(agent_pos[:num_a], agent_pos[num_a:])
        victim = agent_pos[num_a:][jnp.argmin(agent_dist, axis=1)]  # [A, 2]
        _, land_dist = core.pairwise_delta(victim, landmark_pos)
        guess = landmark_pos[jnp.argmin(land_dist, axis=1)]  # [A, 2]
        away = victim - guess
        unit = away / jnp.maximum(jnp.linalg.norm(away, axis=-1, keepdims=True), 1e-6)
        block = guess + BLOCK_OFFSET * unit
        goal = jnp.broadcast_to(state.pos[n + state.goal[0]], (num_good, 2))
        target = jnp.concatenate([block, goal])
        return moves.seek_action(target, agent_pos, state.vel[:n], continuous_actions)

    decode = moves_decoder(continuous_actions, 0)
    env = build_env(spec, init, decode, observe, reward, scripted, colliders=slice(0, n))
    return env, params


SCENARIO = register_scenario(Scenario(
    "simple_push", make, "keep-away: adversaries push good agents away from their goal",
    (Team("adversaries", "num_adversaries"), Team("good agents", "num_good")), agent_count=None))
