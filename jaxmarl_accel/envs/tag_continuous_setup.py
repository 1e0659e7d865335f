"""Settings and start of continuous Tag (:mod:`~jaxmarl_accel.envs.tag_continuous`): the
params and state pytrees, the make-time checks, the spec, the joint action encoding,
WarpDrive's seeded start and the first state of each episode (:func:`initial_state`).

The seeded start repeats, call for call, what WarpDrive's ``TagContinuous`` constructor
draws after ``np.random.seed(seed)``: the tagger indices (``choice`` without replacement),
then x, then y (``grid_length * rand(N)``, stored as float32), then the headings
(``choice`` of ``{0, pi/2, pi, 3 pi/2}``); the agents are then reordered taggers first
(each team in WarpDrive's index order), see :func:`warpdrive_order`.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.envs.mpe import core

HEADINGS = (0.0, np.pi / 2, np.pi, np.pi * 3 / 2)


@struct.dataclass
class TagContinuousParams:
    """Numeric settings; per-agent leaves are ``[N]`` (taggers first).

    Attributes:
      grid_length: float32 side of the field.
      episode_length: int32 steps after which an episode is truncated.
      max_speed: float32 ``max_speed`` (normalizes observed speeds and accelerations).
      max_speed_of: ``[N]`` float32 ``max_speed * skill_level`` of each agent.
      acceleration_actions: ``[A + 1]`` float32, index 0 the no-op.
      turn_actions: ``[R + 1]`` float32 radians, index 0 the no-op.
      edge_hit_penalty: float32 added when an agent is clipped at an edge.
      step_reward_of: ``[N]`` float32 per-step reward of each agent in the game.
      tagging_margin: float32 ``tagging_distance * grid_length``.
      tag_reward_for_tagger: float32 per runner tagged, to its nearest tagger.
      tag_penalty_for_runner: float32 added to a tagged runner.
      end_of_game_reward_for_runner: float32 to runners in the game at the last step.
      start_x, start_y, start_direction: ``[N]`` float32 fixed start (unused when random).
    """

    grid_length: jax.Array
    episode_length: jax.Array
    max_speed: jax.Array
    max_speed_of: jax.Array
    acceleration_actions: jax.Array
    turn_actions: jax.Array
    edge_hit_penalty: jax.Array
    step_reward_of: jax.Array
    tagging_margin: jax.Array
    tag_reward_for_tagger: jax.Array
    tag_penalty_for_runner: jax.Array
    end_of_game_reward_for_runner: jax.Array
    start_x: jax.Array
    start_y: jax.Array
    start_direction: jax.Array


@struct.dataclass
class TagContinuousState:
    """State of one env; every leaf ``[N]`` (agents, taggers first) except ``step``.

    Attributes:
      x, y: float32 positions in ``[0, grid_length]``.
      speed: float32 speeds in ``[0, max_speed * skill]``.
      direction: float32 headings in ``[0, 2 pi)``.
      acceleration: float32 accumulated accelerations.
      in_game: bool still in the game (taggers always).
      step: int32 steps taken in this episode.
    """

    x: jax.Array
    y: jax.Array
    speed: jax.Array
    direction: jax.Array
    acceleration: jax.Array
    in_game: jax.Array
    step: jax.Array


_NUMBERS = ("grid_length", "max_speed", "skill_level_runner", "skill_level_tagger",
            "max_acceleration", "min_acceleration", "max_turn", "min_turn", "edge_hit_penalty",
            "tagging_distance", "tag_reward_for_tagger", "step_penalty_for_tagger",
            "tag_penalty_for_runner", "step_reward_for_runner", "end_of_game_reward_for_runner")


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def check(c: dict[str, Any]) -> None:
    """Raises a one-line ``ValueError`` naming the first bad argument of ``make``."""
    for name, low in (("num_taggers", 1), ("num_runners", 1), ("episode_length", 1),
                      ("num_acceleration_levels", 0), ("num_turn_levels", 0)):
        if not _is_int(c[name]) or c[name] < low:
            raise ValueError(f"{name} must be an int >= {low}, got {c[name]!r}")
    for name in _NUMBERS:
        value = c[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    for name in ("grid_length", "max_speed"):
        if c[name] <= 0:
            raise ValueError(f"{name} must be > 0, got {c[name]!r}")
    if not 0 < c["tagging_distance"] <= 1:
        raise ValueError(f"tagging_distance must be in (0, 1] (a fraction of grid_length), "
                         f"got {c['tagging_distance']!r}")
    n = c["num_taggers"] + c["num_runners"]
    k = c["num_other_agents_observed"]
    if not c["use_full_observation"] and (not _is_int(k) or not 1 <= k <= n - 1):
        raise ValueError(f"num_other_agents_observed must be an int in [1, num_taggers + "
                         f"num_runners - 1 = {n - 1}], got {k!r}")
    if c["seed"] is not None and not _is_int(c["seed"]):
        raise ValueError(f"seed must be an int or None, got {c['seed']!r}")
    given = [c[name] is not None for name in ("starting_location_x", "starting_location_y")]
    if given[0] != given[1]:
        raise ValueError("starting_location_y must be given together with starting_location_x")
    for name in ("starting_location_x", "starting_location_y", "starting_directions"):
        if c[name] is not None and len(c[name]) != n:
            raise ValueError(f"{name} must hold num_taggers + num_runners = {n} values, got "
                             f"{len(c[name])}")
    if c["seed"] is None and given[0] != (c["starting_directions"] is not None):
        raise ValueError("starting_directions must be given together with starting_location_x"
                         " and _y unless seed is set")


def split_action(actions: jax.Array, num_turns: int) -> tuple[jax.Array, jax.Array]:
    """Joint indices ``[...]`` -> (acceleration index, turn index), each ``[...]``.

    Args:
      actions: int joint indices ``acc * num_turns + turn``.
      num_turns: static ``num_turn_levels + 1``.
    """
    return actions // num_turns, actions % num_turns


def join_action(acc: jax.Array, turn: jax.Array, num_turns: int) -> jax.Array:
    """(acceleration index, turn index) ``[...]`` -> joint index ``[...]`` int32."""
    return (acc * num_turns + turn).astype(jnp.int32)


def make_spec(name: str, c: dict[str, Any], num_features: int) -> EnvSpec:
    """The static :class:`~.base.EnvSpec` of ``make``'s (checked) arguments ``c``."""
    t, m = c["num_taggers"], c["num_runners"]
    n = t + m
    seen = n - 1 if c["use_full_observation"] else c["num_other_agents_observed"]
    obs_dim = num_features * seen + 1
    num_actions = (c["num_acceleration_levels"] + 1) * (c["num_turn_levels"] + 1)
    return EnvSpec(
        name=name, num_agents=n, obs_dim=obs_dim, obs_sizes=(obs_dim,) * n,
        teams=("tagger",) * t + ("runner",) * m, continuous=False, num_actions=num_actions,
        action_sizes=(num_actions,) * n, act_dim=num_actions,
        episode_length=c["episode_length"], terminates=c["runner_exits_game_after_tagged"],
        episode_stats=("tags", "steps_before_first_tag") if c["runner_exits_game_after_tagged"]
        else ("tags",),
        action_factors=(c["num_acceleration_levels"] + 1, c["num_turn_levels"] + 1))


