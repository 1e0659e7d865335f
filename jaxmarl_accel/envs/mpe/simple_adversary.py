"""Physical deception (``simple_adversary``): good agents hide the goal from an adversary.

Semantics of PettingZoo's ``simple_adversary_v3`` (mpe2) and jaxmarl 0.2.0's
``MPE_simple_adversary_v3``. Agents ``0 .. A-1`` are adversaries (team ``"adversary"``),
agents ``A .. A+G-1`` are good agents (team ``"agent"``); there are L landmarks (default
L = G, as mpe2's ``N``; mpe2 has A = 1, jaxmarl allows more). One landmark, uniform at
reset, is the goal; good agents know which, adversaries do not. Agents have radius 0.15,
landmarks 0.08; nothing collides; agents are silent; every entity starts uniform in
``[-1, 1]^2`` at rest. Actions are the 5 moves (discrete ``[N]`` or mpe2's continuous
``[N, 5]`` move vectors, clipped to ``[0, 1]``).

Observations (``obs_dim = 2 + 2L + 2(N-1)``; adversaries' rows are zero padded by 2)::

    good agent i: [goal - pos_i (2), landmark_l - pos_i (2 per landmark),
                   pos_j - pos_i (2 per other agent j, in index order)]
    adversary i:  [landmark_l - pos_i (2 per landmark), pos_j - pos_i (2 per other agent j)]

Rewards (unscaled distances, mpe2's shaped rewards): adversary i gets ``-|p_i - p_goal|``;
every good agent gets ``sum_adv |p_a - p_goal| - min_good |p_g - p_goal|``.

Intended differences from the references: ``num_adversaries`` and ``num_landmarks`` are
free (mpe2 fixes A = 1 and L = G); episodes last ``episode_length`` steps (default 25, as
mpe2; jaxmarl runs 26); continuous actions are clipped (jaxmarl does not clip).

Scripted policy: good agents are assigned distinct landmarks by
:func:`~.assignment.assign` with the goal forced into the assignment (one good agent sits
on the goal, the others cover decoys); adversaries head for the landmark nearest to any
good agent (their best guess of the goal from what they observe). Both steer with the
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
from jaxmarl_accel.envs.mpe.assignment import assign
from jaxmarl_accel.envs.mpe.scenario import build_env, moves_decoder
from jaxmarl_accel.envs.registry import Scenario, Team, register_scenario

ADVERSARY_COLOR = (0.85, 0.35, 0.35)
AGENT_COLOR = (0.35, 0.35, 0.85)
LANDMARK_COLOR = (0.15, 0.15, 0.15)
GOAL_BONUS = 100.0  # cost discount that forces the goal landmark into the assignment


@struct.dataclass
class AdversaryParams:
    """Numeric settings of simple_adversary.

    Attributes:
      world: physical settings (:class:`~.core.WorldParams`).
      episode_length: int32 steps per episode.
    """

    world: core.WorldParams
    episode_length: jax.Array


def _check(name: str, value: object, minimum: int) -> None:
    if not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def make(
    num_good: int = 2,
    num_adversaries: int = 1,
    num_landmarks: int | None = None,
    episode_length: int = 25,
    continuous_actions: bool = False,
) -> tuple[Env, AdversaryParams]:
    """Builds simple_adversary.

    Args:
      num_good: good agents G >= 1 (mpe2's ``N``).
      num_adversaries: adversaries A >= 1 (mpe2: 1).
      num_landmarks: landmarks L >= 1 (default G).
      episode_length: steps per episode (default 25).
      continuous_actions: ``[N, 5]`` move vectors instead of ``[N]`` discrete moves.

    Returns:
      ``(env, params)``.
    """
    num_landmarks = num_good if num_landmarks is None else num_landmarks
    _check("num_good", num_good, 1)
    _check("num_adversaries", num_adversaries, 1)
    _check("num_landmarks", num_landmarks, 1)
    _check("episode_length", episode_length, 1)
    num_a, num_l = num_adversaries, num_landmarks
    n = num_a + num_good
    good_size = 2 + 2 * num_l + 2 * (n - 1)
    spec = EnvSpec(
        name="simple_adversary", num_agents=n, obs_dim=good_size,
        obs_sizes=(good_size - 2,) * num_a + (good_size,) * num_good,
        teams=("adversary",) * num_a + ("agent",) * num_good, continuous=continuous_actions,
        num_actions=moves.NUM_MOVES, action_sizes=(moves.NUM_MOVES,) * n,
        act_dim=moves.NUM_MOVES, episode_length=episode_length)
    world = core.make_world_params(
        size=np.r_[np.full(n, 0.15), np.full(num_l, 0.08)],
        movable=np.r_[np.ones(n, bool), np.zeros(num_l, bool)],
        collide=np.zeros(n + num_l, bool),
        color=np.array([ADVERSARY_COLOR] * num_a + [AGENT_COLOR] * num_good
                       + [LANDMARK_COLOR] * num_l),
        accel=np.full(n, 5.0))
    params = AdversaryParams(world=world, episode_length=jnp.asarray(episode_length, jnp.int32))
    is_good = jnp.arange(n) >= num_a

    def init(key: jax.Array, params: AdversaryParams) -> core.MPEState:
        return core.start_with_goal(key, n, num_l)

    def observe(state: core.MPEState, params: AdversaryParams) -> jax.Array:
        agent_pos = state.pos[:n]
        goal_rel = state.pos[n + state.goal[0]] - agent_pos
        land_rel = (state.pos[n:][None] - agent_pos[:, None]).reshape(n, -1)
        other_rel = core.exclude_self(core.relative_positions(agent_pos, agent_pos))
        other_rel = other_rel.reshape(n, -1)
        good = jnp.concatenate([goal_rel, land_rel, other_rel], axis=1)
        adversary = jnp.concatenate([land_rel, other_rel, jnp.zeros((n, 2))], axis=1)
        return jnp.where(is_good[:, None], good, adversary).astype(jnp.float32)

    def reward(state: core.MPEState, params: AdversaryParams) -> jax.Array:
        dist = jnp.linalg.norm(state.pos[:n] - state.pos[n + state.goal[0]], axis=-1)
        good_rew = jnp.sum(dist[:num_a]) - jnp.min(dist[num_a:])
        return jnp.where(is_good, good_rew, -dist).astype(jnp.float32)

    def scripted(key: jax.Array, state: core.MPEState, params: AdversaryParams) -> jax.Array:
        agent_pos, landmark_pos = state.pos[:n], state.pos[n:]
        _, dist = core.pairwise_delta(agent_pos, landmark_pos)
        cost = dist[num_a:] - GOAL_BONUS * jax.nn.one_hot(state.goal[0], num_l)
        good_target = landmark_pos[assign(cost)]
        guess = jnp.argmin(jnp.min(dist[num_a:], axis=0))
        adversary_target = jnp.broadcast_to(landmark_pos[guess], (num_a, 2))
        target = jnp.concatenate([adversary_target, good_target])
        return moves.seek_action(target, agent_pos, state.vel[:n], continuous_actions)

    decode = moves_decoder(continuous_actions, 0)
    nothing = slice(0, 0)  # no entity collides: no contact forces to compute
    env = build_env(spec, init, decode, observe, reward, scripted, colliders=nothing)
    return env, params


SCENARIO = register_scenario(Scenario(
    "simple_adversary", make, "physical deception: good agents hide the goal from adversaries",
    (Team("adversaries", "num_adversaries"), Team("good agents", "num_good")), agent_count=None))
