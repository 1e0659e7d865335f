"""Cooperative communication (``simple_speaker_listener``): a speaker names, a listener goes.

Semantics of PettingZoo's ``simple_speaker_listener_v4`` (mpe2) and jaxmarl 0.2.0's
``MPE_simple_speaker_listener_v4``. Agent 0 is the *speaker* (team ``"speaker"``): it cannot
move and sees only the colour of the goal landmark. Agent 1 is the *listener* (team
``"listener"``): it is silent, moves (accel 5, unbounded speed) and must reach the goal
landmark, which only the speaker knows. Agents have radius 0.075, the 3 landmarks 0.04;
nothing collides; every entity starts uniform in ``[-1, 1]^2`` at rest; the goal is uniform.

Observations (``obs_dim = 11``, ``spec.obs_sizes = (3, 11)``, the speaker's zero padded)::

    speaker:  [goal landmark colour (3)]
    listener: [vel (2), landmark_l - pos (2 per landmark), speaker's comm (3)]

Landmark colours are ``params.world.color`` (0.65 on the landmark's own channel, 0.15 on
the others), so the speaker sees ``0.65`` at the goal's index.

Actions. Discrete (``num_actions = 5``, ``action_sizes = (3, 5)``): the speaker's index
``c`` in ``[0, 3)`` sets its comm to the one-hot ``e_c``; the listener's index is a move
(0 no-op, 1 -x, 2 +x, 3 -y, 4 +y); indices are mpe2's. Continuous (``act_dim = 5``): the
speaker's first 3 entries are its comm vector (the last 2 are ignored); the listener's 5
entries are mpe2's move vector. Continuous entries are clipped to ``[0, 1]`` (as mpe2's
wrapper). Out-of-range discrete indices are clipped to the agent's last valid action.

Reward (both agents): ``-|p_listener - p_goal|^2``.

Intended differences from the references: episodes last ``episode_length`` steps (default
25, as mpe2; jaxmarl runs 26); continuous actions are clipped (jaxmarl does not clip).

Scripted policy: the speaker says the goal index; the listener reads the speaker's current
comm (its argmax, i.e. what was said at the previous step) and steers to that landmark
with the proportional-derivative controller of :func:`~.moves.seek_action`.
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
from jaxmarl_accel.envs.policies import state_policy
from jaxmarl_accel.envs.registry import Scenario, Team, register_scenario
from jaxmarl_accel.types import Policy

NUM_LANDMARKS = 3
DIM_C = 3
AGENT_COLOR = (0.25, 0.25, 0.25)
LANDMARK_COLORS = ((0.65, 0.15, 0.15), (0.15, 0.65, 0.15), (0.15, 0.15, 0.65))


@struct.dataclass
class SpeakerListenerParams:
    """Numeric settings of simple_speaker_listener.

    Attributes:
      world: physical settings (:class:`~.core.WorldParams`).
      episode_length: int32 steps per episode.
    """

    world: core.WorldParams
    episode_length: jax.Array


def silent_policy(env: Env) -> Policy:
    """The best scripted play without communication, a policy run in ``env`` (a
    ``simple_speaker_listener`` env; :mod:`~jaxmarl_accel.envs.policies`) for evaluation.

    A listener that hears nothing cannot tell the goal from the other landmarks; since the
    goal is uniform, the expected reward ``-E|p - g|^2 = -|p - c|^2 - const`` is highest at
    the landmarks' centroid ``c``, so the listener steers there (:func:`~.moves.seek_action`)
    and the speaker always says symbol 0. A team that beats this return must use the
    speaker's message: it is the threshold for "learned to communicate".

    Returns:
      The policy; its actions are ``[2]`` int32, or ``[2, 5]`` float32 with continuous
      actions.
    """
    n, continuous_actions = 2, env.spec.continuous

    def actions(key: jax.Array, state: core.MPEState, params) -> jax.Array:
        del key, params
        centroid = jnp.mean(state.pos[n:], axis=0, keepdims=True)
        move = moves.seek_action(centroid, state.pos[1:2], state.vel[1:2], continuous_actions)
        if continuous_actions:
            return jnp.concatenate([jnp.zeros((1, moves.NUM_MOVES)), move]).astype(jnp.float32)
        return jnp.concatenate([jnp.zeros((1,), jnp.int32), move]).astype(jnp.int32)

    return state_policy(env, actions)


def make(
    episode_length: int = 25, continuous_actions: bool = False
) -> tuple[Env, SpeakerListenerParams]:
    """Builds simple_speaker_listener (2 agents, 3 landmarks).

    Args:
      episode_length: steps per episode (default 25).
      continuous_actions: ``[2, 5]`` float actions instead of ``[2]`` discrete indices.

    Returns:
      ``(env, params)``.
    """
    if not isinstance(episode_length, int) or episode_length < 1:
        raise ValueError(f"episode_length must be an int >= 1, got {episode_length!r}")
    n, num_l = 2, NUM_LANDMARKS
    spec = EnvSpec(
        name="simple_speaker_listener", num_agents=n, obs_dim=2 + 2 * num_l + DIM_C,
        obs_sizes=(num_l, 2 + 2 * num_l + DIM_C), teams=("speaker", "listener"),
        continuous=continuous_actions, num_actions=moves.NUM_MOVES,
        action_sizes=(DIM_C, moves.NUM_MOVES), act_dim=moves.NUM_MOVES,
        episode_length=episode_length)
    world = core.make_world_params(
        size=np.r_[np.full(n, 0.075), np.full(num_l, 0.04)],
        movable=np.array([False, True] + [False] * num_l),
        collide=np.zeros(n + num_l, bool),
        color=np.array([AGENT_COLOR] * n + list(LANDMARK_COLORS)),
        accel=np.full(n, 5.0))
    params = SpeakerListenerParams(world=world,
                                   episode_length=jnp.asarray(episode_length, jnp.int32))

    def init(key: jax.Array, params: SpeakerListenerParams) -> core.MPEState:
        """Reset: ``pos``, ``vel`` ``[E, 2]`` (entities uniform in ``[-1, 1)^2``, at rest),
        ``comm`` ``[2, DIM_C]`` zeros, ``goal`` ``[1]`` the goal landmark (uniform)."""
        pos, goal = core.positions_and_goal(key, n + num_l, num_l)
        return core.MPEState(pos=pos, vel=jnp.zeros_like(pos),
                             comm=jnp.zeros((n, DIM_C), jnp.float32),
                             step=jnp.zeros((), jnp.int32), goal=goal)

    def decode(
        actions: jax.Array, params: SpeakerListenerParams
    ) -> tuple[jax.Array, jax.Array]:
        accel = params.world.accel[1:]
        if continuous_actions:
            said = jnp.clip(actions[0, :DIM_C], 0.0, 1.0)
            force = moves.decode_continuous_moves(actions[1:], accel)
        else:
            said = jax.nn.one_hot(jnp.clip(actions[0], 0, DIM_C - 1), DIM_C)
            force = moves.decode_discrete_moves(jnp.clip(actions[1:], 0, moves.NUM_MOVES - 1),
                                               accel)
        comm = jnp.stack([said, jnp.zeros(DIM_C)]).astype(jnp.float32)
        return jnp.concatenate([jnp.zeros((1, 2)), force]), comm

    def observe(state: core.MPEState, params: SpeakerListenerParams) -> jax.Array:
        goal_color = params.world.color[n + state.goal[0]]
        listener = jnp.concatenate(
            [state.vel[1], (state.pos[n:] - state.pos[1]).reshape(-1), state.comm[0]])
        speaker = jnp.pad(goal_color, (0, spec.obs_dim - num_l))
        return jnp.stack([speaker, listener]).astype(jnp.float32)

    def reward(state: core.MPEState, params: SpeakerListenerParams) -> jax.Array:
        dist2 = jnp.sum((state.pos[1] - state.pos[n + state.goal[0]]) ** 2)
        return jnp.full((n,), -dist2, jnp.float32)

    def scripted(
        key: jax.Array, state: core.MPEState, params: SpeakerListenerParams
    ) -> jax.Array:
        heard = jnp.argmax(state.comm[0])
        move = moves.seek_action(state.pos[n + heard][None], state.pos[1:2], state.vel[1:2],
                                continuous_actions)
        if continuous_actions:
            said = jax.nn.one_hot(state.goal[0], moves.NUM_MOVES)
            return jnp.concatenate([said[None], move]).astype(jnp.float32)
        return jnp.concatenate([state.goal[:1], move]).astype(jnp.int32)

    nothing = slice(0, 0)  # no entity collides: no contact forces to compute
    env = build_env(spec, init, decode, observe, reward, scripted, colliders=nothing)
    return env, params


SCENARIO = register_scenario(Scenario(
    "simple_speaker_listener", make, "cooperative communication: a speaker names the goal, "
    "a listener goes there", (Team("speakers", 1), Team("listeners", 1)), agent_count=None))