def warpdrive_order(seed: int, num_taggers: int, num_runners: int) -> np.ndarray:
    """WarpDrive's agent indices in our order (its taggers, then its runners, each sorted),
    ``[N]`` int: our agent ``i`` is WarpDrive's agent ``order[i]`` after
    ``np.random.seed(seed)`` and its constructor's first draw."""
    n = num_taggers + num_runners
    taggers = np.random.RandomState(seed).choice(np.arange(n), num_taggers, replace=False)
    is_tagger = np.isin(np.arange(n), taggers)
    return np.concatenate([np.flatnonzero(is_tagger), np.flatnonzero(~is_tagger)])


def seeded_start(c: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x, y, direction)`` ``[N]`` float32 in our order: the given ones, the rest drawn as
    WarpDrive's constructor draws them from ``seed`` (module docstring)."""
    n = c["num_taggers"] + c["num_runners"]
    rng = np.random.RandomState(c["seed"])
    rng.choice(np.arange(n), c["num_taggers"], replace=False)  # WarpDrive's tagger draw
    order = warpdrive_order(c["seed"], c["num_taggers"], c["num_runners"])
    side = np.float32(c["grid_length"])
    if c["starting_location_x"] is None:
        x = (side * rng.rand(n)).astype(np.float32)[order]
        y = (side * rng.rand(n)).astype(np.float32)[order]
    else:
        x = np.asarray(c["starting_location_x"], np.float32)
        y = np.asarray(c["starting_location_y"], np.float32)
    if c["starting_directions"] is None:
        direction = rng.choice(HEADINGS, n, replace=True).astype(np.float32)[order]
    else:
        direction = np.asarray(c["starting_directions"], np.float32)
    return x, y, direction


