"""The rules of the grid hunt (``stag_hunt``) as pure array functions of one environment.

Layout (one environment; batch axes, if any, lead): a bounded ``H x W`` grid, cells
``(row, col)``; ``N`` agents and ``P = M + K`` prey (the ``M`` stags first, then the ``K``
hares). :class:`HuntState` holds every entity's cell, whether each agent is frozen and each
prey alive; a frozen agent or a captured prey keeps its last cell but is no longer on the
grid (it occupies nothing and nobody sees it).

Actions (:data:`MOVES`): 0 right ``(0, +1)``, 1 down ``(+1, 0)``, 2 left ``(0, -1)``,
3 up ``(-1, 0)``, 4 stay, 5 catch. Sequential moves are one ``lax.fori_loop`` over a random
permutation (:func:`random_order`, no sort): the arrays are gathered once into turn order,
so that the loop index is shared by every environment of a ``vmap`` (a dynamic slice, not a
gather), cells are compared as ``row * W + col`` ids, and the result is gathered back once.
The rules are described in :mod:`jaxmarl_accel.envs.stag_hunt`.
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


def _at(x: jax.Array, k: jax.Array) -> jax.Array:
    """``x[k]`` as a dynamic slice (the loop index ``k`` is shared by a whole ``vmap``)."""
    return jax.lax.dynamic_index_in_dim(x, k, keepdims=False)


def _set(x: jax.Array, k: jax.Array, value: jax.Array) -> jax.Array:
    """``x.at[k].set(value)`` as a dynamic update slice."""
    return jax.lax.dynamic_update_index_in_dim(x, value, k, 0)


def place(key: jax.Array, grid_shape: tuple[int, int], num_agents: int, num_stags: int,
          num_hares: int) -> HuntState:
    """A fresh episode: agents, then stags, then hares, each uniform on the free cells.

    The first ``N + P`` steps of a Fisher-Yates shuffle of the ``H * W`` cells give that
    distribution (each entity uniform over the cells its predecessors left free).

    Args:
      key: PRNG key of the placement.
      grid_shape: static ``(H, W)``.
      num_agents: N; num_stags: M; num_hares: K (static, ``N + M + K <= H * W``).

    Returns:
      :class:`HuntState` at step 0: ``agent_pos [N, 2]``, ``prey_pos [M + K, 2]``, nobody
      frozen, every prey alive.
    """
    h, w = grid_shape
    num_prey = num_stags + num_hares
    count, cells = num_agents + num_prey, jnp.arange(h * w, dtype=jnp.int32)
    first = jnp.arange(count, dtype=jnp.int32)  # step k swaps cell k with one of k..H*W-1
    offset = jnp.floor(jax.random.uniform(key, (count,)) * (h * w - first)).astype(jnp.int32)
    swap_with = jnp.minimum(first + offset, h * w - 1)

    def shuffle(k: jax.Array, perm: jax.Array) -> jax.Array:
        other = cells == _at(swap_with, k)  # one-hot: the cell swapped into place k
        picked = jnp.sum(jnp.where(other, perm, 0))
        return _set(jnp.where(other, _at(perm, k), perm), k, picked)

    cells = jax.lax.fori_loop(0, count, shuffle, cells)[:count]
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


def random_order(u: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A uniformly random permutation of ``0..n-1`` without a sort: the ranks of ``u [n]``,
    iid uniform draws (ties broken by index).

    Returns:
      ``(turn, order)``, both ``[n]`` int32: item ``i`` acts at turn ``turn[i]`` and turn
      ``k`` belongs to item ``order[k]``.
    """
    n = u.shape[0]
    index = jnp.arange(n)
    before = (u[None, :] < u[:, None]) | ((u[None, :] == u[:, None]) & (index < index[:, None]))
    turn = jnp.sum(before, axis=1, dtype=jnp.int32)
    order = jnp.argmax(turn[None, :] == index[:, None], axis=1).astype(jnp.int32)
    return turn, order


def _cell_ids(pos: jax.Array, grid_shape: tuple[int, int]) -> jax.Array:
    """int32 ``[...]``: ``row * W + col`` of cells ``[..., 2]`` (meaningful on the grid)."""
    return pos[..., 0] * grid_shape[1] + pos[..., 1]


