"""Discrete Tag on a square grid (``tag_gridworld``): WarpDrive's ``TagGridWorld``
(paper 003, Sec. 5.1 "The Tag Environment", discrete version) as a pure JAX env.

Agents are ordered taggers first, then runners (``spec.teams``: ``"tagger"`` /
``"runner"``); WarpDrive's grid has exactly one runner, its last agent, and this env with
``num_runners=1`` (the default) is that env step for step. Cells are integer ``(x, y)`` with
``0 <= x, y <= grid_length``: ``(grid_length + 1)^2`` cells (WarpDrive clips to
``[0, grid_length]`` inclusive). Defaults are WarpDrive's ``run_configs/tag_gridworld.yaml``
(4 taggers, grid 100, 100 steps, wall penalty 0.1, tag reward 10, runner penalty 5, step
cost 0.01) and its constructor's ``use_full_observation=True``.

Start (every episode, as WarpDrive without a reset pool): taggers at the centre
``(int(grid_length / 2), int(grid_length / 2))``, runners at the corner ``(0, 0)``; or the
cells given by ``starting_location_x`` / ``starting_location_y`` (length N, our order).

Actions (5, ``[N]`` int32): 0 stay, 1 ``x + 1``, 2 ``x - 1``, 3 ``y + 1``, 4 ``y - 1``
(WarpDrive's ``step_actions``); anything outside ``[0, 5)`` acts as stay.

One step (``t -> t + 1``):

1. every agent in the game moves at once (no order within a step, no blocking: any number
   of agents may share a cell); a move off the grid is clipped back onto the edge cell and
   costs that agent ``wall_hit_penalty``;
2. a runner in the game is tagged when at least one tagger stands on its cell after the
   moves (tags are checked after all moves, as WarpDrive does);
3. rewards: every tagger gets ``tag_reward_for_tagger`` times the number of runners tagged
   this step if any was, else ``-step_cost_for_tagger``; a runner in the game gets
   ``-tag_penalty_for_runner`` when tagged, else ``+step_cost_for_tagger``; both minus the
   wall penalty. ``info["tags"]`` (int32) counts the runners tagged this step and
   ``info["steps_before_first_tag"]`` is 1 while no runner has been tagged this episode
   (summed over an episode: the steps before its first tag);
4. a tagged runner exits the game: it no longer moves, is no longer a target, observes
   zeros and gets reward 0 (with one runner the episode ends at that step anyway).

``terminated`` when every runner has been tagged (WarpDrive: the runner is tagged);
otherwise ``truncated`` at ``params.episode_length`` steps (WarpDrive reports both as
``done``). The step that ends an episode returns the first observation of a fresh one
(auto-reset) with ``info["final_obs"]`` and ``info["still_in_the_game"]`` (``[N]`` bool) of
the state reached before the reset.

Observations (``[N, obs_dim]`` float32, positions divided by ``grid_length``, time is
``t / episode_length``; a step's observation is taken after the moves with the in-game
flags from before that step's tags, as WarpDrive observes before it removes anyone):

* ``use_full_observation=True`` (``4N + 1``), WarpDrive's layout: ``[x_1..x_N, y_1..y_N,
  type_1..type_N, onehot(self)_1..N, t]`` with type 0 tagger, 1 runner;
* ``False`` (6, WarpDrive's partial observation, O(N) per env): ``[x, y, x_o, y_o, type,
  t]``: a tagger sees its nearest runner in the game, a runner its nearest tagger
  (squared Euclidean distance, lowest index on ties: with one runner, exactly WarpDrive's).

Choices WarpDrive leaves open or does not have, as made here: more than one runner (the
rules above reduce to WarpDrive's with one); exited runners keep their last cell in the
full observation (the layout has no in-game row); the time limit is ``truncated``.

Scripted policy (:func:`scripted_actions`): a tagger steps towards its nearest runner along
the axis of the larger gap (x on ties); a runner takes the in-grid move that maximises its
squared distance to its nearest tagger (lowest action index on ties).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_accel.envs import moves
from jaxmarl_accel.envs.base import Env, EnvSpec
from jaxmarl_accel.envs.registry import Scenario, Team, register_scenario

NAME = "tag_gridworld"
# (dx, dy) of each action: stay, +x, -x, +y, -y (WarpDrive's step_actions).
STEP_ACTIONS = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.int32)
NUM_ACTIONS = len(STEP_ACTIONS)
PARTIAL_OBS_DIM = 6


@struct.dataclass
class GridTagState:
    """State of one env.

    Attributes:
      pos: ``[N, 2]`` int32 cells ``(x, y)``.
      in_game: ``[N]`` bool, False for runners already tagged (taggers are always True).
      step: int32 steps taken in this episode.
    """

    pos: jax.Array
    in_game: jax.Array
    step: jax.Array


@struct.dataclass
class GridTagParams:
    """Numeric settings (WarpDrive's env-config keys).

    Attributes:
      grid_length: int32 last cell index of each axis.
      episode_length: int32 steps after which an episode is truncated.
      wall_hit_penalty: float32 subtracted from an agent's reward when it moves off the grid.
      tag_reward_for_tagger: float32 given to every tagger per runner tagged.
      tag_penalty_for_runner: float32 subtracted from a tagged runner's reward.
      step_cost_for_tagger: float32 taken from taggers (given to runners) on a step with no tag.
      start: ``[N, 2]`` int32 cells every episode starts from.
    """

    grid_length: jax.Array
    episode_length: jax.Array
    wall_hit_penalty: jax.Array
    tag_reward_for_tagger: jax.Array
    tag_penalty_for_runner: jax.Array
    step_cost_for_tagger: jax.Array
    start: jax.Array


def initial_state(params: GridTagParams) -> GridTagState:
    """The start of every episode: all agents in the game at ``params.start`` ``[N, 2]``."""
    n = params.start.shape[0]
    # the barrier keeps XLA from constant-folding the start's observation when params are
    # closed over by jit (minutes of compilation at 1,000 agents)
    start = jax.lax.optimization_barrier(params.start)
    return GridTagState(pos=start, in_game=jnp.ones((n,), bool), step=jnp.zeros((), jnp.int32))


def move(pos: jax.Array, actions: jax.Array, in_game: jax.Array, grid_length: jax.Array
         ) -> tuple[jax.Array, jax.Array]:
    """All agents' moves at once, clipped to the grid.

    Args:
      pos: ``[N, 2]`` int32 cells.
      actions: ``[N]`` int action indices (outside ``[0, 5)``: stay).
      in_game: ``[N]`` bool; agents out of the game stay.
      grid_length: int32 last cell index.

    Returns:
      ``(new_pos [N, 2] int32, hit_wall [N] bool)``.
    """
    valid = (actions >= 0) & (actions < NUM_ACTIONS) & in_game
    delta = jnp.asarray(STEP_ACTIONS)[jnp.clip(actions, 0, NUM_ACTIONS - 1)] * valid[:, None]
    wanted = pos + delta
    clipped = jnp.clip(wanted, 0, grid_length)
    return clipped, jnp.any(wanted != clipped, axis=1)


def tagged_runners(pos: jax.Array, in_game: jax.Array, num_taggers: int) -> jax.Array:
    """Runners in the game with a tagger on their cell, ``[M]`` bool.

    Args:
      pos: ``[N, 2]`` cells, taggers first.
      in_game: ``[N]`` bool.
      num_taggers: static number of taggers T (``M = N - T``).
    """
    same = jnp.all(pos[num_taggers:, None] == pos[None, :num_taggers], axis=-1)  # [M, T]
    return jnp.any(same, axis=1) & in_game[num_taggers:]


def reward(tagged: jax.Array, hit_wall: jax.Array, in_game: jax.Array, params: GridTagParams,
           num_taggers: int) -> jax.Array:
    """Rewards of one step, ``[N]`` float32 (module docstring, rule 3).

    Args:
      tagged: ``[M]`` bool runners tagged this step.
      hit_wall: ``[N]`` bool agents whose move was clipped.
      in_game: ``[N]`` bool, before this step's tags.
      params: the settings.
      num_taggers: static T.
    """
    tags = jnp.sum(tagged).astype(jnp.float32)
    tagger = jnp.where(tags > 0, params.tag_reward_for_tagger * tags,
                       -params.step_cost_for_tagger)
    runner = jnp.where(tagged, -params.tag_penalty_for_runner, params.step_cost_for_tagger)
    team = jnp.concatenate([jnp.broadcast_to(tagger, (num_taggers,)), runner])
    total = team - params.wall_hit_penalty * hit_wall.astype(jnp.float32)
    return jnp.where(in_game, total, 0.0).astype(jnp.float32)


def nearest_opponent(pos: jax.Array, in_game: jax.Array, num_taggers: int) -> jax.Array:
    """Each agent's nearest opponent in the game, ``[N]`` int32 agent indices.

    Taggers look at runners in the game, runners at taggers; squared Euclidean distance,
    lowest index on ties (``[T, M]`` distances, O(T M)).

    Args:
      pos: ``[N, 2]`` cells, taggers first.
      in_game: ``[N]`` bool.
      num_taggers: static T.
    """
    delta = (pos[:num_taggers, None] - pos[None, num_taggers:]).astype(jnp.float32)
    dist = jnp.sum(delta * delta, axis=-1)  # [T, M]
    runner_seen = jnp.where(in_game[None, num_taggers:], dist, jnp.inf)
    tagger_target = num_taggers + jnp.argmin(runner_seen, axis=1)
    runner_target = jnp.argmin(dist, axis=0)
    return jnp.concatenate([tagger_target, runner_target]).astype(jnp.int32)


def observe(state: GridTagState, params: GridTagParams, num_taggers: int, full: bool
            ) -> jax.Array:
    """Observations ``[N, obs_dim]`` float32 (layouts in the module docstring).

    Args:
      state: the state observed.
      params: the settings (grid length and episode length normalize).
      num_taggers: static T.
      full: static ``use_full_observation``.
    """
    n = state.pos.shape[0]
    norm = state.pos.astype(jnp.float32) / params.grid_length.astype(jnp.float32)
    time = state.step.astype(jnp.float32) / params.episode_length.astype(jnp.float32)
    is_runner = (np.arange(n) >= num_taggers).astype(np.float32)
    if full:
        common = jnp.concatenate([norm[:, 0], norm[:, 1], jnp.asarray(is_runner)])
        return jnp.concatenate([jnp.broadcast_to(common, (n, 3 * n)),
                                jnp.eye(n, dtype=jnp.float32),
                                jnp.broadcast_to(time, (n, 1))], axis=1)
    target = norm[nearest_opponent(state.pos, state.in_game, num_taggers)]
    obs = jnp.concatenate([norm, target, jnp.asarray(is_runner)[:, None],
                           jnp.broadcast_to(time, (n, 1))], axis=1)
    return jnp.where(state.in_game[:, None], obs, 0.0)


def scripted_actions(state: GridTagState, params: GridTagParams, num_taggers: int
                     ) -> jax.Array:
    """Taggers chase their nearest runner, runners flee their nearest tagger: ``[N]`` int32.

    Args:
      state: the state acted on.
      params: the settings (grid edges).
      num_taggers: static T.
    """
    target = state.pos[nearest_opponent(state.pos, state.in_game, num_taggers)]
    gap = target - state.pos  # [N, 2]
    along_x = jnp.abs(gap[:, 0]) >= jnp.abs(gap[:, 1])
    chase = jnp.where(along_x, jnp.where(gap[:, 0] > 0, 1, 2), jnp.where(gap[:, 1] > 0, 3, 4))
    chase = jnp.where(jnp.all(gap == 0, axis=1), 0, chase)
    cells = state.pos[:, None] + jnp.asarray(STEP_ACTIONS)[None]  # [N, 5, 2]
    on_grid = jnp.all((cells >= 0) & (cells <= params.grid_length), axis=-1)
    away = jnp.sum(((cells - target[:, None]) ** 2).astype(jnp.float32), axis=-1)
    flee = jnp.argmax(jnp.where(on_grid, away, -1.0), axis=1)
    is_tagger = np.arange(state.pos.shape[0]) < num_taggers
    return jnp.where(state.in_game, jnp.where(is_tagger, chase, flee), 0).astype(jnp.int32)


def env_step(state: GridTagState, actions: jax.Array, params: GridTagParams, num_taggers: int,
             full: bool) -> tuple[jax.Array, GridTagState, jax.Array, jax.Array, jax.Array,
                                  dict]:
    """One step of the rules with the time limit and the auto-reset (``Env.step``).

    Args:
      state: the state before the step.
      actions: ``[N]`` int actions.
      params: the settings.
      num_taggers: static T.
      full: static ``use_full_observation``.

    Returns:
      ``(obs [N, obs_dim], state, reward [N], terminated [], truncated [], info)`` with
      ``info["final_obs"]`` ``[N, obs_dim]``, ``info["still_in_the_game"]`` ``[N]``,
      ``info["tags"]`` ``[]`` int32 and ``info["steps_before_first_tag"]`` ``[]`` int32, 1
      while no runner has been tagged in this episode (this step's tags included), so its
      sum over an episode is the steps taken before the first tag (the whole episode when
      there is none).
    """
    t = num_taggers
    pos, hit_wall = move(state.pos, actions, state.in_game, params.grid_length)
    tagged = tagged_runners(pos, state.in_game, t)
    rew = reward(tagged, hit_wall, state.in_game, params, t)
    in_game = state.in_game.at[t:].set(state.in_game[t:] & ~tagged)
    reached = GridTagState(pos=pos, in_game=in_game, step=state.step + 1)
    terminated = ~jnp.any(in_game[t:])
    truncated = ~terminated & (reached.step >= params.episode_length)
    done = terminated | truncated
    fresh = initial_state(params)
    new_state = jax.tree.map(lambda r, s: jnp.where(done, r, s), fresh, reached)
    final_obs = observe(reached.replace(in_game=state.in_game), params, t, full)
    obs = jnp.where(done, observe(fresh, params, t, full), final_obs)
    info = {"final_obs": final_obs, "still_in_the_game": in_game,
            "tags": jnp.sum(tagged).astype(jnp.int32),
            "steps_before_first_tag": jnp.all(in_game[t:]).astype(jnp.int32)}
    return obs, new_state, rew, terminated, truncated, info


def _check_int(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def _check(num_taggers, num_runners, grid_length, episode_length, rewards) -> None:
    for name, value, low in (("num_taggers", num_taggers, 1), ("num_runners", num_runners, 1),
                             ("grid_length", grid_length, 1),
                             ("episode_length", episode_length, 1)):
        _check_int(name, value, low)
    cells = (grid_length + 1) ** 2
    if num_taggers + num_runners > cells:
        raise ValueError(
            f"num_taggers + num_runners = {num_taggers + num_runners} exceeds the {cells} cells "
            f"of the grid (grid_length={grid_length} gives (grid_length + 1)^2 cells)")
    for name, value in rewards:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")


def _start(num_taggers: int, num_runners: int, grid_length: int,
           xs: Sequence[int] | None, ys: Sequence[int] | None) -> np.ndarray:
    n = num_taggers + num_runners
    if xs is None and ys is None:
        centre = int(0.5 * grid_length)
        start = np.zeros((n, 2), np.int32)
        start[:num_taggers] = centre
        return start
    for name, values in (("starting_location_x", xs), ("starting_location_y", ys)):
        if values is None or len(values) != n or not all(
                float(v).is_integer() and 0 <= v <= grid_length for v in values):
            raise ValueError(f"{name} must hold {n} integer cells in [0, {grid_length}] (with "
                             f"the other starting_location), got {values!r}")
    return np.stack([np.asarray(xs), np.asarray(ys)], axis=1).astype(np.int32)


def make(
    num_taggers: int = 4,
    num_runners: int = 1,
    grid_length: int = 100,
    episode_length: int = 100,
    starting_location_x: Sequence[int] | None = None,
    starting_location_y: Sequence[int] | None = None,
    wall_hit_penalty: float = 0.1,
    tag_reward_for_tagger: float = 10.0,
    tag_penalty_for_runner: float = 5.0,
    step_cost_for_tagger: float = 0.01,
    use_full_observation: bool = True,
) -> tuple[Env, GridTagParams]:
    """Builds discrete Tag (rules in the module docstring; keys are WarpDrive's).

    Args:
      num_taggers: T >= 1 taggers (agents ``0..T-1``).
      num_runners: M >= 1 runners (agents ``T..N-1``; WarpDrive has exactly 1).
      grid_length: last cell index of each axis (``(grid_length + 1)^2`` cells >= N).
      episode_length: steps per episode.
      starting_location_x: optional start x of each agent (our order), with ``_y``.
      starting_location_y: optional start y of each agent.
      wall_hit_penalty: subtracted when a move leaves the grid.
      tag_reward_for_tagger: given to every tagger per runner tagged.
      tag_penalty_for_runner: subtracted from a tagged runner.
      step_cost_for_tagger: taken from taggers and given to runners on a step with no tag.
      use_full_observation: every agent sees every agent (``4N + 1``) instead of its
        nearest opponent (6).

    Returns:
      ``(env, params)``.
    """
    _check(num_taggers, num_runners, grid_length, episode_length,
           (("wall_hit_penalty", wall_hit_penalty),
            ("tag_reward_for_tagger", tag_reward_for_tagger),
            ("tag_penalty_for_runner", tag_penalty_for_runner),
            ("step_cost_for_tagger", step_cost_for_tagger)))
    n, t = num_taggers + num_runners, num_taggers
    start = _start(num_taggers, num_runners, grid_length, starting_location_x,
                   starting_location_y)
    obs_dim = 4 * n + 1 if use_full_observation else PARTIAL_OBS_DIM
    spec = EnvSpec(
        name=NAME, num_agents=n, obs_dim=obs_dim, obs_sizes=(obs_dim,) * n,
        teams=("tagger",) * t + ("runner",) * num_runners, continuous=False,
        num_actions=NUM_ACTIONS, action_sizes=(NUM_ACTIONS,) * n, act_dim=NUM_ACTIONS,
        episode_length=episode_length, terminates=True,
        episode_stats=("tags", "steps_before_first_tag"))
    f32 = jnp.float32
    params = GridTagParams(
        grid_length=jnp.asarray(grid_length, jnp.int32),
        episode_length=jnp.asarray(episode_length, jnp.int32),
        wall_hit_penalty=jnp.asarray(wall_hit_penalty, f32),
        tag_reward_for_tagger=jnp.asarray(tag_reward_for_tagger, f32),
        tag_penalty_for_runner=jnp.asarray(tag_penalty_for_runner, f32),
        step_cost_for_tagger=jnp.asarray(step_cost_for_tagger, f32),
        start=jnp.asarray(start))

    def reset(key: jax.Array, params: GridTagParams) -> tuple[jax.Array, GridTagState]:
        state = initial_state(params)
        return observe(state, params, t, use_full_observation), state

    def step(key: jax.Array, state: GridTagState, actions: jax.Array, params: GridTagParams):
        moves.validate_actions(actions, (n,), False, NAME)
        return env_step(state, actions, params, t, use_full_observation)

    def random_action(key: jax.Array) -> jax.Array:
        return jax.random.randint(key, (n,), 0, NUM_ACTIONS, jnp.int32)

    def scripted_action(key: jax.Array, state: GridTagState, params: GridTagParams):
        return scripted_actions(state, params, t)

    env = Env(spec=spec, reset=reset, step=step, scripted_action=scripted_action,
              random_action=random_action)
    return env, params


SCENARIO = register_scenario(Scenario(NAME, make, "WarpDrive's discrete Tag on a grid (paper 003)",
    (Team("taggers", "num_taggers"), Team("runners", "num_runners")),
    agent_count="num_runners", counts_total=True))
