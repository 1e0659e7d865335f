"""The environment contract shared by every scenario, the trainer and the learners.

An environment is a static :class:`Env` bundle of pure functions plus a hashable
:class:`EnvSpec`; everything that may change without recompiling lives in ``params``
(a pytree). Agents are an array axis everywhere:

* observations ``[num_agents, obs_dim]`` float32 (each agent's true observation is the
  first ``spec.obs_sizes[i]`` entries, the rest is zero padding);
* discrete actions ``[num_agents]`` int32 in ``[0, spec.action_sizes[i])``;
  continuous actions ``[num_agents, spec.act_dim]`` float32 in ``[0, 1]``;
* rewards ``[num_agents]`` float32; ``terminated`` and ``truncated`` scalar bool
  (every agent of one MPE episode ends at the same step).

``step`` resets automatically when an episode ends; ``info["final_obs"]`` always holds
the observation of the state the step reached *before* any reset (equal to the returned
observation when no reset happened), so a replay buffer stores the true ``next_obs``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.types import PyTree

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """Static (hashable) description of a scenario instance.

    Attributes:
      name: registry name of the scenario, e.g. ``"simple_spread"``.
      num_agents: number of acting agents N (all teams together).
      obs_dim: padded observation width (max over agents).
      obs_sizes: true observation width of each agent, length N.
      teams: team label of each agent, length N (e.g. ``"agent"``, ``"adversary"``,
        ``"predator"``, ``"prey"``, ``"speaker"``, ``"listener"``).
      continuous: whether actions are continuous vectors rather than discrete indices.
      num_actions: padded number of discrete actions (max over agents).
      action_sizes: number of valid discrete actions of each agent, length N.
      act_dim: padded continuous action width (max over agents).
      episode_length: the make-time default of ``params.episode_length``. Static and never
        updated: the live episode length (the one that decides truncation) is
        ``params.episode_length``, which may be replaced without rebuilding the env.
      shared_reward: the reward ``[N]`` is one team reward broadcast to every agent (a
        value-based learner's team reward is then ``reward[0]``, otherwise the sum).
      terminates: episodes can end before ``params.episode_length`` steps (``terminated``);
        False: every episode lasts exactly that many steps (truncated).
      state_dim: width of the global state (``Env.state_of``) or 0 when the env has none
        (a mixer then sees the concatenated observations, ``N * obs_dim``).
      binary_observations: observations and global state hold only 0/1 values (a replay
        may store them as ``uint8``).
      episode_stats: names of per-step scalar counters the env reports in ``info`` (e.g.
        ``"captures"``); trainers and evaluations sum them over each episode.
      position_columns: ``(start, stop)``: the columns of every agent's observation that
        hold its absolute position, or ``None``. With them a learner can rank the agents by
        distance from a joint observation as the env does (neighbourhood critics,
        :mod:`jaxmarl_accel.algos.actor_critic.local_critic`).
      physical_state_dim: width F of each agent's row of the packed physical state
        (``Env.physical_state``), or 0 when the env has none.
      physical_position_columns: ``(start, stop)``: the columns of that row holding the
        agent's absolute position, or ``None``.
      scripted: ``Env.scripted_action`` is a scripted policy; False: the env has none and
        ``scripted_action`` is the random policy, so no normalized score is defined.
      action_factors: ``(K_1, ..., K_m)`` when each discrete action index is the
        mixed-radix number of m independent choices, ``a = (..((c_1 K_2 + c_2) K_3 + c_3)..)``
        with ``c_j < K_j`` (most significant first; ``prod K_j == num_actions``), every one
        always available (e.g. continuous Tag's acceleration and turn, WarpDrive's
        ``MultiDiscrete``); a policy may then draw one categorical per factor. ``None``: the
        index is one choice.
    """

    name: str
    num_agents: int
    obs_dim: int
    obs_sizes: tuple[int, ...]
    teams: tuple[str, ...]
    continuous: bool
    num_actions: int
    action_sizes: tuple[int, ...]
    act_dim: int
    episode_length: int
    shared_reward: bool = False
    terminates: bool = False
    state_dim: int = 0
    binary_observations: bool = False
    episode_stats: tuple[str, ...] = ()
    position_columns: tuple[int, int] | None = None
    physical_state_dim: int = 0
    physical_position_columns: tuple[int, int] | None = None
    scripted: bool = True
    action_factors: tuple[int, ...] | None = None

    @property
    def action_mask(self) -> jax.Array:
        """Valid discrete actions, bool ``[num_agents, num_actions]``."""
        sizes = jnp.asarray(self.action_sizes)
        return jnp.arange(self.num_actions)[None, :] < sizes[:, None]

    @property
    def action_shape(self) -> tuple[int, ...]:
        """Shape of one joint action: ``[N]`` (discrete) or ``[N, act_dim]`` (continuous)."""
        if self.continuous:
            return (self.num_agents, self.act_dim)
        return (self.num_agents,)


class Env(NamedTuple):
    """A scenario as pure functions over ``(state, params)``.

    Attributes:
      spec: the static :class:`EnvSpec`.
      reset: ``(key, params) -> (obs [N, obs_dim], state)``.
      step: ``(key, state, actions, params) -> (obs, state, reward [N], terminated [],
        truncated [], info)`` with ``info["final_obs"]`` the pre-reset observation.
      scripted_action: ``(key, state, params) -> actions``, the scripted policy whose
        return defines the top of the normalized score.
      random_action: ``(key) -> actions``, uniform over valid actions.
      avail_actions: ``(state, params) -> bool [N, num_actions]``, the actions available in
        ``state``, or ``None`` when every valid action (``spec.action_mask``) always is. Envs
        that have it also report ``info["avail_actions"]`` for the returned observation and
        ``info["final_avail_actions"]`` for the pre-reset one.
      state_of: ``(state, params) -> [state_dim]`` float32 global state (a mixer's input),
        or ``None``. Envs that have it also report ``info["state"]`` and
        ``info["final_state"]`` (pre-reset).
      physical_state: ``(state) -> [N, F]`` float32, what the observations are computed
        from (e.g. positions and velocities), packed one row per agent
        (``F = spec.physical_state_dim``), or ``None``. Envs that have it also report
        ``info["final_physical_state"]`` (pre-reset) and have ``observe_physical``.
      observe_physical: ``(physical [N, F], params) -> obs [N, obs_dim]``: the env's own
        observation function applied to the unpacked state, or ``None``. It gives the
        observations ``step`` and ``reset`` give, bit for bit, except where XLA fused part
        of the state's computation into the env's own observation (tag's freshly reset
        obstacles: the last bit of a few numbers).
      observe_physical_at: ``(physical [N, F], params, agents [M] int) -> obs [M, obs_dim]``:
        rows ``agents`` of ``observe_physical``, bit for bit; k-nearest scenarios compute
        only those rows (``[M, N]`` distances instead of ``[N, N]``). ``None`` with
        ``observe_physical``.
      render: ``(states, params, spec, pixels, extent) -> [T, pixels, pixels, 3]`` uint8 RGB
        frames of a stored rollout (every leaf of ``states`` with a leading time axis T),
        drawn on the host with one fixed view (``extent``: half-width of the view where the
        drawing has a camera, ``None`` fits the states), or ``None`` when the env cannot be
        drawn. Called by :func:`~.render.render_rollout` and :func:`~.render.render_frame`;
        a renderer imports matplotlib only when called.
    """

    spec: EnvSpec
    reset: Callable[..., tuple[jax.Array, PyTree]]
    step: Callable[..., tuple[jax.Array, PyTree, jax.Array, jax.Array, jax.Array, dict]]
    scripted_action: Callable[..., jax.Array]
    random_action: Callable[[jax.Array], jax.Array]
    avail_actions: Callable[..., jax.Array] | None = None
    state_of: Callable[..., jax.Array] | None = None
    physical_state: Callable[[PyTree], jax.Array] | None = None
    observe_physical: Callable[[jax.Array, PyTree], jax.Array] | None = None
    observe_physical_at: Callable[[jax.Array, PyTree, jax.Array], jax.Array] | None = None
    render: Callable[..., np.ndarray] | None = None


def bind_static(fn: Callable[..., T], static: Any) -> Callable[..., T]:
    """``fn`` with its first argument bound to ``static`` (an env's static sizes), as
    ``functools.partial(fn, static)`` but a plain function, for the fields of an :class:`Env`:
    ``chex.assert_max_traces`` and ``inspect.getsource`` refuse partial objects. The result
    has ``fn``'s name and source and the partial's signature (without ``static``).
    """

    @functools.wraps(fn)
    def bound(*args: Any, **kwargs: Any) -> T:
        return fn(static, *args, **kwargs)

    bound.__signature__ = inspect.signature(functools.partial(fn, static))  # type: ignore[attr-defined]
    return bound