def _cells(ids: jax.Array, grid_shape: tuple[int, int]) -> jax.Array:
    """``[..., 2]`` cells of cell ids ``[...]``."""
    return jnp.stack([ids // grid_shape[1], ids % grid_shape[1]], axis=-1)


def move_agents(u: jax.Array, state: HuntState, actions: jax.Array) -> HuntState:
    """Non-frozen agents move one at a time in a uniformly random order.

    Args:
      u: ``[N]`` iid uniform draws in ``[0, 1)`` that decide the order.
      state: the state before the step.
      actions: ``[N]`` int32; a move onto an occupied or off-grid cell fails (the agent
        stays); stay, catch and actions outside ``[0, 6)`` do not move.
    """
    n, shape = actions.shape[0], state.grid_shape
    turn, order = random_order(u)
    is_move = (actions >= 0) & (actions < NUM_MOVES)
    target = state.agent_pos + jnp.asarray(MOVES)[jnp.where(is_move, actions, STAY)]
    blocked_by_prey = occupied(target, state.prey_pos, state.prey_alive)
    wants = is_move & ~state.frozen & on_grid(target, shape) & ~blocked_by_prey
    # In turn order: wanted cell, whether to try, whether on the grid (frozen ones never move).
    target, wants = _cell_ids(target, shape)[order], wants[order]
    live = ~state.frozen[order]

    def one_agent(k: jax.Array, cell: jax.Array) -> jax.Array:
        free = ~jnp.any(live & (cell == _at(target, k)))
        return _set(cell, k, jnp.where(_at(wants, k) & free, _at(target, k), _at(cell, k)))

    start = _cell_ids(state.agent_pos, shape)[order]
    cell = jax.lax.fori_loop(0, n, one_agent, start)
    return state.replace(agent_pos=_cells(cell[turn], shape))


class _PreyCarry(NamedTuple):
    cell: jax.Array  # [P] int32 cell ids, in turn order
    alive: jax.Array  # [P], in turn order
    frozen: jax.Array  # [N]
    reward: jax.Array  # []
    captures: jax.Array  # []


def resolve_prey(
    u: jax.Array, state: HuntState, actions: jax.Array, capturers: jax.Array,
    value: jax.Array, punishment: jax.Array,
) -> PreyOutcome:
    """Each alive prey in a uniformly random order: capture, or flight.

    A prey is still at its cell of the step's start at its turn, and agents do not move in
    this phase, so which agents could catch it and which agents stand on its neighbours
    are computed for all prey at once; the loop only tracks frozen agents and moved prey.

    Args:
      u: ``[P, 5]`` iid uniform draws in ``[0, 1)``: column 0 decides the order, columns
        1-4 the flight (the free neighbour with the largest draw, a uniform choice).
      state: the state after the agents moved.
      actions: ``[N]`` int32 actions of the step (catchers chose :data:`CATCH`).
      capturers: ``[P]`` int32 catching agents needed to capture each prey.
      value: ``[P]`` float32 reward of capturing each prey.
      punishment: ``[]`` float32 added once per prey that some, but too few, agents caught.

    Returns:
      :class:`PreyOutcome`.
    """
    p, shape = state.prey_pos.shape[0], state.grid_shape
    turn, order = random_order(u[:, 0])
    catching = (actions == CATCH) & ~state.frozen
    prey_pos = state.prey_pos[order]  # everything below in turn order
    could_catch = adjacency(state.agent_pos, prey_pos).T & catching  # [P, N]
    neighbours = prey_pos[:, None] + MOVES[:NUM_MOVES]  # [P, 4, 2]
    neighbour_on_grid = on_grid(neighbours, shape)
    neighbour = _cell_ids(neighbours, shape)
    agent_on = (neighbour[..., None] == _cell_ids(state.agent_pos, shape)) & neighbour_on_grid[
        ..., None]  # [P, 4, N]: agent i stands on neighbour d of prey k
    capturers, value, draws = capturers[order], value[order], u[order, 1:]

    def one_prey(k: jax.Array, c: _PreyCarry) -> _PreyCarry:
        was_alive = _at(c.alive, k)
        catchers = _at(could_catch, k) & ~c.frozen
        count = jnp.sum(catchers, dtype=jnp.int32)
        captured = was_alive & (count >= _at(capturers, k))
        missed = was_alive & (count > 0) & ~captured
        alive = _set(c.alive, k, was_alive & ~captured)
        frozen = c.frozen | (captured & catchers)
        cells = _at(neighbour, k)  # [4]
        free = (_at(neighbour_on_grid, k) & ~jnp.any(_at(agent_on, k) & ~frozen, axis=-1)
                & ~jnp.any((cells[:, None] == c.cell) & alive, axis=-1))
        flee = was_alive & ~captured & jnp.any(free)
        choice = jnp.argmax(jnp.where(free, _at(draws, k), -1.0))
        new_cell = jnp.sum(jnp.where(jnp.arange(NUM_MOVES) == choice, cells, 0))
        reward = (c.reward + jnp.where(captured, _at(value, k), 0.0)
                  + jnp.where(missed, punishment, 0.0))
        cell = _set(c.cell, k, jnp.where(flee, new_cell, _at(c.cell, k)))
        return _PreyCarry(cell, alive, frozen, reward, c.captures + captured.astype(jnp.int32))

    start = _PreyCarry(_cell_ids(prey_pos, shape), state.prey_alive[order], state.frozen,
                       jnp.zeros((), jnp.float32), jnp.zeros((), jnp.int32))
    end = jax.lax.fori_loop(0, p, one_prey, start)
    next_state = state.replace(prey_pos=_cells(end.cell[turn], shape),
                               prey_alive=end.alive[turn], frozen=end.frozen)
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