def initial_state(key: jax.Array, params: TagContinuousParams, random_start: bool
                  ) -> TagContinuousState:
    """A fresh episode: ``params.start_*`` or, with ``random_start``, positions uniform in
    ``[0, grid_length)^2`` and headings in ``{0, pi/2, pi, 3 pi/2}`` drawn from ``key``."""
    n = params.max_speed_of.shape[0]
    zeros = jnp.zeros((n,), jnp.float32)
    if random_start:
        unit = core.uniform_positions(key, 2 * n, 0.5) + 0.5  # [2N, 2] in [0, 1)
        x, y = unit[:n, 0] * params.grid_length, unit[:n, 1] * params.grid_length
        quarter = jnp.minimum(jnp.floor(unit[n:, 0] * 4.0), 3.0)
        direction = (quarter * np.float32(np.pi / 2)).astype(jnp.float32)
    else:
        # the barrier keeps XLA from constant-folding the start's observation when params
        # are closed over by jit (minutes of compilation at 1,000 agents)
        x, y, direction = jax.lax.optimization_barrier(
            (params.start_x, params.start_y, params.start_direction))
    return TagContinuousState(x=x, y=y, speed=zeros, direction=direction, acceleration=zeros,
                              in_game=jnp.ones((n,), bool), step=jnp.zeros((), jnp.int32))


def _levels(low: float, high: float, count: int) -> jax.Array:
    # WarpDrive's action levels: a no-op, then count levels evenly spaced in [low, high]
    return jnp.asarray(np.insert(np.linspace(np.float32(low), np.float32(high), count), 0, 0)
                       .astype(np.float32))


def make_params(c: dict[str, Any]) -> tuple[TagContinuousParams, bool]:
    """``(params, random_start)`` from ``make``'s (checked) arguments ``c``."""
    t, n = c["num_taggers"], c["num_taggers"] + c["num_runners"]
    random_start = (c["seed"] is None and c["starting_location_x"] is None)
    if random_start:
        x = y = direction = np.zeros((n,), np.float32)
    else:
        x, y, direction = seeded_start(c)
    is_tagger = np.arange(n) < t
    f32 = np.float32
    skill = np.where(is_tagger, f32(c["skill_level_tagger"]), f32(c["skill_level_runner"]))
    step_reward = np.where(is_tagger, f32(c["step_penalty_for_tagger"]),
                           f32(c["step_reward_for_runner"]))
    params = TagContinuousParams(
        grid_length=jnp.asarray(c["grid_length"], jnp.float32),
        episode_length=jnp.asarray(c["episode_length"], jnp.int32),
        max_speed=jnp.asarray(c["max_speed"], jnp.float32),
        max_speed_of=jnp.asarray(f32(c["max_speed"]) * skill, jnp.float32),
        acceleration_actions=_levels(c["min_acceleration"], c["max_acceleration"],
                                     c["num_acceleration_levels"]),
        turn_actions=_levels(c["min_turn"], c["max_turn"], c["num_turn_levels"]),
        edge_hit_penalty=jnp.asarray(c["edge_hit_penalty"], jnp.float32),
        step_reward_of=jnp.asarray(step_reward, jnp.float32),
        tagging_margin=jnp.asarray(f32(c["tagging_distance"]) * f32(c["grid_length"]),
                                   jnp.float32),
        tag_reward_for_tagger=jnp.asarray(c["tag_reward_for_tagger"], jnp.float32),
        tag_penalty_for_runner=jnp.asarray(c["tag_penalty_for_runner"], jnp.float32),
        end_of_game_reward_for_runner=jnp.asarray(c["end_of_game_reward_for_runner"],
                                                  jnp.float32),
        start_x=jnp.asarray(x), start_y=jnp.asarray(y), start_direction=jnp.asarray(direction))
    return params, random_start
