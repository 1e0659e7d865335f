"""The rules of the grid hunt (``stag_hunt``) as pure array functions of one environment.

Layout (one environment; batch axes, if any, lead): a bounded ``H x W`` grid, cells
``(row, col)``; ``N`` agents and ``P = M + K`` prey (the ``M`` stags first, then the ``K``
hares). :class:`HuntState` holds every entity's cell, whether each agent is frozen and each
prey alive; a frozen agent or a captured prey keeps its last cell but is no longer on the
grid (it occupies nothing and nobody sees it).

Actions (:data:`MOVES`): 0 right ``(0, +1)``, 1 down ``(+1, 0)``, 2 left ``(0, -1)``,
3 up ``(-1, 0)``, 4 stay, 5 catch. Sequential moves are one ``lax.fori_loop`` over a random
permutation: the arrays are gathered once into the permuted order, so that the loop index
is shared by every environment of a ``vmap`` (a dynamic slice, not a gather), and the
result is scattered back once. See :mod:`jaxmarl_accel.envs.stag_hunt` for the rules.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

MOVES = np.array([[0, 1], [1, 0], [0, -1], [-1, 0], [0, 0], [0, 0]], np.int32)
ACTION_NAMES = ("right", "down", "left", "up", "stay", "catch")
NUM_MOVES, STAY, CATCH = 4, 4, 5
NUM_CHANNELS = 3  # agents, stags, hares
VIEW_RADIUS = 2  # the observation window is (2 * 2 + 1) x (2 * 2 + 1) cells


@struct.dataclass
class HuntState:
    """State of one grid hunt.

    Attributes:
      agent_pos: ``[N, 2]`` int32 cell (row, col) of each agent.
      prey_pos: ``[P, 2]`` int32 cell of each prey (stags first, then hares).
      frozen: ``[N]`` bool, the agent has captured a prey and left the grid.
      prey_alive: ``[P]`` bool, the prey has not been captured.
      step: ``[]`` int32 steps taken in the current episode.
      grid_shape: static ``(H, W)``.
      num_stags: static M: the first ``M`` prey are stags, the rest hares.
    """

    agent_pos: jax.Array
    prey_pos: jax.Array
    frozen: jax.Array
    prey_alive: jax.Array
    step: jax.Array
    grid_shape: tuple[int, int] = struct.field(pytree_node=False)
    num_stags: int = struct.field(pytree_node=False)


class PreyOutcome(NamedTuple):
    """What the prey phase of one step did.

    Attributes:
      state: the state after it (agents frozen, prey captured or moved).
      reward: ``[]`` float32 team reward of the step.
      captures: ``[]`` int32 prey captured in the step.
    """

    state: HuntState
    reward: jax.Array
    captures: jax.Array


def place(key: jax.Array, grid_shape: tuple[int, int], num_agents: int, num_stags: int,
          num_hares: int) -> HuntState:
    """A fresh episode: agents, then stags, then hares, each uniform on the free cells.

    Taking the first ``N + P`` cells of one uniform permutation of the grid is that
    distribution (each entity uniform over the cells its predecessors left free).
    """
    h, w = grid_shape
    num_prey = num_stags + num_hares
    cells = jax.random.permutation(key, h * w)[: num_agents + num_prey].astype(jnp.int32)
    pos = jnp.stack([cells // w, cells % w], axis=-1)
    return HuntState(agent_pos=pos[:num_agents], prey_pos=pos[num_agents:],
                     frozen=jnp.zeros((num_agents,), bool),
                     prey_alive=jnp.ones((num_prey,), bool), step=jnp.zeros((), jnp.int32),
                     grid_shape=grid_shape, num_stags=num_stags)


def on_grid(pos: jax.Array, grid_shape: tuple[int, int]) -> jax.Array:
    """Bool ``[...]``: cells ``[..., 2]`` inside the grid."""
    return jnp.all((pos >= 0) & (pos < jnp.asarray(grid_shape, jnp.int32)), axis=-1)


def occupied(cells: jax.Array, pos: jax.Array, present: jax.Array) -> jax.Array:
    """Bool ``[...]``: some present entity (``pos [E, 2]``, ``present [E]``) is on each cell
    of ``cells [..., 2]``."""
    same = jnp.all(cells[..., None, :] == pos, axis=-1)  # [..., E]
    return jnp.any(same & present, axis=-1)


def adjacency(agent_pos: jax.Array, prey_pos: jax.Array) -> jax.Array:
    """Bool ``[N, P]``: agent i is 4-adjacent to prey p (Manhattan distance 1)."""
    return jnp.sum(jnp.abs(agent_pos[:, None] - prey_pos[None]), axis=-1) == 1


def avail_actions(state: HuntState) -> jax.Array:
    """Bool ``[N, 6]`` (agent, action): moves that stay on the grid, stay always, catch when
    an alive prey is 4-adjacent; a frozen agent may only stay."""
    targets = state.agent_pos[:, None] + MOVES[:NUM_MOVES]  # [N, 4, 2]
    can_move = on_grid(targets, state.grid_shape)
    adjacent = adjacency(state.agent_pos, state.prey_pos) & state.prey_alive
    can_catch = jnp.any(adjacent, axis=1, keepdims=True)
    live = ~state.frozen[:, None]
    stay = jnp.ones_like(can_catch)
    return jnp.concatenate([can_move & live, stay, can_catch & live], axis=1)


def move_agents(key: jax.Array, state: HuntState, actions: jax.Array) -> HuntState:
    """Non-frozen agents move one at a time in a uniformly random order.

    Args:
      key: PRNG key of the order.
      state: the state before the step.
      actions: ``[N]`` int32; a move onto an occupied or off-grid cell fails (the agent
        stays); stay, catch and actions outside ``[0, 6)`` do not move.
    """
    n = actions.shape[0]
    order = jax.random.permutation(key, n)
    is_move = (actions >= 0) & (actions < NUM_MOVES)
    delta = jnp.asarray(MOVES)[jnp.where(is_move, actions, STAY)]
    target = state.agent_pos + delta
    blocked_by_prey = occupied(target, state.prey_pos, state.prey_alive)
    wants = (is_move & ~state.frozen & on_grid(target, state.grid_shape) & ~blocked_by_prey)
    live = ~state.frozen[order]  # agents on the grid (frozen ones never move)
    target, wants = target[order], wants[order]

    def one_agent(k: jax.Array, pos: jax.Array) -> jax.Array:
        free = ~jnp.any(live & jnp.all(pos == target[k], axis=-1))  # other agents
        return pos.at[k].set(jnp.where(wants[k] & free, target[k], pos[k]))

    pos = jax.lax.fori_loop(0, n, one_agent, state.agent_pos[order])
    return state.replace(agent_pos=pos[jnp.argsort(order)])


class _PreyCarry(NamedTuple):
    prey_pos: jax.Array  # [P, 2], in the random order
    alive: jax.Array  # [P], in the random order
    frozen: jax.Array  # [N]
    reward: jax.Array  # []
    captures: jax.Array  # []


def resolve_prey(
    key: jax.Array, state: HuntState, actions: jax.Array, capturers: jax.Array,
    value: jax.Array, punishment: jax.Array,
) -> PreyOutcome:
    """Each alive prey in a uniformly random order: capture, or flight.

    Args:
      key: PRNG key of the order and of the prey's moves.
      state: the state after the agents moved.
      actions: ``[N]`` int32 actions of the step (catchers chose :data:`CATCH`).
      capturers: ``[P]`` int32 catching agents needed to capture each prey.
      value: ``[P]`` float32 reward of capturing each prey.
      punishment: ``[]`` float32 added once per prey that some, but too few, agents caught.

    Returns:
      :class:`PreyOutcome`.
    """
    p = state.prey_pos.shape[0]
    key_order, key_move = jax.random.split(key)
    order = jax.random.permutation(key_order, p)
    draws = jax.random.uniform(key_move, (p, NUM_MOVES))  # argmax over free cells: uniform
    catching = (actions == CATCH) & ~state.frozen
    capturers, value = capturers[order], value[order]
    steps = jnp.asarray(MOVES[:NUM_MOVES])

    def one_prey(k: jax.Array, c: _PreyCarry) -> _PreyCarry:
        here = c.prey_pos[k]
        adjacent = jnp.sum(jnp.abs(state.agent_pos - here), axis=-1) == 1
        catchers = adjacent & catching & ~c.frozen
        count = jnp.sum(catchers, dtype=jnp.int32)
        captured = c.alive[k] & (count >= capturers[k])
        missed = c.alive[k] & (count > 0) & ~captured
        alive = c.alive.at[k].set(c.alive[k] & ~captured)
        frozen = c.frozen | (captured & catchers)
        cells = here + steps  # [4, 2]
        free = (on_grid(cells, state.grid_shape)
                & ~occupied(cells, state.agent_pos, ~frozen)
                & ~occupied(cells, c.prey_pos, alive))
        flee = alive[k] & jnp.any(free)
        cell = cells[jnp.argmax(jnp.where(free, draws[k], -1.0))]
        reward = (c.reward + jnp.where(captured, value[k], 0.0)
                  + jnp.where(missed, punishment, 0.0))
        return _PreyCarry(c.prey_pos.at[k].set(jnp.where(flee, cell, here)), alive, frozen,
                          reward, c.captures + captured.astype(jnp.int32))

    start = _PreyCarry(state.prey_pos[order], state.prey_alive[order], state.frozen,
                       jnp.zeros((), jnp.float32), jnp.zeros((), jnp.int32))
    end = jax.lax.fori_loop(0, p, one_prey, start)
    back = jnp.argsort(order)
    next_state = state.replace(prey_pos=end.prey_pos[back], prey_alive=end.alive[back],
                               frozen=end.frozen)
    return PreyOutcome(next_state, end.reward, end.captures)


def grid_channels(state: HuntState) -> jax.Array:
    """``[H, W, 3]`` float32 presence (0/1) of agents, stags and hares on each cell; frozen
    agents and captured prey are absent."""
    h, w = state.grid_shape
    n, p = state.agent_pos.shape[0], state.prey_pos.shape[0]
    m = state.num_stags
    channel = np.r_[np.zeros(n), np.ones(m), np.full(p - m, 2)].astype(np.int32)
    pos = jnp.concatenate([state.agent_pos, state.prey_pos])
    present = jnp.concatenate([~state.frozen, state.prey_alive])
    index = (pos[:, 0] * w + pos[:, 1]) * NUM_CHANNELS + channel
    index = jnp.where(present, index, h * w * NUM_CHANNELS)  # out of range: dropped
    flat = jnp.zeros((h * w * NUM_CHANNELS,), jnp.float32).at[index].set(1.0, mode="drop")
    return flat.reshape(h, w, NUM_CHANNELS)


def observe(grid: jax.Array, state: HuntState) -> jax.Array:
    """``[N, 75]`` float32: each agent's ``5 x 5`` window of ``grid [H, W, 3]`` centred on it,
    flattened as ``(row offset -2..2, col offset -2..2, channel)``; off-grid cells are 0 and
    a frozen agent sees only zeros."""
    r = VIEW_RADIUS
    side = 2 * r + 1
    padded = jnp.pad(grid, ((r, r), (r, r), (0, 0)))
    width = padded.shape[1]
    rows, cols, chans = np.meshgrid(np.arange(side), np.arange(side), np.arange(NUM_CHANNELS),
                                    indexing="ij")
    offsets = ((rows * width + cols) * NUM_CHANNELS + chans).reshape(-1)  # [75]
    corner = (state.agent_pos[:, 0] * width + state.agent_pos[:, 1]) * NUM_CHANNELS
    window = padded.reshape(-1)[corner[:, None] + offsets[None]]
    return jnp.where(state.frozen[:, None], 0.0, window)
