"""What the JaxMARL adapter (:mod:`~jaxmarl_accel.envs.jaxmarl_env`) knows about each
family of JaxMARL environments beyond the common ``MultiAgentEnv`` interface.

A :class:`Family` gives the time limit in our step counting, whether one team reward is
broadcast to every agent, how to tell a real end from the time limit, the per-step episode
counters, and a scripted policy where there is one. SMAX (and its heuristic-enemy variant)
has all of them; MPE spread has a time limit and a scripted policy; the other MPE envs,
Overcooked and Hanabi have a time limit or not and a shared reward or not; any other
JaxMARL env gets :func:`generic`.

Only this module and :mod:`~jaxmarl_accel.envs.jaxmarl_env` import ``jaxmarl``, and only
when a ``jaxmarl:<id>`` env is made.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.types import PyTree


@dataclasses.dataclass(frozen=True)
class Family:
    """Static facts about one JaxMARL env instance.

    Attributes:
      name: family label (``"smax"``, ``"mpe"``, ``"overcooked"``, ``"hanabi"``, ``"other"``).
      time_limit: the step (counted from 1 after a reset) on which JaxMARL's own time limit
        ends an episode, or ``None`` when the env has none.
      shared_reward: JaxMARL gives every agent the same reward.
      terminal: ``(inner_state) -> bool []``: the state reached is a real end (not the time
        limit), or ``None``: every end before ``time_limit`` is a real one.
      stats: name -> ``(inner_state, ended []) -> float32 []`` per-step episode counters.
      scripted: ``(key, inner_state, avail [N, A] bool) -> int32 [N]``, a scripted policy
        (``avail`` all True where JaxMARL has no available actions), or ``None`` (the
        adapter then uses the random policy and says so in the spec).
      state_dim: width of the global state JaxMARL returns as ``obs["world_state"]`` (and
        ``env.get_world_state``), or 0 when it has none.
      state_map: ``(world_state [state_dim] float32) -> [state_dim] float32``, our global
        state from JaxMARL's flattened one, or ``None`` (JaxMARL's state as it is).
    """

    name: str
    time_limit: int | None
    shared_reward: bool
    terminal: Callable[[PyTree], jax.Array] | None = None
    stats: tuple[tuple[str, Callable[[PyTree, jax.Array], jax.Array]], ...] = ()
    scripted: Callable[[jax.Array, PyTree, jax.Array], jax.Array] | None = None
    state_dim: int = 0
    state_map: Callable[[jax.Array], jax.Array] | None = None


def family_of(env: Any) -> Family:
    """The :class:`Family` of the JaxMARL env object ``env``."""
    from jaxmarl.environments.hanabi.hanabi import HanabiEnv
    from jaxmarl.environments.mpe.simple import SimpleMPE
    from jaxmarl.environments.mpe.simple_spread import SimpleSpreadMPE
    from jaxmarl.environments.overcooked.overcooked import Overcooked
    from jaxmarl.environments.overcooked_v2.overcooked import OvercookedV2
    from jaxmarl.environments.smax.heuristic_enemy_smax_env import EnemySMAX
    from jaxmarl.environments.smax.smax_env import SMAX

    if isinstance(env, SMAX | EnemySMAX):
        return smax(env, isinstance(env, EnemySMAX))
    if isinstance(env, SimpleSpreadMPE):
        return mpe_spread(env)
    if isinstance(env, SimpleMPE):
        # JaxMARL's MPE ends an episode when the step *before* it had reached max_steps:
        # max_steps + 1 steps (26 by default).
        return Family("mpe", env.max_steps + 1, shared_reward=False)
    if isinstance(env, Overcooked | OvercookedV2):
        return Family("overcooked", env.max_steps, shared_reward=True)
    if isinstance(env, HanabiEnv):
        return Family("hanabi", None, shared_reward=True)
    return generic(env)


def generic(env: Any) -> Family:
    """Any other JaxMARL env: its ``max_steps`` (when it has one) is the time limit, and
    rewards are per agent (a value learner then sums them)."""
    limit = getattr(env, "max_steps", None)
    return Family("other", int(limit) if isinstance(limit, int | np.integer) else None,
                  shared_reward=False)


def mpe_spread(env: Any) -> Family:
    """MPE cooperative navigation: the time limit of every MPE env, and the scripted policy
    of our own ``simple_spread`` (:func:`~jaxmarl_accel.envs.mpe.simple_spread.scripted`)
    on JaxMARL's state: agents take distinct landmarks (:func:`~.mpe.assignment.assign`
    over agent-to-landmark distances) and move by the discrete move closest to a
    proportional-derivative force towards their own. JaxMARL's discrete moves are ours
    (0 no-op, 1 -x, 2 +x, 3 -y, 4 +y). It defines the normalized score of MPE spread runs.
    """
    from .moves import direction_to_move
    from .mpe.assignment import assign
    from .mpe.simple_spread import PD_GAINS

    n = env.num_agents

    def scripted(key: jax.Array, inner: PyTree, avail: jax.Array) -> jax.Array:
        del key, avail  # deterministic; every move is always available
        pos, vel = inner.p_pos[:n], inner.p_vel[:n]  # [N, 2] agents (landmarks follow)
        landmarks = inner.p_pos[n:]  # [L, 2]
        dist = jnp.linalg.norm(pos[:, None, :] - landmarks[None, :, :], axis=-1)  # [N, L]
        kp, kd = PD_GAINS
        return direction_to_move(kp * (landmarks[assign(dist)] - pos) - kd * vel)

    return Family("mpe", env.max_steps + 1, shared_reward=False, scripted=scripted)


def smax(env: Any, heuristic_enemy: bool) -> Family:
    """SMAX: a battle ends when one team is wiped out (terminated) or on step
    ``max_steps + 1`` (JaxMARL checks the limit before counting the step: truncated).

    ``won`` is 1 on the step that ends a battle with every enemy dead and an ally alive
    (JaxMARL's condition for the win bonus), else 0. The scripted policy (ours, on the
    state): each living ally shoots the closest enemy in range when one is (an available
    attack action), else steps along the cardinal direction closest to the direction of
    the closest living enemy; dead allies stop.

    The global state is JaxMARL's ``world_state`` with every feature in [0, 1]
    (:func:`smax_state_map`), as in SMAC's state, which pymarl normalizes the same way.
    JaxMARL's own state gives positions in map units (up to 32): QMIX's hypernetworks fed
    with it at pymarl2's settings (Adam, lr 1e-3, default initialization) diverged on 3m
    (mixed Q-values of 85 to 160 against returns below 2), where JaxMARL's ``qmix_rnn``
    damps it with a 0.001 initialization scale of its mixer and a learning rate of 5e-5.
    """
    core = env._env if heuristic_enemy else env
    allies, moves = core.num_allies, core.num_movement_actions
    learners = allies if heuristic_enemy else core.num_agents
    # The unit vector of each movement action, read off SMAX's own decoding.
    directions, _ = core._decode_discrete_actions(jnp.arange(moves - 1))  # [moves - 1, 2]
    directions = np.asarray(directions)

    def battle(inner: PyTree) -> PyTree:
        return inner.state if heuristic_enemy else inner

    def wiped(inner: PyTree) -> tuple[jax.Array, jax.Array]:
        alive = battle(inner).unit_alive
        return ~jnp.any(alive[:allies]), ~jnp.any(alive[allies:])

    def terminal(inner: PyTree) -> jax.Array:
        allies_dead, enemies_dead = wiped(inner)
        return allies_dead | enemies_dead

    def won(inner: PyTree, ended: jax.Array) -> jax.Array:
        allies_dead, enemies_dead = wiped(inner)
        return (ended & enemies_dead & ~allies_dead).astype(jnp.float32)

    def scripted(key: jax.Array, inner: PyTree, avail: jax.Array) -> jax.Array:
        del key  # deterministic
        state = battle(inner)
        pos, alive = state.unit_positions, state.unit_alive  # [U, 2], [U]
        me = jnp.arange(learners)
        is_ally = me < allies  # plain SMAX: the enemies learn too, their opponents are allies
        dist = jnp.linalg.norm(pos[me][:, None, :] - pos[None, :, :], axis=-1)  # [L, U]
        opponent = (jnp.arange(core.num_agents)[None, :] >= allies) == is_ally[:, None]
        target_ok = opponent & alive[None, :]
        far = jnp.where(target_ok, dist, jnp.inf)
        closest = jnp.argmin(far, axis=1)  # [L] unit index
        # Attack actions index the opponents in JaxMARL's order (reversed for enemies).
        width = avail.shape[1] - moves
        shootable = avail[:, moves:moves + width]  # [L, width]
        slots = jnp.arange(width)
        unit_of_slot = jnp.where(is_ally[:, None], allies + slots[None, :],
                                 allies - 1 - slots[None, :])
        slot_dist = jnp.take_along_axis(far, jnp.clip(unit_of_slot, 0, core.num_agents - 1),
                                        axis=1)
        slot_dist = jnp.where(shootable, slot_dist, jnp.inf)
        attack = moves + jnp.argmin(slot_dist, axis=1)
        heading = pos[closest] - pos[me]  # [L, 2]
        step = jnp.argmax(heading @ directions.T, axis=1)  # [L]
        action = jnp.where(jnp.any(shootable, axis=1), attack, step)
        stop = moves - 1
        return jnp.where(alive[me], action, stop).astype(jnp.int32)

    return Family("smax", core.max_steps + 1, shared_reward=heuristic_enemy,
                  terminal=terminal, stats=(("won", won),), scripted=scripted,
                  state_dim=int(core.state_size), state_map=smax_state_map(core))


def smax_state_map(core: Any) -> Callable[[jax.Array], jax.Array]:
    """Our SMAX global state from JaxMARL's flattened ``world_state`` ``[U * (4 + B) + 2U]``
    (every unit's ``own_features``: health fraction, position, weapon cooldown, unit-type
    one-hot of B bits; then every unit's team; then its type as an integer), every feature
    in [0, 1]:

    * positions divided by the map's width and height;
    * weapon cooldowns divided by the unit's own type's cooldown and clipped to [0, 1], as
      SMAX's own observations give them (``_get_own_features``). The state JaxMARL returns
      holds the raw cooldown, which falls by the step's time for as long as a unit does not
      shoot, without bound: a zealot that never reaches an enemy reads -9.4 of the longest
      cooldown within one random 2s3z battle, and more the longer a policy keeps its
      units out of range;
    * the integer unit types divided by the largest type index;
    * health fractions, type bits and teams as they are.
    """
    units, names = int(core.num_agents), list(core.own_features)
    width = len(names)
    x_col, y_col = names.index("position_x"), names.index("position_y")
    cd_col = names.index("weapon_cooldown")
    cooldowns = jnp.asarray(core.unit_type_weapon_cooldowns, jnp.float32)  # [types]
    top_type = max(len(core.unit_type_names) - 1, 1)
    size = jnp.asarray([core.map_width, core.map_height], jnp.float32)

    def state_map(world_state: jax.Array) -> jax.Array:
        own = world_state[:units * width].reshape(units, width)  # [U, 4 + B]
        teams = world_state[units * width:units * (width + 1)]  # [U]
        types = world_state[units * (width + 1):]  # [U] integer-valued
        cooldown = own[:, cd_col] / cooldowns[types.astype(jnp.int32)]
        own = own.at[:, jnp.asarray([x_col, y_col])].divide(size)
        own = own.at[:, cd_col].set(jnp.clip(cooldown, 0.0, 1.0))
        return jnp.concatenate([own.reshape(-1), teams, types / top_type])

    return state_map
