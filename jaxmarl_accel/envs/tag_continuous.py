"""Continuous Tag (``tag_continuous``): WarpDrive's ``TagContinuous`` (paper 003, Sec. 5.1
"The Tag Environment", continuous version) as a pure JAX env.

Agents are ordered taggers first, then runners (``spec.teams``: ``"tagger"`` /
``"runner"``; WarpDrive draws the taggers' indices at random, so comparing with it means
permuting its agents into this order). The field is the square ``[0, grid_length]^2``.
Defaults are WarpDrive's ``run_configs/tag_continuous.yaml`` (10 taggers, 100 runners,
field 20, 500 steps, acceleration +-0.1 in 20 levels, turns +-2.356 rad in 20 levels, the
10 nearest agents observed, tag reward 10, tag penalty -10, end-of-game reward 1, tagging
distance 0.02 of the field); ``seed`` is ``None`` (see Start).

State per agent: position ``(x, y)``, speed, direction in ``[0, 2 pi)``, acceleration, and
whether it is still in the game; taggers never leave it.

Start: speed and acceleration 0, everyone in the game. With ``seed=None`` every reset draws
positions uniform in ``[0, grid_length)^2`` and directions uniform in ``{0, pi/2, pi,
3 pi/2}``. With an integer ``seed`` the start is drawn once, at make, exactly as WarpDrive's
constructor draws it from ``np.random.seed(seed)`` (tagger indices, x, y, directions) and
permuted into our order, and every episode starts there (as in WarpDrive); explicit
``starting_location_x`` / ``_y`` / ``starting_directions`` (our order) override it.

Actions (``[N]`` int32): WarpDrive's two discrete choices per agent (``MultiDiscrete``)
as one index ``a = acc * (num_turn_levels + 1) + turn`` (:func:`split_action`,
:func:`join_action`); ``acc`` picks from ``[0, linspace(min_acceleration,
max_acceleration, num_acceleration_levels)]`` and ``turn`` from ``[0, linspace(min_turn,
max_turn, num_turn_levels)]`` (index 0 is the no-op). Indices outside the range are
clipped into it.

One step (``t -> t + 1``), WarpDrive's CPU step in its order, every agent at once:

1. movement (:func:`move`): ``dir = (dir + turn) mod 2 pi``; ``acc = acc + delta_acc``
   (acceleration accumulates); ``speed = clip(speed + acc, 0, max_speed * skill)``;
   ``acc = 0`` unless ``0 < speed < max_speed * skill``; ``x += speed cos(dir)``,
   ``y += speed sin(dir)``; agents out of the game have speed and direction 0;
2. edges: a position off the field is clipped onto it and costs ``edge_hit_penalty``
   (a non-positive number, added);
3. observation of the moved state, with the in-game flags from before this step's tags;
4. rewards (:func:`reward`): agents in the game get the edge penalty and their step reward
   (``step_penalty_for_tagger`` / ``step_reward_for_runner``); every runner in the game
   whose nearest tagger (lowest index on ties) is closer than ``tagging_distance *
   grid_length`` is tagged: it gets ``tag_penalty_for_runner`` (non-positive, added) and
   that nearest tagger ``tag_reward_for_tagger`` (a tagger may tag several runners in one
   step; each runner is checked against the moved positions, no order among runners);
   ``info["tags"]`` (int32) counts them;
5. with ``runner_exits_game_after_tagged`` a tagged runner leaves the game: it stops, is
   no longer seen by the k-nearest observations nor tagged again, observes zeros and gets
   reward 0; without it, it plays on and can be tagged on every step;
6. on the step reaching ``params.episode_length`` every runner still in the game gets
   ``end_of_game_reward_for_runner``.

``terminated`` when every runner has left the game (only possible with exits); otherwise
``truncated`` at ``params.episode_length`` (WarpDrive reports both as ``done``). The step
that ends an episode returns the first observation of a fresh one (auto-reset), with
``info["final_obs"]`` and ``info["still_in_the_game"]`` (``[N]`` bool) of the state reached.

Observations (``[N, obs_dim]`` float32), WarpDrive's layout: seven rows over the observed
agents, flattened row by row, then the time ``t / episode_length``: ``dx, dy`` (positions
divided by ``grid_length * sqrt 2``, other minus self), ``dspeed, dacc`` (divided by
``max_speed``), ``ddir`` (divided by ``2 pi``), the other's type (1 tagger, 0 runner) and
its in-game flag.

* ``use_full_observation=False`` (WarpDrive's yaml default; ``7k + 1``): the
  ``k = num_other_agents_observed`` nearest other agents still in the game, closest first
  (lowest index on ties), zero columns when fewer remain; an agent out of the game
  observes zeros. O(N k) observations from ``[N, N]`` distances (``lax.top_k``).
* ``True`` (``7(N - 1) + 1``): every other agent in index order; an agent out of the game
  sees zeros except the type and in-game rows (time 0), as WarpDrive.

Choices WarpDrive leaves open, as made here: the start (above); the time limit is
``truncated``; actions are one joint index (a policy may still factor it into two heads).

Scripted policy (:func:`scripted_actions`): each agent in the game turns as far as it may
towards its wanted heading (taggers: their nearest runner in the game; runners: away from
their nearest tagger) and picks the acceleration that brings its next speed closest to
``max_speed * skill`` (taggers: no faster than the distance to their runner).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.envs import moves
from jaxmarl_accel.envs import tag_continuous_setup as setup
from jaxmarl_accel.envs.base import Env
from jaxmarl_accel.envs.mpe import core
from jaxmarl_accel.envs.registry import Scenario, Team, register_scenario
from jaxmarl_accel.envs.tag_continuous_setup import (
    TagContinuousParams,
    TagContinuousState,
    initial_state,
    join_action,
    split_action,
)

NAME = "tag_continuous"
NUM_FEATURES = 7
TWO_PI = np.float32(2 * np.pi)


def move(state: TagContinuousState, actions: jax.Array, params: TagContinuousParams
         ) -> tuple[TagContinuousState, jax.Array]:
    """Rules 1-2: every agent's movement and the edges, ``step`` advanced by one.

    Args:
      state: the state before the step.
      actions: ``[N]`` int joint action indices.
      params: the settings.

    Returns:
      ``(moved state, crossed_edge [N] bool)``.
    """
    num_turns = params.turn_actions.shape[0]
    acc_i, turn_i = split_action(actions, num_turns)
    acc_i = jnp.clip(acc_i, 0, params.acceleration_actions.shape[0] - 1)
    turn_i = jnp.clip(turn_i, 0, num_turns - 1)
    live = state.in_game.astype(jnp.float32)
    direction = jnp.mod(state.direction + params.turn_actions[turn_i], TWO_PI) * live
    acc = state.acceleration + params.acceleration_actions[acc_i]
    speed = jnp.clip(state.speed + acc, 0.0, params.max_speed_of) * live
    acc = jnp.where((speed > 0) & (speed < params.max_speed_of), acc, 0.0)
    x = state.x + speed * jnp.cos(direction)
    y = state.y + speed * jnp.sin(direction)
    side = params.grid_length
    crossed = ~((x >= 0) & (x <= side) & (y >= 0) & (y <= side))
    moved = state.replace(x=jnp.clip(x, 0.0, side), y=jnp.clip(y, 0.0, side), speed=speed,
                          direction=direction, acceleration=acc, step=state.step + 1)
    return moved, crossed


def runner_tags(state: TagContinuousState, params: TagContinuousParams, num_taggers: int
                ) -> tuple[jax.Array, jax.Array]:
    """Rule 4's tags: ``(tagged [M] bool, nearest tagger [M] int32)`` of each runner.

    Args:
      state: the moved state (in-game flags from before the tags).
      params: the settings (``tagging_margin``).
      num_taggers: static T (``M = N - T``).
    """
    dx = state.x[num_taggers:, None] - state.x[None, :num_taggers]
    dy = state.y[num_taggers:, None] - state.y[None, :num_taggers]
    dist = jnp.sqrt(dx * dx + dy * dy)  # [M, T]
    nearest = jnp.argmin(dist, axis=1).astype(jnp.int32)
    close = jnp.min(dist, axis=1) < params.tagging_margin
    return close & state.in_game[num_taggers:], nearest


def reward(state: TagContinuousState, crossed: jax.Array, tagged: jax.Array,
           nearest: jax.Array, still_in: jax.Array, params: TagContinuousParams,
           num_taggers: int) -> jax.Array:
    """Rules 4 and 6: rewards ``[N]`` float32.

    Args:
      state: the moved state (``in_game`` from before the tags, ``step`` the new time).
      crossed: ``[N]`` bool agents clipped at an edge.
      tagged: ``[M]`` bool runners tagged this step.
      nearest: ``[M]`` int32 each runner's nearest tagger.
      still_in: ``[N]`` bool in-game flags after the tags (who gets the end-of-game reward).
      params: the settings.
      num_taggers: static T.
    """
    base = jnp.where(state.in_game, params.edge_hit_penalty * crossed + params.step_reward_of,
                     0.0)
    hits = jnp.zeros((num_taggers,), jnp.float32).at[nearest].add(tagged.astype(jnp.float32))
    tag = jnp.concatenate([params.tag_reward_for_tagger * hits,
                           jnp.where(tagged, params.tag_penalty_for_runner, 0.0)])
    is_runner = np.arange(state.x.shape[0]) >= num_taggers
    last = (state.step == params.episode_length) & still_in & is_runner
    end = jnp.where(last, params.end_of_game_reward_for_runner, 0.0)
    return (base + tag + end).astype(jnp.float32)


def _features(state: TagContinuousState, params: TagContinuousParams) -> jax.Array:
    # [5, N] normalized dynamic features, WarpDrive's normalization
    diagonal = params.grid_length * np.float32(np.sqrt(2.0))
    return jnp.stack([state.x / diagonal, state.y / diagonal, state.speed / params.max_speed,
                      state.acceleration / params.max_speed, state.direction / TWO_PI])


def observe(state: TagContinuousState, params: TagContinuousParams, num_taggers: int,
            k: int | None) -> jax.Array:
    """Observations ``[N, obs_dim]`` float32 (layout in the module docstring).

    Args:
      state: the state observed.
      params: the settings.
      num_taggers: static T.
      k: static number of nearest agents observed, or ``None`` for full observations.
    """
    n = state.x.shape[0]
    feats = _features(state, params)  # [5, N]
    kind = jnp.asarray((np.arange(n) < num_taggers).astype(np.float32))
    flag = state.in_game.astype(jnp.float32)
    time = state.step.astype(jnp.float32) / params.episode_length.astype(jnp.float32)
    me = state.in_game[:, None]
    if k is None:
        rel = core.exclude_self(jnp.moveaxis(feats[:, None, :] - feats[:, :, None], 0, -1))
        rel = jnp.where(me[..., None], rel, 0.0)  # [N, N-1, 5]
        fixed = core.exclude_self(jnp.broadcast_to(jnp.stack([kind, flag], -1), (n, n, 2)))
        rows = jnp.concatenate([rel, fixed], axis=-1)  # [N, N-1, 7]
        seen_time = jnp.where(state.in_game, time, 0.0)
    else:
        dx = state.x[None, :] - state.x[:, None]
        dy = state.y[None, :] - state.y[:, None]
        dist = jnp.sqrt(dx * dx + dy * dy)
        hidden = jnp.eye(n, dtype=bool) | ~state.in_game[None, :]
        dist = jnp.where(hidden, jnp.inf, dist)
        near = core.nearest_index(dist, k)  # [N, k]
        seen = jnp.isfinite(jnp.take_along_axis(dist, near, axis=1)) & me
        rel = feats.T[near] - feats.T[:, None, :]  # [N, k, 5]
        rows = jnp.concatenate([rel, kind[near][..., None], flag[near][..., None]], -1)
        rows = jnp.where(seen[..., None], rows, 0.0)
        seen_time = jnp.where(state.in_game, time, 0.0)
    flat = jnp.swapaxes(rows, 1, 2).reshape(n, -1)  # feature-major, as WarpDrive
    return jnp.concatenate([flat, seen_time[:, None]], axis=1).astype(jnp.float32)


def scripted_actions(state: TagContinuousState, params: TagContinuousParams,
                     num_taggers: int) -> jax.Array:
    """The scripted policy of the module docstring: ``[N]`` int32 joint actions.

    Args:
      state: the state acted on.
      params: the settings.
      num_taggers: static T.
    """
    t = num_taggers
    dx = state.x[None, t:] - state.x[:t, None]  # [T, M] runner minus tagger
    dy = state.y[None, t:] - state.y[:t, None]
    dist = jnp.sqrt(dx * dx + dy * dy)
    runner = jnp.argmin(jnp.where(state.in_game[None, t:], dist, jnp.inf), axis=1)
    tagger = jnp.argmin(dist, axis=0)
    rows = jnp.arange(t)
    cols = jnp.arange(dist.shape[1])
    # runner minus tagger: towards the runner for a tagger, away from the tagger for a runner
    gx = jnp.concatenate([dx[rows, runner], dx[tagger, cols]])
    gy = jnp.concatenate([dy[rows, runner], dy[tagger, cols]])
    reach = jnp.concatenate([dist[rows, runner], jnp.full(dist.shape[1], jnp.inf)])
    wanted = jnp.arctan2(gy, gx)
    need = jnp.mod(wanted - state.direction + np.pi, TWO_PI) - np.pi
    gap = jnp.abs(jnp.mod(params.turn_actions[None] - need[:, None] + np.pi, TWO_PI) - np.pi)
    turn = jnp.argmin(gap, axis=1)
    target_speed = jnp.minimum(params.max_speed_of, reach)
    next_speed = state.speed[:, None] + state.acceleration[:, None] + params.acceleration_actions
    acc = jnp.argmin(jnp.abs(next_speed - target_speed[:, None]), axis=1)
    joint = join_action(acc, turn, params.turn_actions.shape[0])
    return jnp.where(state.in_game, joint, 0).astype(jnp.int32)


def env_step(key: jax.Array, state: TagContinuousState, actions: jax.Array,
             params: TagContinuousParams, num_taggers: int, k: int | None, exits: bool,
             random_start: bool) -> tuple[jax.Array, TagContinuousState, jax.Array, jax.Array,
                                          jax.Array, dict]:
    """One step of the rules with the time limit and the auto-reset (``Env.step``).

    Args:
      key: PRNG key of a random start after the episode ends.
      state: the state before the step.
      actions: ``[N]`` int joint actions.
      params: the settings.
      num_taggers: static T.
      k: static number of nearest agents observed (``None``: full observations).
      exits: static ``runner_exits_game_after_tagged``.
      random_start: static: a reset draws the start from ``key``.

    Returns:
      ``(obs [N, obs_dim], state, reward [N], terminated [], truncated [], info)`` with
      ``info["final_obs"]`` ``[N, obs_dim]``, ``info["still_in_the_game"]`` ``[N]`` and
      ``info["tags"]`` ``[]`` int32; with ``exits`` also
      ``info["steps_before_first_tag"]`` ``[]`` int32, 1 while no runner has been tagged
      in this episode (this step's tags included), so its sum over an episode is the steps
      taken before the first tag (the whole episode when there is none).
    """
    t = num_taggers
    moved, crossed = move(state, actions, params)
    tagged, nearest = runner_tags(moved, params, t)
    out = tagged if exits else jnp.zeros_like(tagged)
    in_game = moved.in_game.at[t:].set(moved.in_game[t:] & ~out)
    rew = reward(moved, crossed, tagged, nearest, in_game, params, t)
    reached = moved.replace(in_game=in_game)
    terminated = ~jnp.any(in_game[t:])
    truncated = ~terminated & (reached.step >= params.episode_length)
    done = terminated | truncated
    fresh = initial_state(key, params, random_start)
    new_state = jax.tree.map(lambda r, s: jnp.where(done, r, s), fresh, reached)
    final_obs = observe(moved, params, t, k)
    obs = jnp.where(done, observe(fresh, params, t, k), final_obs)
    info = {"final_obs": final_obs, "still_in_the_game": in_game,
            "tags": jnp.sum(tagged).astype(jnp.int32)}
    if exits:  # 1 while every runner is still in: summed, the steps before the first tag
        info["steps_before_first_tag"] = jnp.all(in_game[t:]).astype(jnp.int32)
    return obs, new_state, rew, terminated, truncated, info


def make(
    num_taggers: int = 10,
    num_runners: int = 100,
    grid_length: float = 20.0,
    episode_length: int = 500,
    starting_location_x: Sequence[float] | None = None,
    starting_location_y: Sequence[float] | None = None,
    starting_directions: Sequence[float] | None = None,
    seed: int | None = None,
    max_speed: float = 1.0,
    skill_level_runner: float = 1.0,
    skill_level_tagger: float = 1.0,
    max_acceleration: float = 0.1,
    min_acceleration: float = -0.1,
    max_turn: float = 2.356,
    min_turn: float = -2.356,
    num_acceleration_levels: int = 20,
    num_turn_levels: int = 20,
    edge_hit_penalty: float = 0.0,
    use_full_observation: bool = False,
    num_other_agents_observed: int = 10,
    tagging_distance: float = 0.02,
    tag_reward_for_tagger: float = 10.0,
    step_penalty_for_tagger: float = 0.0,
    tag_penalty_for_runner: float = -10.0,
    step_reward_for_runner: float = 0.0,
    end_of_game_reward_for_runner: float = 1.0,
    runner_exits_game_after_tagged: bool = True,
) -> tuple[Env, TagContinuousParams]:
    """Builds continuous Tag (rules in the module docstring; keys and defaults WarpDrive's).

    Args:
      num_taggers, num_runners: T >= 1 taggers (agents ``0..T-1``), M >= 1 runners.
      grid_length, episode_length: side of the square field (> 0); steps per episode.
      starting_location_x, starting_location_y, starting_directions, seed: the start
        (module docstring); ``None`` each: a random start at every reset.
      max_speed, skill_level_runner, skill_level_tagger: speed cap ``max_speed * skill``.
      max_acceleration, min_acceleration, num_acceleration_levels: acceleration choices.
      max_turn, min_turn, num_turn_levels: turn choices (radians).
      edge_hit_penalty: added (<= 0) when an agent is clipped at an edge.
      use_full_observation, num_other_agents_observed: observe every agent, or the k in
        ``[1, N - 1]`` nearest.
      tagging_distance: fraction of ``grid_length`` in ``(0, 1]`` within which a tag counts.
      tag_reward_for_tagger, step_penalty_for_tagger, tag_penalty_for_runner,
        step_reward_for_runner, end_of_game_reward_for_runner: the rewards (rules 4 and 6).
      runner_exits_game_after_tagged: a tagged runner leaves the game.

    Returns:
      ``(env, params)``.
    """
    config = dict(locals())
    setup.check(config)
    n, t = num_taggers + num_runners, num_taggers
    k = None if use_full_observation else num_other_agents_observed
    params, random_start = setup.make_params(config)
    spec = setup.make_spec(NAME, config, NUM_FEATURES)
    num_actions = spec.num_actions

    def reset(key: jax.Array, params: TagContinuousParams):
        state = initial_state(key, params, random_start)
        return observe(state, params, t, k), state

    def step(key: jax.Array, state: TagContinuousState, actions: jax.Array,
             params: TagContinuousParams):
        moves.validate_actions(actions, (n,), False, NAME)
        return env_step(key, state, actions, params, t, k, runner_exits_game_after_tagged,
                        random_start)

    def random_action(key: jax.Array) -> jax.Array:
        return jax.random.randint(key, (n,), 0, num_actions, jnp.int32)

    def scripted_action(key: jax.Array, state: TagContinuousState, params):
        return scripted_actions(state, params, t)

    env = Env(spec=spec, reset=reset, step=step, scripted_action=scripted_action,
              random_action=random_action)
    return env, params


SCENARIO = register_scenario(Scenario(
    NAME, make, "WarpDrive's continuous Tag: taggers chase runners on a square field (paper 003)",
    (Team("taggers", "num_taggers"), Team("runners", "num_runners")), counts_total=True,
    agent_count="num_runners"))
