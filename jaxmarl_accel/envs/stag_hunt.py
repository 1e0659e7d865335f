"""The relative-overgeneralization stag hunt (``stag_hunt``) of Böhmer et al., "Deep
Coordination Graphs" (ICML 2020), on a bounded grid.

Entities: ``N`` agents, ``M`` stags and ``K`` hares (8 / 8 / 0 by default) on a bounded
``H x W`` grid (10 x 10), at most one entity per cell. A reset places the agents, then the
stags, then the hares, each uniformly on the cells still free.

Actions (6, ``[N]`` int32): 0 right ``(0, +1)``, 1 down ``(+1, 0)``, 2 left ``(0, -1)``,
3 up ``(-1, 0)`` (cells are ``(row, col)``), 4 stay, 5 catch. Available
(:func:`~.hunt_rules.avail_actions`, ``info["avail_actions"]``, ``env.avail_actions``):
moves whose cell is on the grid (occupied or not), stay always, catch only when an alive
prey is 4-adjacent; a frozen agent may only stay.

One step:

1. agents: each non-frozen agent, one at a time in a fresh uniformly random order, takes its
   move; a move onto a cell occupied at its turn (by an agent on the grid or an alive prey)
   fails and the agent stays;
2. prey: each alive prey, one at a time in a fresh uniformly random order, counts the
   non-frozen agents 4-adjacent to it (at their cells after step 1) that chose catch. A stag
   is captured by >= 2 of them, a hare by >= 1. If some but too few catch, the team reward
   gets ``miscapture_punishment`` once for that prey. A captured prey leaves the grid and
   gives ``stag_reward`` (+10) or ``hare_reward`` (+1), and every non-frozen catching agent
   adjacent to it is frozen and leaves the grid (so it no longer counts for the prey after
   it in the order; an agent adjacent to two prey can help capture only the first, but can
   draw a punishment from each prey it fails to capture). A prey not captured moves to a
   uniformly chosen 4-neighbour that is on the grid and free at its turn, and stays if none
   is;
3. one team reward per step, broadcast to ``[N]``; ``info["captures"]`` (int32) counts the
   prey captured.

``terminated`` when every prey is captured or every agent is frozen; otherwise
``truncated`` when the step reaches ``params.episode_length`` (200): the two are never both
True. The step that ends an episode returns the first observation of a fresh one
(auto-reset), with ``info["final_obs"]``, ``info["final_avail_actions"]`` and
``info["final_state"]`` of the state reached before the reset.

Observation (``[N, 75]`` float32, 0/1): the 5 x 5 window centred on the agent x 3 channels
(agents, stags, hares), flattened as (row offset -2..2, col offset -2..2, channel); off-grid
cells are 0; the agent sees itself in the centre; frozen agents observe zeros and are
invisible to everyone. Global state (``env.state_of``, ``info["state"]``): the whole grid x
3 channels, flattened as (row, col, channel), ``[H * W * 3]`` float32.

Unavailable actions: in the jitted step every unavailable action does what "stay" does (an
off-grid move fails, a catch with no adjacent prey has no effect, a frozen agent does not
act), and so does an action outside ``[0, 6)``. ``make(..., check_actions=True)`` builds a
checked step that fails with a one-line message naming the first offending agent and its
action: eagerly as it is, or under ``jax.jit`` once wrapped by
``jax.experimental.checkify.checkify``.

Scripted policy (:func:`scripted_actions`): each non-frozen agent catches when a stag
adjacent to it has another non-frozen agent adjacent too; otherwise it takes the free move
that brings it closest (Manhattan) to its nearest alive stag, or stays once adjacent to it
or when no free move brings it closer (ties broken at random). It never catches hares.

Choices left open by the rules, as made here and compared with the DCG authors' code
(``src/envs/stag_hunt.py`` with its ``rel_overgen.yaml``):

* same as DCG: the order of the two phases and within them (agents, then prey, each in a
  fresh random order, a prey's capture or flight decided at its turn); blocked moves fail;
  prey flee only to free on-grid cells and never rest (DCG's ``p_stags_rest = 0``); frozen
  agents are removed from the grid; a prey that some agents failed to capture still flees;
  the observation and state layouts (DCG's ``observe_walls = False``);
* differ from DCG: the punishment defaults to 0 (DCG's config has -2); there is no time
  reward (DCG's config also has 0); DCG reports the time limit as ``terminated`` with
  ``episode_limit``, here it is ``truncated``; actions outside ``[0, 6)`` act as stay (DCG
  fails); the random numbers are of course not DCG's.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.experimental import checkify

from jaxmarl_accel.envs import hunt_rules as rules
from jaxmarl_accel.envs import moves
from jaxmarl_accel.envs.base import Env, EnvSpec, bind_static
from jaxmarl_accel.envs.hunt_rules import HuntState
from jaxmarl_accel.envs.registry import Scenario, Team, register_scenario
from jaxmarl_accel.envs.render_grid import render_hunt

NAME = "stag_hunt"
STAG_CAPTURERS, HARE_CAPTURERS = 2, 1
NUM_ACTIONS = len(rules.ACTION_NAMES)


class HuntShape(NamedTuple):
    """Static sizes of one stag hunt (hashable; the first argument of the env's functions).

    Attributes:
      grid_shape: ``(H, W)`` rows and columns of the grid.
      num_agents: N hunters.
      num_stags: M stags.
      num_hares: K hares.
      check_actions: the step fails on an unavailable action (``checkify``).
    """

    grid_shape: tuple[int, int]
    num_agents: int
    num_stags: int
    num_hares: int
    check_actions: bool


@struct.dataclass
class StagHuntParams:
    """Numeric settings of the stag hunt.

    Attributes:
      episode_length: int32 steps after which an episode is truncated.
      miscapture_punishment: float32 added to the team reward once per prey that some, but
        too few, agents tried to catch (negative to punish).
      stag_reward: float32 reward of capturing a stag.
      hare_reward: float32 reward of capturing a hare.
    """

    episode_length: jax.Array
    miscapture_punishment: jax.Array
    stag_reward: jax.Array
    hare_reward: jax.Array


def _grid_shape(grid_size: int | tuple[int, int]) -> tuple[int, int]:
    shape = (grid_size, grid_size) if isinstance(grid_size, int) else tuple(grid_size)
    if len(shape) != 2 or not all(isinstance(s, int) and s >= 1 for s in shape):
        raise ValueError(f"grid_size must be an int >= 1 or (rows, cols), got {grid_size!r}")
    return shape


def _check(num_agents, num_stags, num_hares, shape, punishment, rewards, length):
    for name, value, low in (("num_agents", num_agents, 1), ("num_stags", num_stags, 0),
                             ("num_hares", num_hares, 0), ("episode_length", length, 1)):
        if not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if num_stags + num_hares < 1:
        raise ValueError("num_stags + num_hares must be >= 1 (a hunt needs prey)")
    cells = shape[0] * shape[1]
    if num_agents + num_stags + num_hares > cells:
        raise ValueError(
            f"num_agents + num_stags + num_hares = {num_agents + num_stags + num_hares} "
            f"exceeds the {cells} cells of the {shape[0]}x{shape[1]} grid (grid_size)")
    for name, value in (("miscapture_punishment", punishment), *rewards):
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")


def make(
    num_agents: int = 8,
    num_stags: int = 8,
    num_hares: int = 0,
    grid_size: int | tuple[int, int] = 10,
    miscapture_punishment: float = 0.0,
    episode_length: int = 200,
    stag_reward: float = 10.0,
    hare_reward: float = 1.0,
    check_actions: bool = False,
) -> tuple[Env, StagHuntParams]:
    """Builds the stag hunt (rules in the module docstring).

    Args:
      num_agents: N >= 1 hunters.
      num_stags: M >= 0 stags (captured by 2 agents).
      num_hares: K >= 0 hares (captured by 1 agent).
      grid_size: side of the square grid, or ``(rows, cols)``.
      miscapture_punishment: added once per prey too few agents tried to catch.
      episode_length: steps per episode (default 200).
      stag_reward: reward of a stag (default 10).
      hare_reward: reward of a hare (default 1).
      check_actions: the step fails on an unavailable or out-of-range action (a
        ``checkify`` check: wrap the step in ``checkify.checkify`` to jit it).

    Returns:
      ``(env, params)``.
    """
    grid = _grid_shape(grid_size)
    _check(num_agents, num_stags, num_hares, grid, miscapture_punishment,
           (("stag_reward", stag_reward), ("hare_reward", hare_reward)), episode_length)
    shape = HuntShape(grid_shape=grid, num_agents=num_agents, num_stags=num_stags,
                      num_hares=num_hares, check_actions=check_actions)
    params = StagHuntParams(
        episode_length=jnp.asarray(episode_length, jnp.int32),
        miscapture_punishment=jnp.asarray(miscapture_punishment, jnp.float32),
        stag_reward=jnp.asarray(stag_reward, jnp.float32),
        hare_reward=jnp.asarray(hare_reward, jnp.float32))
    env = Env(spec=_spec(shape, episode_length), reset=bind_static(reset, shape),
              step=bind_static(step, shape), scripted_action=scripted_action,
              random_action=bind_static(random_action, shape),
              avail_actions=available_actions, state_of=state_of, render=render_hunt)
    return env, params


def _spec(shape: HuntShape, episode_length: int) -> EnvSpec:
    n = shape.num_agents
    obs_dim = (2 * rules.VIEW_RADIUS + 1) ** 2 * rules.NUM_CHANNELS
    return EnvSpec(
        name=NAME, num_agents=n, obs_dim=obs_dim, obs_sizes=(obs_dim,) * n,
        teams=("agent",) * n, continuous=False, num_actions=NUM_ACTIONS,
        action_sizes=(NUM_ACTIONS,) * n, act_dim=NUM_ACTIONS, episode_length=episode_length,
        shared_reward=True,
        state_dim=shape.grid_shape[0] * shape.grid_shape[1] * rules.NUM_CHANNELS,
        binary_observations=True, episode_stats=("captures",), terminates=True)


def views(state: HuntState) -> tuple[jax.Array, jax.Array, jax.Array]:
    """What the agents and a mixer see of ``state``: ``(obs [N, obs_dim] float32, available
    actions [N, 6] bool, global state [H * W * 3] float32)``."""
    grid = rules.grid_channels(state)
    return rules.observe(grid, state), rules.avail_actions(state), grid.reshape(-1)


def reset(shape: HuntShape, key: jax.Array, params: StagHuntParams
          ) -> tuple[jax.Array, HuntState]:
    """A fresh episode (``Env.reset``): ``(obs [N, obs_dim], state)``.

    Args:
      shape: the static sizes.
      key: PRNG key of the placement.
      params: the settings (unused: the placement has none).
    """
    state = rules.place(key, shape.grid_shape, shape.num_agents, shape.num_stags,
                        shape.num_hares)
    return views(state)[0], state


def step(shape: HuntShape, key: jax.Array, state: HuntState, actions: jax.Array,
         params: StagHuntParams):
    """One step with the time limit and the auto-reset (``Env.step``).

    Args:
      shape: the static sizes and ``check_actions``.
      key: PRNG key of the step's random orders and prey moves and of a reset.
      state: the state before the step.
      actions: ``[N]`` int32.
      params: the settings.

    Returns:
      ``(obs [N, obs_dim], state, reward [N], terminated [], truncated [], info)``; ``info``
      holds ``final_obs [N, obs_dim]``, ``avail_actions`` and ``final_avail_actions``
      ``[N, 6]``, ``state`` and ``final_state`` ``[H * W * 3]`` and ``captures []`` int32.
    """
    n = shape.num_agents
    validate_actions(actions, n)
    if shape.check_actions:
        check_available(state, actions)
    key_rules, key_reset = jax.random.split(key)
    outcome = transition(key_rules, state, actions, params)
    next_state = outcome.state
    terminated = ~jnp.any(next_state.prey_alive) | jnp.all(next_state.frozen)
    truncated = ~terminated & (next_state.step >= params.episode_length)
    final_obs, final_avail, final_grid = views(next_state)
    fresh = rules.place(key_reset, shape.grid_shape, n, shape.num_stags, shape.num_hares)
    done = terminated | truncated
    new_state = jax.tree.map(lambda r, s: jnp.where(done, r, s), fresh, next_state)
    obs, avail, grid = views(new_state)
    info = {"final_obs": final_obs, "avail_actions": avail,
            "final_avail_actions": final_avail, "state": grid, "final_state": final_grid,
            "captures": outcome.captures}
    reward = jnp.full((n,), outcome.reward, jnp.float32)
    return obs, new_state, reward, terminated, truncated, info


def random_action(shape: HuntShape, key: jax.Array) -> jax.Array:
    """Uniform actions ``[N]`` int32 in ``[0, 6)`` (available or not)."""
    return jax.random.randint(key, (shape.num_agents,), 0, NUM_ACTIONS, jnp.int32)


def scripted_action(key: jax.Array, state: HuntState, params: StagHuntParams) -> jax.Array:
    """``Env.scripted_action``: :func:`scripted_actions`, ``[N]`` int32."""
    return scripted_actions(key, state)


def available_actions(state: HuntState, params: StagHuntParams) -> jax.Array:
    """``Env.avail_actions``: ``[N, 6]`` bool, the actions available in ``state``."""
    return rules.avail_actions(state)


def state_of(state: HuntState, params: StagHuntParams) -> jax.Array:
    """``Env.state_of``: the global state ``[H * W * 3]`` float32 (module docstring)."""
    return rules.grid_channels(state).reshape(-1)


def transition(key: jax.Array, state: HuntState, actions: jax.Array, params: StagHuntParams,
               ) -> rules.PreyOutcome:
    """One step of the rules (agents' moves, then the prey's captures and flights), without
    the time limit or the reset.

    Args:
      key: PRNG key of the step's random orders and prey moves.
      state: the state before the step.
      actions: ``[N]`` int32 (unavailable ones act as stay).
      params: the settings.

    Returns:
      :class:`~.hunt_rules.PreyOutcome` with ``state.step`` advanced by one.
    """
    n, p = state.agent_pos.shape[0], state.prey_pos.shape[0]
    u = jax.random.uniform(key, (n + p * (1 + rules.NUM_MOVES),))
    is_stag = np.arange(state.prey_pos.shape[0]) < state.num_stags
    capturers = jnp.where(is_stag, STAG_CAPTURERS, HARE_CAPTURERS).astype(jnp.int32)
    value = jnp.where(is_stag, params.stag_reward, params.hare_reward)
    moved = rules.move_agents(u[:n], state, actions)
    outcome = rules.resolve_prey(u[n:].reshape(p, 1 + rules.NUM_MOVES), moved, actions,
                                 capturers, value, params.miscapture_punishment)
    return outcome._replace(state=outcome.state.replace(step=state.step + 1))


def validate_actions(actions: jax.Array, num_agents: int) -> None:
    """Trace-time check that ``actions`` is an int array ``[N]`` (raises ``ValueError``)."""
    moves.validate_actions(actions, (num_agents,), False, NAME)


def check_available(state: HuntState, actions: jax.Array) -> None:
    """``checkify`` check that every agent's action ``actions [N]`` is available in
    ``state`` (fails eagerly; under ``jax.jit`` the caller must be ``checkify``-ed)."""
    num_actions = len(rules.ACTION_NAMES)
    in_range = (actions >= 0) & (actions < num_actions)
    index = jnp.clip(actions, 0, num_actions - 1)
    ok = in_range & jnp.take_along_axis(rules.avail_actions(state), index[:, None], 1)[:, 0]
    agent = jnp.argmin(ok)
    checkify.check(
        jnp.all(ok),
        "actions: agent {agent} took action {action}, which is not available (0-3 move off "
        "the grid, 5 catch with no adjacent prey, anything but 4 stay when frozen, or "
        "outside 0-5)", agent=agent, action=actions[agent])


def scripted_actions(key: jax.Array, state: HuntState) -> jax.Array:
    """The scripted policy of the module docstring: ``[N]`` int32 actions.

    Args:
      key: PRNG key of the tie-breaking.
      state: the state (its first ``state.num_stags`` prey are the stags).
    """
    m = state.num_stags
    if m == 0:  # only hares: the policy never catches them
        return jnp.full(state.frozen.shape, rules.STAY, jnp.int32)
    stag_pos, stag_alive = state.prey_pos[:m], state.prey_alive[:m]
    live = ~state.frozen
    dist = jnp.sum(jnp.abs(state.agent_pos[:, None] - stag_pos[None]), axis=-1)  # [N, M]
    adjacent = (dist == 1) & stag_alive & live[:, None]
    partnered = jnp.sum(adjacent, axis=0) >= STAG_CAPTURERS  # [M]
    catch = jnp.any(adjacent & partnered, axis=1) & live
    draws = jax.random.uniform(key, (dist.shape[0], m + rules.NUM_MOVES))
    noise = 0.5 * draws[:, :m]  # ties between stags at one distance
    nearest = jnp.argmin(jnp.where(stag_alive, dist + noise, jnp.inf), axis=1)  # [N]
    target, target_dist = stag_pos[nearest], jnp.take_along_axis(dist, nearest[:, None], 1)
    cells = state.agent_pos[:, None] + rules.MOVES[: rules.NUM_MOVES]  # [N, 4, 2]
    pos = jnp.concatenate([state.agent_pos, state.prey_pos])
    present = jnp.concatenate([live, state.prey_alive])
    free = rules.on_grid(cells, state.grid_shape) & ~rules.occupied(cells, pos, present)
    new_dist = jnp.sum(jnp.abs(cells - target[:, None]), axis=-1)  # [N, 4]
    closer = free & (new_dist < target_dist) & (target_dist > 1)
    score = jnp.where(closer, draws[:, m:], -1.0)  # ties between moves
    move = jnp.where(jnp.any(closer, axis=1), jnp.argmax(score, axis=1), rules.STAY)
    go = jnp.any(stag_alive) & live
    return jnp.where(catch, rules.CATCH, jnp.where(go, move, rules.STAY)).astype(jnp.int32)


SCENARIO = register_scenario(Scenario(
    "stag_hunt", make, "the relative-overgeneralization stag hunt on a grid (paper 004)",
    (Team("agents", "num_agents"),)))
